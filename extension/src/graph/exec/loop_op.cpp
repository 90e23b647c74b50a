// Loop ops (loop_op.hpp): the body compiled once, run once per step.
#include "graph/exec/loop_op.hpp"

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/exec/backend.hpp"
#include "graph/exec/cond_op.hpp"
#include "graph/exec/value_home.hpp"
#include "graph/ir/arg_values.hpp"

namespace py = pybind11;

namespace sot::graph {

void LoopBody::compile(Backend* backend, bool check,
                       const std::function<ValueInfo(ValueInfo)>& current, std::vector<bool> unread,
                       bool native) {
  Graph body = spec_.body;
  for (std::size_t i = 0; i < body.values().size(); ++i) {
    body.info(static_cast<int>(i)) = current(body.values()[i].info);
  }
  std::vector<int> outs = spec_.outputs;
  const Graph g = body.optimized(&outs);
  compile_loops(g, backend, check, current);
  current_ = spec_;
  current_.body = g;
  current_.outputs = outs;
  current_.unread = std::move(unread);
  compiled_ = backend->compile(g, outs, check);
  // (a while loop's next step may run before its tests are read where its body holds no loop or
  // cond op: a step the loop never reaches then ends however its values are)
  ahead_ok_ = spec_.trips < 0 && std::none_of(g.ops().begin(), g.ops().end(), [](const Op& op) {
                return subgraph_of(op.fn) != nullptr;
              });
  native_ = nullptr;
  if (native) {
    compile_native(backend);
  }
}

void LoopBody::compile_native(Backend* backend) {
  if (compiled_ && !native_) {
    native_ = backend->compile_loop(current_);
  }
}

namespace {

// Output `k` of a body's result (`count` outputs: None, the value itself, or a tuple); borrowed.
PyObject* output_of(PyObject* result, std::size_t count, std::size_t k) {
  if (count == 1) {
    return result;
  }
  return PyTuple_GET_ITEM(result, static_cast<Py_ssize_t>(k));
}

// Whether a step's result `r` (`count` outputs) is the previous step's, the very objects, and its
// carried outputs are its carried inputs (`argv`'s first ones): the step changed no value's
// identity, so skipping its graph call leaves every value as it would be.
bool same_values(const py::object& previous, PyObject* r, std::size_t count,
                 const std::vector<PyObject*>& argv, std::size_t ncarried) {
  if (!previous) {
    return false;
  }
  for (std::size_t k = 0; k < count; ++k) {
    const PyObject* out = output_of(r, count, k);
    if (out != output_of(previous.ptr(), count, k) || (k < ncarried && out != argv[k])) {
      return false;
    }
  }
  return true;
}

// The step's end told to its home's record (the step's result `r`, its carried inputs the first
// of `argv`): whether the steps left replay.
bool step_ended(StepRecord& record, const py::object& previous, PyObject* r, std::size_t nout,
                const std::vector<PyObject*>& argv, std::size_t ncarried) {
  std::vector<PyObject*> outputs(nout);
  for (std::size_t k = 0; k < nout; ++k) {
    outputs[k] = output_of(r, nout, k);
  }
  const std::vector<PyObject*> carried_in(argv.begin(),
                                          argv.begin() + static_cast<std::ptrdiff_t>(ncarried));
  return record.end(same_values(previous, r, nout, argv, ncarried), carried_in, outputs);
}

// The op's tuple of `nvalues` outputs: `carried` first where given (replays'), then the last
// step's result `held` (`nout` outputs), or the carried inputs where no step ran.
PyObject* loop_result(const py::object& held, const std::vector<PyObject*>& argv, std::size_t nout,
                      std::size_t nvalues, const std::vector<py::object>& carried) {
  PyObject* out = PyTuple_New(static_cast<Py_ssize_t>(nvalues));
  if (out == nullptr) {
    return nullptr;
  }
  for (std::size_t k = 0; k < nvalues; ++k) {
    PyObject* v = k < carried.size() ? carried[k].ptr()
                  : held             ? output_of(held.ptr(), nout, k)
                                     : argv[k];
    Py_INCREF(v);
    PyTuple_SET_ITEM(out, static_cast<Py_ssize_t>(k), v);
  }
  return out;
}

}  // namespace

namespace {

// Adds 1 to a count `home` (where not nullptr) keeps, through `count`, for the scope's life: the
// loop steps running, or the while loop steps that may run ahead.
class HomeCountScope {
 public:
  HomeCountScope(ValueHome* home, void (ValueHome::*count)(int)) : home_(home), count_(count) {
    if (home_ != nullptr) {
      (home_->*count_)(1);
    }
  }
  ~HomeCountScope() {
    if (home_ != nullptr) {
      (home_->*count_)(-1);
    }
  }
  HomeCountScope(const HomeCountScope&) = delete;
  HomeCountScope& operator=(const HomeCountScope&) = delete;
  HomeCountScope(HomeCountScope&&) = delete;
  HomeCountScope& operator=(HomeCountScope&&) = delete;

