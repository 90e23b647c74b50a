#include "graph/rules/library_rules.hpp"

#include <algorithm>

#include "graph/rules/rule_helpers.hpp"

namespace sot::graph {

namespace {

// `axis` of an array of `ndim` dimensions, counted from the front, or nullopt (and NumPy's text).
std::optional<std::size_t> axis_in(int axis, std::size_t ndim, std::string* why) {
  const std::optional<int> a = rule_helpers::axis_of(axis, static_cast<int>(ndim), why);
  return a ? std::optional<std::size_t>(static_cast<std::size_t>(*a)) : std::nullopt;
}

bool has_zero(const Shape& s) {
  return std::find(s.begin(), s.end(), 0) != s.end();
}

}  // namespace

std::optional<Shape> diag_shape(const Shape& v, std::int64_t k, std::string* why) {
  if (v.size() == 1) {
    const std::int64_t n = v[0] + (k < 0 ? -k : k);
    return Shape{n, n};
  }
  if (v.size() != 2) {
    *why = "Input must be 1- or 2-d.";
    return std::nullopt;
  }
  // The k-th diagonal: rows from max(0, -k), columns from max(0, k).
  const std::int64_t rows = v[0] - std::max<std::int64_t>(0, -k);
  const std::int64_t cols = v[1] - std::max<std::int64_t>(0, k);
  return Shape{std::max<std::int64_t>(0, std::min(rows, cols))};
}

std::optional<Shape> repeat_shape(const Shape& a, std::int64_t repeats, int axis, bool flat,
                                  std::string* why) {
  if (repeats < 0) {
    *why = "negative dimensions are not allowed";
    return std::nullopt;
  }
  if (flat) {
    std::int64_t n = 1;
    for (const std::int64_t d : a) {
      n *= d;
    }
    return Shape{n * repeats};
  }
  const auto ax = axis_in(axis, a.size(), why);
  if (!ax) {
    return std::nullopt;
  }
  Shape out = a;
  out[*ax] *= repeats;
  return out;
}

Shape tile_shape(const Shape& a, const std::vector<std::int64_t>& reps) {
  const std::size_t n = std::max(a.size(), reps.size());
  Shape out(n, 1);
  for (std::size_t d = 0; d < n; ++d) {
    const std::int64_t size = d + a.size() >= n ? a[d + a.size() - n] : 1;
    const std::int64_t rep = d + reps.size() >= n ? reps[d + reps.size() - n] : 1;
    out[d] = size * rep;
  }
  return out;
}

std::optional<Shape> diff_shape(const Shape& a, std::int64_t n, int axis, std::string* why) {
  if (a.empty()) {
    *why = "diff requires input that is at least one dimensional";
    return std::nullopt;
  }
  if (n < 0) {
    *why = "order must be non-negative but got " + std::to_string(n);
    return std::nullopt;
  }
  const auto ax = axis_in(axis, a.size(), why);
  if (!ax) {
    return std::nullopt;
  }
  if (n > a[*ax]) {
    *why = "an order longer than the axis (not modelled)";
    return std::nullopt;
  }
  Shape out = a;
  out[*ax] -= n;
  return out;
}

std::optional<Shape> trace_shape(const Shape& a, int axis1, int axis2, std::string* why) {
  if (a.size() < 2) {
    *why = "diag requires an array of at least two dimensions";
    return std::nullopt;
  }
  const auto a1 = axis_in(axis1, a.size(), why);
  const auto a2 = a1 ? axis_in(axis2, a.size(), why) : std::nullopt;
  if (!a2) {
    return std::nullopt;
  }
  if (*a1 == *a2) {
    *why = "axis1 and axis2 cannot be the same";
    return std::nullopt;
  }
  Shape out;
  for (std::size_t d = 0; d < a.size(); ++d) {
    if (d != *a1 && d != *a2) {
      out.push_back(a[d]);
    }
  }
  return out;
}

std::optional<Shape> vander_shape(const Shape& x, std::int64_t n, std::string* why) {
  if (x.size() != 1) {
    *why = "x must be a one-dimensional array or sequence.";
    return std::nullopt;
  }
  if (n < 0) {
    *why = "negative dimensions are not allowed";
    return std::nullopt;
  }
  return Shape{x[0], n};
}

std::optional<Shape> insert_shape(const Shape& arr, std::int64_t obj, std::int64_t count, int axis,
                                  bool flat, std::string* why) {
  Shape out = arr;
  if (flat) {
    std::int64_t size = 1;
    for (const auto d : arr) {
      size *= d;
    }
    out = Shape{size};
  }
  const auto at = axis_in(flat ? 0 : axis, out.size(), why);
  if (!at) {
    return std::nullopt;
  }
  const std::int64_t len = out[*at];
  if (obj < -len || obj > len) {
    *why = "index " + std::to_string(obj) + " is out of bounds for axis " +
           std::to_string(flat ? 0 : axis) + " with size " + std::to_string(len);
    return std::nullopt;
  }
  out[*at] += count;
  return out;
}

std::optional<Shape> rfft_shape(const Shape& a, std::optional<std::int64_t> n, int axis,
                                std::string* why) {
  const auto at = axis_in(axis, a.size(), why);
  if (!at) {
    return std::nullopt;
  }
  const std::int64_t points = n.value_or(a[*at]);
  if (points < 1) {
    *why = "Invalid number of FFT data points (" + std::to_string(points) + ") specified.";
    return std::nullopt;
  }
  Shape out = a;
  out[*at] = points / 2 + 1;
  return out;
}

std::optional<std::vector<Shape>> lstsq_shapes(const Shape& a, const Shape& b, std::string* why) {
  if (a.size() != 2) {
    *why = std::to_string(a.size()) + "-dimensional array given. Array must be two-dimensional";
    return std::nullopt;
  }
  if (b.size() != 1 && b.size() != 2) {
    *why = "lstsq of a " + std::to_string(b.size()) + "-d b";
    return std::nullopt;
  }
  if (b[0] != a[0]) {
    *why = "Incompatible dimensions";
    return std::nullopt;
  }
  if (has_zero(a) || has_zero(b)) {
    *why = "lstsq of an empty array";
    return std::nullopt;
  }
  const std::int64_t n = a[1];
  const bool vector = b.size() == 1;
  Shape x = vector ? Shape{n} : Shape{n, b[1]};
  Shape residuals{vector ? 1 : b[1]};
  return std::vector<Shape>{x, residuals, Shape{}, Shape{std::min(a[0], n)}};
}

}  // namespace sot::graph
