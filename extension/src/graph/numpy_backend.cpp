// The NumPy reference backend: a compiled graph is a list of vectorcalls (the op's function with
// its arguments taken from a table of values), run in order by a small C type.
#include <pybind11/pybind11.h>
#include <structmember.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/loaded_module.hpp"
#include "graph/backend.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

struct Program {
  struct Slot {  // one argument: a value's id, a list/tuple of ids, or a constant
    Arg::Kind kind = Arg::Kind::kConst;
    int value = -1;
    std::vector<int> values;
    py::object constant;
  };
  struct Step {
    py::object fn;
    std::vector<Slot> args;  // positional, then keyword values
    std::size_t nargs = 0;
    py::object kwnames;  // tuple or None
    int result = -1;
    bool mutates = false;
    std::string text;  // "%3 = add(%1, %2)" for messages
    ValueInfo info;
    std::vector<int>
        release;  // results no later step (nor the outputs) needs: freed after this one
    // A ufunc step may write its result into an argument's array, as eager NumPy's elision of
    // temporaries does: the position of a dead intermediate of the result's dtype and shape (-1:
    // none). Used only when, at run time, nothing else holds that array (see reusable()).
    int reuse = -1;
    py::object reuse_fn;  // the ufunc that computes the step with `out=`
  };
  std::size_t nvalues = 0;
  std::vector<int> inputs;
  std::vector<std::pair<int, py::object>> constants;
  std::vector<Step> steps;
  std::vector<int> outputs;
  std::vector<bool> copy_output;  // an array constant returned: a fresh copy each call
  bool check = false;
  std::string name;        // for repr
  py::object ndarray;      // numpy.ndarray
  py::object out_kwnames;  // ("out",)
};

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

struct CompiledGraphObject {
  PyObject_HEAD Program* program;
  vectorcallfunc vectorcall;
};

