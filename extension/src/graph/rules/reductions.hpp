// Reductions that end a fused group, and the order NumPy sums in.
//
// A group may end in sum, mean, max or min of a float32/float64 value it computes, over the last
// axis (keepdims or not) or, for sum and mean, over all axes. Over the last axis every row is
// reduced by its own call of NumPy's reduce loop, so a block of whole rows reduced by NumPy gives
// eager NumPy's row results by construction. Over all axes the running NumPy's summation order is
// followed (found by probing it once per buffer size):
//   - kPairwise (NumPy >= 2.3): one pairwise sum over all n elements; NumPy's recursion splits a
//     range of n > 128 elements at n/2 rounded down to a multiple of 8. Blocks are the subtrees
//     of that recursion no larger than a block, each summed by NumPy, combined as the tree does.
//   - kChunked (NumPy 1.x, 2.0-2.2): one pairwise sum per chunk of the buffer size (8192),
//     the chunk sums added in order to the identity 0.
// max and min over all axes are not fused: their result depends on the order where +0.0 and
// -0.0 or several NaNs meet.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/ir/graph.hpp"

namespace sot::graph {

struct Reduction {
  enum class Fn : std::uint8_t { kSum, kMean, kMax, kMin };
  Fn fn = Fn::kSum;
  bool all = false;  // over every axis (else over the last one)
  bool keepdims = false;
  // Added in index order, as NumPy adds along an axis that is not its innermost loop (the cuda
  // backend's reductions along an axis, device_reductions.hpp; fused groups' are pairwise).
  bool ordered = false;
  // A mean of ints or bools whose float64 sum the caller found exact in any order (its count times
  // the dtype's largest magnitude at most 2^53: device_reductions.cpp); NumPy adds them in float64.
  bool exact_int_mean = false;
  static constexpr Fn kFns[] = {Fn::kSum, Fn::kMean, Fn::kMax, Fn::kMin};
  // The function's NumPy name ("sum", "mean", "max", "min").
  static const char* name(Fn fn);
  // The ufunc whose reduce runs it (numpy.add, numpy.maximum, numpy.minimum).
  std::string ufunc_name() const;
  std::string text()
      const;  // "sum over the last axis, keepdims", "sum over the last axis, in order"
};

// The reduction `op` is, when a fused group may end in it; else nullopt and `why`.
std::optional<Reduction> fusable_reduction(const Graph& graph, const Op& op, std::string* why);

// The dtype of NumPy's sum (and add.reduce) of a `t` array with no dtype given: int64 for bools
// and signed ints, uint64 for unsigned ones (NumPy's long and ulong on 64-bit Linux), else `t`.
DType sum_dtype(DType t);

enum class SumOrder : std::uint8_t { kPairwise, kChunked, kUnknown };

// NumPy's pairwise sum adds up to this many elements in one unrolled loop (it splits only longer
// ranges), so a kPairwise block holds at least this many.
constexpr std::int64_t kPairwiseLeaf = 128;

// The running NumPy's order for a full float sum with buffer size `bufsize` (probed once each).
SumOrder numpy_sum_order(std::int64_t bufsize, const pybind11::module_& numpy);

// The flat ranges whose sums (NumPy's add.reduce of each) combine into the full sum of `n`
// elements in `order`, none longer than `block` (kChunked: `block` a multiple of `chunk`; the
// ranges are the chunks).
std::vector<std::pair<std::int64_t, std::int64_t>> sum_leaves(SumOrder order, std::int64_t n,
                                                              std::int64_t block,
                                                              std::int64_t chunk);

// The full sum from the leaves' sums (in sum_leaves' order), added in `T` as NumPy adds them,
// starting from the identity 0.
template <typename T>
T combine_sums(SumOrder order, std::int64_t n, std::int64_t block, const std::vector<T>& leaves);

}  // namespace sot::graph
