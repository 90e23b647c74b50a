// The rules of shape operations and indexing (rules.hpp): reshape, transpose, swapaxes, moveaxis,
// expand_dims, squeeze, concatenate, stack, broadcast_to and basic indexing.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/rules/rule_helpers.hpp"
#include "graph/rules/rules.hpp"

namespace sot::graph {

using namespace rule_helpers;

std::optional<ValueInfo> reshape_result(const ValueInfo& in, const std::vector<std::int64_t>& shape,
                                        std::string* why) {
  if (has_symbols(in)) {
    *why = "reshape of a dynamic shape";
    return std::nullopt;
  }
  const std::int64_t total = product(in.shape);
  std::int64_t known = 1;
  int unknown = -1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (unknown >= 0) {
        *why = "can only specify one unknown dimension";
        return std::nullopt;
      }
      unknown = static_cast<int>(i);
    } else if (shape[i] < 0) {
      *why = "negative dimensions not allowed";
      return std::nullopt;
    } else {
      known *= shape[i];
    }
  }
  Shape out(shape.begin(), shape.end());
  if (unknown >= 0) {
    if (known == 0 || total % known != 0) {
      *why = "cannot reshape array of size " + std::to_string(total) + " into shape " +
             shape_text(out);
      return std::nullopt;
    }
    out[static_cast<std::size_t>(unknown)] = total / known;
  } else if (known != total) {
    *why =
        "cannot reshape array of size " + std::to_string(total) + " into shape " + shape_text(out);
    return std::nullopt;
  }
  return array_info(in.dtype, out);
}

std::optional<ValueInfo> transpose_result(const ValueInfo& in, const std::vector<int>& axes,
                                          std::string* why) {
  const int nd = in.ndim();
  std::vector<int> perm;
  if (axes.empty()) {
    for (int d = nd - 1; d >= 0; --d) {
      perm.push_back(d);
    }
  } else {
    if (static_cast<int>(axes.size()) != nd) {
      *why = "axes don't match array";
      return std::nullopt;
    }
    std::vector<bool> seen(static_cast<std::size_t>(nd), false);
    for (const int a : axes) {
      const auto n = axis_of(a, nd, why);
      if (!n) {
        return std::nullopt;
      }
      if (seen[static_cast<std::size_t>(*n)]) {
        *why = "repeated axis in transpose";
        return std::nullopt;
      }
      seen[static_cast<std::size_t>(*n)] = true;
      perm.push_back(*n);
    }
  }
  ValueInfo r = array_info(in.dtype, {});
  for (const int p : perm) {
    r.shape.push_back(in.shape[static_cast<std::size_t>(p)]);
    if (has_symbols(in)) {
      r.symbols.push_back(sym(in, static_cast<std::size_t>(p)));
    }
  }
  return r;
}

std::optional<ValueInfo> swapaxes_result(const ValueInfo& in, int a, int b, std::string* why) {
  const auto na = axis_of(a, in.ndim(), why);
  const auto nb = na ? axis_of(b, in.ndim(), why) : std::nullopt;
  if (!nb) {
    return std::nullopt;
  }
  std::vector<int> perm(static_cast<std::size_t>(in.ndim()));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[static_cast<std::size_t>(*na)], perm[static_cast<std::size_t>(*nb)]);
  return transpose_result(in, perm, why);
}

std::optional<ValueInfo> moveaxis_result(const ValueInfo& in, const std::vector<int>& from,
                                         const std::vector<int>& to, std::string* why) {
  const int nd = in.ndim();
  if (from.size() != to.size()) {
    *why = "`source` and `destination` arguments must have the same number of elements";
    return std::nullopt;
  }
  auto src = normalize_axes(from, false, nd, why);
  auto dst = src ? normalize_axes(to, false, nd, why) : std::nullopt;
  if (!dst) {
    return std::nullopt;
  }
  // normalize_axes sorts: keep the pairing by normalising one by one.
  std::vector<std::pair<int, int>> pairs;
  for (std::size_t i = 0; i < from.size(); ++i) {
    pairs.emplace_back(*axis_of(to[i], nd, why), *axis_of(from[i], nd, why));
  }
  std::sort(pairs.begin(), pairs.end());
  std::vector<int> order;
  for (int d = 0; d < nd; ++d) {
    if (std::none_of(pairs.begin(), pairs.end(), [d](const auto& p) { return p.second == d; })) {
      order.push_back(d);
    }
  }
  for (const auto& [dest, source] : pairs) {
    order.insert(order.begin() + dest, source);
  }
  return transpose_result(in, order, why);
}

