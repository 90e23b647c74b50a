// The op-by-op program of a graph, its run-time frame, and the compiled-graph Python type.
#include "graph/exec/program.hpp"

#include <structmember.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/loaded_module.hpp"
#include "graph/ir/subgraph.hpp"
#include "graph/rules/ufuncs.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

// Arrays below this size are not reused (NumPy's own threshold for eliding temporaries): small
// results keep the memory layout eager NumPy gives them.
constexpr Py_ssize_t kMinReuseBytes = Py_ssize_t{256} * 1024;

// True when `a` may receive a ufunc's result: an exact ndarray owning its data that only the
// program's value table references (so no view of it and no user variable can see the write).
bool reusable(const Program& p, PyObject* a) {
  if (Py_TYPE(a) != reinterpret_cast<PyTypeObject*>(p.ndarray.ptr()) || Py_REFCNT(a) != 1) {
    return false;
  }
  PyObject* base = PyObject_GetAttrString(a, "base");
  PyObject* nbytes = PyObject_GetAttrString(a, "nbytes");
  const bool ok =
      base == Py_None && nbytes != nullptr && PyLong_AsSsize_t(nbytes) >= kMinReuseBytes;
  Py_XDECREF(base);
  Py_XDECREF(nbytes);
  PyErr_Clear();
  return ok;
}

// Calls step `s` with `args`, its result written into the reusable argument when there is one.
PyObject* call_step(const Program& p, const Program::Step& s, std::vector<PyObject*>& args) {
  if (s.reuse >= 0 && reusable(p, args[static_cast<std::size_t>(s.reuse)])) {
    args.push_back(args[static_cast<std::size_t>(s.reuse)]);
    PyObject* r = PyObject_Vectorcall(s.reuse_fn.ptr(), args.data(), s.nargs, p.out_kwnames.ptr());
    args.pop_back();
    return r;
  }
  return PyObject_Vectorcall(s.fn.ptr(), args.data(), s.nargs,
                             s.kwnames.is_none() ? nullptr : s.kwnames.ptr());
}

// Raises AssertionError when `r` is not what the graph said op `s` makes (`home`: where arrays may
// live off the host).
bool check_result(const Program::Step& s, PyObject* r, ValueHome* home) {
  if (s.info.python != 0) {
    if (s.info.python == 'i'   ? PyLong_CheckExact(r)
        : s.info.python == 'f' ? PyFloat_CheckExact(r)
        : s.info.python == 'b' ? PyBool_Check(r)
        : s.info.python == 'l' ? PyList_CheckExact(r)
                               : PyUnicode_CheckExact(r)) {
      return true;
    }
    PyErr_Format(PyExc_AssertionError, "graph op %s said %s, NumPy made %s", s.text.c_str(),
                 s.info.text().c_str(), Py_TYPE(r)->tp_name);
    return false;
  }
  if (s.info.is_tuple()) {
    if (PyTuple_Check(r) && PyTuple_GET_SIZE(r) == s.info.parts) {
      return true;
    }
    PyErr_Format(PyExc_AssertionError, "graph op %s said %s, NumPy made %s", s.text.c_str(),
                 s.info.text().c_str(), Py_TYPE(r)->tp_name);
    return false;
  }
  const bool is_array =
      std::string(Py_TYPE(r)->tp_name) == "numpy.ndarray" || (home != nullptr && home->holds(r));
  std::string problem;
  if (is_array == s.info.scalar) {
    problem = is_array ? "an array, not a scalar" : "a scalar, not an array";
  }
  PyObject* dtype = PyObject_GetAttrString(r, "dtype");
  PyObject* dname = dtype != nullptr ? PyObject_GetAttrString(dtype, "name") : nullptr;
  Py_XDECREF(dtype);
  if (dname == nullptr) {
    return false;
  }
  const std::string got(PyUnicode_AsUTF8(dname));
  Py_DECREF(dname);
  if (got != name(s.info.dtype)) {
    problem += " dtype " + got;
  }
  PyObject* shape = PyObject_GetAttrString(r, "shape");
  if (shape == nullptr) {
    return false;
  }
  const Py_ssize_t nd = PyTuple_GET_SIZE(shape);
  bool same = nd == static_cast<Py_ssize_t>(s.info.shape.size());
  for (Py_ssize_t d = 0; same && d < nd; ++d) {
    const auto dim = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, d));
    same = dim == s.info.shape[static_cast<std::size_t>(d)] ||
           (static_cast<std::size_t>(d) < s.info.symbols.size() &&
            s.info.symbols[static_cast<std::size_t>(d)] >= 0);
  }
  if (!same) {
    PyObject* repr = PyObject_Repr(shape);
    problem += std::string(" shape ") + (repr != nullptr ? PyUnicode_AsUTF8(repr) : "?");
    Py_XDECREF(repr);
  }
  Py_DECREF(shape);
  if (problem.empty()) {
    return true;
  }
  PyErr_Format(PyExc_AssertionError, "graph op %s said %s, NumPy made%s", s.text.c_str(),
               s.info.text().c_str(), problem.c_str());
  return false;
}

