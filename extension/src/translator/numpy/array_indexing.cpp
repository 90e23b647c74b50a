// Advanced indexing and its stores captured into the graph (array_indexing.hpp): boolean masks,
// integer arrays, NumPy integers and lists of ints built in the frame as indices, alone or after
// full slices. A mask's count of true items is a size known only when the graph runs: the
// result's dimension is a shape symbol that nothing can specialize, so whatever needs that size
// as a Python value (len(), .shape, reshape, iteration) breaks the graph there, and operations
// that carry it through (elementwise, reductions, matmul rows, transposes) stay in the graph.
// An integer index can be out of bounds where the graph runs (IndexError, as in plain NumPy): it
// is captured only while no side effect waits to be replayed after the graph.
#include "translator/numpy/array_indexing.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "core/loaded_module.hpp"
#include "graph/rules/order_rules.hpp"
#include "graph/rules/rules.hpp"

namespace py = pybind11;

namespace sot::translator {

using graph::Arg;
using graph::ValueInfo;

namespace {

// slice(None, None, None), as a constant.
bool full_slice(const py::handle& c) {
  if (!PySlice_Check(c.ptr())) {
    return false;
  }
  auto* s = reinterpret_cast<PySliceObject*>(c.ptr());
  return s->start == Py_None && s->stop == Py_None && s->step == Py_None;
}

int sym_at(const ValueInfo& v, std::size_t d) {
  return d < v.symbols.size() ? v.symbols[d] : -1;
}

// The same dimensions: sizes and symbols.
bool same_dims(const ValueInfo& a, const ValueInfo& b) {
  if (a.shape != b.shape) {
    return false;
  }
  for (std::size_t d = 0; d < a.shape.size(); ++d) {
    if (sym_at(a, d) != sym_at(b, d)) {
      return false;
    }
  }
  return true;
}

std::int64_t placeholder_of(const ValueInfo& mask) {
  std::int64_t n = 1;
  for (const auto d : mask.shape) {
    n *= d;
  }
  return std::max<std::int64_t>(n, 2);  // (a symbol's size here is at least 2, as an input's)
}

}  // namespace

OpcodeExecutor::AdvancedIndex::AdvancedIndex(OpcodeExecutor& executor, const VarPtr& x_var,
                                             const VarPtr& key)
    : ex(executor), array(x_var) {
  VarPtr idx = key;
  if (key->kind() == Variable::Kind::kTuple && key->items().size() >= 2) {
    // x[:, ..., :, idx]
    const std::vector<VarPtr>& items = key->items();
    for (std::size_t i = 0; i + 1 < items.size(); ++i) {
      const py::object c = items[i]->is_const() ? ex.constant_value(items[i]) : py::object();
      if (!c || !full_slice(c)) {
        leading = -1;
        break;
      }
    }
    if (leading < 0) {
      leading = 0;
      if (!take_tuple(items)) {
        return;
      }
      idx = nullptr;
    } else {
      leading = static_cast<int>(items.size()) - 1;
      idx = items.back();
    }
  }
  if (idx == nullptr) {
    kind = Kind::kTuple;
  } else if (idx->kind() == Variable::Kind::kList) {
    for (const VarPtr& item : idx->items()) {
      if (!item->is_const() || !PyLong_CheckExact(item->value().ptr())) {
        return;  // (a list of bools is a mask, of other values not modelled)
      }
      ints.append(item->value());
    }
    for (const VarPtr& item : idx->items()) {
      ex.guards_->value(item);
    }
    kind = Kind::kList;
  } else if (ex.is_array_like(idx)) {
    index = ex.array_operand(idx).id;
    const ValueInfo info = ex.array_info(index);
    const char k = graph::kind(info.dtype);
    if (k == 'b') {
      kind = Kind::kMask;
    } else if (k == 'i' || k == 'u') {
      kind = info.scalar || info.ndim() == 0 ? Kind::kInteger : Kind::kArray;
    } else {
      ex.graph_break("numpy indexing with an array of " + std::string(graph::name(info.dtype)) +
                     " (raises IndexError)");
    }
  } else {
    return;
  }
  advanced = true;
  const ArrayOperand xo = ex.array_operand(array);
  x = xo.id;
  if (ex.array_info(x).scalar) {
    ex.graph_break("advanced indexing of a NumPy scalar");
  }
  if ((kind == Kind::kArray || kind == Kind::kInteger || (kind == Kind::kTuple && !mask_first)) &&
      ex.effects().pending()) {
    ex.graph_break(
        "numpy indexing with an integer array: it may raise IndexError on its data, after side "
        "effects that are replayed once the graph has run");
  }
}

bool OpcodeExecutor::AdvancedIndex::take_tuple(const std::vector<VarPtr>& items) {
  bool any_array = false;
  bool any_int_array = false;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const VarPtr& item = items[i];
    if (item->is_const() && PyLong_CheckExact(item->value().ptr())) {
      continue;
    }
    if (!ex.is_array_like(item)) {
      return false;  // (slices, None or Ellipsis among them: not modelled)
    }
    const ValueInfo info = ex.array_info(ex.array_operand(item).id);
    const char k = graph::kind(info.dtype);
    const bool is_array = !info.scalar && info.ndim() > 0;
    if (k == 'b' && i == 0 && is_array) {
      mask_first = true;  // x[mask, i]: the mask's selected items, then the integers
    } else if (k != 'i' && k != 'u') {
      return false;
    }
    any_array = any_array || is_array;
    any_int_array = any_int_array || (is_array && k != 'b');
  }
  if (!any_array || (mask_first && any_int_array)) {
    return false;  // (integers alone: basic indexing; a mask with integer arrays: not modelled)
  }
  if (mask_first) {
    for (std::size_t i = 1; i < items.size(); ++i) {
      if (!items[i]->is_const()) {
        return false;  // (a mask with NumPy integers: not modelled; with ints, checked here)
      }
    }
  }
  for (const VarPtr& item : items) {
    if (item->is_const()) {
      ex.guards_->value(item);
      ValueInfo info;
      info.dtype = graph::DType::kInt64;
      info.scalar = true;
      parts.push_back(ex.arrays().graph.add_constant(item->value(), info));
    } else {
      parts.push_back(ex.array_operand(item).id);
    }
  }
  return true;
}

