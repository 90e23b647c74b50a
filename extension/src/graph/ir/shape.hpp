// Shapes as the graph IR sees them, and NumPy's rules that make one shape from others: broadcasting
// (ufuncs, operators) and reductions (sum, mean, max, ... with axis and keepdims).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sot::graph {

using Shape = std::vector<std::int64_t>;

// "(2, 3)", "(4,)", "()" as NumPy prints shapes.
std::string shape_text(const Shape& s);

// The broadcast shape of `a` and `b`, or nullopt and `error` (NumPy's message: "operands could not
// be broadcast together with shapes (2,3) (4,)").
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b, std::string* error);

// The axes a reduction over `axes` (empty: all) of an array of `ndim` dimensions touches,
// normalised (negative counted from the end) and sorted, or nullopt and `error` for an axis out of
// range or repeated (NumPy's AxisError / ValueError texts).
std::optional<std::vector<int>> normalize_axes(const std::vector<int>& axes, bool all, int ndim,
                                               std::string* error);

// The shape of a reduction of `s` over the normalised `axes` (keepdims: reduced axes stay as 1).
Shape reduced_shape(const Shape& s, const std::vector<int>& axes, bool keepdims);

}  // namespace sot::graph