std::string arg_text(const Program::Slot& s) {
  if (s.kind == Arg::Kind::kValue) {
    return "%" + std::to_string(s.value);
  }
  if (s.kind == Arg::Kind::kConst) {
    return py::repr(s.constant).cast<std::string>();
  }
  return "[...]";
}

// True when a result of `info` is known to be below the reuse threshold (all sizes static).
bool known_small(const ValueInfo& info) {
  Py_ssize_t bytes = itemsize(info.dtype);
  for (std::size_t d = 0; d < info.shape.size(); ++d) {
    if (d < info.symbols.size() && info.symbols[d] >= 0) {
      return false;  // a dynamic size: decided at run time
    }
    bytes *= static_cast<Py_ssize_t>(info.shape[d]);
  }
  return bytes < kMinReuseBytes;
}

bool same_layout(const ValueInfo& a, const ValueInfo& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.symbols == b.symbols && !a.scalar &&
         !b.scalar;
}

// For each step that calls a one-output elementwise ufunc (or its operator) with positional
// arguments only and makes an array (not a scalar, not 0-d): the first argument that dies at this
// step, was made by a step that neither changed an array in place nor may return a view, and has
// the result's dtype and shape.
void choose_reuse(const Graph& graph, const std::vector<int>& last_use, Program& program) {
  const py::module_ numpy = loaded_module("numpy");
  program.ndarray = numpy.attr("ndarray");
  program.out_kwnames = py::make_tuple("out");
  for (std::size_t k = 0; k < program.steps.size(); ++k) {
    Program::Step& s = program.steps[k];
    if (!s.kwnames.is_none() || s.mutates || s.info.scalar || s.info.shape.empty() ||
        known_small(s.info)) {
      continue;
    }
    py::object fn = ufunc_of(graph.ops()[k], numpy);
    if (fn.is_none() || !fn.attr("signature").is_none() || fn.attr("nout").cast<int>() != 1 ||
        fn.attr("nin").cast<std::size_t>() != s.nargs) {
      continue;
    }
    s.reuse_fn = fn;
    for (std::size_t a = 0; a < s.nargs && s.reuse < 0; ++a) {
      const Program::Slot& slot = s.args[a];
      if (slot.kind != Arg::Kind::kValue ||
          last_use[static_cast<std::size_t>(slot.value)] != static_cast<int>(k)) {
        continue;
      }
      const Value& v = graph.value(slot.value);
      if (v.source != Value::Source::kOp || graph.ops()[static_cast<std::size_t>(v.op)].view ||
          graph.ops()[static_cast<std::size_t>(v.op)].mutates || !same_layout(v.info, s.info)) {
        continue;
      }
      s.reuse = static_cast<int>(a);
    }
  }
}

Program::Slot slot_of(const Arg& a) {
  Program::Slot s;
  s.kind = a.kind;
  s.value = a.value;
  s.values = a.values;
  s.constant = a.constant;
  return s;
}

Program::Step make_step(const Graph& graph, const Op& op) {
  Program::Step s;
  s.fn = op.fn;
  for (const Arg& a : op.args) {
    s.args.push_back(slot_of(a));
  }
  s.nargs = s.args.size();
  if (op.kwargs.empty()) {
    s.kwnames = py::none();
  } else {
    py::tuple names(op.kwargs.size());
    for (std::size_t k = 0; k < op.kwargs.size(); ++k) {
      names[k] = py::str(op.kwargs[k].first);
      s.args.push_back(slot_of(op.kwargs[k].second));
    }
    s.kwnames = names;
  }
  s.result = op.result;
  s.mutates = op.mutates;
  s.writes_first = op.mutates && op.kwargs.empty() && subgraph_of(op.fn) == nullptr;
  s.info = graph.value(op.result).info;
  s.text = "%" + std::to_string(op.result) + " = " + op.name + "(";
  for (std::size_t k = 0; k < s.args.size(); ++k) {
    s.text += (k > 0 ? ", " : "") + arg_text(s.args[k]);
  }
  s.text += ")";
  return s;
}

