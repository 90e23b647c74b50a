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

// Rows an iteration over an array takes unrolled in any case (each is an op of the graph). A loop
// over more (that is not a loop op) goes on unrolling up to kMaxLongRows rows while the whole loop,
// at the pace of its steps so far, fits a quarter of the translation's instruction budget: a short
// body over 60 rows (a bootstrap's resamples) is one graph, where a heavy one breaks at its third
// step as before.
constexpr std::int64_t kMaxRows = 32;
constexpr std::int64_t kMaxLongRows = 256;

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
  // (the pace measured from the first step after those where the loop op was tried, which
  // simulate the body twice; those steps unroll meanwhile)
  constexpr Py_ssize_t kFirstPaced = kLoopPeelMax + 1;
  if (i == kFirstPaced) {
    row_step_marks_[v.get()] = result_.simulated;
  }
  if (rows <= kMaxRows || i < kLoopPeelMax || (rows <= kMaxLongRows && i <= kFirstPaced)) {
    return;
  }
  const auto mark = row_step_marks_.find(v.get());
  if (mark != row_step_marks_.end() && rows <= kMaxLongRows && i > kFirstPaced &&
      result_.simulated >= mark->second) {
    const std::size_t per_step =
        (result_.simulated - mark->second) / static_cast<std::size_t>(i - kFirstPaced);
    const std::size_t left = static_cast<std::size_t>(rows - i);
    if (result_.simulated + left * (per_step + 1) <= kMaxSteps / 4) {
      return;
    }
  }
  graph_break("iteration over a NumPy array of " + std::to_string(rows) + " rows (more than " +
              std::to_string(kMaxRows) +
              " are unrolled only while the loop fits the translation's "
              "budget)");
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
