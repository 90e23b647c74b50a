// NumPy operators and calls captured into the frame's graph: BINARY_OP, COMPARE_OP and the unary
// operators on arrays, subscripts and subscript stores, array attributes, and the calls of NumPy
// functions and ndarray methods (array_functions.cpp binds their arguments).
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/loaded_module.hpp"
#include "translator/control/loop_key.hpp"
#include "translator/guards/guards.hpp"
#include "translator/handlers/binary_operators.hpp"
#include "translator/numpy/array_indexing.hpp"
#include "translator/numpy/array_state.hpp"
#include "translator/numpy/numpy_errstate.hpp"
#include "translator/numpy/numpy_names.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

using graph::Arg;
using graph::DType;
using graph::Operand;
using graph::UfuncKind;
using graph::ValueInfo;

namespace {

// L[i, :i]: the dimensions of `info` that slices of values of the graph keep (`sliced`: a loop
// key's), sized as the key says (a length the same on every step, or a runtime symbol: known
// where the graph runs).
void sliced_sizes(const std::vector<std::pair<int, int>>& sliced, graph::ValueInfo* info) {
  if (sliced.empty()) {
    return;
  }
  info->symbols.resize(info->shape.size(), -1);
  for (const auto& [dim, symbol] : sliced) {
    const auto d = static_cast<std::size_t>(dim);
    info->symbols[d] = std::max(symbol, -1);
    info->shape[d] = symbol >= 0 ? std::max<std::int64_t>(info->shape[d], 2) : -1 - symbol;
  }
  if (std::all_of(info->symbols.begin(), info->symbols.end(), [](int s) { return s < 0; })) {
    info->symbols.clear();
  }
}

constexpr int kMatmul = 4;
constexpr int kPower = 8;

// A binary ufunc the translator captures, as the numpy module has it (np.add, np.maximum, ...).
bool captured_binary_ufunc(const VarPtr& v) {
  if (v->kind() != Variable::Kind::kObject ||
      std::strcmp(Py_TYPE(v->value().ptr())->tp_name, "numpy.ufunc") != 0) {
    return false;
  }
  const py::object np = numpy_module();
  const std::string name = str_of(v->value().attr("__name__"));
  const UfuncEntry* u = find_ufunc(name);
  return !np.is_none() && u != nullptr && u->nin == 2 &&
         py::getattr(np, name.c_str(), py::none()).is(v->value());
}

// The rule's result is `info` for every probe of a Python number made in the graph (`xp` for the
// operand `x`, `yp` for `y`), each tried in turn as the operand's scalar.
template <class Operand>
bool same_for_probes(const ValueInfo& info, const std::vector<graph::PyScalar>& xp,
                     const std::vector<graph::PyScalar>& yp,
                     const std::function<std::optional<ValueInfo>()>& rule, Operand* x,
                     Operand* y) {
  for (auto [probes, o] : {std::pair{&xp, x}, std::pair{&yp, y}}) {
    const graph::PyScalar kept = o->scalar;
    for (const graph::PyScalar& p : *probes) {
      o->scalar = p;
      const std::optional<ValueInfo> r = rule();
      if (!r || r->dtype != info.dtype || r->scalar != info.scalar || r->shape != info.shape ||
          r->symbols != info.symbols) {
        o->scalar = kept;
        return false;
      }
    }
    o->scalar = kept;
  }
  return true;
}

}  // namespace

OpcodeExecutor::ArrayOperand OpcodeExecutor::number_array_operand(const VarPtr& v,
                                                                  const graph::PyScalar& probe) {
  ArrayOperand o;
  o.kind = ArrayOperand::Kind::kPython;
  o.id = v->graph_id();
  o.scalar = probe;
  return o;
}

OpcodeExecutor::ArrayOperand OpcodeExecutor::store_operand(const VarPtr& value,
                                                           const ValueInfo& target) {
  // A Python number made in the graph (math.sqrt(d), int(v) + 1) is stored as NumPy stores it,
  // where the graph runs: a float into a float64 array (exact), an int into an int64 array (an
  // int past 64 bits raises OverflowError there: only while no side effect waits to be replayed).
  ArrayOperand o = array_operand(value);
  if (o.kind != ArrayOperand::Kind::kNone || value->kind() != Variable::Kind::kArray ||
      !shared_->arrays || arrays().is_loop_index(value->graph_id())) {
    return o;
  }
  const char python = arrays().graph.value(value->graph_id()).info.python;
  if ((python == 'f' && target.dtype == graph::DType::kFloat64) ||
      (python == 'i' && target.dtype == graph::DType::kInt64 && !effects().pending())) {
    o.kind = ArrayOperand::Kind::kValue;
    o.id = value->graph_id();
  }
  return o;
}