 private:
  ValueHome* home_;
  void (ValueHome::*count_)(int);
};

// Whether the tests `tests` (borrowed; their host forms where `home` holds them) let a while loop
// go on: each one's truth is its `go_on_if`. -1 with an error set when a truth raises.
int tests_go_on(ValueHome* home, PyObject* const* tests, const std::vector<bool>& go_on_if) {
  for (std::size_t k = 0; k < go_on_if.size(); ++k) {
    PyObject* test = home != nullptr ? home->host_form(tests[k]) : tests[k];
    if (test == nullptr) {
      return -1;
    }
    const int t = PyObject_IsTrue(test);
    if (home != nullptr) {
      Py_DECREF(test);
    }
    if (t < 0) {
      return -1;
    }
    if ((t == 1) != go_on_if[k]) {
      return 0;
    }
  }
  return 1;
}

}  // namespace

bool linear_in_int64(std::int64_t first, std::int64_t step, std::int64_t k, std::int64_t* out) {
  std::int64_t offset = 0;
  return !__builtin_mul_overflow(step, k, &offset) && !__builtin_add_overflow(first, offset, out);
}

namespace {

// first + step * k as a Python int (nullptr with an error set when not a 64-bit int: the capture
// makes no such loop op).
py::object step_value(std::int64_t first, std::int64_t step, std::int64_t k) {
  std::int64_t value = 0;
  if (!linear_in_int64(first, step, k, &value)) {
    PyErr_SetString(PyExc_SystemError, "a loop op's variable passed 64-bit ints");
    return {};
  }
  return py::reinterpret_steal<py::object>(PyLong_FromLongLong(value));
}

// The loop variable's and enumerate's values on step `step` into `argv` (kept alive by `index` and
// `counter`); false with an error set where one is not a 64-bit int.
bool set_counts(const LoopSpec& spec, std::int64_t start, std::int64_t step,
                std::vector<PyObject*>* argv, py::object* index, py::object* counter) {
  if (spec.index_input >= 0) {
    *index = step_value(start, spec.step, step);
    if (!*index) {
      return false;
    }
    (*argv)[static_cast<std::size_t>(spec.index_input)] = index->ptr();
  }
  if (spec.counter_input >= 0) {
    *counter = step_value(spec.counter_start, 1, step);
    if (!*counter) {
      return false;
    }
    (*argv)[static_cast<std::size_t>(spec.counter_input)] = counter->ptr();
  }
  return true;
}

// The first value and the number of steps of range(start, stop, step) (step > 0) from the op's
// arguments, Python ints of 64 bits (false with an error set for anything else).
bool runtime_trips(PyObject* start_arg, PyObject* stop_arg, std::int64_t step, std::int64_t* start,
                   std::int64_t* trips) {
  if (!PyLong_Check(start_arg) || !PyLong_Check(stop_arg) || step <= 0) {
    PyErr_SetString(PyExc_SystemError, "a loop op's range bounds are not ints");
    return false;
  }
  const long long first = PyLong_AsLongLong(start_arg);
  const long long stop = PyLong_AsLongLong(stop_arg);
  if (PyErr_Occurred() != nullptr) {
    return false;
  }
  *start = first;
  // (stop - first as unsigned: exact, the two being 64-bit ints with stop above first)
  const auto span = static_cast<unsigned long long>(stop) - static_cast<unsigned long long>(first);
  *trips =
      stop <= first
          ? 0
          : static_cast<std::int64_t>((span - 1ULL) / static_cast<unsigned long long>(step)) + 1;
  return true;
}

}  // namespace

PyObject* LoopBody::run(PyObject* const* args, std::size_t nargs) {
  if (!native_) {
    return run_steps(args, nargs);
  }
  // (where the native code gives up, the steps, as plain Python computes them)
  return run_routed(
      *native_, args, nargs, [](PyObject* tuple) { return tuple; },
      [&] { return run_steps(args, nargs); });
}

PyObject* LoopBody::run_steps(PyObject* const* args, std::size_t nargs) {
  if (!compiled_) {
    try {
      compile(find_backend("numpy"), false, [](ValueInfo info) { return info; });
    } catch (py::error_already_set& e) {
      e.restore();
      return nullptr;
    }
  }
  const bool is_while = spec_.trips < 0;
  const std::size_t ntests = spec_.step_go_on_if.size();
  const std::size_t nout = spec_.outputs.size();  // (the carried and last values, then the tests)
  nargs -= spec_.entry_go_on_if.size();
  std::int64_t trips = spec_.trips;
  std::int64_t start = spec_.start;
  if (spec_.runtime_bounds) {  // (the range's start and stop: the op's last two arguments)
    nargs -= 2;
    if (!runtime_trips(args[nargs], args[nargs + 1], spec_.step, &start, &trips)) {
      return nullptr;
    }
  }
  std::vector<PyObject*> argv(args, args + nargs);
  py::object index;    // the loop variable's value on this step
  py::object counter;  // and enumerate's count
  if (spec_.index_input >= 0) {
    argv.insert(argv.begin() + spec_.index_input, nullptr);
  }
  if (spec_.counter_input >= 0) {
    argv.insert(argv.begin() + spec_.counter_input, nullptr);
  }
  // (a counted loop's steps that repeat on the very same values: replayed by the home,
  // value_home.hpp)
  ValueHome* home = current_value_home();
  const HomeCountScope in_loop(home, &ValueHome::loop_steps);
  const HomeCountScope late(ahead_ok_ ? home : nullptr, &ValueHome::late_reads);
  int go_on = is_while ? tests_go_on(home, args + nargs, spec_.entry_go_on_if) : 1;
  py::object held;   // the last step's result: it owns the carried values in argv
  py::object ahead;  // the next step's result, run before this step's tests were read
  constexpr std::int64_t kFewest = 3;  // (two steps to compare, then one to replay)
  const std::unique_ptr<StepRecord> record =
      home != nullptr && !is_while && ntests == 0 && trips >= kFewest ? home->record_steps()
                                                                      : nullptr;
  bool replaying = false;
  for (std::int64_t step = 0; go_on == 1 && (is_while || step < trips); ++step) {
    if (replaying) {
      const std::int64_t done = record->replay(trips - step);
      if (done <= 0 || PyErr_CheckSignals() < 0) {
        return nullptr;
      }
      step += done - 1;  // (and the loop's own increment)
      continue;
    }
    if (!set_counts(spec_, start, step, &argv, &index, &counter)) {
      return nullptr;
    }
    if (record) {
      record->begin();
    }
    PyObject* r = ahead ? ahead.release().ptr()
                        : PyObject_Vectorcall(compiled_.ptr(), argv.data(), argv.size(), nullptr);
    if (r == nullptr) {
      return nullptr;
    }
    const py::object previous = std::move(held);
    held = py::reinterpret_steal<py::object>(r);
    if (nout > 1 && (!PyTuple_Check(r) || static_cast<std::size_t>(PyTuple_GET_SIZE(r)) != nout)) {
      PyErr_SetString(PyExc_SystemError, "a loop body returned the wrong number of values");
      return nullptr;
    }
    if (record) {
      replaying = step_ended(*record, previous, r, nout, argv, spec_.ncarried);
    }
    for (std::size_t k = 0; k < spec_.ncarried; ++k) {
      argv[k] = output_of(r, nout, k);
    }
    if (ntests > 0) {  // (a while loop's tests, or a `for` loop's exit test: loop_exits.cpp)
      go_on = step_tests(home, r, argv, &ahead);
    }
    if (go_on < 0 || PyErr_CheckSignals() < 0) {  // (a long loop stays interruptible)
      return nullptr;
    }
  }
  if (go_on < 0) {
    return nullptr;
  }
  // (replayed steps may leave the carried values in the blocks of other objects: the record's)
  return loop_result(held, argv, nout, nout - ntests,
                     replaying ? record->carried_after() : std::vector<py::object>{});
}

int LoopBody::step_tests(ValueHome* home, PyObject* r, const std::vector<PyObject*>& argv,
                         py::object* ahead) {
  const std::size_t ntests = spec_.step_go_on_if.size();
  const std::size_t nout = spec_.outputs.size();
  std::vector<PyObject*> tests(ntests);
  for (std::size_t k = 0; k < ntests; ++k) {
    tests[k] = output_of(r, nout, nout - ntests + k);
  }
  return ahead_ok_ && home != nullptr ? step_ahead(home, tests, argv, ahead)
                                      : tests_go_on(home, tests.data(), spec_.step_go_on_if);
}

int LoopBody::step_ahead(ValueHome* home, const std::vector<PyObject*>& tests,
                         const std::vector<PyObject*>& argv, py::object* ahead) {
  const auto decide = [&] { return tests_go_on(home, tests.data(), spec_.step_go_on_if); };
  if (!home->ahead_begin(tests, decide)) {
    return decide();
  }
  // The next step before the tests are read: the device runs it while the host waits for them.
  PyObject* next = PyObject_Vectorcall(compiled_.ptr(), argv.data(), argv.size(), nullptr);
  const int go_on = home->ahead_end();
  if (go_on != 1) {
    PyObject *type = nullptr, *value = nullptr, *trace = nullptr;
    PyErr_Fetch(&type, &value, &trace);
    Py_XDECREF(next);  // (a step the loop never reaches: nothing of it was seen)
    PyErr_Restore(type, value, trace);
    return go_on;
  }
  if (next == nullptr) {
    return -1;
  }
  *ahead = py::reinterpret_steal<py::object>(next);
  return 1;
}

std::string LoopBody::text(const std::string& indent) const {
  return indented(spec_.body.text(spec_.outputs), indent);
}

py::object make_loop_callable(LoopSpec spec) {
  return py::cast(std::make_shared<LoopBody>(std::move(spec)));
}

LoopBody* loop_body_of(const py::handle& fn) {
  if (!fn || !py::isinstance<LoopBody>(fn)) {
    return nullptr;
  }
  return fn.cast<LoopBody*>();
}

namespace {

// Which outputs of the op making `tuple` (`parts` of them) no op of `graph` reads: only
// `loop_output` ops of a constant index read one; any other use of the tuple reads them all.
std::vector<bool> unread_outputs(const Graph& graph, int tuple, int parts) {
  std::vector<bool> unread(static_cast<std::size_t>(std::max(parts, 0)), true);
  for (const Op& op : graph.ops()) {
    const bool by_index = op.name == "loop_output" && op.args.size() == 2 &&
                          op.args[0].kind == Arg::Kind::kValue && op.args[0].value == tuple &&
                          op.args[1].kind == Arg::Kind::kConst &&
                          py::isinstance<py::int_>(op.args[1].constant) && op.kwargs.empty();
    const long k = by_index ? op.args[1].constant.cast<long>() : -1;
    if (k >= 0 && k < static_cast<long>(unread.size())) {
      unread[static_cast<std::size_t>(k)] = false;
      continue;
    }
    bool reads = false;
    for_each_value(op, [&](int v) { reads = reads || v == tuple; });
    if (reads) {
      return {};  // (read otherwise: all of them)
    }
  }
  return unread;
}

}  // namespace

void compile_loops(const Graph& graph, Backend* backend, bool check,
                   const std::function<ValueInfo(ValueInfo)>& current, bool native) {
  for (const Op& op : graph.ops()) {
    if (LoopBody* body = op.name == "loop" ? loop_body_of(op.fn) : nullptr) {
      body->compile(backend, check, current,
                    unread_outputs(graph, op.result, graph.value(op.result).info.parts), native);
    } else if (CondBody* cond = op.name == "cond" ? cond_body_of(op.fn) : nullptr) {
      cond->compile(backend, check, current);
    }
  }
}

void compile_native_loops(const Graph& graph, Backend* backend) {
  for (const Op& op : graph.ops()) {
    if (LoopBody* body = op.name == "loop" ? loop_body_of(op.fn) : nullptr) {
      body->compile_native(backend);
    }
  }
}

LoopSpec graph_as_step(const Graph& graph, const std::vector<int>& outputs) {
  LoopSpec spec;
  spec.body = graph;
  spec.outputs = outputs;
  spec.trips = 1;
  spec.whole_graph = true;
  return spec;
}

void bind_loop_type(py::module_& m) {
  py::class_<LoopBody, SubgraphOp, std::shared_ptr<LoopBody>>(
      m, "LoopBody", "The body of a loop op: its graph, run once per step.")
      .def_property_readonly("trips", [](const LoopBody& body) { return body.spec().trips; })
      .def_property_readonly("carried", [](const LoopBody& body) { return body.spec().ncarried; })
      .def_property_readonly("ops",
                             [](const LoopBody& body) { return body.spec().body.ops().size(); })
      .def_property_readonly(
          "native",
          [](const LoopBody& body) -> py::object {
            const std::shared_ptr<LoopCode>& n = body.native();
            if (!n) {
              return py::none();
            }
            py::dict d;
            d["status"] = n->status();
            d["ready"] = n->ready();
            d["runs"] = n->runs();
            d["gave_up"] = n->gave_up();
            return std::move(d);
          },
          "The whole loop as native code (the cpu backend's tier C): its status, whether it "
          "runs, how many runs it made and how many times it gave up; None when the backend has "
          "none.")
      .def("__repr__", [](const LoopBody& body) {
        const std::int64_t trips = body.spec().trips;
        const std::string steps = body.spec().runtime_bounds ? "a range's steps"
                                  : trips < 0                ? std::string("while")
                                                             : std::to_string(trips) + " steps";
        return "<sot loop body: " + steps + ", " + std::to_string(body.spec().body.ops().size()) +
               " ops>";
      });
}

}  // namespace sot::graph
