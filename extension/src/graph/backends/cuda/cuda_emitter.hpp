// The CUDA backend's source: a kernel of the kernel IR as CUDA C++ for NVRTC. One source holds the
// kernel's entry points, all taking one argument block (`CudaArgs`, laid out by cuda_args.hpp):
//   <name>_flat     elementwise, every buffer contiguous over the whole domain (index i);
//   <name>_strided  elementwise, any strides (0 where a buffer is broadcast), sizes at run time;
//   <name>_rows     a kernel ending in a reduction over the last axis (grid-stride over rows): a
//                   sum or mean adds each row in NumPy's pairwise order (cuda_pairwise.hpp), a row
//                   of at most 128 elements a thread, a longer one a block; a max or min is one
//                   block per row, each thread reducing a fixed set of the row's elements, then a
//                   fixed tree in shared memory - no atomics, the same result on every run; a
//                   reduction `ordered` (Reduction::ordered) is a row a thread, in index order;
//   <name>_partial + <name>_total  a sum or mean over all axes, in NumPy's order
//                   (cuda_pairwise.hpp): the first pass sums a part of the flat domain a block (a
//                   subtree of the pairwise recursion, or one of NumPy's parts of the buffer size),
//                   the second (one block; CudaArgs::rows holds the number of partials) adds them
//                   as NumPy does.
// Values live in registers. Floating-point results follow CUDA's math library (exact for + - * /
// sqrt, compiled without FMA contraction; within the documented ulp bounds for the others), and
// NumPy's error flags (divide by zero, overflow, invalid) are computed per element from the
// operands and results and or'ed into one word the host reads after the run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/lower/kernel_ir.hpp"

namespace sot::graph {

// NumPy's error flags as the generated code sets them (np.seterr's names), and kCudaOrder: a
// float max or min over a row came out a zero or a NaN, whose bits (+0.0 or -0.0, which NaN)
// depend on the order of comparisons (NumPy's own is its SIMD loop's): the host gives it.
enum CudaFlag : unsigned {
  kCudaDivide = 1U,
  kCudaOverflow = 2U,
  kCudaInvalid = 8U,
  kCudaOrder = 16U,
};

struct CudaSource {
  std::string code;
  std::string name;       // the kernel's name: entry points are name + "_flat", ...
  bool reduces = false;   // ends in a reduction (then: rows, or partial + total)
  bool all_axes = false;  // the reduction is over every axis
  bool ordered = false;   // the rows are added in index order, a row a thread
  // A float max or min over rows, compared in another order than NumPy's: sets kCudaOrder.
  bool order_dependent = false;
  // A sum's parts: 0, pairwise over the whole (the all-axes passes take a power of 2 of blocks),
  // else NumPy's buffer size (a block a part).
  std::int64_t sum_chunk = 0;
  int scalars = 0;  // CudaArgs::s entries
  // Per scalar, how the host writes it into CudaArgs::s: 'f' a double's bits, 'i' an int64, 'u' a
  // uint64 (bools as 0 or 1).
  std::string scalar_kinds;
};

// The CUDA C++ of `k`, or nullopt and `why` (the first op or dtype it does not emit).
std::optional<CudaSource> emit_cuda(const kir::Kernel& k, std::string* why);

}  // namespace sot::graph
