// Calls: KW_NAMES, PRECALL, CALL, CALL_KW, CALL_FUNCTION_EX. What is called: NumPy
// (array_functions), methods of modelled containers (container_methods), builtins (builtin_calls),
// pure functions of constants (folded), user functions (inline_call).
#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "bytecode/operands.hpp"
#include "translator/executor_support.hpp"
#include "translator/opcode_executor.hpp"
#include "translator/values/pure_functions.hpp"

namespace py = pybind11;

namespace sot::translator {

void OpcodeExecutor::op_kw_names(const bytecode::Instruction& ins) {
  if (!in_group_) {
    in_group_ = true;
    group_first_ = pc_;
  }
  kwnames_ = code_.consts()[static_cast<std::size_t>(ins.arg)];
}

void OpcodeExecutor::op_precall(const bytecode::Instruction& /*ins*/) {
  if (!in_group_) {
    in_group_ = true;
    group_first_ = pc_;
  }
}

void OpcodeExecutor::op_call(const bytecode::Instruction& ins) {
  if (!in_group_) {
    group_first_ = pc_;
    in_group_ = true;
  }
  const py::object kw = std::move(kwnames_);
  kwnames_ = py::object();
  call(ins.arg, kw);
  in_group_ = false;
}

void OpcodeExecutor::op_call_kw(const bytecode::Instruction& ins) {
  // 3.13: [callable, self or NULL, args..., keyword names].
  const VarPtr& names_var = peek(1);
  if (!names_var->is_const() || !PyTuple_CheckExact(names_var->value().ptr())) {
    graph_break("keyword names that are not a constant tuple");
  }
  call(ins.arg, names_var->value(), 1);
}

void OpcodeExecutor::op_call_function_ex(const bytecode::Instruction& ins) {
  call_function_ex(ins.arg);
}

OpcodeExecutor::CallSite OpcodeExecutor::call_site(int argc, const py::object& kwnames,
                                                   std::size_t extra) {
  CallSite site;
  site.nargs = static_cast<std::size_t>(argc);
  site.extra = extra;
  site.kwnames = kwnames;
  site.nkw = kwnames ? static_cast<std::size_t>(PyTuple_GET_SIZE(kwnames.ptr())) : 0;
  // `extra` values sit above the arguments (3.13's CALL_KW: the tuple of keyword names).
  if (stack_.size() < site.nargs + 2 + extra) {
    fail("the value stack is too shallow for CALL (malformed bytecode)");
  }
  // [NULL, callable, args] or [callable, self, args] (3.11/3.12); [callable, NULL/self, args]
  // (3.13).
  VarPtr& lower = peek(site.nargs + 2 + extra);
  VarPtr& upper = peek(site.nargs + 1 + extra);
  if (bytecode::operand::call_null_below_callable()) {
    if (lower->kind() == Variable::Kind::kNull) {
      site.callable = upper;
    } else {
      site.callable = lower;
      site.args.push_back(upper);
    }
  } else {
    site.callable = lower;
    if (upper->kind() != Variable::Kind::kNull) {
      site.args.push_back(upper);
    }
  }
  for (std::size_t i = site.nargs; i > 0; --i) {
    site.args.push_back(peek(i + extra));
  }
  return site;
}

void OpcodeExecutor::replace_call(const CallSite& site, VarPtr result) {
  // The call's values (callable, self or NULL, arguments) give way to its result.
  for (std::size_t i = 0; i < site.nargs + 2 + site.extra; ++i) {
    pop();
  }
  push(std::move(result));
}

void OpcodeExecutor::call(int argc, const py::object& kwnames, std::size_t extra) {
  const CallSite site = call_site(argc, kwnames, extra);
  const VarPtr& callable = site.callable;
  const std::vector<VarPtr>& args = site.args;
  // NumPy functions and array methods: captured into the graph (or a break with the reason).
  if (VarPtr r = array_call(callable, args, kwnames)) {
    replace_call(site, std::move(r));
    return;
  }
  // A generator handed whole to sum(), list(), ... (generators.cpp): the list of its items.
  if (VarPtr r = generator_consumed_at_once(site)) {
    replace_call(site, std::move(r));
    return;
  }
  // int() or float() of a NumPy scalar, math.sqrt() of a number of the graph: a Python number
  // made where the graph runs (python_numbers.cpp).
  if (VarPtr r = python_number_of(callable, args, site.nkw)) {
    replace_call(site, std::move(r));
    return;
  }
  if (VarPtr r = math_of(callable, args, site.nkw)) {
    replace_call(site, std::move(r));
    return;
  }
  if (VarPtr r = math_isclose(site)) {
    replace_call(site, std::move(r));
    return;
  }
  // `for i in range(j + 1, n)` in a loop body: a loop op of bounds known where it runs.
  if (runtime_range_loop(site)) {
    return;
  }
  if (callable->kind() == Variable::Kind::kObject && args.size() == 1 &&
      args[0]->kind() == Variable::Kind::kArray &&
      (callable->value().ptr() == reinterpret_cast<PyObject*>(&PyFloat_Type) ||
       callable->value().ptr() == reinterpret_cast<PyObject*>(&PyLong_Type) ||
       callable->value().ptr() == reinterpret_cast<PyObject*>(&PyBool_Type) ||
       callable->value().ptr() == reinterpret_cast<PyObject*>(&PyComplex_Type))) {
    graph_break(py::str(callable->value().attr("__name__")).cast<std::string>() + "() of a " +
                args[0]->describe() + " needs its data");
  }
  if (callable->kind() == Variable::Kind::kMethod && site.nkw == 0) {
    call_method(site);
    return;
  }
  // A plain class: an instance made in the frame, its __init__ inlined (instances.cpp).
  if (VarPtr r = instantiate(site)) {
    replace_call(site, std::move(r));
    return;
  }
  // Builtin functions and types (len, zip, list, type, ...) on the structure of modelled values.
  if (callable->kind() == Variable::Kind::kObject &&
      (PyCFunction_Check(callable->value().ptr()) || PyType_Check(callable->value().ptr()))) {
    if (VarPtr r = structural_call(callable->value(), args, site.kwnames)) {
      guards_->identity(callable);
      replace_call(site, std::move(r));
      return;
    }
  }
  const bool made_function = callable->kind() == Variable::Kind::kFunction;
  if (callable->kind() != Variable::Kind::kObject && callable->kind() != Variable::Kind::kConst &&
      !made_function) {
    graph_break("a call of " + callable->describe());
  }
  VarPtr result = call_super(site);
  if (!result) {
    result = call_bound_method(site);
  }
  if (!result) {
    result = call_function(site);
  }
  replace_call(site, std::move(result));
}

void OpcodeExecutor::call_method(const CallSite& site) {
  const VarPtr& callable = site.callable;
  const std::size_t n = site.nargs + site.extra;
  if (callable->items()[0]->kind() == Variable::Kind::kObject) {
    const std::string name = str_of(callable->value());
    if ((name == "keys" || name == "values" || name == "items") && site.args.empty() &&
        !model_of(callable->items()[0])) {
      // A view of a dict received from outside: read, not modelled (input_dicts.cpp).
      replace_call(site, input_dict_view(callable->items()[0], name));
      return;
    }
    if (name == "get" && (site.args.size() == 1 || site.args.size() == 2) &&
        is_input_dict(callable->items()[0]) && !model_of(callable->items()[0])) {
      // d.get(k) of a dict received from outside, not changed by the frame: read, not modelled
      // (a model would be a change, and a change to a second object gives up on iterations).
      if (VarPtr got = input_dict_get(callable->items()[0], site.args)) {
        replace_call(site, std::move(got));
        return;
      }
    }
    // A method of a list or dict received from outside: run on its model, replayed later.
    const VarPtr model = model_for_write(callable->items()[0]);
    if (!model) {
      graph_break("a call of " + callable->describe());
    }
    const VarPtr on_model = Variable::method(model, callable->value());
    if (model->kind() == Variable::Kind::kDict) {
      call_dict_method(on_model, site.args, n);
    } else {
      call_list_method(on_model, site.args, n);
    }
    if (str_of(callable->value()) != "get") {
      record_model_op(str_of(callable->value()).c_str(), site.args);
    }
    return;
  }
  switch (callable->items()[0]->kind()) {
    case Variable::Kind::kDict:
      call_dict_method(callable, site.args, n);
      return;
    case Variable::Kind::kSet:
      call_set_method(callable, site.args, n);
      return;
    default:
      call_list_method(callable, site.args, n);
      return;
  }
}

VarPtr OpcodeExecutor::call_super(const CallSite& site) {
  const VarPtr& callable = site.callable;
  if (!(callable->kind() == Variable::Kind::kObject &&
        callable->value().ptr() == reinterpret_cast<PyObject*>(&PySuper_Type) &&
        site.args.empty() && site.nkw == 0 && depth_ > 0)) {
    return nullptr;
  }
  // super() in an inlined method: super(__class__, <first argument>).
  const auto names = py::reinterpret_borrow<py::tuple>(inputs_.code->co_localsplusnames);
  VarPtr cls;
  for (std::size_t i = 0; i < locals_.size(); ++i) {
    if (str_of(names[i]) == "__class__" && locals_[i] &&
        locals_[i]->kind() == Variable::Kind::kCell) {
      cls = locals_[i]->contents();
    }
  }
  VarPtr self = inputs_.code->co_argcount > 0 ? locals_[0] : nullptr;
  if (self && self->kind() == Variable::Kind::kCell) {
    self = self->contents();
  }
  if (!cls || !self) {
    graph_break("super() without __class__ or a first argument (raises RuntimeError)");
  }
  guards_->identity(callable);
  VarPtr sup = std::make_shared<Variable>(Variable::Kind::kSuper, py::none(), Tracker{});
  sup->items() = {cls, self};
  return sup;
}

VarPtr OpcodeExecutor::call_bound_method(const CallSite& site) {
  const VarPtr& callable = site.callable;
  if (!(callable->kind() == Variable::Kind::kObject && PyMethod_Check(callable->value().ptr()) &&
        PyFunction_Check(PyMethod_Function(callable->value().ptr())) &&
        callable->tracker().is_input())) {
    return nullptr;
  }
  // A bound method of a Python function: the function, inlined with its instance first.
  Tracker ft = Tracker::attr(callable, py::str("__func__"));
  const VarPtr fn = Variable::from_input(PyMethod_Function(callable->value().ptr()), ft);
  Tracker st = Tracker::attr(callable, py::str("__self__"));
  std::vector<VarPtr> with_self = {
      Variable::from_input(PyMethod_Self(callable->value().ptr()), st)};
  with_self.insert(with_self.end(), site.args.begin(), site.args.end());
  std::string why;
  VarPtr result = inline_call(fn, with_self, site.kwnames, &why);
  if (!result) {
    graph_break("a call of " + callable->describe() + " (" + why + ")");
  }
  return result;
}

VarPtr OpcodeExecutor::call_function(const CallSite& site) {
  const VarPtr& callable = site.callable;
  const std::size_t nkw = site.nkw;
  const bool made_function = callable->kind() == Variable::Kind::kFunction;
  const PureFunction* pure = made_function ? nullptr : find_pure_function(callable->value());
  const bool const_method = !made_function && is_constant_method(callable->value());
  if (pure == nullptr && !const_method) {
    std::string why = "not a pure builtin or a function of this module";
    if (made_function || PyFunction_Check(callable->value().ptr())) {
      if (VarPtr result = inline_call(callable, site.args, site.kwnames, &why)) {
        return result;
      }
    }
    graph_break("a call of " + callable->describe() + " (" + why + ")");
  }
  // A pure builtin, or a method of a constant, on constants: folded.
  py::list values;
  for (const VarPtr& a : site.args) {
    py::object v = constant_value(a);
    if (!v) {
      graph_break("a call of " + callable->describe() + " with " + a->describe());
    }
    values.append(v);
  }
  // A pure function's first argument may be large; a constant's method has its receiver for that,
  // so every argument it gets is bounded.
  if (pure != nullptr ? !pure->accepts(values, nkw)
                      : (nkw > 0 || !arguments_bounded(values, /*leading_unbounded=*/0))) {
    graph_break("a call of " + callable->describe() + " with arguments it does not fold");
  }
  py::tuple positional(values.size() - nkw);
  py::dict keywords;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i < values.size() - nkw) {
      positional[i] = values[i];
    } else {
      keywords[py::reinterpret_borrow<py::object>(PyTuple_GET_ITEM(
          site.kwnames.ptr(), static_cast<Py_ssize_t>(i - (values.size() - nkw))))] = values[i];
    }
  }
  PyObject* r =
      PyObject_Call(callable->value().ptr(), positional.ptr(), nkw > 0 ? keywords.ptr() : nullptr);
  if (r == nullptr) {
    PyErr_Clear();
    graph_break("a call of " + callable->describe() + " raises");
  }
  const auto result = py::reinterpret_steal<py::object>(r);
  VarPtr v = make_result(result);
  if (!v) {
    graph_break("a call of " + callable->describe() + " made a value it does not model");
  }
  guards_->identity(callable);
  return v;
}

