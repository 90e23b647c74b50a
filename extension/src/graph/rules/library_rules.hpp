// The shapes of np.diag, np.trace, np.vander, np.insert, np.fft.rfft and np.linalg.lstsq, worked
// out without running them (the dtypes the translator asks of the running NumPy). Each returns
// nullopt with a reason for what NumPy rejects or what is not modelled (the translator then breaks
// the graph and the call runs, or raises, for real).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/ir/shape.hpp"

namespace sot::graph {

// diag(v, k): a 1-d v of n items makes an (n + |k|, n + |k|) matrix; a 2-d v gives its k-th
// diagonal (empty past the corner).
std::optional<Shape> diag_shape(const Shape& v, std::int64_t k, std::string* why);

// trace(a, offset, axis1, axis2): a's shape without the two axes (() for a matrix).
std::optional<Shape> trace_shape(const Shape& a, int axis1, int axis2, std::string* why);

// vander(x, N): (len(x), N) of a 1-d x; N < 0 is refused.
std::optional<Shape> vander_shape(const Shape& x, std::int64_t n, std::string* why);

// insert(arr, obj, values, axis) with one int `obj` and `count` new items along `axis` (`flat`:
// axis=None, arr flattened): the result's shape; an obj out of bounds is refused.
std::optional<Shape> insert_shape(const Shape& arr, std::int64_t obj, std::int64_t count, int axis,
                                  bool flat, std::string* why);

// rfft(a, n, axis): a's shape with the axis n // 2 + 1 long (n: the axis' length when absent).
std::optional<Shape> rfft_shape(const Shape& a, std::optional<std::int64_t> n, int axis,
                                std::string* why);

// repeat(a, repeats, axis) with one int `repeats` >= 0: each item `repeats` times along `axis`
// (`flat`: axis=None, a flattened first).
std::optional<Shape> repeat_shape(const Shape& a, std::int64_t repeats, int axis, bool flat,
                                  std::string* why);

// tile(A, reps): A's shape and reps, each padded with ones in front to the longer, multiplied.
Shape tile_shape(const Shape& a, const std::vector<std::int64_t>& reps);

// diff(a, n, axis): a's shape with the axis n shorter (n no longer than the axis).
std::optional<Shape> diff_shape(const Shape& a, std::int64_t n, int axis, std::string* why);

// lstsq(a, b) of an (M, N) a and b of (M,) or (M, K): the solution, the residuals (their size as
// when they are there: 1 or K; 0 when a's rank is below N or M <= N, known only when it runs),
// the rank and the singular values. Empty arrays are not modelled.
std::optional<std::vector<Shape>> lstsq_shapes(const Shape& a, const Shape& b, std::string* why);

}  // namespace sot::graph
