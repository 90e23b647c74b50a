// The graph values an op's arguments name (a value, or the items of a list or tuple argument):
// visited, or renumbered when ops move into another graph.
#pragma once

#include <cstddef>
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

}  // namespace sot::graph
