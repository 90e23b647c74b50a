// The graph values an op's arguments name (a value, or the items of a list or tuple argument):
// visited, or renumbered when ops move into another graph (copy_ops: a captured region's ops into
// the body graph of a loop or cond op).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "graph/ir/graph.hpp"

namespace sot::graph {

// Calls f(id) for each value the op's arguments and keyword arguments name, in order.
template <typename F>
void for_each_value(const Op& op, F&& f) {
  auto visit = [&](const Arg& a) {
    if (a.kind == Arg::Kind::kValue) {
      f(a.value);
    } else if (a.kind == Arg::Kind::kList || a.kind == Arg::Kind::kTuple) {
      for (const int v : a.values) {
        f(v);
      }
    }
  };
  for (const Arg& a : op.args) {
    visit(a);
  }
  for (const auto& kw : op.kwargs) {
    visit(kw.second);
  }
}

// `a` with each value it names renumbered through `to` (constants unchanged).
inline Arg renumbered(Arg a, const std::vector<int>& to) {
  if (a.kind == Arg::Kind::kValue) {
    a.value = to[static_cast<std::size_t>(a.value)];
  } else if (a.kind == Arg::Kind::kList || a.kind == Arg::Kind::kTuple) {
    for (int& v : a.values) {
      v = to[static_cast<std::size_t>(v)];
    }
  }
  return a;
}

// Copies ops [first, last) of `from` into `to` (a body graph), each value they read renumbered:
// `(*ids)[v]` is v's id in `to` (-1: none yet), and `value_of(v)` gives it, making it (an input or
// a constant of `to`) and recording it in `ids` when there is none; each op's result is recorded.
template <typename F>
void copy_ops(const Graph& from, std::size_t first, std::size_t last, Graph* to,
              std::vector<int>* ids, F&& value_of) {
  for (std::size_t k = first; k < last; ++k) {
    Op op = from.ops()[k];
    for_each_value(op, value_of);
    for (Arg& arg : op.args) {
      arg = renumbered(std::move(arg), *ids);
    }
    for (auto& kw : op.kwargs) {
      kw.second = renumbered(std::move(kw.second), *ids);
    }
    const int result = from.ops()[k].result;
    (*ids)[static_cast<std::size_t>(result)] = to->add_op(std::move(op), from.value(result).info);
  }
}

}  // namespace sot::graph
