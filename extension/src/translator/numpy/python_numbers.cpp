// int() and float() of a NumPy value of the graph: `return board, int(board.sum())`. The number is
// made where the graph runs, by the builtin itself (an op of the graph whose result is a Python int
// or float, ValueInfo::python), so it is exactly what plain Python makes. The frame may return it,
// keep it in a container or pass it on. +, -, *, /, //, % between such numbers and Python
// constants, -x, +x, ~x, max(), min(), abs() of numbers of one kind (their result's kind follows
// from the operands' kinds alone), comparisons (a Python bool made in the graph: a while loop's
// test), and formatting one or a NumPy scalar in an f-string are ops of the graph in their turn;
// whatever else needs its value here (a branch, an index, an array operation) breaks the graph.
// int() of a NaN or an infinity, and a division by zero, raise where the graph runs: those ops are
// made only while no side effect waits to be replayed after the graph.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/loaded_module.hpp"
#include "translator/handlers/binary_operators.hpp"
#include "translator/numpy/array_state.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

namespace {

// What the graph knows of a Python value made where it runs: an int ('i'), float ('f'), bool ('b')
// or str ('s').
graph::ValueInfo python_info(char kind) {
  graph::ValueInfo info;
  info.dtype = kind == 'i'   ? graph::DType::kInt64
               : kind == 'b' ? graph::DType::kBool
                             : graph::DType::kFloat64;
  info.scalar = true;
  info.python = kind;
  return info;
}

graph::Op python_op(const char* name, py::object fn, std::vector<graph::Arg> args) {
  graph::Op g;
  g.name = name;
  g.fn = std::move(fn);
  g.args = std::move(args);
  return g;
}

// (+, *, -, /, //, %: the operators whose result kind follows from the operands' kinds alone)
bool number_operator(int base) {
  constexpr int kAdd = 0, kFloorDivide = 2, kMultiply = 5, kRemainder = 6, kSubtract = 10,
                kTrueDivide = 11;
  return base == kAdd || base == kFloorDivide || base == kMultiply || base == kRemainder ||
         base == kSubtract || base == kTrueDivide;
}

bool divides(int base) {
  constexpr int kFloorDivide = 2, kRemainder = 6, kTrueDivide = 11;
  return base == kFloorDivide || base == kRemainder || base == kTrueDivide;
}

}  // namespace

VarPtr OpcodeExecutor::python_number_of(const VarPtr& callable, const std::vector<VarPtr>& args,
                                        std::size_t nkw) {
  if (callable->kind() != Variable::Kind::kObject || args.size() != 1 || nkw != 0 ||
      args[0]->kind() != Variable::Kind::kArray || !shared_->arrays) {
    return nullptr;
  }
  PyObject* fn = callable->value().ptr();
  const bool to_int = fn == reinterpret_cast<PyObject*>(&PyLong_Type);
  if (!to_int && fn != reinterpret_cast<PyObject*>(&PyFloat_Type)) {
    return nullptr;
  }
  // int() of a Python int, float() of a Python float, made in the graph: the number itself (exact
  // types: CPython returns them as they are); float() of such an int: the op.
  const char python = arrays().graph.value(args[0]->graph_id()).info.python;
  if ((python == 'i' && to_int) || (python == 'f' && !to_int)) {
    guards_->identity(callable);
    return args[0];
  }
  if (python == 'i') {
    if (effects().pending()) {
      graph_break(
          "float() of a Python int of the graph: it may raise OverflowError, after side effects "
          "that are replayed once the graph has run");
    }
    guards_->identity(callable);
    return number_op("float", callable->value(), {args[0]->graph_id()}, 'f');
  }
  if (!is_array_like(args[0])) {
    return nullptr;
  }
  const int id = args[0]->graph_id();
  const graph::ValueInfo info = array_info(id);
  const char k = graph::kind(info.dtype);
  if (info.is_tuple() || !(info.scalar || info.ndim() == 0) ||
      (k != 'b' && k != 'i' && k != 'u' && k != 'f')) {
    return nullptr;  // (an array of more items, complex values: the break below)
  }
  if (to_int && k == 'f' && effects().pending()) {
    graph_break(
        "int() of a NumPy float: it may raise on a NaN or an infinity, after side effects "
        "that are replayed once the graph has run");
  }
  guards_->identity(callable);
  return number_op(to_int ? "int" : "float", callable->value(), {id}, to_int ? 'i' : 'f');
}