std::optional<ValueInfo> expand_dims_result(const ValueInfo& in, const std::vector<int>& axes,
                                            std::string* why) {
  const int out_nd = in.ndim() + static_cast<int>(axes.size());
  auto normal = normalize_axes(axes, false, out_nd, why);
  if (!normal) {
    return std::nullopt;
  }
  ValueInfo r = array_info(in.dtype, {});
  std::size_t k = 0;
  for (int d = 0; d < out_nd; ++d) {
    const bool added = std::find(normal->begin(), normal->end(), d) != normal->end();
    r.shape.push_back(added ? 1 : in.shape[k]);
    if (has_symbols(in)) {
      r.symbols.push_back(added ? -1 : sym(in, k));
    }
    if (!added) {
      ++k;
    }
  }
  return r;
}

std::optional<ValueInfo> squeeze_result(const ValueInfo& in, const std::vector<int>& axes, bool all,
                                        std::string* why) {
  std::vector<int> drop;
  if (all) {
    for (int d = 0; d < in.ndim(); ++d) {
      if (in.shape[static_cast<std::size_t>(d)] == 1 && sym(in, static_cast<std::size_t>(d)) < 0) {
        drop.push_back(d);
      }
    }
  } else {
    auto normal = normalize_axes(axes, false, in.ndim(), why);
    if (!normal) {
      return std::nullopt;
    }
    for (const int a : *normal) {
      if (in.shape[static_cast<std::size_t>(a)] != 1) {
        *why = "cannot select an axis to squeeze out which has size not equal to one";
        return std::nullopt;
      }
    }
    drop = *normal;
  }
  ValueInfo r = array_info(in.dtype, {});
  for (int d = 0; d < in.ndim(); ++d) {
    if (std::find(drop.begin(), drop.end(), d) == drop.end()) {
      r.shape.push_back(in.shape[static_cast<std::size_t>(d)]);
      if (has_symbols(in)) {
        r.symbols.push_back(sym(in, static_cast<std::size_t>(d)));
      }
    }
  }
  return r;
}

std::optional<ValueInfo> concatenate_result(const std::vector<ValueInfo>& in, int axis,
                                            ScalarPromotion /*mode*/, std::string* why) {
  if (in.empty()) {
    *why = "need at least one array to concatenate";
    return std::nullopt;
  }
  const int nd = in[0].ndim();
  if (nd == 0) {
    *why = "zero-dimensional arrays cannot be concatenated";
    return std::nullopt;
  }
  const auto a = axis_of(axis, nd, why);
  if (!a) {
    return std::nullopt;
  }
  Shape out = in[0].shape;
  DType t = in[0].dtype;
  out[static_cast<std::size_t>(*a)] = 0;
  for (const ValueInfo& v : in) {
    if (has_symbols(v)) {
      *why = "concatenate of dynamic shapes";
      return std::nullopt;
    }
    if (v.ndim() != nd) {
      *why = "all the input array dimensions must match exactly (concatenate)";
      return std::nullopt;
    }
    for (int d = 0; d < nd; ++d) {
      if (d != *a && v.shape[static_cast<std::size_t>(d)] != out[static_cast<std::size_t>(d)]) {
        *why =
            "all the input array dimensions except for the concatenation axis must match exactly";
        return std::nullopt;
      }
    }
    out[static_cast<std::size_t>(*a)] += v.shape[static_cast<std::size_t>(*a)];
    t = promote_types(t, v.dtype);
  }
  return array_info(t, out);
}

std::optional<ValueInfo> stack_result(const std::vector<ValueInfo>& in, int axis,
                                      ScalarPromotion /*mode*/, std::string* why) {
  if (in.empty()) {
    *why = "need at least one array to stack";
    return std::nullopt;
  }
  DType t = in[0].dtype;
  for (const ValueInfo& v : in) {
    if (has_symbols(v)) {
      *why = "stack of dynamic shapes";
      return std::nullopt;
    }
    if (v.shape != in[0].shape) {
      *why = "all input arrays must have the same shape";
      return std::nullopt;
    }
    t = promote_types(t, v.dtype);
  }
  const auto a = axis_of(axis, in[0].ndim() + 1, why);
  if (!a) {
    return std::nullopt;
  }
  Shape out = in[0].shape;
  out.insert(out.begin() + *a, static_cast<std::int64_t>(in.size()));
  return array_info(t, out);
}