OpcodeExecutor::ArrayOperand OpcodeExecutor::binary_operand(const VarPtr& v,
                                                            std::vector<graph::PyScalar>* probes) {
  *probes = number_probes(v);
  return probes->empty() ? array_operand(v) : number_array_operand(v, probes->front());
}

void OpcodeExecutor::require_value_independent(const BinaryOperator& bo, const ValueInfo& info,
                                               const std::vector<graph::PyScalar>& xprobes,
                                               const std::vector<graph::PyScalar>& yprobes,
                                               ArrayOperand* x, ArrayOperand* y) {
  // The rule gives `info` whatever value a Python number made in the graph has (its probes).
  auto operand = [&](const ArrayOperand& o) {
    return o.kind == ArrayOperand::Kind::kPython ? Operand::python(o.scalar)
                                                 : Operand::array(array_info(o.id));
  };
  std::string why;
  const auto rule = [&] {
    return graph::ufunc_result(bo.ufunc, bo.kind, {operand(*x), operand(*y)}, arrays().promotion,
                               &why);
  };
  if (!same_for_probes(info, xprobes, yprobes, rule, x, y)) {
    graph_break("numpy " + std::string(bo.ufunc) +
                " with a Python number made in the graph whose result dtype depends on its value");
  }
}

bool OpcodeExecutor::array_binary_op(int op) {
  const VarPtr b = peek(1);
  const VarPtr a = peek(2);
  if (!is_array_like(a) && !is_array_like(b)) {
    return false;
  }
  const BinaryOperator* bo = binary_operator(op);
  if (bo == nullptr) {
    return false;
  }
  const bool inplace = binary_inplace(op);
  const int base = bo->base;
  const std::string name = bo->ufunc;
  // (a Python number made in the graph, a loop variable among them: kPython with its value's id,
  // the rules tried on each of its probes)
  std::vector<graph::PyScalar> xprobes;
  std::vector<graph::PyScalar> yprobes;
  ArrayOperand x = binary_operand(a, &xprobes);
  ArrayOperand y = binary_operand(b, &yprobes);
  if (x.kind == ArrayOperand::Kind::kNone || y.kind == ArrayOperand::Kind::kNone) {
    graph_break("numpy " + name + " of " + a->describe() + " and " + b->describe() +
                " (an operand that is not an array, NumPy scalar or Python number)");
  }
  if ((!xprobes.empty() || !yprobes.empty()) && (base == kMatmul || base == kPower)) {
    graph_break("numpy " + name + " with a Python number made in the graph");
  }
  auto operand = [&](const ArrayOperand& o) {
    return o.kind == ArrayOperand::Kind::kPython ? Operand::python(o.scalar)
                                                 : Operand::array(array_info(o.id));
  };
  auto arg = [](const ArrayOperand& o) {
    return o.kind != ArrayOperand::Kind::kPython ? Arg::of(o.id)
           : o.id >= 0                           ? Arg::of(o.id)
                                                 : Arg::constant_of(o.constant);
  };
  std::string why;
  std::optional<ValueInfo> info;
  if (base == kMatmul) {
    if (x.kind != ArrayOperand::Kind::kValue || y.kind != ArrayOperand::Kind::kValue) {
      graph_break("numpy matmul with a Python scalar (raises ValueError)");
    }
    if (inplace) {
      graph_break("in-place matmul (@=)");
    }
    info = retry_static({x.id, y.id}, [&] {
      why.clear();
      return graph::matmul_result(array_info(x.id), array_info(y.id), &why);
    });
  } else {
    if ((base == 3 || base == 9) &&
        ((x.kind == ArrayOperand::Kind::kValue && graph::kind(array_info(x.id).dtype) == 'b') ||
         (y.kind == ArrayOperand::Kind::kValue && graph::kind(array_info(y.id).dtype) == 'b'))) {
      graph_break("numpy " + name + " of booleans");
    }
    info = retry_static({x.id, y.id}, [&] {
      why.clear();
      return graph::ufunc_result(name, bo->kind, {operand(x), operand(y)}, arrays().promotion,
                                 &why);
    });
    if (info) {
      require_value_independent(*bo, *info, xprobes, yprobes, &x, &y);
    }
    if (info && base == kPower && x.kind == ArrayOperand::Kind::kValue) {
      power_dtype_from_numpy(x, y, &*info);
    }
    if (info && base == kPower && graph::kind(info->dtype) != 'f' &&
        graph::kind(info->dtype) != 'c' &&
        !(y.kind == ArrayOperand::Kind::kPython && y.scalar.value >= 0)) {
      graph_break("integer power with an exponent that may be negative (NumPy raises ValueError)");
    }
  }
  if (!info) {
    graph_break("numpy " + name + ": " + why);
  }
  graph::Op g;
  g.name = name;
  g.args = {arg(x), arg(y)};
  VarPtr result;
  const bool target_array = x.kind == ArrayOperand::Kind::kValue && !array_info(x.id).scalar;
  if (inplace && target_array) {
    const ValueInfo& target = array_info(x.id);
    if (info->shape != target.shape) {
      graph_break("in-place numpy " + name + ": non-broadcastable output operand with shape " +
                  graph::shape_text(target.shape) + " doesn't match the broadcast shape " +
                  graph::shape_text(info->shape));
    }
    if (!graph::can_cast_same_kind(info->dtype, target.dtype)) {
      graph_break("in-place numpy " + name + ": cannot cast ufunc output from " +
                  std::string(graph::name(info->dtype)) + " to " +
                  std::string(graph::name(target.dtype)) + " with casting rule 'same_kind'");
    }
    g.fn = operator_fn(bo->inplace);
    g.mutates = true;
    const ValueInfo same = target;
    add_array_op(std::move(g), same);
    result = a;  // the same array, changed
  } else {
    g.fn = operator_fn(inplace ? bo->inplace : bo->function);
    result = add_array_op(std::move(g), *info);
  }
  pop();
  pop();
  push(std::move(result));
  return true;
}

