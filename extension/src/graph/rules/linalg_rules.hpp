// The shapes np.linalg's functions, np.cov and np.histogram make, worked out without running them
// (the dtypes the translator asks of the running NumPy). Each returns nullopt with NumPy's reason
// for what NumPy rejects or what is not modelled (the translator then breaks the graph and the
// call runs, or raises, for real). Functions of several results give one shape per result.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/ir/shape.hpp"

namespace sot::graph {

// inv, cholesky (the same shape), det (the stack's shape), eigh (eigenvalues, eigenvectors):
// of a stack of square matrices (..., M, M).
std::optional<Shape> square_stack(const Shape& a, std::string* why);
std::optional<std::vector<Shape>> eigh_shapes(const Shape& a, std::string* why);

// solve(a, b) with one (M, M) matrix `a` and `b` of shape (M,) or (M, K): b's shape.
std::optional<Shape> solve_shape(const Shape& a, const Shape& b, std::string* why);

// qr(a, mode) for mode "reduced" or "complete": Q and R.
std::optional<std::vector<Shape>> qr_shapes(const Shape& a, bool complete, std::string* why);

// svd(a, full_matrices, compute_uv): U, S and Vh, or S alone.
std::optional<std::vector<Shape>> svd_shapes(const Shape& a, bool full, bool uv, std::string* why);

// norm(x, ord, axis, keepdims): the order as given (None, an int, +-inf, "fro", "nuc"), the axes
// (`all`: axis=None). `matrix` is set when it is a matrix norm.
struct NormOrder {
  enum class Kind : std::uint8_t { kNone, kNumber, kFro, kNuc };
  Kind kind = Kind::kNone;
  double value = 0;  // kNumber
};
std::optional<Shape> norm_shape(const Shape& x, const NormOrder& ord, const std::vector<int>& axes,
                                bool all, bool keepdims, bool* matrix, std::string* why);

// cov(m, rowvar) of a 1-d or 2-d m (no y): (n, n) for n variables, () for one.
std::optional<Shape> cov_shape(const Shape& m, bool rowvar, std::string* why);

// histogram(a, bins) with an int bins: the counts (bins,) and the edges (bins + 1,).
std::optional<std::vector<Shape>> histogram_shapes(std::int64_t bins, std::string* why);

}  // namespace sot::graph