// The last step that reads each value (outputs: -2, never released before the end).
std::vector<int> last_uses(const Program& p, const std::vector<int>& outputs) {
  std::vector<int> last_use(p.nvalues, -1);
  for (std::size_t k = 0; k < p.steps.size(); ++k) {
    const Program::Step& st = p.steps[k];
    auto& own = last_use[static_cast<std::size_t>(st.result)];
    own = std::max(own, static_cast<int>(k));
    for (const Program::Slot& a : st.args) {
      if (a.kind == Arg::Kind::kValue) {
        last_use[static_cast<std::size_t>(a.value)] = static_cast<int>(k);
      }
      for (const int v : a.values) {
        last_use[static_cast<std::size_t>(v)] = static_cast<int>(k);
      }
    }
  }
  for (const int o : outputs) {
    last_use[static_cast<std::size_t>(o)] = -2;
  }
  return last_use;
}

}  // namespace

std::unique_ptr<Program> build_program(const Graph& graph, const std::vector<int>& outputs,
                                       bool check) {
  auto program = std::make_unique<Program>();
  program->nvalues = graph.values().size();
  program->inputs = graph.inputs();
  program->check = check;
  program->outputs = outputs;
  for (std::size_t i = 0; i < graph.values().size(); ++i) {
    const Value& v = graph.values()[i];
    if (v.source == Value::Source::kConst) {
      program->constants.emplace_back(static_cast<int>(i), v.constant);
    }
  }
  for (const int o : outputs) {
    const Value& v = graph.value(o);
    program->copy_output.push_back(v.source == Value::Source::kConst &&
                                   std::string(Py_TYPE(v.constant.ptr())->tp_name) ==
                                       "numpy.ndarray");
  }
  for (const Op& op : graph.ops()) {
    program->steps.push_back(make_step(graph, op));
  }
  program->last_use = last_uses(*program, outputs);
  choose_reuse(graph, program->last_use, *program);
  for (std::size_t v = 0; v < graph.values().size(); ++v) {
    const Value& val = graph.values()[v];
    const int last = program->last_use[v];
    if (val.source == Value::Source::kOp && last >= 0) {
      program->steps[static_cast<std::size_t>(last)].release.push_back(static_cast<int>(v));
    }
  }
  return program;
}

bool check_input_count(const Program& program, std::size_t nargs) {
  if (nargs != program.inputs.size()) {
    PyErr_Format(PyExc_TypeError, "a compiled graph takes %zu inputs, got %zu",
                 program.inputs.size(), nargs);
    return false;
  }
  return true;
}

namespace {

// The calling thread's Frame tables not in use (cleared: they hold no reference, so the thread's
// exit frees them without the GIL). A nested run (a loop body's steps) takes another.
std::vector<std::unique_ptr<Frame::Tables>>& spare_tables() {
  thread_local std::vector<std::unique_ptr<Frame::Tables>> spares;
  return spares;
}

}  // namespace

std::unique_ptr<Frame::Tables> Frame::take_tables() {
  std::vector<std::unique_ptr<Tables>>& spares = spare_tables();
  if (spares.empty()) {
    return std::make_unique<Tables>();
  }
  std::unique_ptr<Tables> t = std::move(spares.back());
  spares.pop_back();
  return t;
}

void Frame::give_tables(std::unique_ptr<Tables> tables) {
  constexpr std::size_t kMaxSpares = 8;
  tables->slots.clear();
  tables->owned.clear();
  tables->args.clear();
  std::vector<std::unique_ptr<Tables>>& spares = spare_tables();
  if (spares.size() < kMaxSpares) {
    spares.push_back(std::move(tables));
  }
}

