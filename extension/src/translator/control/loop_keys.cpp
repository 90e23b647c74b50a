// Element keys in loop bodies: x[i], x[i - 1], u[i, j] with ints of the graph as indices, checked in
// range over the ints' ranges where those are known; getitem_at/setitem_at fill a key's template
// where the graph runs.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "translator/control/loop_site.hpp"
#include "translator/executor_support.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

using graph::Arg;
using graph::ValueInfo;

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
  py::list parts;  // the key, each index's place None
  if (is_index(key)) {
    k.indices.push_back(key->graph_id());
    k.positions.push_back(0);
    parts.append(py::none());
  } else if (key->kind() == Variable::Kind::kTuple && !key->tracker().is_input()) {
    for (std::size_t j = 0; j < key->items().size(); ++j) {
      const VarPtr& item = key->items()[j];
      if (is_index(item)) {
        k.indices.push_back(item->graph_id());
        k.positions.push_back(static_cast<int>(j));
        parts.append(py::none());
        continue;
      }
      const py::object c = constant_value(item);
      if (!c || c.ptr() == Py_Ellipsis || c.is_none()) {
        return std::nullopt;  // (an axis an index's position cannot tell)
      }
      parts.append(c);
    }
  }
  if (k.indices.empty()) {
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
  const auto items =
      index_items(key->kind() == Variable::Kind::kTuple ? py::object(py::tuple(parts)) : parts[0]);
  if (!items) {
    return std::nullopt;
  }
  k.items = *items;
  if (key->kind() == Variable::Kind::kTuple) {
    for (const int pos : k.positions) {
      parts[static_cast<std::size_t>(pos)] = py::none();
    }
    k.tuple = py::tuple(parts);
  }
  return k;
}

namespace {

// The key of getitem_at/setitem_at's arguments `a`: the template a[1] with its None places filled
// by a[2], a[3], ... in turn (`count` of them).
py::tuple filled_key(const py::args& a, std::size_t count) {
  py::list key(a[1]);
  std::size_t next = 2;
  for (std::size_t j = 0; j < key.size() && next < 2 + count; ++j) {
    if (key[j].is_none()) {
      key[j] = a[next++];
    }
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
