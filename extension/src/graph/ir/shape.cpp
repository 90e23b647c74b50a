#include "graph/ir/shape.hpp"

#include <algorithm>

namespace sot::graph {

std::string shape_text(const Shape& s) {
  std::string out = "(";
  for (std::size_t i = 0; i < s.size(); ++i) {
    out += (i > 0 ? ", " : "") + std::to_string(s[i]);
  }
  return out + (s.size() == 1 ? ",)" : ")");
}

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b, std::string* error) {
  const std::size_t n = std::max(a.size(), b.size());
  Shape out(n, 1);
  for (std::size_t k = 0; k < n; ++k) {
    // Aligned from the right.
    const std::int64_t da = k < a.size() ? a[a.size() - 1 - k] : 1;
    const std::int64_t db = k < b.size() ? b[b.size() - 1 - k] : 1;
    if (da != db && da != 1 && db != 1) {
      if (error != nullptr) {
        // NumPy prints these shapes without spaces.
        auto compact = [](const Shape& s) {
          std::string t = shape_text(s);
          t.erase(std::remove(t.begin(), t.end(), ' '), t.end());
          return t;
        };
        *error =
            "operands could not be broadcast together with shapes " + compact(a) + " " + compact(b);
      }
      return std::nullopt;
    }
    out[n - 1 - k] = da == 1 ? db : da;
  }
  return out;
}

std::optional<std::vector<int>> normalize_axes(const std::vector<int>& axes, bool all, int ndim,
                                               std::string* error) {
  std::vector<int> out;
  if (all) {
    for (int i = 0; i < ndim; ++i) {
      out.push_back(i);
    }
    return out;
  }
  for (const int axis : axes) {
    if (axis < -ndim || axis >= ndim) {
      if (error != nullptr) {
        *error = "axis " + std::to_string(axis) + " is out of bounds for array of dimension " +
                 std::to_string(ndim);
      }
      return std::nullopt;
    }
    const int a = axis < 0 ? axis + ndim : axis;
    if (std::find(out.begin(), out.end(), a) != out.end()) {
      if (error != nullptr) {
        *error = "duplicate value in 'axis'";
      }
      return std::nullopt;
    }
    out.push_back(a);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Shape reduced_shape(const Shape& s, const std::vector<int>& axes, bool keepdims) {
  Shape out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const bool reduced = std::find(axes.begin(), axes.end(), static_cast<int>(i)) != axes.end();
    if (!reduced) {
      out.push_back(s[i]);
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  return out;
}

}  // namespace sot::graph
