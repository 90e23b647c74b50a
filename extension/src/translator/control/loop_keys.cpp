// Element keys in loop bodies: x[i], x[i - 1], u[i, j] with ints of the graph as indices, checked
// in range over the ints' ranges where those are known; slices of such ints (L[i, :i], x[i + 1:]),
// their lengths runtime symbols by form; getitem_at/setitem_at fill a key's template where the
// graph runs.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "translator/control/loop_key.hpp"
#include "translator/control/loop_site.hpp"
#include "translator/executor_support.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

using graph::Arg;
using graph::ValueInfo;

bool OpcodeExecutor::ranged_int(const VarPtr& v) {
  return v->kind() == Variable::Kind::kArray && shared_->arrays &&
         arrays().int_range(v->graph_id()).has_value();
}

VarPtr OpcodeExecutor::ranged_slice(const std::vector<VarPtr>& parts) {
  bool ranged = false;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i]->is_const()) {
      continue;
    }
    if (i < 2 && ranged_int(parts[i])) {  // (a start or stop: the step stays a constant)
      ranged = true;
      continue;
    }
    return nullptr;
  }
  if (!ranged) {
    return nullptr;
  }
  std::vector<VarPtr> items;
  for (std::size_t i = 0; i < 3; ++i) {
    VarPtr v = i < parts.size() ? parts[i] : Variable::constant(py::none());
    if (v->is_const()) {
      guards_->value(v);
      if (!v->value().is_none() && !PyLong_CheckExact(v->value().ptr())) {
        graph_break("a slice of " + v->describe() + " and values of the graph");
      }
    }
    items.push_back(std::move(v));
  }
  return Variable::slice(std::move(items));
}

std::string OpcodeExecutor::int_form(int id, int* max_id) {
  // (the Python int ops are pure: the same op of the same forms makes the same int)
  const graph::Graph& g = arrays().graph;
  const graph::Value& v = g.value(id);
  if (v.source == graph::Value::Source::kConst) {
    return py::repr(v.constant).cast<std::string>();
  }
  if (v.source == graph::Value::Source::kOp && v.info.python == 'i') {
    const graph::Op& op = g.ops()[static_cast<std::size_t>(v.op)];
    const bool pure = op.name == "add" || op.name == "sub" || op.name == "mul" ||
                      op.name == "floordiv" || op.name == "mod";
    if (pure && op.kwargs.empty()) {
      std::string form = op.name + "(";
      for (const Arg& a : op.args) {
        if (a.kind == Arg::Kind::kValue) {
          form += int_form(a.value, max_id) + ",";
        } else if (a.kind == Arg::Kind::kConst) {
          form += py::repr(a.constant).cast<std::string>() + ",";
        } else {
          form += "?" + std::to_string(id) + ",";
          *max_id = std::max(*max_id, id);
        }
      }
      return form + ")";
    }
  }
  *max_id = std::max(*max_id, id);
  return "v" + std::to_string(id);
}

namespace {

// Where a tuple key's items go: the ints of the graph (their ids and places), the key with None at
// their places, and the slices of values of the graph by place (nullptr elsewhere).
struct KeyItems {
  std::vector<int>* indices;
  std::vector<int>* positions;
  py::list* parts;
  std::vector<VarPtr>* slices;
};

// False when an item is neither such an int, nor such a slice, nor a constant that tells its axis.
bool key_items(const std::vector<VarPtr>& items, const std::function<bool(const VarPtr&)>& is_index,
               const std::function<py::object(const VarPtr&)>& constant, KeyItems* out) {
  for (std::size_t j = 0; j < items.size(); ++j) {
    const VarPtr& item = items[j];
    out->slices->push_back(item->kind() == Variable::Kind::kSlice ? item : nullptr);
    if (out->slices->back()) {
      out->parts->append(py::none());  // (its template: slice_places)
      continue;
    }
    if (is_index(item)) {
      out->indices->push_back(item->graph_id());
      out->positions->push_back(static_cast<int>(j));
      out->parts->append(py::none());
      continue;
    }
    const py::object c = constant(item);
    if (!c || c.ptr() == Py_Ellipsis || c.is_none()) {
      return false;  // (an axis an index's position cannot tell)
    }
    out->parts->append(c);
  }
  return true;
}

}  // namespace