void OpcodeExecutor::changed_floats_as_inputs() {
  // ("automatic dynamic", as TorchDynamo's: a float guarded by value would make a translation per
  // value - `step(x, v, dt)` with a new dt per call - until the cache's limit, and then plain code)
  const py::object numpy = numpy_module();
  if (!inputs_.dynamic_shapes || numpy.is_none()) {
    return;
  }
  const py::object ndarray = numpy.attr("ndarray");
  if (std::none_of(locals_.begin(), locals_.end(), [&](const VarPtr& v) {
        return v && v->kind() == Variable::Kind::kObject && py::isinstance(v->value(), ndarray);
      })) {
    return;
  }
  const py::dict& history = inputs_.shape_history;
  for (VarPtr& v : locals_) {
    if (!v || v->kind() != Variable::Kind::kConst || !PyFloat_CheckExact(v->value().ptr()) ||
        v->tracker().kind != Tracker::Kind::kLocal || v->tracker().deref) {
      continue;
    }
    const py::str seen_key("number " + str_of(v->tracker().key));
    const py::str dynamic_key("dynamic number " + str_of(v->tracker().key));
    const double value = PyFloat_AS_DOUBLE(v->value().ptr());
    bool changed = history.contains(dynamic_key);
    if (!changed && history.contains(seen_key)) {
      const double before = PyFloat_AS_DOUBLE(history[seen_key].ptr());
      changed = !(before == value && std::signbit(before) == std::signbit(value));
    }
    history[seen_key] = v->value();
    if (!changed) {
      continue;
    }
    history[dynamic_key] = py::bool_(true);
    ArrayState& a = arrays();
    guards_->type(v);
    const graph::ValueInfo info = python_info('f');
    // (not an array: no meta, its type is its guard)
    const int id = a.add_input(v, info, tracker_path(v->tracker(), py::tuple()), {});
    v = Variable::array(id, info.text());
  }
}

VarPtr OpcodeExecutor::math_of(const VarPtr& callable, const std::vector<VarPtr>& args,
                               std::size_t nkw) {
  // math's functions of one number whose result is a float (CPython's math_1: the number as a
  // double, ValueError or OverflowError where the result is a NaN or an infinity it should not
  // be), of a NumPy scalar or Python number of the graph: the function itself called where the
  // graph runs.
  static const char* const kFloatOfOne[] = {
      "sqrt", "exp",  "expm1", "log",  "log10", "log2",  "log1p", "sin",   "cos",  "tan", "asin",
      "acos", "atan", "sinh",  "cosh", "tanh",  "asinh", "acosh", "atanh", "fabs", "erf", "erfc"};
  if (callable->kind() != Variable::Kind::kObject || args.size() != 1 || nkw != 0 ||
      args[0]->kind() != Variable::Kind::kArray || !shared_->arrays) {
    return nullptr;
  }
  // and those whose result is a bool, which never raise for a float or a NumPy number.
  static const char* const kBoolOfOne[] = {"isfinite", "isnan", "isinf"};
  const py::module_ math = loaded_module("math");
  const char* found = nullptr;
  bool predicate = false;
  for (const char* name : kFloatOfOne) {
    if (py::hasattr(math, name) && callable->value().ptr() == math.attr(name).ptr()) {
      found = name;
      break;
    }
  }
  for (const char* name : kBoolOfOne) {
    if (found == nullptr && callable->value().ptr() == math.attr(name).ptr()) {
      found = name;
      predicate = true;
    }
  }
  if (found == nullptr) {
    return nullptr;
  }
  const int id = args[0]->graph_id();
  const graph::ValueInfo info = arrays().graph.value(id).info;
  const char k = graph::kind(info.dtype);
  const bool number = info.python == 'i' || info.python == 'f' || (info.python == 0 && info.scalar);
  if (info.is_tuple() || !number || (k != 'i' && k != 'u' && k != 'f')) {
    return nullptr;  // (an array, a bool, a complex scalar: the break that follows)
  }
  if (predicate && info.python != 'i') {
    // (a float or a NumPy number: never raises; a Python int made in the graph may be too large
    // for a double, OverflowError, and takes the path below)
    guards_->identity(callable);
    return number_op((std::string("math.") + found).c_str(), callable->value(), {id}, 'b');
  }
  if (effects().pending()) {
    graph_break(std::string("math.") + found +
                "() of a number of the graph: it may raise, after side effects that are "
                "replayed once the graph has run");
  }
  guards_->identity(callable);
  // (the op's name is the function's: tier C knows some of them)
  const std::string op_name = std::string("math.") + found;
  return number_op(op_name.c_str(), callable->value(), {id}, predicate ? 'b' : 'f');
}