// A Python int among the indices, on axis `d` of `in`: within its (static) size.
bool OpcodeExecutor::AdvancedIndex::constant_in_bounds(const ValueInfo& in, int part,
                                                       std::size_t d) {
  const graph::Value& v = ex.arrays().graph.value(part);
  if (v.source != graph::Value::Source::kConst || sym_at(in, d) >= 0) {
    return true;
  }
  const long long i = PyLong_AsLongLong(v.constant.ptr());
  if (PyErr_Occurred() != nullptr || i < -in.shape[d] || i >= in.shape[d]) {
    PyErr_Clear();
    why = "index " + str_of(v.constant) + " is out of bounds for axis " + std::to_string(d) +
          " with size " + std::to_string(in.shape[d]);
    return false;
  }
  return true;
}

// x[i, j, ...] with integer indices: the indices broadcast together, then x's other dimensions.
std::optional<ValueInfo> OpcodeExecutor::AdvancedIndex::tuple_region() {
  const ValueInfo in = ex.array_info(x);
  if (parts.size() > in.shape.size()) {
    why = "too many indices for an array of " + std::to_string(in.shape.size()) + " dimensions";
    return std::nullopt;
  }
  if (mask_first) {
    return mask_tuple_region(in);
  }
  std::vector<graph::Operand> operands;
  for (std::size_t d = 0; d < parts.size(); ++d) {
    if (!constant_in_bounds(in, parts[d], d)) {
      return std::nullopt;
    }
    operands.push_back(graph::Operand::array(ex.array_info(parts[d])));
  }
  auto r = graph::broadcast_info(operands, &why);
  if (!r) {
    return std::nullopt;
  }
  r->dtype = in.dtype;
  r->scalar = false;
  r->symbols.resize(r->shape.size(), -1);
  for (std::size_t d = parts.size(); d < in.shape.size(); ++d) {
    r->shape.push_back(in.shape[d]);
    r->symbols.push_back(sym_at(in, d));
  }
  return r;
}