std::optional<OpcodeExecutor::LoopKey> OpcodeExecutor::loop_key(const VarPtr& container,
                                                                const VarPtr& key) {
  // (a loop variable, an int computed from one whose range is known: i - 1, 2 * j + 1, or any other
  // Python int of the graph - a counter carried by a while loop - while no side effect waits to be
  // replayed after the graph: out of range, the op raises IndexError where the graph runs, as the
  // plain code would there)
  auto is_index = [&](const VarPtr& v) {
    if (v->kind() != Variable::Kind::kArray || !shared_->arrays) {
      return false;
    }
    const graph::ValueInfo& info = arrays().graph.value(v->graph_id()).info;
    return arrays().int_range(v->graph_id()).has_value() ||
           (info.python == 'i' && !effects().pending());
  };
  LoopKey k;
  py::list parts;  // the key, each index's place None, each slice's parts of the graph Ellipsis
  std::vector<VarPtr> slices;  // (by place in the key; nullptr where no such slice)
  const bool one_slice = key->kind() == Variable::Kind::kSlice;  // x[i:j] is x[(i:j,)]
  if (is_index(key)) {
    k.indices.push_back(key->graph_id());
    k.positions.push_back(0);
    parts.append(py::none());
  } else if ((key->kind() == Variable::Kind::kTuple && !key->tracker().is_input()) || one_slice) {
    KeyItems items{&k.indices, &k.positions, &parts, &slices};
    if (!key_items(
            one_slice ? std::vector<VarPtr>{key} : key->items(), is_index,
            [&](const VarPtr& v) { return constant_value(v); }, &items)) {
      return std::nullopt;
    }
  }
  if (k.indices.empty() &&
      std::none_of(slices.begin(), slices.end(), [](const VarPtr& v) { return v != nullptr; })) {
    return std::nullopt;
  }
  const ArrayOperand x = array_operand(container);
  const ValueInfo in = static_info(x.id);  // (the bounds need the indexed dimensions' sizes)
  for (std::size_t j = 0; j < k.indices.size(); ++j) {
    const auto pos = static_cast<std::size_t>(k.positions[j]);
    if (in.scalar || in.ndim() <= static_cast<int>(pos)) {
      graph_break("indexing a NumPy value with the loop variable past its dimensions");
    }
    const std::int64_t size = in.shape[pos];
    const auto range = arrays().int_range(k.indices[j]);
    if (range ? (range->lo < -size || range->hi >= size) : size == 0) {
      graph_break("the loop variable indexes past the array's dimension (IndexError)");
    }
    parts[pos] = py::int_(range ? range->lo : 0);
  }
  std::vector<py::object> templates(slices.size());
  if (!slices.empty() && !slice_places(in, slices, &parts, &templates, &k)) {
    return std::nullopt;
  }
  const auto items = index_items(
      key->kind() == Variable::Kind::kTuple || one_slice ? py::object(py::tuple(parts)) : parts[0]);
  if (!items) {
    return std::nullopt;
  }
  k.items = *items;
  if (key->kind() == Variable::Kind::kTuple || one_slice) {
    for (const int pos : k.positions) {
      if (pos >= 0) {
        parts[static_cast<std::size_t>(pos)] = py::none();
      }
    }
    for (std::size_t j = 0; j < templates.size(); ++j) {
      if (templates[j]) {
        parts[j] = templates[j];
      }
    }
    k.tuple = py::tuple(parts);
  }
  return k;
}