Frame::Frame(const Program& program, PyObject* const* argv)
    : p_(program),
      tables_(take_tables()),
      slots_(tables_->slots),
      owned_(tables_->owned),
      args_(tables_->args),
      home_(current_value_home()) {
  slots_.assign(program.nvalues, nullptr);
  owned_.assign(program.nvalues, 0);
  for (std::size_t i = 0; i < p_.inputs.size(); ++i) {
    slots_[static_cast<std::size_t>(p_.inputs[i])] = argv[i];
  }
  for (const auto& [id, c] : p_.constants) {
    slots_[static_cast<std::size_t>(id)] = c.ptr();
  }
}

Frame::~Frame() {
  // A step that raised leaves its error set: releasing the values (deallocations, the buffer
  // pool's first look-up of numpy.ndarray) must neither see nor clear it.
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (owned_[i] != 0) {
      release(slots_[i]);
    }
  }
  PyErr_Restore(type, value, tb);
  give_tables(std::move(tables_));
}

void Frame::release(PyObject* value) {
  if (pool_ != nullptr) {
    pool_->give(value);
  } else {
    Py_DECREF(value);
  }
}

void Frame::set_owned(int id, PyObject* value) {
  const auto i = static_cast<std::size_t>(id);
  if (owned_[i] != 0) {
    Py_DECREF(slots_[i]);
  }
  slots_[i] = value;
  owned_[i] = 1;
  if (lived_ != nullptr) {
    note_home(i);
  }
}

void Frame::note_home(std::size_t i) {
  if (slots_[i] != nullptr && i < lived_->size()) {
    (*lived_)[i] = home_ != nullptr && home_->holds(slots_[i]) ? 1 : 2;
  }
}

void Frame::note_homes(std::vector<unsigned char>* lived) {
  lived_ = lived;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    note_home(i);
  }
}

void Frame::release_after(std::size_t k) {
  for (const int dead : p_.steps[k].release) {
    const auto d = static_cast<std::size_t>(dead);
    if (owned_[d] != 0) {
      release(slots_[d]);
      slots_[d] = nullptr;
      owned_[d] = 0;
    }
  }
}

namespace {

// A list or tuple argument, made of the frame's values (a new reference); `home`, when given,
// gives each value's host form.
PyObject* make_sequence(const Program::Slot& slot, const Frame& frame, ValueHome* home) {
  const auto n = static_cast<Py_ssize_t>(slot.values.size());
  const bool list = slot.kind == Arg::Kind::kList;
  PyObject* seq = list ? PyList_New(n) : PyTuple_New(n);
  if (seq == nullptr) {
    return nullptr;
  }
  for (Py_ssize_t k = 0; k < n; ++k) {
    PyObject* item = frame.get(slot.values[static_cast<std::size_t>(k)]);
    if (home != nullptr) {
      item = home->host_form(item);
      if (item == nullptr) {
        Py_DECREF(seq);
        return nullptr;
      }
    } else {
      Py_INCREF(item);
    }
    if (list) {
      PyList_SET_ITEM(seq, k, item);
    } else {
      PyTuple_SET_ITEM(seq, k, item);
    }
  }
  return seq;
}

// Whether every argument is None or a Python bool, int, float or complex (exactly: no subclass,
// no NumPy scalar, which may warn).
bool python_scalars_only(const std::vector<PyObject*>& args) {
  return std::all_of(args.begin(), args.end(), is_python_scalar);
}

// Whether `fn` is a NumPy ufunc or one of the operator module's arithmetic or comparison
// functions (the graph's binary and unary operators).
bool is_number_function(PyObject* fn) {
  static PyObject* const ufunc = py::object(loaded_module("numpy").attr("ufunc")).release().ptr();
  static const std::vector<PyObject*> operators = [] {
    std::vector<PyObject*> t;
    const py::module_ op = loaded_module("operator");
    for (const char* name : {"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "neg", "pos",
                             "abs", "lt", "le", "gt", "ge", "eq", "ne"}) {
      t.push_back(py::object(op.attr(name)).release().ptr());
    }
    return t;
  }();
  return PyObject_TypeCheck(fn, reinterpret_cast<PyTypeObject*>(ufunc)) != 0 ||
         std::find(operators.begin(), operators.end(), fn) != operators.end();
}

// Whether `s` calls a ufunc or an operator on Python numbers and NumPy floating scalars alone,
// with no keywords (`sqrt(err)`, `err > tol`: err a full reduction's result).
bool scalar_number_step(const Program::Step& s, const std::vector<PyObject*>& args) {
  if (!s.kwnames.is_none() || !is_number_function(s.fn.ptr())) {
    return false;
  }
  return std::all_of(args.begin(), args.end(),
                     [](PyObject* a) { return is_python_scalar(a) || is_numpy_float(a); });
}

// The step called under errstate(all="raise"): its result where NumPy flagged no floating-point
// error (the result the caller's error state gives too, and no warning), else nullptr with no
// error set (whatever it raised).
PyObject* call_flagless(const Program& p, const Program::Step& s, std::vector<PyObject*>& args) {
  return call_unflagged([&] { return call_step(p, s, args); });
}

}  // namespace