bool OpcodeExecutor::array_compare_op(int op) {
  const VarPtr b = peek(1);
  const VarPtr a = peek(2);
  // x.dtype == np.float32, x.dtype != "int8": dtypes are immutable, compared now.
  const py::object np = numpy_module();
  auto is_dtype = [&](const VarPtr& v) {
    return !np.is_none() && v->kind() == Variable::Kind::kObject && !v->tracker().is_input() &&
           PyObject_TypeCheck(v->value().ptr(),
                              reinterpret_cast<PyTypeObject*>(np.attr("dtype").ptr())) != 0;
  };
  if ((op == Py_EQ || op == Py_NE) && (is_dtype(a) || is_dtype(b))) {
    const VarPtr& other = is_dtype(a) ? b : a;
    py::object value;
    if (other->kind() == Variable::Kind::kObject) {
      value = other->value();
      if (!(PyType_Check(value.ptr()) || is_dtype(other))) {
        return false;
      }
      guards_->identity(other);
    } else if (other->is_const()) {
      value = constant_value(other);
    } else {
      return false;
    }
    const py::object mine = is_dtype(a) ? a->value() : b->value();
    const int eq = PyObject_RichCompareBool(mine.ptr(), value.ptr(), op);
    if (eq < 0) {
      PyErr_Clear();
      return false;
    }
    pop();
    pop();
    push(Variable::constant(py::bool_(eq == 1)));
    return true;
  }
  if (!is_array_like(a) && !is_array_like(b)) {
    return false;
  }
  static const char* const kNames[] = {"less",      "less_equal", "equal",
                                       "not_equal", "greater",    "greater_equal"};
  static const char* const kFns[] = {"lt", "le", "eq", "ne", "gt", "ge"};
  const std::string name = kNames[op];
  // (a Python float made in the graph, a float argument seen with several values among them:
  // compared with a float64 array or NumPy scalar, which NumPy compares in float64 whatever its
  // value, under every promotion; against any other dtype the dtype it compares in may depend on
  // the value, and a Python int past 64 bits compares exactly under NumPy 1.x (as objects) but in
  // float64 under NumPy 2: these break)
  std::vector<graph::PyScalar> xprobes;
  std::vector<graph::PyScalar> yprobes;
  ArrayOperand x = binary_operand(a, &xprobes);
  ArrayOperand y = binary_operand(b, &yprobes);
  if (x.kind == ArrayOperand::Kind::kNone || y.kind == ArrayOperand::Kind::kNone) {
    graph_break("numpy " + name + " of " + a->describe() + " and " + b->describe());
  }
  auto float64_value = [&](const ArrayOperand& o) {
    return o.kind == ArrayOperand::Kind::kValue && array_info(o.id).dtype == graph::DType::kFloat64;
  };
  auto python_float = [&](const ArrayOperand& o) {
    return arrays().graph.value(o.id).info.python == 'f';
  };
  if ((!xprobes.empty() && !(python_float(x) && float64_value(y))) ||
      (!yprobes.empty() && !(python_float(y) && float64_value(x)))) {
    graph_break("numpy " + name + " of " + a->describe() + " and " + b->describe() +
                " (a Python number made in the graph is compared here only when it is a float and"
                " the other side float64)");
  }
  auto operand = [&](const ArrayOperand& o) {
    return o.kind == ArrayOperand::Kind::kPython ? Operand::python(o.scalar)
                                                 : Operand::array(array_info(o.id));
  };
  std::string why;
  const auto rule = [&] {
    return graph::ufunc_result(name, UfuncKind::kCompare, {operand(x), operand(y)},
                               arrays().promotion, &why);
  };
  auto info = retry_static({x.id, y.id}, [&] {
    why.clear();
    return rule();
  });
  if (!info) {
    graph_break("numpy " + name + ": " + why);
  }
  if (!same_for_probes(*info, xprobes, yprobes, rule, &x, &y)) {
    graph_break("numpy " + name +
                " with a Python number made in the graph whose result depends on its value");
  }
  graph::Op g;
  g.name = name;
  g.fn = operator_fn(kFns[op]);
  auto arg = [](const ArrayOperand& o) {
    return o.kind != ArrayOperand::Kind::kPython ? Arg::of(o.id)
           : o.id >= 0                           ? Arg::of(o.id)
                                                 : Arg::constant_of(o.constant);
  };
  g.args = {arg(x), arg(y)};
  VarPtr r = add_array_op(std::move(g), *info);
  pop();
  pop();
  push(std::move(r));
  return true;
}

