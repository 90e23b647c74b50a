// Inlining: a call of a user function simulated inside the caller (depth and budget shared), and
// call_value, the call of a function value from map(), filter() and the like.
#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "capture/skip_rules.hpp"
#include "translator/executor_support.hpp"
#include "translator/opcode_executor.hpp"
#include "translator/values/pure_functions.hpp"

namespace py = pybind11;

namespace sot::translator {

bool OpcodeExecutor::inline_target(const VarPtr& callable, InlineTarget* t, std::string* why) {
  auto no = [why](const std::string& reason) {
    *why = "not inlined: " + reason;
    return false;
  };
  // A function made in the frame (its parts are Variables) or one received from outside (its
  // parts are read through trackers on it, and guarded where used).
  const bool made = callable->kind() == Variable::Kind::kFunction;
  auto* fn = made ? nullptr : reinterpret_cast<PyFunctionObject*>(callable->value().ptr());
  auto* co = reinterpret_cast<PyCodeObject*>(made ? callable->value().ptr() : fn->func_code);
  t->made = made;
  t->fn = fn;
  t->co = co;
  // A made function has the globals of the frame that made it (recorded when foreign).
  PyObject* globals =
      made ? (callable->globals() ? callable->globals()->value().ptr() : inputs_.globals)
           : fn->func_globals;
  t->globals = globals;
  if (depth_ + 1 > kMaxInlineDepth) {
    return no("calls nested deeper than " + std::to_string(kMaxInlineDepth));
  }
  VarPtr& globals_var = t->globals_var;
  VarPtr& builtins_var = t->builtins_var;
  globals_var = inputs_.globals_var;
  builtins_var = inputs_.builtins_var;
  if (made && callable->globals()) {
    // Made by an inlined function of another module: that function's globals and builtins.
    globals_var = callable->globals();
    Tracker bt = globals_var->tracker();
    bt.key = py::str("__builtins__");
    builtins_var =
        Variable::object(py::reinterpret_borrow<py::object>(inputs_.builtins), std::move(bt));
  } else if (globals != inputs_.globals) {
    // Another module's function: its globals are read through it (fn.__globals__), so it must be
    // an object the guards can reach, with the same builtins.
    if (made || !callable->tracker().is_input() || fn->func_builtins != inputs_.builtins ||
        !PyDict_CheckExact(globals)) {
      return no("a function of another module that the guards cannot reach");
    }
    Tracker gt = Tracker::attr(callable, py::str("__globals__"));
    globals_var = Variable::object(py::reinterpret_borrow<py::object>(globals), gt);
    Tracker bt = gt;
    bt.key = py::str("__builtins__");
    builtins_var =
        Variable::object(py::reinterpret_borrow<py::object>(fn->func_builtins), std::move(bt));
  }
  if (globals_var && !builtins_var) {
    return no("a function of another module whose builtins are not known");
  }
  const int kinds = co->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR);
  if (kinds != 0 && !(t->generator && kinds == CO_GENERATOR)) {
    return no("a generator or coroutine function");
  }
  if (kinds == 0 && t->generator) {
    return no("not a generator function");
  }
  const std::string skip = capture::skip_rules().reason_to_skip(co, globals);
  // (Frames of generator functions are skipped, unless skip rules say otherwise; one run to its
  // end inline is not.)
  if (!skip.empty() && !(t->generator && skip.rfind("generator or coroutine function", 0) == 0)) {
    return no("its module is skipped");
  }
  // (An inlined call has no frame of its own: a zero-argument super() in it is simulated.)
  if (!frame_introspection(co, /*allow_super=*/true).empty()) {
    return no("it looks at its own frame");
  }
  const auto callable_attr = [&callable](const char* attr, PyObject* value) {
    return Variable::from_input(value, Tracker::attr(callable, py::str(attr)));
  };
  // The closure's cells.
  std::vector<VarPtr>& closure = t->closure;
  if (made) {
    closure = callable->items();
  } else if (fn->func_closure != nullptr) {
    if (!callable->tracker().is_input()) {
      return no("a closure the translator cannot read again");
    }
    const VarPtr cells = callable_attr("__closure__", fn->func_closure);
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(fn->func_closure); ++k) {
      PyObject* cell = PyTuple_GET_ITEM(fn->func_closure, k);  // borrowed
      Tracker ct = Tracker::item(cells, py::int_(k));
      const VarPtr cell_object = Variable::object(py::reinterpret_borrow<py::object>(cell), ct);
      VarPtr contents;
      if (PyCell_GET(cell) != nullptr) {
        Tracker tc = Tracker::attr(cell_object, py::str("cell_contents"));
        contents = Variable::from_input(PyCell_GET(cell), std::move(tc));
      }
      closure.push_back(Variable::cell(std::move(contents), -1, /*outside=*/true, std::move(ct)));
    }
  }
  if (closure.size() != static_cast<std::size_t>(co->co_nfreevars)) {
    return no("a closure of the wrong size");
  }
  return true;
}