bool is_python_scalar(PyObject* a) {
  return a == Py_None || PyBool_Check(a) || PyLong_CheckExact(a) || PyFloat_CheckExact(a) ||
         PyComplex_CheckExact(a);
}

// Whether `a` is a NumPy scalar of a floating type (immutable, no array: nothing a home holds or an
// array could alias; its arithmetic's only warnings are floating-point errors, which NumPy's error
// state raises: NumPy's integer scalars may warn of other things, and are left out).
bool is_numpy_float(PyObject* a) {
  static PyObject* const floating =
      py::object(loaded_module("numpy").attr("floating")).release().ptr();
  return PyObject_TypeCheck(a, reinterpret_cast<PyTypeObject*>(floating)) != 0;
}

PyObject* call_unflagged(const std::function<PyObject*()>& call) {
  try {
    static const py::object errstate = loaded_module("numpy").attr("errstate");
    py::object state = errstate(py::arg("all") = "raise");
    state.attr("__enter__")();
    PyObject* r = call();
    PyObject *type = nullptr, *value = nullptr, *trace = nullptr;
    PyErr_Fetch(&type, &value, &trace);
    state.attr("__exit__")(py::none(), py::none(), py::none());
    Py_XDECREF(type), Py_XDECREF(value), Py_XDECREF(trace);
    return r;
  } catch (py::error_already_set&) {
    return nullptr;  // (the error cleared with the exception object)
  }
}

bool Frame::reuses_in_place(std::size_t k) const {
  const Program::Step& s = p_.steps[k];
  if (s.reuse < 0) {
    return false;
  }
  const Program::Slot& slot = s.args[static_cast<std::size_t>(s.reuse)];
  return slot.kind == Arg::Kind::kValue && reusable(p_, get(slot.value));
}

ValueHome* Frame::home_for(const Program::Step& s) const {
  if (home_ == nullptr) {
    return nullptr;
  }
  const Program::Slot* first = s.args.empty() ? nullptr : &s.args[0];
  PyObject* first_value =
      first != nullptr && first->kind == Arg::Kind::kValue ? get(first->value) : nullptr;
  return home_->takes_as_is(s.fn.ptr(), first_value) ? nullptr : home_;
}

int Frame::run_in_home(std::size_t k, ValueHome* home, bool release) {
  const Program::Step& s = p_.steps[k];
  // (the steps a home runs: a product of two values, an einsum of a subscripts string and two, a
  // reduction with its axis and keepdims, a join of a list of values and its axis)
  constexpr std::size_t kMost = 4;
  if (s.args.size() > kMost) {
    return 0;
  }
  PyObject* argv[kMost] = {};
  py::object sequences[kMost];  // (a list or tuple of the home's values as they are)
  for (std::size_t a = 0; a < s.args.size(); ++a) {
    const Program::Slot& slot = s.args[a];
    if (slot.kind == Arg::Kind::kList || slot.kind == Arg::Kind::kTuple) {
      sequences[a] = py::reinterpret_steal<py::object>(make_sequence(slot, *this, nullptr));
      if (!sequences[a]) {
        return -1;
      }
      argv[a] = sequences[a].ptr();
      continue;
    }
    if (slot.kind != Arg::Kind::kValue && slot.kind != Arg::Kind::kConst) {
      return 0;
    }
    argv[a] = slot.kind == Arg::Kind::kValue ? get(slot.value) : slot.constant.ptr();
  }
  PyObject* r =
      home->try_run(s.fn.ptr(), argv, s.nargs, s.kwnames.is_none() ? nullptr : s.kwnames.ptr());
  if (r == nullptr) {
    return PyErr_Occurred() != nullptr ? -1 : 0;
  }
  set_owned(s.result, r);
  if (p_.check && !check_result(s, r, home_)) {
    return -1;
  }
  if (release) {
    release_after(k);
  }
  return 1;
}