// x[mask, i, ...]: the mask's count (a size known only when the graph runs), then the dimensions
// after those the mask and the integers index.
std::optional<ValueInfo> OpcodeExecutor::AdvancedIndex::mask_tuple_region(const ValueInfo& in) {
  const int mask = parts.front();
  const ValueInfo mask_info = ex.array_info(mask);
  const std::size_t k = mask_info.shape.size();
  if (k + parts.size() - 1 > in.shape.size()) {
    why = "too many indices for an array of " + std::to_string(in.shape.size()) + " dimensions";
    return std::nullopt;
  }
  for (std::size_t i = 1; i < parts.size(); ++i) {
    if (!constant_in_bounds(in, parts[i], k + i - 1)) {
      return std::nullopt;
    }
  }
  auto r = graph::mask_result(in, mask_info, 0, ex.arrays().count_symbol(mask),
                              placeholder_of(mask_info), &why);
  if (!r) {
    return std::nullopt;
  }
  // (the integers' dimensions follow the count in r)
  r->shape.erase(r->shape.begin() + 1,
                 r->shape.begin() + static_cast<std::ptrdiff_t>(parts.size()));
  r->symbols.erase(r->symbols.begin() + 1,
                   r->symbols.begin() + static_cast<std::ptrdiff_t>(parts.size()));
  return r;
}

ValueInfo OpcodeExecutor::AdvancedIndex::region() {
  std::optional<ValueInfo> r;
  if (kind == Kind::kTuple) {
    r = tuple_region();
  } else if (kind == Kind::kList) {
    const ValueInfo in = ex.static_info(x);
    const auto at = static_cast<std::size_t>(leading);
    for (const py::handle i : ints) {
      const long long v = PyLong_AsLongLong(i.ptr());
      const std::int64_t n = at < in.shape.size() ? in.shape[at] : 0;
      if (PyErr_Occurred() != nullptr || v < -n || v >= n) {
        PyErr_Clear();
        ex.graph_break("numpy indexing: index " + str_of(i) + " is out of bounds for axis " +
                       std::to_string(at) + " with size " + std::to_string(n));
      }
    }
    ValueInfo list;
    list.dtype = graph::DType::kInt64;
    list.shape = {static_cast<std::int64_t>(py::len(ints))};
    r = graph::take_result(in, list, leading, &why);
  } else if (kind == Kind::kMask) {
    r = ex.retry_static({x, index}, [&] {
      why.clear();
      const ValueInfo mask = ex.array_info(index);
      return graph::mask_result(ex.array_info(x), mask, leading, ex.arrays().count_symbol(index),
                                placeholder_of(mask), &why);
    });
  } else {
    r = graph::take_result(ex.array_info(x), ex.array_info(index), leading, &why);
  }
  if (!r) {
    ex.graph_break("numpy indexing: " + why);
  }
  return *r;
}

Arg OpcodeExecutor::AdvancedIndex::key_arg() {
  if (kind == Kind::kTuple) {
    return Arg::sequence(parts, true);
  }
  if (kind == Kind::kList) {
    py::tuple key(static_cast<std::size_t>(leading) + 1);
    for (int d = 0; d < leading; ++d) {
      key[static_cast<std::size_t>(d)] =
          py::reinterpret_steal<py::object>(PySlice_New(nullptr, nullptr, nullptr));
    }
    key[static_cast<std::size_t>(leading)] = ints;
    return Arg::constant_of(leading > 0 ? py::object(key) : py::object(ints));
  }
  if (leading == 0) {
    return Arg::of(index);
  }
  // (slice(None),) * leading + (index,): a tuple value of the graph.
  py::tuple slices(static_cast<std::size_t>(leading));
  for (int d = 0; d < leading; ++d) {
    slices[static_cast<std::size_t>(d)] =
        py::reinterpret_steal<py::object>(PySlice_New(nullptr, nullptr, nullptr));
  }
  graph::Op g;
  g.name = "index_key";
  g.fn = loaded_module("operator").attr("add");
  g.args = {Arg::constant_of(slices), Arg::sequence({index}, true)};
  ValueInfo tuple;
  tuple.parts = leading + 1;
  return Arg::of(ex.add_array_op(std::move(g), tuple)->graph_id());
}