namespace {

// An int constant that is a 64-bit int (false for other objects and bigger ints).
bool int64_of(const py::object& o, std::int64_t* out) {
  if (!o || PyLong_CheckExact(o.ptr()) == 0) {
    return false;
  }
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(o.ptr(), &overflow);
  if (overflow != 0 || (v == -1 && PyErr_Occurred() != nullptr)) {
    PyErr_Clear();
    return false;
  }
  *out = v;
  return true;
}

// The length of a slice over a dimension of `size` items whose start and stop are one int times
// +1 or -1 plus constants (x[i:i + 4], x[:n - i], x[i:]), both within [0, size] over their ranges
// (Python's slice rules change neither) and the stop never before the start, the step 1: `fixed`
// items on every step, or `form` (the text of coefficient * int + constant: slices of one form have
// one length). Neither where that is not shown.
struct SliceLength {
  std::int64_t fixed = -1;
  std::string form;
};

// A start or stop as a linear form: `coef` times int `base` (-1: none, a constant) plus `offset`,
// with the range of its values.
struct Linear {
  int base = -1;
  std::int64_t coef = 0, offset = 0;
  std::int64_t lo = 0, hi = 0;
};

// An argument that is an int constant (a constant argument, or a value of the graph that is one).
bool constant_arg(const graph::Graph& g, const Arg& k, std::int64_t* c) {
  const py::object o =
      k.kind == Arg::Kind::kConst ? k.constant
      : k.kind == Arg::Kind::kValue && g.value(k.value).source == graph::Value::Source::kConst
          ? g.value(k.value).constant
          : py::object();
  return int64_of(o, c) && *c != INT64_MIN;
}

// Part `v` of a slice (`none` where it is None) as a linear form; false where it is none.
bool linear_of(const ArrayState& arrays, const VarPtr& v, std::int64_t none, Linear* l) {
  if (v->is_const()) {
    l->offset = none;
    if (!v->value().is_none() && !int64_of(v->value(), &l->offset)) {
      return false;
    }
    l->lo = l->hi = l->offset;
    return true;
  }
  const auto range = arrays.int_range(v->graph_id());
  if (!range) {
    return false;
  }
  l->lo = range->lo;
  l->hi = range->hi;
  l->coef = 1;
  const graph::Graph& g = arrays.graph;
  int id = v->graph_id();
  for (;;) {  // (`+ c`, `c +`, `- c` and `c -` peeled off: n - i is -1 times i plus n)
    const graph::Value& val = g.value(id);
    if (val.source != graph::Value::Source::kOp) {
      break;
    }
    const graph::Op& op = g.ops()[static_cast<std::size_t>(val.op)];
    if ((op.name != "add" && op.name != "sub") || op.args.size() != 2) {
      break;
    }
    std::int64_t c = 0;
    int next = -1;
    std::int64_t sign = 1;
    if (op.args[0].kind == Arg::Kind::kValue && constant_arg(g, op.args[1], &c)) {
      next = op.args[0].value;
      c = op.name == "add" ? c : -c;
    } else if (op.args[1].kind == Arg::Kind::kValue && constant_arg(g, op.args[0], &c)) {
      next = op.args[1].value;
      sign = op.name == "add" ? 1 : -1;
    } else {
      break;
    }
    std::int64_t term = 0;
    if (__builtin_mul_overflow(l->coef, c, &term) ||
        __builtin_add_overflow(l->offset, term, &l->offset)) {
      return false;
    }
    l->coef *= sign;
    id = next;
  }
  l->base = id;
  return true;
}

SliceLength slice_length(const ArrayState& arrays, const std::vector<VarPtr>& parts,
                         std::int64_t size, const std::function<std::string(int)>& form_of) {
  SliceLength out;
  if (!parts[2]->value().is_none()) {
    return out;
  }
  Linear a;
  Linear b;
  if (!linear_of(arrays, parts[0], 0, &a) || !linear_of(arrays, parts[1], size, &b) ||
      (a.base >= 0 && b.base >= 0 && a.base != b.base) || a.lo < 0 || b.lo < 0 || a.hi > size ||
      b.hi > size) {
    return out;
  }
  const int base = a.base >= 0 ? a.base : b.base;
  const std::int64_t coef = b.coef - a.coef;
  const std::int64_t offset = b.offset - a.offset;
  if (base < 0 || coef == 0) {
    out.fixed = std::max<std::int64_t>(0, offset);
    return out;
  }
  const auto range = arrays.int_range(base);  // (the stop never before the start)
  if (!range || coef * range->lo + offset < 0 || coef * range->hi + offset < 0) {
    return out;
  }
  out.form = std::to_string(coef) + "*" + form_of(base) + "+" + std::to_string(offset);
  return out;
}

}  // namespace

