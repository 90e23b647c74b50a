#include "graph/rules/linalg_rules.hpp"

#include <algorithm>
#include <cmath>

namespace sot::graph {

namespace {

// The stack's dimensions of a (..., M, N) array.
Shape batch_of(const Shape& a) {
  return Shape(a.begin(), a.end() - 2);
}

Shape with(Shape s, std::initializer_list<std::int64_t> tail) {
  s.insert(s.end(), tail);
  return s;
}

bool at_least_2d(const Shape& a, std::string* why) {
  if (a.size() < 2) {
    *why = std::to_string(a.size()) +
           "-dimensional array given. Array must be at least two-dimensional";
    return false;
  }
  return true;
}

}  // namespace

std::optional<Shape> square_stack(const Shape& a, std::string* why) {
  if (!at_least_2d(a, why)) {
    return std::nullopt;
  }
  if (a[a.size() - 1] != a[a.size() - 2]) {
    *why = "Last 2 dimensions of the array must be square";
    return std::nullopt;
  }
  return a;
}

std::optional<std::vector<Shape>> eigh_shapes(const Shape& a, std::string* why) {
  if (!square_stack(a, why)) {
    return std::nullopt;
  }
  return std::vector<Shape>{Shape(a.begin(), a.end() - 1), a};
}

std::optional<Shape> solve_shape(const Shape& a, const Shape& b, std::string* why) {
  if (a.size() != 2 || (b.size() != 1 && b.size() != 2)) {
    *why = "solve of a " + std::to_string(a.size()) + "-d and a " + std::to_string(b.size()) +
           "-d array (stacks: NumPy 1.x and 2.x read b differently)";
    return std::nullopt;
  }
  if (!square_stack(a, why)) {
    return std::nullopt;
  }
  if (b[0] != a[0]) {
    *why = "solve: b's first dimension " + std::to_string(b[0]) + " is not a's " +
           std::to_string(a[0]);
    return std::nullopt;
  }
  return b;
}

std::optional<std::vector<Shape>> qr_shapes(const Shape& a, bool complete, std::string* why) {
  if (!at_least_2d(a, why)) {
    return std::nullopt;
  }
  const std::int64_t m = a[a.size() - 2];
  const std::int64_t n = a[a.size() - 1];
  const std::int64_t k = complete ? m : std::min(m, n);
  const Shape batch = batch_of(a);
  return std::vector<Shape>{with(batch, {m, k}), with(batch, {k, n})};
}

std::optional<std::vector<Shape>> svd_shapes(const Shape& a, bool full, bool uv, std::string* why) {
  if (!at_least_2d(a, why)) {
    return std::nullopt;
  }
  const std::int64_t m = a[a.size() - 2];
  const std::int64_t n = a[a.size() - 1];
  const std::int64_t k = std::min(m, n);
  const Shape batch = batch_of(a);
  if (!uv) {
    return std::vector<Shape>{with(batch, {k})};
  }
  return std::vector<Shape>{with(batch, {m, full ? m : k}), with(batch, {k}),
                            with(batch, {full ? n : k, n})};
}

std::optional<Shape> norm_shape(const Shape& x, const NormOrder& ord, const std::vector<int>& axes,
                                bool all, bool keepdims, bool* svd, std::string* why) {
  using K = NormOrder::Kind;
  const int nd = static_cast<int>(x.size());
  *svd = false;
  if (all && ord.kind == K::kNone) {
    return keepdims ? Shape(x.size(), 1) : Shape{};  // every element
  }
  const auto normal = normalize_axes(axes, all, nd, why);
  if (!normal) {
    return std::nullopt;
  }
  const std::size_t n = all ? x.size() : axes.size();
  if (n == 1 && (ord.kind == K::kFro || ord.kind == K::kNuc)) {
    *why = std::string("Invalid norm order '") + (ord.kind == K::kFro ? "fro" : "nuc") +
           "' for vectors";
    return std::nullopt;
  }
  if (n == 2) {
    const double v = ord.value;
    const bool number = ord.kind == K::kNumber;
    if (number && !(std::abs(v) == 1 || std::abs(v) == 2 || std::isinf(v))) {
      *why = "Invalid norm order for matrices.";
      return std::nullopt;
    }
    *svd = ord.kind == K::kNuc || (number && std::abs(v) == 2);
  } else if (n != 1) {
    *why = "Improper number of dimensions to norm.";
    return std::nullopt;
  }
  return reduced_shape(x, *normal, keepdims);
}

std::optional<Shape> cov_shape(const Shape& m, bool rowvar, std::string* why) {
  if (m.size() > 2) {
    *why = "m has more than 2 dimensions";
    return std::nullopt;
  }
  // As NumPy: m as rows of variables (a 1-d m is one row); rowvar=False transposes it unless it
  // has one row; the result (n, n) is squeezed.
  const Shape x = m.size() == 2 ? m : Shape{1, m.empty() ? 1 : m[0]};
  const std::int64_t n = (!rowvar && x[0] != 1) ? x[1] : x[0];
  if (n == 0) {
    return Shape{0, 0};
  }
  return n == 1 ? Shape{} : Shape{n, n};
}

std::optional<std::vector<Shape>> histogram_shapes(std::int64_t bins, std::string* why) {
  if (bins < 1) {
    *why = "`bins` must be positive, when an integer";
    return std::nullopt;
  }
  return std::vector<Shape>{{bins}, {bins + 1}};
}

}  // namespace sot::graph