std::optional<ValueInfo> broadcast_to_result(const ValueInfo& in, const Shape& shape,
                                             std::string* why) {
  if (has_symbols(in)) {
    *why = "broadcast_to of a dynamic shape";
    return std::nullopt;
  }
  auto b = broadcast_shapes(in.shape, shape, why);
  if (!b || *b != shape) {
    *why =
        "input operand has more dimensions than allowed by the axis remapping, or does not "
        "broadcast to " +
        shape_text(shape);
    return std::nullopt;
  }
  return array_info(in.dtype, shape);
}

namespace {

// The length of a slice of a dimension of size n (Python's slice.indices).
std::int64_t slice_length(std::int64_t n, std::optional<std::int64_t> start_v,
                          std::optional<std::int64_t> stop_v, std::int64_t step) {
  auto clamp = [&](std::optional<std::int64_t> v, std::int64_t dflt) {
    if (!v) {
      return dflt;
    }
    std::int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) {
        x = step < 0 ? -1 : 0;
      }
    } else if (x >= n) {
      x = step < 0 ? n - 1 : n;
    }
    return x;
  };
  const std::int64_t start = clamp(start_v, step < 0 ? n - 1 : 0);
  const std::int64_t stop = clamp(stop_v, step < 0 ? -1 : n);
  if (step > 0 && stop > start) {
    return (stop - start - 1) / step + 1;
  }
  if (step < 0 && start > stop) {
    return (start - stop - 1) / (-step) + 1;
  }
  return 0;
}

// The dimensions an index consumes and its ellipses; false (and why) when NumPy refuses it.
bool count_index_items(const ValueInfo& in, const std::vector<IndexItem>& items, int* consumed,
                       int* ellipses, std::string* why) {
  for (const IndexItem& it : items) {
    if (it.kind == IndexItem::Kind::kInt || it.kind == IndexItem::Kind::kSlice) {
      ++*consumed;
    } else if (it.kind == IndexItem::Kind::kEllipsis) {
      ++*ellipses;
    }
  }
  if (*ellipses > 1) {
    *why = "an index can only have a single ellipsis ('...')";
    return false;
  }
  if (*consumed > in.ndim()) {
    *why = "too many indices for array: array is " + std::to_string(in.ndim()) +
           "-dimensional, but " + std::to_string(*consumed) + " were indexed";
    return false;
  }
  return true;
}

}  // namespace

std::optional<ValueInfo> index_result(const ValueInfo& in, const std::vector<IndexItem>& items,
                                      std::string* why) {
  int consumed = 0;
  int ellipses = 0;
  if (!count_index_items(in, items, &consumed, &ellipses, why)) {
    return std::nullopt;
  }
  ValueInfo r = array_info(in.dtype, {});
  std::size_t d = 0;
  auto keep = [&](std::int64_t n, int s) {
    r.shape.push_back(n);
    r.symbols.push_back(s);
  };
  auto take_rest = [&](std::size_t count) {
    for (std::size_t k = 0; k < count; ++k, ++d) {
      keep(in.shape[d], sym(in, d));
    }
  };
  for (const IndexItem& it : items) {
    switch (it.kind) {
      case IndexItem::Kind::kNewAxis:
        keep(1, -1);
        break;
      case IndexItem::Kind::kEllipsis:
        take_rest(static_cast<std::size_t>(in.ndim() - consumed));
        break;
      case IndexItem::Kind::kInt: {
        const std::int64_t n = in.shape[d];
        if (sym(in, d) >= 0) {
          *why = "an integer index into a dynamic dimension";
          return std::nullopt;
        }
        if (it.index < -n || it.index >= n) {
          *why = "index " + std::to_string(it.index) + " is out of bounds for axis " +
                 std::to_string(d) + " with size " + std::to_string(n);
          return std::nullopt;
        }
        ++d;
        break;
      }
      case IndexItem::Kind::kSlice: {
        const std::int64_t n = in.shape[d];
        const std::int64_t step = it.step.value_or(1);
        if (step == 0) {
          *why = "slice step cannot be zero";
          return std::nullopt;
        }
        if (sym(in, d) >= 0) {
          if (!it.start && !it.stop && step == 1) {
            keep(n, sym(in, d));
            ++d;
            break;
          }
          *why = "a slice of a dynamic dimension";
          return std::nullopt;
        }
        keep(slice_length(n, it.start, it.stop, step), -1);
        ++d;
        break;
      }
    }
  }
  take_rest(static_cast<std::size_t>(in.ndim()) - d);
  if (!has_symbols(r)) {
    r.symbols.clear();
  }
  r.scalar = r.shape.empty() && ellipses == 0;
  return r;
}

}  // namespace sot::graph