// Raises AssertionError when `r` is not what the graph said op `s` makes.
bool check_result(const Program::Step& s, PyObject* r) {
  const bool is_array = std::string(Py_TYPE(r)->tp_name) == "numpy.ndarray";
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

PyObject* run_program(const Program& p, PyObject* const* argv, std::size_t nargs) {
  if (nargs != p.inputs.size()) {
    PyErr_Format(PyExc_TypeError, "a compiled graph takes %zu inputs, got %zu", p.inputs.size(),
                 nargs);
    return nullptr;
  }
  // Inputs and constants are borrowed; results are owned, and freed as soon as nothing needs them
  // (as eager NumPy frees temporaries: large intermediates do not pile up).
  std::vector<PyObject*> slots(p.nvalues, nullptr);
  std::vector<bool> owned(p.nvalues, false);
  auto release = [&] {
    for (std::size_t i = 0; i < slots.size(); ++i) {
      if (owned[i]) {
        Py_DECREF(slots[i]);
      }
    }
  };
  for (std::size_t i = 0; i < nargs; ++i) {
    slots[static_cast<std::size_t>(p.inputs[i])] = argv[i];
  }
  for (const auto& [id, c] : p.constants) {
    slots[static_cast<std::size_t>(id)] = c.ptr();
  }
  std::vector<PyObject*> args;
  std::vector<PyObject*> temps;
  for (const Program::Step& s : p.steps) {
    args.assign(s.args.size(), nullptr);
    temps.clear();
    bool failed = false;
    for (std::size_t a = 0; a < s.args.size(); ++a) {
      const Program::Slot& slot = s.args[a];
      switch (slot.kind) {
        case Arg::Kind::kValue:
          args[a] = slots[static_cast<std::size_t>(slot.value)];
          break;
        case Arg::Kind::kConst:
          args[a] = slot.constant.ptr();
          break;
        case Arg::Kind::kList:
        case Arg::Kind::kTuple: {
          const auto n = static_cast<Py_ssize_t>(slot.values.size());
          PyObject* seq = slot.kind == Arg::Kind::kList ? PyList_New(n) : PyTuple_New(n);
          if (seq == nullptr) {
            failed = true;
            break;
          }
          for (Py_ssize_t k = 0; k < n; ++k) {
            PyObject* item =
                slots[static_cast<std::size_t>(slot.values[static_cast<std::size_t>(k)])];
            Py_INCREF(item);
            if (slot.kind == Arg::Kind::kList) {
              PyList_SET_ITEM(seq, k, item);
            } else {
              PyTuple_SET_ITEM(seq, k, item);
            }
          }
          temps.push_back(seq);
          args[a] = seq;
          break;
        }
      }
    }
    PyObject* r = nullptr;
    if (!failed) {
      r = call_step(p, s, args);
    }
    for (PyObject* t : temps) {
      Py_DECREF(t);
    }
    if (r == nullptr) {
      release();
      return nullptr;
    }
    if (s.mutates && r == Py_None) {
      // The result is the changed array itself: setitem returns None (iadd returns the array, a
      // ufunc given out= its out array).
      Py_DECREF(r);
      r = args[0];
      Py_INCREF(r);
    }
    slots[static_cast<std::size_t>(s.result)] = r;
    owned[static_cast<std::size_t>(s.result)] = true;
    if (p.check && !check_result(s, r)) {
      release();
      return nullptr;
    }
    for (const int dead : s.release) {
      const auto d = static_cast<std::size_t>(dead);
      if (owned[d]) {
        Py_DECREF(slots[d]);
        slots[d] = nullptr;
        owned[d] = false;
      }
    }
  }
  PyObject* out = nullptr;
  auto output = [&](std::size_t i) -> PyObject* {
    PyObject* v = slots[static_cast<std::size_t>(p.outputs[i])];
    if (p.copy_output[i]) {
      return PyObject_CallMethod(v, "copy", nullptr);
    }
    Py_INCREF(v);
    return v;
  };
  if (p.outputs.empty()) {
    out = Py_None;
    Py_INCREF(out);
  } else if (p.outputs.size() == 1) {
    out = output(0);
  } else {
    out = PyTuple_New(static_cast<Py_ssize_t>(p.outputs.size()));
    for (std::size_t i = 0; out != nullptr && i < p.outputs.size(); ++i) {
      PyObject* v = output(i);
      if (v == nullptr) {
        Py_CLEAR(out);
        break;
      }
      PyTuple_SET_ITEM(out, static_cast<Py_ssize_t>(i), v);
    }
  }
  release();
  return out;
}

PyObject* compiled_vectorcall(PyObject* self, PyObject* const* args, std::size_t nargsf,
                              PyObject* kwnames) {
  if (kwnames != nullptr && PyTuple_GET_SIZE(kwnames) > 0) {
    PyErr_SetString(PyExc_TypeError, "a compiled graph takes no keyword arguments");
    return nullptr;
  }
  const auto* obj = reinterpret_cast<CompiledGraphObject*>(self);
  return run_program(*obj->program, args, PyVectorcall_NARGS(nargsf));
}

void compiled_dealloc(PyObject* self) {
  auto* obj = reinterpret_cast<CompiledGraphObject*>(self);
  delete obj->program;
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);
}

PyObject* compiled_repr(PyObject* self) {
  const auto* obj = reinterpret_cast<CompiledGraphObject*>(self);
  return PyUnicode_FromFormat("<sot compiled graph %s: %zu ops, %zu inputs, %zu outputs (numpy)>",
                              obj->program->name.c_str(), obj->program->steps.size(),
                              obj->program->inputs.size(), obj->program->outputs.size());
}

PyMemberDef compiled_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET,
     static_cast<Py_ssize_t>(offsetof(CompiledGraphObject, vectorcall)), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