bool OpcodeExecutor::bind_arguments(const VarPtr& callable, const InlineTarget& t,
                                    const std::vector<VarPtr>& args, const py::object& kwnames,
                                    std::vector<VarPtr>* out, std::string* why) {
  auto no = [why](const std::string& reason) {
    *why = "not inlined: " + reason;
    return false;
  };
  PyCodeObject* co = t.co;
  std::vector<VarPtr>& locals = *out;
  // Bind the arguments as CPython would; anything that would raise stays a real call.
  const auto nkw = kwnames ? static_cast<std::size_t>(PyTuple_GET_SIZE(kwnames.ptr())) : 0;
  const std::size_t npos = args.size() - nkw;
  const auto argcount = static_cast<std::size_t>(co->co_argcount);
  const auto kwonly = static_cast<std::size_t>(co->co_kwonlyargcount);
  const auto posonly = static_cast<std::size_t>(co->co_posonlyargcount);
  const bool varargs = (co->co_flags & CO_VARARGS) != 0;
  const bool varkw = (co->co_flags & CO_VARKEYWORDS) != 0;
  const auto names = py::reinterpret_borrow<py::tuple>(co->co_localsplusnames);
  locals.assign(static_cast<std::size_t>(co->co_nlocalsplus), nullptr);
  if (npos > argcount && !varargs) {
    return no("too many positional arguments");
  }
  VarPtr extra_kw = varkw ? Variable::dict({}, {}) : nullptr;
  for (std::size_t i = 0; i < npos && i < argcount; ++i) {
    locals[i] = args[i];
  }
  for (std::size_t k = 0; k < nkw; ++k) {
    const py::handle key = PyTuple_GET_ITEM(kwnames.ptr(), static_cast<Py_ssize_t>(k));
    std::size_t slot = argcount + kwonly;
    for (std::size_t i = posonly; i < argcount + kwonly; ++i) {
      if (PyObject_RichCompareBool(names[i].ptr(), key.ptr(), Py_EQ) == 1) {
        slot = i;
        break;
      }
    }
    PyErr_Clear();
    if (slot == argcount + kwonly && extra_kw && extra_kw->find_key(key) == -1) {
      extra_kw->keys().push_back(py::reinterpret_borrow<py::object>(key));
      extra_kw->items().push_back(args[npos + k]);
      continue;
    }
    if (slot == argcount + kwonly || locals[slot]) {
      return no("an unexpected or repeated keyword argument");
    }
    locals[slot] = args[npos + k];
  }
  if (!bind_defaults(callable, t, &locals, why)) {
    return false;
  }
  if (varargs) {
    std::vector<VarPtr> rest;
    for (std::size_t i = argcount; i < npos; ++i) {
      rest.push_back(args[i]);
    }
    locals[argcount + kwonly] = Variable::tuple(std::move(rest));
  }
  if (varkw) {
    locals[argcount + kwonly + (varargs ? 1 : 0)] = extra_kw;
  }
  const std::size_t first_free = locals.size() - t.closure.size();
  for (std::size_t k = 0; k < t.closure.size(); ++k) {
    locals[first_free + k] = t.closure[k];
  }
  return true;
}