VarPtr OpcodeExecutor::math_isclose(const CallSite& site) {
  const VarPtr& callable = site.callable;
  if (callable->kind() != Variable::Kind::kObject || !shared_->arrays ||
      callable->value().ptr() != loaded_module("math").attr("isclose").ptr() ||
      site.args.size() != 2 + site.nkw) {
    return nullptr;
  }
  // The numbers: floats, ints and NumPy ints or floats of the graph (never too large for a double:
  // a Python int made in the graph may be, OverflowError), or Python float constants; one of the
  // graph at least.
  bool of_graph = false;
  for (std::size_t i = 0; i < 2; ++i) {
    const VarPtr& v = site.args[i];
    if (v->kind() == Variable::Kind::kArray) {
      const graph::ValueInfo& info = arrays().graph.value(v->graph_id()).info;
      const char k = graph::kind(info.dtype);
      if (info.is_tuple() || !(info.python == 'f' || (info.python == 0 && info.scalar)) ||
          (k != 'i' && k != 'u' && k != 'f')) {
        return nullptr;
      }
      of_graph = true;
    } else if (v->kind() != Variable::Kind::kConst || !PyFloat_CheckExact(v->value().ptr())) {
      return nullptr;
    }
  }
  // The tolerances: Python numbers of this code, not negative (else ValueError here as there).
  py::dict tolerances;
  for (std::size_t i = 0; i < site.nkw; ++i) {
    const VarPtr& v = site.args[2 + i];
    const std::string key = str_of(py::tuple(site.kwnames)[i]);
    if ((key != "rel_tol" && key != "abs_tol") || v->kind() != Variable::Kind::kConst ||
        !(PyFloat_CheckExact(v->value().ptr()) || PyLong_CheckExact(v->value().ptr()))) {
      return nullptr;
    }
    const double d = PyFloat_AsDouble(v->value().ptr());  // (-1.0 and an error when too large)
    if (PyErr_Occurred() != nullptr) {
      PyErr_Clear();
      return nullptr;
    }
    if (!(d >= 0.0)) {
      return nullptr;
    }
    tolerances[py::str(key)] = v->value();
  }
  if (!of_graph) {
    return nullptr;
  }
  for (std::size_t i = 0; i < site.nkw; ++i) {
    guards_->value(site.args[2 + i]);
  }
  std::vector<int> ids;
  for (std::size_t i = 0; i < 2; ++i) {
    const VarPtr& v = site.args[i];
    ids.push_back(v->kind() == Variable::Kind::kArray ? v->graph_id()
                                                      : number_value(number_operand(v)));
  }
  guards_->identity(callable);
  const py::object fn =
      site.nkw == 0 ? callable->value()
                    : loaded_module("functools").attr("partial")(callable->value(), **tolerances);
  return number_op("math.isclose", fn, ids, 'b');
}

OpcodeExecutor::NumberOperand OpcodeExecutor::number_operand(const VarPtr& v) {
  NumberOperand n;
  if (v->kind() == Variable::Kind::kArray && shared_->arrays) {
    const graph::ValueInfo& info = arrays().graph.value(v->graph_id()).info;
    if (info.python == 'i' || info.python == 'f') {
      n.kind = info.python;
      n.id = v->graph_id();
    }
    return n;
  }
  if (v->kind() == Variable::Kind::kConst &&
      (PyLong_CheckExact(v->value().ptr()) || PyFloat_CheckExact(v->value().ptr()))) {
    n.kind = PyLong_CheckExact(v->value().ptr()) ? 'i' : 'f';
    n.constant = v;
  }
  return n;
}

int OpcodeExecutor::number_value(const NumberOperand& n) {
  if (n.id >= 0) {
    return n.id;
  }
  guards_->value(n.constant);
  return arrays().graph.add_constant(n.constant->value(), python_info(n.kind));
}

VarPtr OpcodeExecutor::number_op(const char* name, const py::object& fn,
                                 const std::vector<int>& args, char kind) {
  std::vector<graph::Arg> values;
  values.reserve(args.size());
  for (const int id : args) {
    values.push_back(graph::Arg::of(id));
  }
  return add_array_op(python_op(name, fn, std::move(values)), python_info(kind));
}

