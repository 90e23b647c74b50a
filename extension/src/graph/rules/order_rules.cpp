#include "graph/rules/order_rules.hpp"

#include <algorithm>
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

std::optional<ValueInfo> take_result(const ValueInfo& x, const ValueInfo& idx, int leading,
                                     std::string* why) {
  if (!is_array(x, why)) {
    return std::nullopt;
  }
  if (kind(idx.dtype) != 'i' && kind(idx.dtype) != 'u') {
    *why = "arrays used as indices must be of integer (or boolean) type";
    return std::nullopt;
  }
  if (leading >= x.ndim()) {
    *why = "too many indices for array: array is " + std::to_string(x.ndim()) +
           "-dimensional, but " + std::to_string(leading + 1) + " were indexed";
    return std::nullopt;
  }
  ValueInfo r = as_array(x);
  r.shape.clear();
  r.symbols.clear();
  auto keep = [&](const ValueInfo& from, std::size_t d) {
    r.shape.push_back(from.shape[d]);
    r.symbols.push_back(d < from.symbols.size() ? from.symbols[d] : -1);
  };
  const auto at = static_cast<std::size_t>(leading);
  for (std::size_t d = 0; d < at; ++d) {
    keep(x, d);
  }
  for (std::size_t d = 0; d < idx.shape.size(); ++d) {
    keep(idx, d);
  }
  for (std::size_t d = at + 1; d < x.shape.size(); ++d) {
    keep(x, d);
  }
  if (std::all_of(r.symbols.begin(), r.symbols.end(), [](int s) { return s < 0; })) {
    r.symbols.clear();
  }
  r.scalar = r.shape.empty();
  return r;
}

std::optional<ValueInfo> mask_result(const ValueInfo& x, const ValueInfo& mask, int leading,
                                     int symbol, std::int64_t placeholder, std::string* why) {
  if (!is_array(x, why)) {
    return std::nullopt;
  }
  if (mask.dtype != DType::kBool || mask.scalar || mask.ndim() == 0) {
    *why = "a boolean index that is not an array of one dimension or more";
    return std::nullopt;
  }
  const auto at = static_cast<std::size_t>(leading);
  if (at + mask.shape.size() > x.shape.size()) {
    *why = "too many indices for array: array is " + std::to_string(x.ndim()) +
           "-dimensional, but " + std::to_string(leading + mask.ndim()) + " were indexed";
    return std::nullopt;
  }
  auto sym = [](const ValueInfo& v, std::size_t d) {
    return d < v.symbols.size() ? v.symbols[d] : -1;
  };
  for (std::size_t d = 0; d < mask.shape.size(); ++d) {
    if (mask.shape[d] != x.shape[at + d] || sym(mask, d) != sym(x, at + d)) {
      *why = "boolean index did not match indexed array along axis " + std::to_string(at + d) +
             "; size of axis is " + std::to_string(x.shape[at + d]) +
             " but size of corresponding boolean axis is " + std::to_string(mask.shape[d]);
      return std::nullopt;
    }
  }
  ValueInfo r = as_array(x);
  r.shape.clear();
  r.symbols.clear();
  for (std::size_t d = 0; d < x.shape.size(); ++d) {
    if (d == at) {
      r.shape.push_back(placeholder);
      r.symbols.push_back(symbol);
    }
    if (d < at || d >= at + mask.shape.size()) {
      r.shape.push_back(x.shape[d]);
      r.symbols.push_back(sym(x, d));
    }
  }
  return r;
}

}  // namespace sot::graph