int Frame::defer_in_home(std::size_t k, ValueHome* home, bool release) {
  const Program::Step& s = p_.steps[k];
  constexpr std::size_t kMost = 3;  // (the ufuncs and operators of numbers take at most three)
  if (s.args.size() > kMost) {
    return 0;
  }
  PyObject* argv[kMost] = {};
  for (std::size_t a = 0; a < s.args.size(); ++a) {
    const Program::Slot& slot = s.args[a];
    if (slot.kind != Arg::Kind::kValue && slot.kind != Arg::Kind::kConst) {
      return 0;
    }
    argv[a] = slot.kind == Arg::Kind::kValue ? get(slot.value) : slot.constant.ptr();
  }
  PyObject* r = home->defer(s.fn.ptr(), argv, s.args.size());
  if (r == nullptr) {
    return PyErr_Occurred() != nullptr ? -1 : 0;
  }
  set_owned(s.result, r);
  if (release) {
    release_after(k);
  }
  return 1;
}

bool Frame::gather(const Program::Step& s, ValueHome* home, std::vector<PyObject*>* temps) {
  args_.assign(s.args.size(), nullptr);
  for (std::size_t a = 0; a < s.args.size(); ++a) {
    const Program::Slot& slot = s.args[a];
    if (slot.kind == Arg::Kind::kConst) {
      args_[a] = slot.constant.ptr();
      continue;
    }
    if (slot.kind == Arg::Kind::kValue) {
      if (home == nullptr) {  // (as they are: a late value as its value, value_home.hpp)
        args_[a] = home_ != nullptr ? home_->settled(get(slot.value)) : get(slot.value);
        if (args_[a] == nullptr) {
          return false;
        }
        continue;
      }
      args_[a] = home->host_form(get(slot.value));
    } else {
      args_[a] = make_sequence(slot, *this, home);
    }
    if (args_[a] == nullptr) {
      return false;
    }
    temps->push_back(args_[a]);
  }
  return true;
}

bool Frame::run_step(std::size_t k, bool release) {
  const Program::Step& s = p_.steps[k];
  // A step on the host reads its values' host forms; one that takes the home's values as they are
  // (a loop op) gets them unchanged, and the home may run one itself (a product on the device).
  ValueHome* home = home_for(s);
  if (home != nullptr && !s.mutates && s.kwnames.is_none() && is_number_function(s.fn.ptr())) {
    // (a scalar step on values the home gives late, `err > tol` in a while loop's body: kept by
    // the home to run when its value is needed, value_home.hpp)
    const int kept = defer_in_home(k, home, release);
    if (kept != 0) {
      return kept > 0;
    }
  }
  if (home != nullptr) {
    const int ran = run_in_home(k, home, release);
    if (ran != 0) {
      return ran > 0;
    }
  }
  std::vector<PyObject*> temps;
  PyObject* r = nullptr;
  if (!gather(s, home, &temps)) {
    // (r stays nullptr, the error set)
  } else if (home != nullptr && !s.mutates && python_scalars_only(args_)) {
    // Python numbers alone (a loop variable times a constant): nothing the home holds or an array
    // could alias is read, nothing is changed, and no NumPy warning is given, so the home need not
    // make the host current first (nor its device work wait).
    const ValueHomeScope host(nullptr);
    r = call_step(p_, s, args_);
  } else if (home != nullptr && !s.mutates && scalar_number_step(s, args_)) {
    // NumPy scalars (`sqrt(err)`, `err > tol`): run as they are where NumPy flags no error (then
    // the step changed nothing, read no array and warned of nothing); else as a host step.
    {
      const ValueHomeScope host(nullptr);
      r = call_flagless(p_, s, args_);
    }
    if (r == nullptr && home->before_host_step()) {
      const ValueHomeScope host(nullptr);
      r = call_step(p_, s, args_);
      home->after_host_step(false);
    }
  } else if (home == nullptr || home->before_host_step()) {
    if (home != nullptr) {
      const ValueHomeScope host(nullptr);  // (what the step calls sees host values only)
      r = call_step(p_, s, args_);
      home->after_host_step(s.mutates || !s.kwnames.is_none(),
                            s.writes_first && !args_.empty() ? args_[0] : nullptr);
    } else {
      r = call_step(p_, s, args_);
    }
  }
  if (r != nullptr && s.mutates && r == Py_None) {
    // The result is the changed array itself: setitem returns None (iadd returns the array, a
    // ufunc given out= its out array).
    Py_DECREF(r);
    r = args_[0];
    Py_INCREF(r);
  }
  for (PyObject* t : temps) {
    Py_DECREF(t);
  }
  if (r == nullptr) {
    return false;
  }
  set_owned(s.result, r);
  if (p_.check && !check_result(s, r, home_)) {
    return false;
  }
  if (release) {
    release_after(k);
  }
  return true;
}