VarPtr OpcodeExecutor::AdvancedIndex::get() {
  const ValueInfo info = region();
  graph::Op g;
  g.name = "getitem";
  g.fn = loaded_module("operator").attr("getitem");
  g.args = {Arg::of(x), key_arg()};
  // (By a NumPy integer the result is a view of x; still not marked as one: a view nothing reads
  // is dropped, and this op may raise IndexError. What may be written in place is decided at run
  // time, by the array owning its data.)
  g.view = false;
  return ex.add_array_op(std::move(g), info);
}

void OpcodeExecutor::AdvancedIndex::set(const VarPtr& value) {
  const ValueInfo target = ex.array_info(x);
  const ArrayOperand v = ex.array_operand(value);
  if (v.kind == ArrayOperand::Kind::kValue) {
    const ValueInfo region_info = region();
    const ValueInfo vi = ex.array_info(v.id);
    const auto b = graph::broadcast_info(
        {graph::Operand::array(vi), graph::Operand::array(region_info)}, &why);
    if (!b || !same_dims(*b, region_info)) {
      ex.graph_break("numpy assignment through an array index: a value of shape " +
                     graph::shape_text(vi.shape) + " for " + region_info.text() +
                     " (its sizes may differ where the graph runs)");
    }
  } else {
    region();
  }
  check_store(ex, target, v);
  graph::Op g;
  g.name = "setitem";
  g.fn = loaded_module("operator").attr("setitem");
  g.args = {Arg::of(x), key_arg(),
            v.kind == ArrayOperand::Kind::kPython ? Arg::constant_of(v.constant) : Arg::of(v.id)};
  g.mutates = true;
  ex.add_array_op(std::move(g), target);
}

void OpcodeExecutor::AdvancedIndex::check_store(OpcodeExecutor& ex, const ValueInfo& target,
                                                const ArrayOperand& value) {
  if (value.kind == ArrayOperand::Kind::kNone) {
    ex.graph_break("assigning a value that is not an array or a Python number into a NumPy array");
  }
  const bool to_complex = graph::kind(target.dtype) == 'c';
  const bool to_float = graph::kind(target.dtype) == 'f';
  const std::string into = " into a " + std::string(graph::name(target.dtype)) + " array";
  if (value.kind == ArrayOperand::Kind::kPython) {
    const auto sk = value.scalar.kind;
    if ((sk == graph::PyScalar::Kind::kComplex && !to_complex) ||
        (sk == graph::PyScalar::Kind::kFloat && !to_float && !to_complex)) {
      ex.graph_break("assigning a Python " +
                     std::string(sk == graph::PyScalar::Kind::kFloat ? "float" : "complex") + into);
    }
    std::string overflow;
    if (sk == graph::PyScalar::Kind::kInt && !to_float && !to_complex &&
        !graph::result_type_with_scalar(target.dtype, value.scalar, graph::ScalarPromotion::kWeak,
                                        &overflow)) {
      ex.graph_break("assigning an out-of-range Python int" + into);
    }
    return;
  }
  const ValueInfo vi = ex.array_info(value.id);
  if (graph::kind(vi.dtype) == 'c' && !to_complex) {
    ex.graph_break("assigning complex values into a real array (ComplexWarning)");
  }
  if (graph::kind(vi.dtype) == 'f' && !to_float && !to_complex && (vi.scalar || vi.ndim() == 0)) {
    // A float scalar converted to an integer: a NaN or an infinity raises ValueError, which
    // would come where the graph runs, not here.
    ex.graph_break("assigning a NumPy float scalar" + into + " (raises on NaN or infinity)");
  }
}

}  // namespace sot::translator