PyTypeObject* compiled_type() {
  static PyTypeObject* type = [] {
    PyType_Slot slots[] = {
        {Py_tp_dealloc, reinterpret_cast<void*>(compiled_dealloc)},
        {Py_tp_repr, reinterpret_cast<void*>(compiled_repr)},
        {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
        {Py_tp_members, static_cast<void*>(compiled_members)},
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

// Operators whose NumPy method is exactly the ufunc of the op's name for the operand types a graph
// holds (ndarrays, NumPy scalars, Python numbers). Not `pow`: ndarray ** 2 runs `square`, whose
// result dtype differs for bools.
constexpr const char* kUfuncOperators[] = {
    "add", "sub", "mul",    "truediv", "floordiv", "mod", "neg", "pos", "abs", "and_",
    "or_", "xor", "invert", "lshift",  "rshift",   "lt",  "le",  "gt",  "ge",
};

// The ufunc that computes `op` (its own function, or the ufunc behind an operator), else None.
py::object ufunc_of(const Op& op, const py::module_& numpy) {
  const py::object ufunc = numpy.attr("ufunc");
  if (py::isinstance(op.fn, ufunc)) {
    return op.fn;
  }
  const py::module_ operator_module = loaded_module("operator");
  for (const char* name : kUfuncOperators) {
    if (op.fn.is(operator_module.attr(name)) && py::hasattr(numpy, op.name.c_str())) {
      py::object u = numpy.attr(op.name.c_str());
      return py::isinstance(u, ufunc) ? u : py::none();
    }
  }
  return py::none();
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

class NumpyBackend final : public Backend {
 public:
  std::string name() const override { return "numpy"; }

  py::object compile(const Graph& graph, const std::vector<int>& outputs, bool check) override {
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
    auto slot_of = [](const Arg& a) {
      Program::Slot s;
      s.kind = a.kind;
      s.value = a.value;
      s.values = a.values;
      s.constant = a.constant;
      return s;
    };
    for (const Op& op : graph.ops()) {
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
      s.info = graph.value(op.result).info;
      s.text = "%" + std::to_string(op.result) + " = " + op.name + "(";
      for (std::size_t k = 0; k < s.args.size(); ++k) {
        s.text += (k > 0 ? ", " : "") + arg_text(s.args[k]);
      }
      s.text += ")";
      program->steps.push_back(std::move(s));
    }
    // The last step that reads each result (outputs: never released before the end).
    std::vector<int> last_use(graph.values().size(), -1);
    for (std::size_t k = 0; k < program->steps.size(); ++k) {
      const Program::Step& st = program->steps[k];
      last_use[static_cast<std::size_t>(st.result)] =
          std::max(last_use[static_cast<std::size_t>(st.result)], static_cast<int>(k));
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
    choose_reuse(graph, last_use, *program);
    for (std::size_t v = 0; v < graph.values().size(); ++v) {
      const Value& val = graph.values()[v];
      if (val.source == Value::Source::kOp && last_use[v] >= 0) {
        program->steps[static_cast<std::size_t>(last_use[v])].release.push_back(
            static_cast<int>(v));
      }
    }
    program->name = std::to_string(graph.ops().size()) + "-op";
    PyTypeObject* type = compiled_type();
    auto* obj = PyObject_New(CompiledGraphObject, type);
    if (obj == nullptr) {
      throw py::error_already_set();
    }
    obj->program = program.release();
    obj->vectorcall = compiled_vectorcall;
    return py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(obj));
  }
};

std::vector<std::unique_ptr<Backend>>& registry() {
  static std::vector<std::unique_ptr<Backend>> backends;
  if (backends.empty()) {
    backends.push_back(make_numpy_backend());
  }
  return backends;
}

}  // namespace

std::unique_ptr<Backend> make_numpy_backend() {
  return std::make_unique<NumpyBackend>();
}

Backend* find_backend(const std::string& name) {
  for (const auto& b : registry()) {
    if (b->name() == name) {
      return b.get();
    }
  }
  return nullptr;
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const auto& b : registry()) {
    names.push_back(b->name());
  }
  return names;
}

void register_backend(std::unique_ptr<Backend> backend) {
  registry().push_back(std::move(backend));
}

}  // namespace sot::graph
