// NumPy's pairwise summation as CUDA device code, for the emitter's sums and means over rows and
// over all axes (cuda_emitter.cpp): NumPy adds a float sum as 0 plus DOUBLE_pairwise_sum /
// FLOAT_pairwise_sum of its elements (NumPy < 2.3: of each part of the buffer size, the parts in
// order), and the kernels add in that order, so their results are NumPy's bit for bit.
#pragma once

#include <cstdint>
#include <string>

namespace sot::graph {

// The reduction kernels' block: 256 threads (the pairwise recursion 8 levels down a thread).
inline constexpr int kReductionThreads = 256;

// `extern "C" __global__ void <bounds> name`: a reduction kernel's head. The bounds say 256 threads
// and at least one block an SM, so that ptxas gives the walk the registers it needs (with the
// thread count alone, NVRTC 13 held float row kernels to 48 registers on sm_90 and spilled 20-24
// bytes; with both, 52-78 registers and no spills over the test corpus).
std::string cuda_reduction_entry(const std::string& name);

// The device functions of kernel `kernel` (value type `type`, "double" or "float"):
//   sot_half(n)   where NumPy's recursion splits a range of n > 128 elements (n/2 rounded down to a
//                 multiple of 8);
//   sot_pairwise<T>(n, max_depth, leaf, fl)  the recursion over n elements as a loop, at most
//                 max_depth (<= 32) levels down, `leaf(at, m, p, fl)` summing each range
//                 [at, at + m) where the splitting stops (`p`: the path as max_depth bits, the
//                 first level's the highest, 1 the right half, 0 below where the path stopped);
//   <kernel>_item(a, base, j, fl)  a row's element j: `item_body` (the element's statements, which
//                 also store the group's other outputs there) then `reduced`;
//   <kernel>_leaf(a, base, lo, n, fl)  NumPy's sum of at most 128 elements [lo, lo + n): a running
//                 sum under 8, else eight partial sums over the multiple of 8 added as a tree, then
//                 the rest in order; the element's code appears once.
// They use CudaArgs and sot_add of the kernel's preamble.
std::string cuda_pairwise_functions(const std::string& type, const std::string& kernel,
                                    const std::string& item_body, const std::string& reduced);

// The two passes of a sum or mean over all axes (after cuda_pairwise_functions, whose
// `<kernel>_leaf` reads the flat element j): `<kernel>_partial`, block g summing its part of the
// elements as NumPy does (chunk > 0: NumPy's parts of `chunk` elements, part g; chunk 0: the
// pairwise recursion's subtree that g's log2(blocks) bits choose, a path ending early in a leaf:
// the block whose remaining bits are 0, others 0), its 256 threads splitting that 8 levels further
// as a row's do;
// `<kernel>_total` (one block, CudaArgs::rows the number of partials, a power of 2 for chunk 0):
// 0 plus the parts in order (chunk > 0) or plus the recursion's top levels over the partials, into
// `x`, then `finish` (the mean's division, the store).
std::string cuda_pairwise_sum_passes(const std::string& type, const std::string& kernel,
                                     std::int64_t chunk, const std::string& finish);

}  // namespace sot::graph