PyObject* Frame::outputs() {
  auto output = [&](std::size_t i) -> PyObject* {
    PyObject* v = get(p_.outputs[i]);
    if (p_.copy_output[i]) {
      return PyObject_CallMethod(v, "copy", nullptr);
    }
    Py_INCREF(v);
    return v;
  };
  if (p_.outputs.empty()) {
    Py_RETURN_NONE;
  }
  if (p_.outputs.size() == 1) {
    return output(0);
  }
  PyObject* out = PyTuple_New(static_cast<Py_ssize_t>(p_.outputs.size()));
  for (std::size_t i = 0; out != nullptr && i < p_.outputs.size(); ++i) {
    PyObject* v = output(i);
    if (v == nullptr) {
      Py_CLEAR(out);
      break;
    }
    PyTuple_SET_ITEM(out, static_cast<Py_ssize_t>(i), v);
  }
  return out;
}

namespace {

struct CompiledGraphObject {
  PyObject_HEAD Runner* runner;
  vectorcallfunc vectorcall;
};

PyObject* compiled_vectorcall(PyObject* self, PyObject* const* args, std::size_t nargsf,
                              PyObject* kwnames) {
  if (kwnames != nullptr && PyTuple_GET_SIZE(kwnames) > 0) {
    PyErr_SetString(PyExc_TypeError, "a compiled graph takes no keyword arguments");
    return nullptr;
  }
  auto* obj = reinterpret_cast<CompiledGraphObject*>(self);
  return obj->runner->run(args, PyVectorcall_NARGS(nargsf));
}

void compiled_dealloc(PyObject* self) {
  auto* obj = reinterpret_cast<CompiledGraphObject*>(self);
  delete obj->runner;
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);
}

PyObject* compiled_repr(PyObject* self) {
  const auto* obj = reinterpret_cast<CompiledGraphObject*>(self);
  return PyUnicode_FromString(obj->runner->repr().c_str());
}

PyObject* compiled_plan(PyObject* self, PyObject* /*unused*/) {
  const auto* obj = reinterpret_cast<CompiledGraphObject*>(self);
  try {
    return obj->runner->plan().release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  }
}

PyMemberDef compiled_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET,
     static_cast<Py_ssize_t>(offsetof(CompiledGraphObject, vectorcall)), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

PyMethodDef compiled_methods[] = {
    {"plan", compiled_plan, METH_NOARGS,
     "How the backend runs the graph: for the CPU backend its fusion groups, their kernels, the "
     "tier that ran each and (with profiling on) the time spent in each."},
    {nullptr, nullptr, 0, nullptr},
};

PyTypeObject* compiled_type() {
  static PyTypeObject* type = [] {
    PyType_Slot slots[] = {
        {Py_tp_dealloc, reinterpret_cast<void*>(compiled_dealloc)},
        {Py_tp_repr, reinterpret_cast<void*>(compiled_repr)},
        {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
        {Py_tp_members, static_cast<void*>(compiled_members)},
        {Py_tp_methods, static_cast<void*>(compiled_methods)},
        {0, nullptr},
    };
    PyType_Spec spec = {"sot.CompiledGraph", sizeof(CompiledGraphObject), 0,
                        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL, slots};
    PyObject* t = PyType_FromSpec(&spec);
    if (t == nullptr) {
      throw py::error_already_set();
    }
    return reinterpret_cast<PyTypeObject*>(t);  // kept for the life of the process
  }();
  return type;
}

}  // namespace

py::object make_compiled(std::unique_ptr<Runner> runner) {
  PyTypeObject* type = compiled_type();
  auto* obj = PyObject_New(CompiledGraphObject, type);
  if (obj == nullptr) {
    throw py::error_already_set();
  }
  obj->runner = runner.release();
  obj->vectorcall = compiled_vectorcall;
  return py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(obj));
}

}  // namespace sot::graph