void OpcodeExecutor::track_int_range(int base, const NumberOperand& a, const NumberOperand& b,
                                     int result) {
  // a + b, a - b, a * b of ints in known ranges (a loop variable, constants): the result's range,
  // while it stays within int64.
  constexpr int kAdd = 0, kMultiply = 5, kSubtract = 10;
  auto range = [this](const NumberOperand& n) -> std::optional<ArrayState::LoopIndex> {
    if (n.id >= 0) {
      return arrays().int_range(n.id);
    }
    int overflow = 0;
    const long long c = PyLong_AsLongLongAndOverflow(n.constant->value().ptr(), &overflow);
    if (overflow != 0 || (c == -1 && PyErr_Occurred() != nullptr)) {
      PyErr_Clear();
      return std::nullopt;
    }
    return ArrayState::LoopIndex{c, c};
  };
  const auto ra = range(a);
  const auto rb = range(b);
  if (!ra || !rb || (base != kAdd && base != kMultiply && base != kSubtract)) {
    return;
  }
  constexpr long double kLimit = 9223372036854775807.0L;
  const long double a0 = ra->lo, a1 = ra->hi, b0 = rb->lo, b1 = rb->hi;
  long double lo = 0, hi = 0;
  if (base == kAdd) {
    lo = a0 + b0;
    hi = a1 + b1;
  } else if (base == kSubtract) {
    lo = a0 - b1;
    hi = a1 - b0;
  } else {
    lo = std::min({a0 * b0, a0 * b1, a1 * b0, a1 * b1});
    hi = std::max({a0 * b0, a0 * b1, a1 * b0, a1 * b1});
  }
  if (lo < -kLimit || hi > kLimit) {
    return;
  }
  arrays().int_ranges[result] = {static_cast<std::int64_t>(lo), static_cast<std::int64_t>(hi)};
}

bool OpcodeExecutor::python_number_binary(int op) {
  const BinaryOperator* bo = binary_operator(op);
  if (bo == nullptr || !number_operator(bo->base)) {
    return false;
  }
  const NumberOperand a = number_operand(peek(2));
  const NumberOperand b = number_operand(peek(1));
  if (a.kind == 0 || b.kind == 0 || (a.id < 0 && b.id < 0)) {
    return false;
  }
  if (divides(bo->base) && effects().pending() &&
      !(b.constant && PyObject_IsTrue(b.constant->value().ptr()) == 1)) {
    graph_break(std::string("operator ") + bo->symbol +
                " on a Python number made in the graph: it may raise ZeroDivisionError, after side "
                "effects that are replayed once the graph has run");
  }
  const char kind = bo->base == 11 || a.kind == 'f' || b.kind == 'f' ? 'f' : 'i';
  VarPtr r = number_op(bo->function, loaded_module("operator").attr(bo->function),
                       {number_value(a), number_value(b)}, kind);
  if (kind == 'i') {
    track_int_range(bo->base, a, b, r->graph_id());
  }
  pop();
  pop();
  push(std::move(r));
  return true;
}

bool OpcodeExecutor::python_number_unary(const char* name) {
  // -x, +x of a Python int or float made in the graph, ~x of an int: a number of the same kind
  const NumberOperand a = number_operand(peek(1));
  const std::string which = name;
  if (a.id < 0 || (which == "invert" && a.kind != 'i')) {
    return false;
  }
  VarPtr r = number_op(name, loaded_module("operator").attr(name), {a.id}, a.kind);
  if (a.kind == 'i' && which != "invert") {  // (-i's range from i's: 0 - i)
    constexpr int kSubtract = 10;
    constexpr int kAdd = 0;
    NumberOperand zero;
    zero.kind = 'i';
    zero.constant = Variable::constant(py::int_(0));
    track_int_range(which == "neg" ? kSubtract : kAdd, zero, a, r->graph_id());
  }
  pop();
  push(std::move(r));
  return true;
}

