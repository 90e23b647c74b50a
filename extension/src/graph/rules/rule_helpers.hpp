// Small helpers shared by the files of graph/rules/ (not part of its interface): axes, shapes and
// shape symbols of the values the rules describe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/ir/graph.hpp"

namespace sot::graph::rule_helpers {

// `axis` of an array of `ndim` dimensions made non-negative; nullopt (and NumPy's message) when it
// is out of bounds.
inline std::optional<int> axis_of(int axis, int ndim, std::string* why) {
  if (axis < -ndim || axis >= ndim) {
    *why = "axis " + std::to_string(axis) + " is out of bounds for array of dimension " +
           std::to_string(ndim);
    return std::nullopt;
  }
  return axis < 0 ? axis + ndim : axis;
}

inline ValueInfo array_info(DType dtype, Shape shape, std::vector<int> symbols = {}) {
  ValueInfo v;
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.symbols = std::move(symbols);
  v.scalar = false;
  return v;
}

inline int sym(const ValueInfo& v, std::size_t d) {
  return d < v.symbols.size() ? v.symbols[d] : -1;
}

inline bool has_symbols(const ValueInfo& v) {
  return std::any_of(v.symbols.begin(), v.symbols.end(), [](int s) { return s >= 0; });
}

inline std::int64_t product(const Shape& s) {
  return std::accumulate(s.begin(), s.end(), std::int64_t{1}, std::multiplies<>());
}

}  // namespace sot::graph::rule_helpers