bool OpcodeExecutor::bind_defaults(const VarPtr& callable, const InlineTarget& t,
                                   std::vector<VarPtr>* out, std::string* why) {
  auto no = [why](const std::string& reason) {
    *why = "not inlined: " + reason;
    return false;
  };
  const bool made = t.made;
  PyFunctionObject* fn = t.fn;
  PyCodeObject* co = t.co;
  std::vector<VarPtr>& locals = *out;
  const auto argcount = static_cast<std::size_t>(co->co_argcount);
  const auto kwonly = static_cast<std::size_t>(co->co_kwonlyargcount);
  const auto names = py::reinterpret_borrow<py::tuple>(co->co_localsplusnames);
  const auto callable_attr = [&callable](const char* attr, PyObject* value) {
    return Variable::from_input(value, Tracker::attr(callable, py::str(attr)));
  };
  // Positional defaults: the made function's tuple (built inside, or a constant), or the
  // function's __defaults__ read through it.
  std::vector<VarPtr> defaults;
  if (made) {
    const VarPtr& d = callable->part(Variable::kDefaults);
    if (d && d->kind() == Variable::Kind::kTuple) {
      defaults = d->items();
    } else if (d && d->is_const() && PyTuple_CheckExact(d->value().ptr())) {
      defaults = const_items(d);
    } else if (d) {
      return no("defaults that are not a tuple");
    }
  }
  const std::size_t ndefaults =
      made ? defaults.size()
           : (fn->func_defaults != nullptr
                  ? static_cast<std::size_t>(PyTuple_GET_SIZE(fn->func_defaults))
                  : 0);
  VarPtr defaults_var;
  for (std::size_t i = 0; i < argcount; ++i) {
    if (locals[i]) {
      continue;
    }
    if (i + ndefaults < argcount) {
      return no("a missing argument");
    }
    const std::size_t j = i - (argcount - ndefaults);
    if (made) {
      locals[i] = defaults[j];
      continue;
    }
    if (!defaults_var) {
      defaults_var = callable_attr("__defaults__", fn->func_defaults);
      guards_->identity(defaults_var);
    }
    Tracker dt = Tracker::item(defaults_var, py::int_(j));
    locals[i] = Variable::from_input(
        PyTuple_GET_ITEM(fn->func_defaults, static_cast<Py_ssize_t>(j)), std::move(dt));
  }
  // Keyword-only defaults: the made function's dict, or the function's __kwdefaults__.
  VarPtr kwdefaults_var;
  for (std::size_t i = argcount; i < argcount + kwonly; ++i) {
    if (locals[i]) {
      continue;
    }
    if (made) {
      const VarPtr& kd = callable->part(Variable::kKwDefaults);
      const Py_ssize_t j = kd && kd->kind() == Variable::Kind::kDict ? kd->find_key(names[i]) : -1;
      if (j < 0) {
        return no("a keyword-only argument without a value");
      }
      locals[i] = kd->items()[static_cast<std::size_t>(j)];
      continue;
    }
    PyObject* value = fn->func_kwdefaults != nullptr && PyDict_CheckExact(fn->func_kwdefaults)
                          ? PyDict_GetItemWithError(fn->func_kwdefaults, names[i].ptr())
                          : nullptr;  // borrowed
    if (value == nullptr) {
      PyErr_Clear();
      return no("a keyword-only argument without a value");
    }
    if (!kwdefaults_var) {
      kwdefaults_var = callable_attr("__kwdefaults__", fn->func_kwdefaults);
      guards_->identity(kwdefaults_var);
      guards_->length(kwdefaults_var, PyDict_Size(fn->func_kwdefaults));
    }
    Tracker kt = Tracker::item(kwdefaults_var, names[i]);
    locals[i] = Variable::from_input(value, std::move(kt));
  }
  return true;
}