bool OpcodeExecutor::array_unary(const char* which) {
  const VarPtr a = peek(1);
  if (!is_array_like(a)) {
    return false;
  }
  const std::string w = which;
  const std::string name = w == "neg" ? "negative" : w == "pos" ? "positive" : "invert";
  const ArrayOperand x = array_operand(a);
  std::string why;
  auto info = graph::ufunc_result(name, w == "invert" ? UfuncKind::kBitwise : UfuncKind::kSame,
                                  {Operand::array(array_info(x.id))}, arrays().promotion, &why);
  if (!info) {
    graph_break("numpy " + name + ": " + why);
  }
  graph::Op g;
  g.name = name;
  g.fn = operator_fn(which);
  g.args = {Arg::of(x.id)};
  VarPtr r = add_array_op(std::move(g), *info);
  pop();
  push(std::move(r));
  return true;
}

bool OpcodeExecutor::array_subscript(std::size_t n) {
  const VarPtr container = peek(n);
  if (!is_array_like(container)) {
    return false;
  }
  py::object key;
  std::optional<std::vector<graph::IndexItem>> items;
  std::optional<LoopKey> at_index = n == 2 ? loop_key(container, peek(1)) : std::nullopt;
  const VarPtr ranged = n == 3 ? ranged_slice({peek(2), peek(1)}) : nullptr;
  if (ranged) {  // x[:i] in a loop body (3.12's BINARY_SLICE)
    at_index = loop_key(container, ranged);
    if (!at_index) {
      graph_break("a slice of a NumPy array with " + ranged->describe());
    }
  }
  if (at_index) {
    items = at_index->items;
    key = py::none();  // (x[i] with the loop variable: the op takes the index as a value)
  } else if (n == 3) {
    const VarPtr& start = peek(2);
    const VarPtr& stop = peek(1);
    const py::object s0 = constant_value(start);
    const py::object s1 = s0 ? constant_value(stop) : py::object();
    if (!s1) {
      graph_break("a slice of a NumPy array with " + start->describe() + " and " +
                  stop->describe());
    }
    key = py::reinterpret_steal<py::object>(PySlice_New(s0.ptr(), s1.ptr(), nullptr));
  } else {
    const VarPtr& k = peek(1);
    AdvancedIndex advanced(*this, container, k);  // x[mask], x[idx], x[:, idx] (array_indexing.cpp)
    if (advanced.advanced) {
      VarPtr r = advanced.get();
      pop();
      pop();
      push(std::move(r));
      return true;
    }
    key = constant_value(k);
    if (!key) {
      graph_break("indexing a NumPy array with " + k->describe());
    }
  }
  if (!items) {
    items = index_items(key);
  }
  if (!items) {
    graph_break("indexing a NumPy array with " + py::repr(key).cast<std::string>() +
                " (advanced indexing)");
  }
  const ArrayOperand x = array_operand(container);
  if (array_info(x.id).scalar) {
    graph_break("indexing a NumPy scalar");
  }
  std::string why;
  auto info = retry_static({x.id}, [&] {
    why.clear();
    return graph::index_result(array_info(x.id), *items, &why);
  });
  if (!info) {
    graph_break("numpy indexing: " + why);
  }
  if (at_index) {
    sliced_sizes(at_index->sliced, &*info);
  }
  graph::Op g;
  g.name = "getitem";
  g.fn = operator_fn("getitem");
  g.args = {Arg::of(x.id), at_index ? Arg::of(at_index->indices[0]) : Arg::constant_of(key)};
  if (at_index && at_index->tuple.size() > 0) {
    g.name = "getitem_at";  // x[..., i, ...]: the key made when the op runs
    g.fn = LoopKey::getter();
    g.args = at_index->args(x.id);
  }
  g.view = !info->scalar;
  VarPtr r = add_array_op(std::move(g), *info);
  for (std::size_t i = 0; i < n; ++i) {
    pop();
  }
  push(std::move(r));
  return true;
}

