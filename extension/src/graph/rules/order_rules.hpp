// The shapes NumPy's reordering and combining functions make, worked out without running them:
// outer products, flips, rolls, triangles, sorts, take_along_axis, and indexing by an integer
// array or a boolean mask. Each returns nullopt with
// NumPy's reason for what NumPy rejects (the translator then breaks the graph and the call raises
// for real). Dtypes the caller decides.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/ir/graph.hpp"
#include "graph/ir/shape.hpp"

namespace sot::graph {

// np.outer(a, b): (a.size, b.size).
Shape outer_shape(const Shape& a, const Shape& b);

// flip over `axes` (`all`: every axis): the same shape, a view.
std::optional<ValueInfo> flip_result(const ValueInfo& in, const std::vector<int>& axes, bool all,
                                     std::string* why);
// fliplr (`min_ndim` 2) and flipud (1): the same shape when `in` has that many dimensions.
std::optional<ValueInfo> flip_side_result(const ValueInfo& in, int min_ndim, std::string* why);

// roll by `shifts` over `axes` (`all`: the flattened array): the same shape. One shift for every
// axis, or as many shifts as axes.
std::optional<ValueInfo> roll_result(const ValueInfo& in, std::size_t shifts,
                                     const std::vector<int>& axes, bool all, std::string* why);

// tril / triu: the same shape, for arrays of two dimensions or more.
std::optional<ValueInfo> triangle_result(const ValueInfo& in, std::string* why);

// sort / argsort along `axis` (`all`: of the flattened array); `indices`: int64 (argsort).
std::optional<ValueInfo> sort_result(const ValueInfo& in, int axis, bool all, bool indices,
                                     std::string* why);

// take_along_axis(arr, indices, axis) (`all`: axis=None, arr flattened).
std::optional<ValueInfo> take_along_axis_result(const ValueInfo& arr, const ValueInfo& indices,
                                                int axis, bool all, std::string* why);

// x[:, ..., :, idx] with `leading` full slices before an integer index `idx` (an array, or a
// NumPy scalar or 0-d array: an integer): x.shape[:leading] + idx.shape + x.shape[leading + 1:],
// x's dtype; a NumPy scalar when that is empty.
std::optional<ValueInfo> take_result(const ValueInfo& x, const ValueInfo& idx, int leading,
                                     std::string* why);
// x[:, ..., :, mask] with `leading` full slices before a boolean array `mask`: the dimensions the
// mask covers become one whose size is known only when the graph runs (shape symbol `symbol`,
// `placeholder` as its size here).
std::optional<ValueInfo> mask_result(const ValueInfo& x, const ValueInfo& mask, int leading,
                                     int symbol, std::int64_t placeholder, std::string* why);

}  // namespace sot::graph