void OpcodeExecutor::call_function_ex(int flags) {
  // [NULL, callable, args, kwargs?] (3.11/3.12); [callable, NULL, args, kwargs?] (3.13): a call
  // with arguments from a tuple (or list) and a dict built inside becomes a plain call.
  const bool has_kwargs = (flags & 1) != 0;
  const VarPtr kwargs = has_kwargs ? peek(1) : nullptr;
  const VarPtr args = peek(has_kwargs ? 2 : 1);
  std::vector<VarPtr> positional;
  if (args->kind() == Variable::Kind::kTuple || args->kind() == Variable::Kind::kList) {
    positional = args->items();
  } else if (args->is_const() && PyTuple_CheckExact(args->value().ptr())) {
    positional = const_items(args);
  } else {
    graph_break("a call with *args from " + args->describe());
  }
  py::tuple names(0);
  if (kwargs) {
    if (kwargs->kind() != Variable::Kind::kDict) {
      graph_break("a call with **kwargs from " + kwargs->describe());
    }
    names = py::tuple(kwargs->keys().size());
    for (std::size_t i = 0; i < kwargs->keys().size(); ++i) {
      if (!PyUnicode_CheckExact(kwargs->keys()[i].ptr())) {
        graph_break("a call with a keyword that is not a str (raises TypeError)");
      }
      names[i] = kwargs->keys()[i];
      positional.push_back(kwargs->items()[i]);
    }
  }
  // Rewrite the stack as a CALL would see it: [.., NULL/callable, callable/NULL, args...] with
  // the keyword names passed aside; a break in the call breaks at CALL_FUNCTION_EX, with its stack.
  const std::vector<VarPtr> saved = stack_;
  break_stack_ = &saved;
  pop();
  if (has_kwargs) {
    pop();
  }
  const std::size_t npos = positional.size() - static_cast<std::size_t>(names.size());
  for (VarPtr& v : positional) {
    push(std::move(v));
  }
  call(static_cast<int>(npos + static_cast<std::size_t>(names.size())),
       names.empty() ? py::object() : py::object(names));
  break_stack_ = nullptr;
}

}  // namespace sot::translator