bool OpcodeExecutor::array_store_subscr() {
  const VarPtr key = peek(1);
  const VarPtr container = peek(2);
  const VarPtr value = peek(3);
  if (!is_array_like(container)) {
    return false;
  }
  const ArrayOperand x = array_operand(container);
  const ValueInfo target = array_info(x.id);
  if (target.scalar) {
    graph_break("item assignment on a NumPy scalar (raises TypeError)");
  }
  AdvancedIndex advanced(*this, container, key);
  if (advanced.advanced) {
    advanced.set(value);
    pop();
    pop();
    pop();
    return true;
  }
  const std::optional<LoopKey> at_index =
      loop_key(container, key);  // x[i] = v, i the loop variable
  std::optional<std::vector<graph::IndexItem>> items;
  if (at_index) {
    items = at_index->items;
  }
  const py::object k = at_index ? py::object(py::none()) : constant_value(key);
  if (!at_index && k) {
    items = index_items(k);
  }
  if (!items) {
    graph_break("assignment to a NumPy array with the index " + key->describe());
  }
  const ArrayOperand v = store_operand(value, target);
  AdvancedIndex::check_store(*this, target, v);
  std::string why;
  // The region x[k], and a value that broadcasts into it: the same sizes, and the same shape
  // symbols where they are dynamic (they may differ where the graph runs).
  const auto region = retry_static({x.id, v.id}, [&]() -> std::optional<ValueInfo> {
    why.clear();
    auto r = graph::index_result(array_info(x.id), *items, &why);
    if (r && at_index) {
      sliced_sizes(at_index->sliced, &*r);  // (x[i:i + 4] = v: the region's lengths as a getitem's)
    }
    if (!r || v.kind != ArrayOperand::Kind::kValue) {
      return r;
    }
    const ValueInfo vi = array_info(v.id);
    const auto b = graph::broadcast_info({Operand::array(vi), Operand::array(*r)}, &why);
    if (!b || b->shape != r->shape || b->symbols != r->symbols) {
      why = "could not broadcast input array from shape " + graph::shape_text(vi.shape) +
            " into shape " + graph::shape_text(r->shape);
      return std::nullopt;
    }
    return r;
  });
  if (!region) {
    graph_break("numpy assignment: " + why);
  }
  graph::Op g;
  g.name = "setitem";
  g.fn = operator_fn("setitem");
  const Arg value_arg =
      v.kind == ArrayOperand::Kind::kPython ? Arg::constant_of(v.constant) : Arg::of(v.id);
  g.args = {Arg::of(x.id), at_index ? Arg::of(at_index->indices[0]) : Arg::constant_of(k),
            value_arg};
  if (at_index && at_index->tuple.size() > 0) {
    g.name = "setitem_at";  // x[..., i, ...] = v: the key made when the op runs
    g.fn = LoopKey::setter();
    g.args = at_index->args(x.id);
    g.args.push_back(value_arg);
  }
  g.mutates = true;
  add_array_op(std::move(g), target);
  pop();
  pop();
  pop();
  return true;
}