bool OpcodeExecutor::python_number_compare(int op) {
  // a < b of Python numbers, one made in the graph at least: a Python bool made in the graph
  // (comparisons of ints and floats never raise)
  const NumberOperand a = number_operand(peek(2));
  const NumberOperand b = number_operand(peek(1));
  if (a.kind == 0 || b.kind == 0 || (a.id < 0 && b.id < 0) || op < Py_LT || op > Py_GE) {
    return false;
  }
  static const char* const kFns[] = {"lt", "le", "eq", "ne", "gt", "ge"};
  const char* fn = kFns[op];
  VarPtr r =
      number_op(fn, loaded_module("operator").attr(fn), {number_value(a), number_value(b)}, 'b');
  pop();
  pop();
  push(std::move(r));
  return true;
}

std::vector<graph::PyScalar> OpcodeExecutor::number_probes(const VarPtr& v) {
  // The values a Python number made in the graph may have, for the rules of an array operation
  // with it: NumPy 1.x promotes by value (the smallest dtype that holds it) and NumPy 2.x raises
  // for an int out of an int array's range, so every class of value the number may fall in is
  // tried (a loop variable's whole range is known; another int may be any int64).
  std::vector<graph::PyScalar> probes;
  if (v->kind() != Variable::Kind::kArray || !shared_->arrays) {
    return probes;
  }
  const int id = v->graph_id();
  const char kind = arrays().graph.value(id).info.python;
  if (kind == 'f') {
    for (const long double f : {0.0L, 1.5L, -1.5L, 1e-300L, 1e300L, -1e300L}) {
      probes.push_back(graph::PyScalar{graph::PyScalar::Kind::kFloat, f, 0});
    }
    return probes;
  }
  if (kind != 'i') {
    return probes;
  }
  constexpr long double kMax = 9223372036854775807.0L;
  long double lo = -kMax - 1;
  long double hi = kMax;
  if (const auto r = arrays().int_range(id)) {
    lo = static_cast<long double>(r->lo);
    hi = static_cast<long double>(r->hi);
  }
  // (the ends, and each side of every dtype's limits in between)
  std::vector<long double> values = {lo, hi};
  for (const long double limit :
       {128.0L, 256.0L, 32768.0L, 65536.0L, 2147483648.0L, 4294967296.0L, kMax + 1}) {
    for (const long double x : {limit - 1, limit, -limit, -limit - 1, 0.0L, -1.0L}) {
      if (x >= lo && x <= hi) {
        values.push_back(x);
      }
    }
  }
  for (const long double x : values) {
    probes.push_back(graph::PyScalar{graph::PyScalar::Kind::kInt, x, 0});
  }
  return probes;
}

VarPtr OpcodeExecutor::python_number_builtin(const char* name, const std::vector<VarPtr>& args) {
  // max(a, b, ...), max(items), min(...), abs(x) of Python numbers made in the graph (and
  // constants), all of one kind: the builtin called where the graph runs.
  std::vector<VarPtr> items = args;
  if (args.size() == 1 && std::string(name) != "abs" && !known_items(args[0], &items)) {
    return nullptr;
  }
  if (items.empty() || (std::string(name) == "abs" && args.size() != 1)) {
    return nullptr;
  }
  std::vector<NumberOperand> numbers;
  bool made = false;
  for (const VarPtr& v : items) {
    numbers.push_back(number_operand(v));
    if (numbers.back().kind == 0 || numbers.back().kind != numbers.front().kind) {
      return nullptr;  // (of mixed kinds the result's type depends on the values)
    }
    made = made || numbers.back().id >= 0;
  }
  if (!made) {
    return nullptr;
  }
  std::vector<int> ids;
  ids.reserve(numbers.size());
  for (const NumberOperand& n : numbers) {
    ids.push_back(number_value(n));
  }
  const py::object fn =
      py::reinterpret_borrow<py::object>(PyDict_GetItemString(inputs_.builtins, name));
  if (std::string(name) == "abs") {
    return number_op(name, fn, ids, numbers.front().kind);
  }
  // (one argument: the tuple of the numbers)
  return add_array_op(python_op(name, fn, {graph::Arg::sequence(ids, true)}),
                      python_info(numbers.front().kind));
}