VarPtr OpcodeExecutor::inline_call(const VarPtr& callable, const std::vector<VarPtr>& args,
                                   const py::object& kwnames, std::string* why, bool collect) {
  InlineTarget t;
  t.generator = collect;
  std::vector<VarPtr> locals;
  if (!inline_target(callable, &t, why) ||
      !bind_arguments(callable, t, args, kwnames, &locals, why)) {
    return nullptr;
  }
  PyCodeObject* co = t.co;
  PyObject* globals = t.globals;
  if (!t.made) {
    // The translation relies on this function and its code.
    guards_->identity(callable);
    guards_->identity(
        Variable::from_input(t.fn->func_code, Tracker::attr(callable, py::str("__code__"))));
  }

  const bytecode::Bytecode code = bytecode::Bytecode::decode(reinterpret_cast<PyObject*>(co));
  FrameInputs inputs;
  inputs.code = co;
  inputs.globals = globals;
  inputs.builtins = inputs_.builtins;
  inputs.globals_var = globals == inputs_.globals ? inputs_.globals_var : t.globals_var;
  inputs.builtins_var = globals == inputs_.globals ? inputs_.builtins_var : t.builtins_var;
  const Mark before = mark();
  OpcodeExecutor callee(code, inputs, guards_, std::move(locals), depth_ + 1, shared_,
                        result_.simulated);
  struct HandlerScope {  // counts this call while the callee runs, however it ends
    int* count;
    int add;
    ~HandlerScope() { *count -= add; }
  } scope{&shared_->calls_under_handler, under_handler(code_.instructions()[pc_]) ? 1 : 0};
  shared_->calls_under_handler += scope.add;
  callee.collect_yields_ = collect;
  SimulationResult r = callee.run();
  result_.simulated = r.simulated;
  result_.folded += r.folded;
  if (r.kind != SimulationResult::Kind::kReturn) {
    rollback(before);  // everything the callee did, newest first
    const std::string name = py::str(co->co_name).cast<std::string>();
    *why = "not inlined: " + name + " " +
           (r.kind == SimulationResult::Kind::kBreak ? "breaks" : "fails") + " at line " +
           std::to_string(r.lineno) + ": " + r.reason;
    return nullptr;
  }
  cleared_.insert(cleared_.end(), r.cleared_lists.begin(), r.cleared_lists.end());
  return collect ? Variable::list(std::move(callee.yielded_)) : r.value;
}

VarPtr OpcodeExecutor::call_value(const VarPtr& fn, const std::vector<VarPtr>& args,
                                  std::string* why) {
  if (fn->kind() == Variable::Kind::kFunction ||
      (fn->kind() == Variable::Kind::kObject && PyFunction_Check(fn->value().ptr()))) {
    return inline_call(fn, args, py::object(), why);
  }
  const PureFunction* pure =
      fn->kind() == Variable::Kind::kObject ? find_pure_function(fn->value()) : nullptr;
  if (pure == nullptr) {
    *why = "not a pure builtin or a function the translator inlines";
    return nullptr;
  }
  py::list values;
  for (const VarPtr& a : args) {
    py::object v = constant_value(a);
    if (!v) {
      *why = "an argument that is not a constant";
      return nullptr;
    }
    values.append(v);
  }
  if (!pure->accepts(values, 0)) {
    *why = "arguments it does not fold";
    return nullptr;
  }
  PyObject* r = PyObject_Call(fn->value().ptr(), py::tuple(values).ptr(), nullptr);
  if (r == nullptr) {
    PyErr_Clear();
    *why = "it raises";
    return nullptr;
  }
  VarPtr v = make_result(py::reinterpret_steal<py::object>(r));
  if (!v) {
    *why = "a value it does not model";
    return nullptr;
  }
  guards_->identity(fn);
  return v;
}

}  // namespace sot::translator