VarPtr OpcodeExecutor::runtime_shape(int id) {
  // (the first dimension a size known only where the graph runs, x[mask]'s or x[:i]'s in a loop
  // body: a Python int made there, len(x); the others relied on)
  ValueInfo info = array_info(id);
  ArrayState& a = arrays();
  if (info.symbols.empty() || info.scalar || info.ndim() == 0 ||
      std::find(a.runtime.begin(), a.runtime.end(), info.symbols[0]) == a.runtime.end()) {
    return nullptr;
  }
  info.symbols[0] = -1;
  if (a.has_runtime(info)) {
    return nullptr;
  }
  a.specialize(info);
  std::vector<VarPtr> items;
  items.push_back(number_op("len", loaded_module("builtins").attr("len"), {id}, 'i'));
  for (std::size_t d = 1; d < info.shape.size(); ++d) {
    items.push_back(Variable::constant(py::int_(info.shape[d])));
  }
  return Variable::tuple(std::move(items));
}

VarPtr OpcodeExecutor::array_attr(const VarPtr& base, const py::object& name) {
  if (captured_binary_ufunc(base)) {
    // np.add.outer, np.maximum.reduce, ...: called as ufunc methods (array_call).
    const std::string m = str_of(name);
    return captured_ufunc_method(m) ? Variable::method(base, name) : nullptr;
  }
  if (!is_array_like(base)) {
    return nullptr;
  }
  const std::string n = str_of(name);
  const ArrayOperand x = array_operand(base);
  if (x.kind != ArrayOperand::Kind::kValue) {
    return nullptr;
  }
  if (n == "shape") {
    if (VarPtr shape = runtime_shape(x.id)) {
      return shape;
    }
  }
  // Sizes read as Python values: the translation relies on them (static from now on).
  const bool sizes = n == "shape" || n == "size" || n == "nbytes";
  const ValueInfo info = sizes ? static_info(x.id) : array_info(x.id);
  if (n == "shape") {
    py::tuple t(info.shape.size());
    for (std::size_t d = 0; d < info.shape.size(); ++d) {
      t[d] = py::int_(info.shape[d]);
    }
    return Variable::constant(t);
  }
  if (n == "ndim") {
    return Variable::constant(py::int_(info.ndim()));
  }
  std::int64_t size = 1;
  for (const auto d : info.shape) {
    size *= d;
  }
  if (n == "size") {
    return Variable::constant(py::int_(size));
  }
  if (n == "itemsize" || n == "nbytes") {
    const int item = graph::itemsize(info.dtype);
    return Variable::constant(py::int_(n == "itemsize" ? item : item * size));
  }
  if (n == "dtype") {
    return Variable::object(arrays().numpy.attr("dtype")(std::string(graph::name(info.dtype))),
                            Tracker{});
  }
  if (n == "T") {
    std::string why;
    auto t = graph::transpose_result(info, {}, &why);
    if (!t || info.scalar) {
      graph_break("numpy .T: " + (info.scalar ? std::string("of a NumPy scalar") : why));
    }
    graph::Op g;
    g.name = "transpose";
    g.fn = operator_fn("attrgetter")("T");
    g.args = {Arg::of(x.id)};
    g.view = true;
    return add_array_op(std::move(g), *t);
  }
  const PyObject* ndarray = arrays().numpy.attr("ndarray").ptr();
  if (PyObject_HasAttr(const_cast<PyObject*>(ndarray), name.ptr()) != 0) {
    return Variable::method(base, name);  // captured or not: decided at the call
  }
  return nullptr;
}