VarPtr OpcodeExecutor::scalar_extreme(const char* name, const std::vector<VarPtr>& args) {
  // max(a, b, ...) / min(...) of NumPy scalars of the graph, all of one float or int dtype: the
  // builtin called where the graph runs (it compares with NumPy's `<` and hands on the first
  // greatest or least item itself, a scalar of that dtype).
  std::vector<VarPtr> items = args;
  if (args.size() < 2 || !shared_->arrays) {
    return nullptr;
  }
  std::vector<int> ids;
  graph::ValueInfo first;
  for (const VarPtr& v : items) {
    if (v->kind() != Variable::Kind::kArray) {
      return nullptr;
    }
    const graph::ValueInfo info = arrays().graph.value(v->graph_id()).info;
    const char k = graph::kind(info.dtype);
    if (!info.scalar || info.python != 0 || arrays().is_loop_index(v->graph_id()) ||
        (k != 'f' && k != 'i') || (!ids.empty() && info.dtype != first.dtype)) {
      return nullptr;
    }
    if (ids.empty()) {
      first = info;
    }
    ids.push_back(v->graph_id());
  }
  const py::object fn =
      py::reinterpret_borrow<py::object>(PyDict_GetItemString(inputs_.builtins, name));
  return add_array_op(python_op(name, fn, {graph::Arg::sequence(ids, true)}), first);
}

VarPtr OpcodeExecutor::extreme_by_key(const char* name, const std::vector<VarPtr>& args) {
  // min(d, key=d.get) / max(...) of a dict made in the frame, its keys Python ints, floats or strs
  // of one type and its values NumPy scalars of one int or float dtype or Python numbers made in
  // the graph of one kind: the builtin called where the graph runs on the dict rebuilt there (the
  // same comparisons, the same first key of the least or greatest value), its result that key, a
  // Python value made in the graph.
  if (args.size() != 2 || !shared_->arrays) {
    return nullptr;
  }
  const VarPtr& d = args[0];
  const VarPtr& key = args[1];
  if (d->kind() != Variable::Kind::kDict || d->items().empty() ||
      key->kind() != Variable::Kind::kMethod || key->items().empty() || key->items()[0] != d ||
      str_of(key->value()) != "get") {
    return nullptr;
  }
  PyTypeObject* key_type = Py_TYPE(d->keys().front().ptr());
  char kind = 0;
  if (key_type == &PyLong_Type) {
    kind = 'i';
  } else if (key_type == &PyFloat_Type) {
    kind = 'f';
  } else if (key_type == &PyUnicode_Type) {
    kind = 's';
  }
  py::tuple keys(d->keys().size());
  for (std::size_t i = 0; i < d->keys().size(); ++i) {
    if (kind == 0 || Py_TYPE(d->keys()[i].ptr()) != key_type) {
      return nullptr;
    }
    keys[i] = d->keys()[i];
  }
  std::vector<int> ids;
  graph::ValueInfo first;
  for (const VarPtr& v : d->items()) {
    if (v->kind() != Variable::Kind::kArray) {
      return nullptr;
    }
    const graph::ValueInfo info = arrays().graph.value(v->graph_id()).info;
    const char k = graph::kind(info.dtype);
    const bool number = info.python == 'i' || info.python == 'f';
    const bool scalar = info.scalar && info.python == 0 && (k == 'f' || k == 'i');
    if (!(number || scalar) || arrays().is_loop_index(v->graph_id()) ||
        (!ids.empty() && (info.dtype != first.dtype || info.python != first.python))) {
      return nullptr;
    }
    first = ids.empty() ? info : first;
    ids.push_back(v->graph_id());
  }
  // pick(builtin, keys, *values): builtin(table, key=table.get) of the dict of keys and values.
  static const py::object& pick = *new py::object(py::cpp_function([](const py::args& a) {
    py::dict table;
    const py::tuple names = a[1];
    for (std::size_t i = 0; i < names.size(); ++i) {
      table[names[i]] = a[i + 2];
    }
    return a[0](table, py::arg("key") = table.attr("get"));
  }));
  const py::object builtin =
      py::reinterpret_borrow<py::object>(PyDict_GetItemString(inputs_.builtins, name));
  std::vector<graph::Arg> values;
  values.reserve(ids.size());
  for (const int id : ids) {
    values.push_back(graph::Arg::of(id));
  }
  const py::object fn = loaded_module("functools").attr("partial")(pick, builtin, keys);
  return add_array_op(python_op(name, fn, std::move(values)), python_info(kind));
}

VarPtr OpcodeExecutor::builtin_max(const std::vector<VarPtr>& args) {
  VarPtr r = python_number_builtin("max", args);
  return r ? r : scalar_extreme("max", args);
}

VarPtr OpcodeExecutor::builtin_min(const std::vector<VarPtr>& args) {
  VarPtr r = python_number_builtin("min", args);
  return r ? r : scalar_extreme("min", args);
}