bool OpcodeExecutor::slice_places(const ValueInfo& in, const std::vector<VarPtr>& slices,
                                  py::list* parts, std::vector<py::object>* templates, LoopKey* k) {
  // Each slice of values of the graph: its template (Ellipsis for those parts, whose ids go to the
  // key's indices in their order), a whole dimension for the static result, and a runtime symbol
  // for its length, shared by the slices of one form over dimensions of one size.
  if (in.scalar || static_cast<int>(slices.size()) > in.ndim()) {
    return false;
  }
  // The indices in the key's order: the ints' and the slices' parts interleaved as their places.
  std::vector<int> indices;
  std::vector<int> positions;
  std::size_t next_int = 0;
  int out_dim = 0;
  for (std::size_t j = 0; j < slices.size(); ++j) {
    const bool is_int =
        next_int < k->positions.size() && k->positions[next_int] == static_cast<int>(j);
    if (is_int) {
      indices.push_back(k->indices[next_int]);
      positions.push_back(k->positions[next_int++]);
      continue;
    }
    if (!slices[j]) {
      const py::object c = (*parts)[j];
      out_dim += PySlice_Check(c.ptr()) != 0 ? 1 : 0;
      continue;
    }
    const std::vector<VarPtr>& p = slices[j]->items();
    const py::object step = p[2]->value();
    std::int64_t step_value = 1;
    if (!step.is_none() && int64_of(step, &step_value) && step_value == 0) {
      graph_break("a slice step of zero (raises ValueError)");
    }
    py::object made[3];
    int max_id = -1;
    std::string form;
    for (std::size_t q = 0; q < 3; ++q) {
      if (p[q]->is_const()) {
        made[q] = p[q]->value();
        form += py::repr(made[q]).cast<std::string>() + ":";
        continue;
      }
      made[q] = py::reinterpret_borrow<py::object>(Py_Ellipsis);
      indices.push_back(p[q]->graph_id());
      positions.push_back(-1);
      form += int_form(p[q]->graph_id(), &max_id) + ":";
    }
    (*templates)[j] =
        py::reinterpret_steal<py::object>(PySlice_New(made[0].ptr(), made[1].ptr(), made[2].ptr()));
    (*parts)[j] = py::reinterpret_steal<py::object>(PySlice_New(nullptr, nullptr, nullptr));
    form += "/" + std::to_string(in.shape[j]);
    int length_max_id = -1;
    const SliceLength length = slice_length(arrays(), p, in.shape[j],
                                            [&](int id) { return int_form(id, &length_max_id); });
    const std::int64_t n = length.fixed;
    k->sliced.emplace_back(out_dim++,
                           n >= 0 && n < (1 << 30) ? static_cast<int>(-1 - n)
                           : length.form.empty()
                               ? arrays().slice_symbol(form, max_id)
                               : arrays().slice_symbol("length " + length.form, length_max_id));
  }
  k->indices = std::move(indices);
  k->positions = std::move(positions);
  return true;
}

namespace {

// The key of getitem_at/setitem_at's arguments `a`: the template a[1] with its None places filled
// by a[2], a[3], ... in turn (`count` of them).
py::tuple filled_key(const py::args& a, std::size_t count) {
  // (a slice's parts that are Ellipsis take the next indices too: L[i, :i])
  py::list key(a[1]);
  std::size_t next = 2;
  const std::size_t end = 2 + count;
  for (std::size_t j = 0; j < key.size() && next < end; ++j) {
    if (key[j].is_none()) {
      key[j] = a[next++];
      continue;
    }
    if (PySlice_Check(key[j].ptr()) == 0) {
      continue;
    }
    auto* s = reinterpret_cast<PySliceObject*>(key[j].ptr());
    PyObject* parts[3] = {s->start, s->stop, s->step};
    if (parts[0] != Py_Ellipsis && parts[1] != Py_Ellipsis && parts[2] != Py_Ellipsis) {
      continue;
    }
    py::object filled[3];
    for (std::size_t q = 0; q < 3; ++q) {
      filled[q] = parts[q] == Py_Ellipsis && next < end
                      ? py::reinterpret_borrow<py::object>(a[next++])
                      : py::reinterpret_borrow<py::object>(parts[q]);
    }
    key[j] = py::reinterpret_steal<py::object>(
        PySlice_New(filled[0].ptr(), filled[1].ptr(), filled[2].ptr()));
  }
  return py::tuple(key);
}

}  // namespace

std::vector<Arg> OpcodeExecutor::LoopKey::args(int x) const {
  std::vector<Arg> a = {Arg::of(x)};
  if (tuple.size() > 0) {
    a.push_back(Arg::constant_of(tuple));
  }
  for (const int i : indices) {
    a.push_back(Arg::of(i));
  }
  return a;
}

py::object OpcodeExecutor::LoopKey::getter() {
  // getitem_at(x, template, *indices): x[template with the indices in its None places] (made once,
  // kept for the process)
  static const py::object& fn = *new py::object(py::cpp_function(
      [](const py::args& a) -> py::object { return a[0][filled_key(a, a.size() - 2)]; }));
  return fn;
}

py::object OpcodeExecutor::LoopKey::setter() {
  // setitem_at(x, template, *indices, v): x[...] = v
  static const py::object& fn = *new py::object(py::cpp_function(
      [](const py::args& a) { a[0][filled_key(a, a.size() - 3)] = a[a.size() - 1]; }));
  return fn;
}

}  // namespace sot::translator