VarPtr OpcodeExecutor::array_call(const VarPtr& callable, const std::vector<VarPtr>& args,
                                  const py::object& kwnames) {
  const std::size_t nkw = kwnames ? static_cast<std::size_t>(PyTuple_GET_SIZE(kwnames.ptr())) : 0;
  std::vector<VarPtr> positional(args.begin(), args.end() - static_cast<std::ptrdiff_t>(nkw));
  std::vector<std::pair<std::string, VarPtr>> kwargs;
  for (std::size_t i = 0; i < nkw; ++i) {
    kwargs.emplace_back(str_of(PyTuple_GET_ITEM(kwnames.ptr(), static_cast<Py_ssize_t>(i))),
                        args[positional.size() + i]);
  }
  if (callable->kind() == Variable::Kind::kMethod && is_array_like(callable->items()[0])) {
    const std::string name = str_of(callable->value());
    if (!captured_method(name)) {
      if (name == "item" || name == "tolist" || name == "__bool__" || name == "__float__") {
        graph_break("ndarray." + name + "() needs the array's data");
      }
      graph_break("unsupported numpy method ndarray." + name);
    }
    return numpy_function(name, nullptr, positional, kwargs, callable->items()[0]);
  }
  if (callable->kind() == Variable::Kind::kMethod && captured_binary_ufunc(callable->items()[0])) {
    const VarPtr& ufunc = callable->items()[0];
    guards_->identity(ufunc);
    const std::string method = str_of(callable->value());
    const VarPtr bound = Variable::object(ufunc->value().attr(method.c_str()), Tracker{});
    return numpy_function("ufunc." + method, bound, positional, kwargs, nullptr);
  }
  if (callable->kind() != Variable::Kind::kObject) {
    return nullptr;
  }
  const py::object np = numpy_module();
  if (np.is_none()) {
    return nullptr;
  }
  PyObject* fn = callable->value().ptr();
  if (PyType_Check(fn) != 0 && PyObject_IsSubclass(fn, np.attr("generic").ptr()) == 1) {
    // A NumPy scalar type called on a Python number: np.float32(2.0).
    const py::object dt = np.attr("dtype")(callable->value());
    const auto dtype = graph::dtype_from_name(str_of(dt.attr("name")));
    if (dtype && dt.attr("type").ptr() == fn && positional.size() == 1 && kwargs.empty() &&
        positional[0]->kind() == Variable::Kind::kConst) {
      const ArrayOperand v = array_operand(positional[0]);
      if (v.kind == ArrayOperand::Kind::kPython &&
          v.scalar.kind != graph::PyScalar::Kind::kComplex) {
        // (an int out of the type's range raises OverflowError: where the graph runs that would be
        // before the side effects recorded so far are replayed, so the call runs for real)
        const auto tried =
            py::reinterpret_steal<py::object>(PyObject_CallOneArg(fn, v.constant.ptr()));
        if (!tried) {
          PyErr_Clear();
          graph_break("numpy " + str_of(callable->value().attr("__name__")) + "() of " +
                      positional[0]->describe() + " raises");
        }
        guards_->identity(callable);
        graph::Op g;
        g.name = "scalar";
        g.fn = callable->value();
        g.args = {Arg::constant_of(v.constant)};
        ValueInfo info;
        info.dtype = *dtype;
        info.scalar = true;
        return add_array_op(std::move(g), info);
      }
    }
    graph_break("numpy " + str_of(callable->value().attr("__name__")) + "() of " +
                (positional.empty() ? std::string("nothing") : positional[0]->describe()));
  }
  PyErr_Clear();
  const auto& table = numpy_table(np);
  const auto it = table.find(fn);
  if (it == table.end() && shared_->backend == "cuda") {
    // cupy.<name> of a captured NumPy callable: captured as NumPy's (the graph computes what NumPy
    // would, on the device; CuPy follows NumPy's rules)
    const auto& cupy = cupy_table(np);
    if (const auto c = cupy.find(fn); c != cupy.end()) {
      guards_->identity(callable);
      const VarPtr as_numpy =
          Variable::object(py::reinterpret_borrow<py::object>(c->second.numpy_fn), Tracker{});
      return numpy_function(c->second.name, as_numpy, positional, kwargs, nullptr);
    }
  }
  if (it == table.end()) {
    const std::string shown = numpy_name(callable->value());
    if (shown.empty()) {
      return nullptr;
    }
    graph_break("unsupported numpy function " + shown);
  }
  guards_->identity(callable);
  return numpy_function(it->second, callable, positional, kwargs, nullptr);
}

}  // namespace sot::translator
