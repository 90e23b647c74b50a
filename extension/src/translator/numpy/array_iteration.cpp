// Iterating over a NumPy array and unpacking one: its rows x[0], x[1], ... (views of an array of
// two dimensions or more, NumPy scalars of a 1-d one) as getitem ops of the graph. The first
// dimension is relied on (static from then on, guarded) and must be small: a loop over the rows
// is unrolled. An iterator over an array (a list iterator's kind, over the array) makes each row
// when it is taken, as ndarray's own iterator does, so a row read after a change to the array
// sees the change; unpacking and list()/tuple() take them all at once.
#include <string>
#include <utility>
#include <vector>

#include "core/loaded_module.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

namespace {

// Rows an iteration over an array may take (each is an op of the graph; the loop is unrolled).
constexpr std::int64_t kMaxRows = 32;

}  // namespace

VarPtr OpcodeExecutor::array_iterator(const VarPtr& v) {
  const ArrayOperand x = array_operand(v);
  if (x.kind != ArrayOperand::Kind::kValue) {
    return nullptr;
  }
  const graph::ValueInfo info = array_info(x.id);
  if (info.scalar || info.ndim() == 0) {
    graph_break(std::string("iteration over a ") + (info.scalar ? "NumPy scalar" : "0-d array") +
                " (raises TypeError)");
  }
  return Variable::iterator(Variable::IterKind::kList, {v});
}

void OpcodeExecutor::check_unrolled_row(const VarPtr& v, Py_ssize_t i) {
  // (a long loop over rows is a loop op, tried at its first steps: only those may unroll)
  const std::int64_t rows = static_info(array_operand(v).id).shape[0];
  if (rows > kMaxRows && i >= kLoopPeelMax) {
    graph_break("iteration over a NumPy array of " + std::to_string(rows) + " rows (more than " +
                std::to_string(kMaxRows) + " are not unrolled)");
  }
}

VarPtr OpcodeExecutor::array_row_at(const VarPtr& v, int index, std::int64_t first) {
  const ArrayOperand x = array_operand(v);
  const graph::ValueInfo info = array_info(x.id);
  graph::IndexItem item;
  item.index = first;  // (every step's row has the shape of the first)
  std::string why;
  auto row = graph::index_result(info, {item}, &why);
  if (!row) {
    graph_break("numpy row of a loop: " + why);
  }
  graph::Op g;
  g.name = "getitem";
  g.fn = loaded_module("operator").attr("getitem");
  g.args = {graph::Arg::of(x.id), graph::Arg::of(index)};
  g.view = !row->scalar;
  return add_array_op(std::move(g), *row);
}

VarPtr OpcodeExecutor::array_row(const VarPtr& v, Py_ssize_t i) {
  const ArrayOperand x = array_operand(v);
  const graph::ValueInfo info = array_info(x.id);
  if (info.ndim() == 0 || i >= info.shape[0]) {
    return nullptr;
  }
  graph::IndexItem item;
  item.index = i;
  std::string why;
  auto row = graph::index_result(info, {item}, &why);
  if (!row) {
    graph_break("numpy row " + std::to_string(i) + ": " + why);
  }
  graph::Op g;
  g.name = "getitem";
  g.fn = loaded_module("operator").attr("getitem");
  g.args = {graph::Arg::of(x.id), graph::Arg::constant_of(py::int_(i))};
  g.view = !row->scalar;
  return add_array_op(std::move(g), *row);
}

bool OpcodeExecutor::array_rows(const VarPtr& v, std::vector<VarPtr>* rows) {
  if (!array_iterator(v)) {
    return false;
  }
  check_unrolled_row(v, kLoopPeelMax);
  rows->clear();
  for (Py_ssize_t i = 0;; ++i) {
    VarPtr row = array_row(v, i);
    if (!row) {
      return true;
    }
    rows->push_back(std::move(row));
  }
}

}  // namespace sot::translator