VarPtr OpcodeExecutor::builtin_abs(const std::vector<VarPtr>& args) {
  const bool python_number = args.size() == 1 && args[0]->kind() == Variable::Kind::kArray &&
                             shared_->arrays &&
                             arrays().graph.value(args[0]->graph_id()).info.python != 0;
  if (args.size() == 1 && !python_number && is_array_like(args[0])) {
    // abs() of an array or NumPy scalar is its __abs__: NumPy's absolute ufunc, the same dtype.
    const VarPtr absolute = Variable::object(arrays().numpy.attr("absolute"), Tracker{});
    return numpy_function("absolute", absolute, args, {}, nullptr);
  }
  return python_number_builtin("abs", args);
}

bool OpcodeExecutor::format_in_graph(const VarPtr& value, const VarPtr& spec, int conversion,
                                     bool convert_only) {
  // f"{x.mean():.4f}" of a NumPy scalar, or of a number or str made in the graph: format(),
  // str(), repr() or ascii() called where the graph runs, its result a str made in the graph. The
  // spec is a constant, tried here on a zero of the value's type (a spec the type rejects breaks).
  if (value->kind() != Variable::Kind::kArray || !shared_->arrays ||
      (spec && !(spec->is_const() && PyUnicode_CheckExact(spec->value().ptr())))) {
    return false;
  }
  const int id = value->graph_id();
  const graph::ValueInfo info = arrays().graph.value(id).info;
  if (arrays().is_loop_index(id) || info.is_tuple() || (!info.scalar && info.python == 0)) {
    return false;
  }
  static const char* const kConversions[] = {"format", "str", "repr", "ascii"};
  const char* name = kConversions[conversion & 3];
  py::object fn = py::reinterpret_borrow<py::object>(PyDict_GetItemString(inputs_.builtins, name));
  if (!fn) {
    return false;
  }
  const bool formats = !convert_only && (spec || conversion == 0);
  const py::object spec_value = spec ? spec->value() : py::str("");
  if (formats) {
    const char kind = conversion != 0 ? 's' : info.python;
    py::object sample;
    if (kind == 's') {
      sample = py::str("");
    } else if (kind == 'i' || kind == 'f') {
      sample = kind == 'i' ? py::object(py::int_(0)) : py::object(py::float_(0.0));
    } else {
      sample = numpy_module().attr("dtype")(std::string(graph::name(info.dtype))).attr("type")(0);
    }
    PyObject* tried = PyObject_Format(sample.ptr(), spec_value.ptr());
    if (tried == nullptr) {
      PyErr_Clear();
      return false;  // (the spec does not suit the type: formatting raises, for real)
    }
    Py_DECREF(tried);
  }
  int text = id;
  if (conversion != 0) {
    text = number_op(name, fn, {id}, 's')->graph_id();
  }
  if (formats) {
    if (spec) {
      guards_->value(spec);
    }
    const py::object format =
        py::reinterpret_borrow<py::object>(PyDict_GetItemString(inputs_.builtins, "format"));
    text = add_array_op(python_op("format", format,
                                  {graph::Arg::of(text), graph::Arg::constant_of(spec_value)}),
                        python_info('s'))
               ->graph_id();
  }
  if (spec) {
    pop();
  }
  pop();
  push(Variable::array(text, "Python str"));
  return true;
}

bool OpcodeExecutor::join_in_graph(int count) {
  // f"mean={m:.4f}": the parts, constants and strs made in the graph, joined where the graph runs.
  std::vector<int> ids;
  bool made = false;
  for (int i = count; i > 0; --i) {
    const VarPtr& v = peek(static_cast<std::size_t>(i));
    if (v->kind() == Variable::Kind::kArray && shared_->arrays &&
        arrays().graph.value(v->graph_id()).info.python == 's') {
      ids.push_back(v->graph_id());
      made = true;
    } else if (v->is_const() && PyUnicode_CheckExact(v->value().ptr())) {
      ids.push_back(arrays().graph.add_constant(v->value(), python_info('s')));
    } else {
      return false;
    }
  }
  if (!made) {
    return false;
  }
  for (int i = 0; i < count; ++i) {
    if (peek(1)->is_const()) {
      guards_->value(peek(1));
    }
    pop();
  }
  push(add_array_op(python_op("join", py::str("").attr("join"), {graph::Arg::sequence(ids, false)}),
                    python_info('s')));
  return true;
}

}  // namespace sot::translator
