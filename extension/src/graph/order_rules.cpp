#include "graph/order_rules.hpp"

#include <numeric>

namespace sot::graph {

namespace {

std::int64_t size_of(const Shape& s) {
  return std::accumulate(s.begin(), s.end(), std::int64_t{1}, std::multiplies<>());
}

// `in` as an ndarray (not a NumPy scalar).
ValueInfo as_array(ValueInfo in) {
  in.scalar = false;
  return in;
}

bool is_array(const ValueInfo& in, std::string* why) {
  if (in.scalar) {
    *why = "a NumPy scalar operand";
    return false;
  }
  return true;
}

}  // namespace

Shape outer_shape(const Shape& a, const Shape& b) {
  return {size_of(a), size_of(b)};
}

std::optional<ValueInfo> flip_result(const ValueInfo& in, const std::vector<int>& axes, bool all,
                                     std::string* why) {
  if (!is_array(in, why)) {
    return std::nullopt;
  }
  if (in.ndim() == 0) {
    *why = "a flip of a 0-d array (NumPy returns a scalar)";
    return std::nullopt;
  }
  if (!normalize_axes(axes, all, in.ndim(), why)) {
    return std::nullopt;
  }
  return in;
}

std::optional<ValueInfo> flip_side_result(const ValueInfo& in, int min_ndim, std::string* why) {
  if (!is_array(in, why)) {
    return std::nullopt;
  }
  if (in.ndim() < min_ndim) {
    *why = "Input must be >= " + std::to_string(min_ndim) + "-d.";
    return std::nullopt;
  }
  return in;
}

std::optional<ValueInfo> roll_result(const ValueInfo& in, std::size_t shifts,
                                     const std::vector<int>& axes, bool all, std::string* why) {
  if (!is_array(in, why)) {
    return std::nullopt;
  }
  if (!all && !normalize_axes(axes, false, in.ndim(), why)) {
    return std::nullopt;
  }
  const std::size_t n = all ? 1 : axes.size();
  if (shifts != 1 && shifts != n) {
    *why = "'shift' and 'axis' should be scalars or 1D sequences of the same length";
    return std::nullopt;
  }
  return in;
}

std::optional<ValueInfo> triangle_result(const ValueInfo& in, std::string* why) {
  if (!is_array(in, why)) {
    return std::nullopt;
  }
  if (in.ndim() < 2) {
    *why = "a triangle of a " + std::to_string(in.ndim()) +
           "-d array (NumPy broadcasts it to a matrix)";
    return std::nullopt;
  }
  return in;
}

std::optional<ValueInfo> sort_result(const ValueInfo& in, int axis, bool all, bool indices,
                                     std::string* why) {
  if (!is_array(in, why)) {
    return std::nullopt;
  }
  ValueInfo r = as_array(in);
  if (indices) {
    r.dtype = DType::kInt64;
  }
  if (all) {
    r.shape = {size_of(in.shape)};
    r.symbols.clear();
    return r;
  }
  if (!normalize_axes({axis}, false, in.ndim(), why)) {
    return std::nullopt;
  }
  return r;
}

std::optional<ValueInfo> take_along_axis_result(const ValueInfo& arr, const ValueInfo& indices,
                                                int axis, bool all, std::string* why) {
  if (!is_array(arr, why) || !is_array(indices, why)) {
    return std::nullopt;
  }
  if (kind(indices.dtype) != 'i' && kind(indices.dtype) != 'u') {
    *why = "`indices` must be an integer array";
    return std::nullopt;
  }
  ValueInfo r = as_array(arr);
  r.symbols.clear();
  if (all) {
    if (indices.ndim() != 1) {
      *why = "when axis=None, `indices` must have a single dimension.";
      return std::nullopt;
    }
    r.shape = indices.shape;
    return r;
  }
  if (indices.ndim() != arr.ndim()) {
    *why = "`indices` and `arr` must have the same number of dimensions";
    return std::nullopt;
  }
  const auto normal = normalize_axes({axis}, false, arr.ndim(), why);
  if (!normal) {
    return std::nullopt;
  }
  const auto a = static_cast<std::size_t>((*normal)[0]);
  for (std::size_t d = 0; d < arr.shape.size(); ++d) {
    const std::int64_t x = arr.shape[d];
    const std::int64_t i = indices.shape[d];
    if (d == a || x == i || x == 1) {
      r.shape[d] = i;
    } else if (i == 1) {
      r.shape[d] = x;
    } else {
      *why = "shape mismatch: indexing arrays could not be broadcast together with shapes " +
             shape_text(arr.shape) + " " + shape_text(indices.shape);
      return std::nullopt;
    }
  }
  return r;
}

}  // namespace sot::graph
