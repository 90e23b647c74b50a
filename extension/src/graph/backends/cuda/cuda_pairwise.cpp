#include "graph/backends/cuda/cuda_pairwise.hpp"

#include <cstdint>
#include <string>

namespace sot::graph {

namespace {

// A recursive device function would keep its registers on the stack: the recursion is a loop over
// frames, frame d holding the size of a split's right half and, once its left half is summed, that
// sum (32 frames: a row of up to 128 * 2^32 elements).
constexpr const char* kPairwiseWalk =
    R"(__device__ __forceinline__ long long sot_half(long long n) {
  const long long h = n / 2;
  return h - h % 8;
}
template <typename T, typename Leaf>
__device__ __forceinline__ T sot_pairwise(long long n, int max_depth, Leaf leaf, unsigned& fl) {
  // (max_depth <= 32)
  long long right_n[32];  // (a row of up to 128 * 2^32 elements)
  T left[32];
  unsigned long long in_right = 0;  // bit d: frame d's left half is summed
  long long at = 0;
  unsigned long long p = 0;  // the path: bit max_depth - 1 - L for level L, 1 the right half
  int d = 0;
  for (;;) {
    for (; n > 128 && d < max_depth; ++d) {
      const long long h = sot_half(n);
      right_n[d] = n - h;
      in_right &= ~(1ull << d);
      n = h;
    }
    T v = leaf(at, n, p, fl);
    const long long end = at + n;
    for (; d > 0 && ((in_right >> (d - 1)) & 1ull) != 0; --d) v = sot_add(left[d - 1], v, fl);
    if (d == 0) return v;
    left[d - 1] = v;
    in_right |= 1ull << (d - 1);
    at = end;  // (the right half starts where the left half's last leaf ends)
    n = right_n[d - 1];
    const int s = max_depth - d;  // frame d - 1's bit
    p = (p & ~((2ull << s) - 1ull)) | (1ull << s);
  }
}
)";

// The eight partial sums' cases: r<q> takes element i where i % 8 == q (registers: an array
// indexed at run time would be local memory).
std::string partial_sums() {
  std::string out;
  for (int q = 0; q < 8; ++q) {
    const std::string r = "r" + std::to_string(q);
    out += "      case ";
    out += std::to_string(q);
    out += ":\n        ";
    out += r;
    out += " = i < 8 ? v : sot_add(";
    out += r;
    out += ", v, fl);\n        break;\n";
  }
  return out;
}

}  // namespace

std::string cuda_reduction_entry(const std::string& name) {
  return "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kReductionThreads) +
         ", 1) " + name;
}

std::string cuda_pairwise_sum_passes(const std::string& type, const std::string& kernel,
                                     std::int64_t chunk, const std::string& finish) {
  const std::string& t = type;
  const std::string& k = kernel;
  const std::string c = std::to_string(chunk);
  return cuda_reduction_entry(k + "_partial") + "(const CudaArgs a) {\n  __shared__ " + t +
         " red[256];\n  unsigned fl = 0;\n  long long lo = 0;\n  long long n = a.n;\n"
         "  bool mine = true;\n  if (" +
         c + " > 0) {  // NumPy's parts of the buffer size: block g's is part g\n" +
         "    lo = static_cast<long long>(blockIdx.x) * " + c + ";\n    n = a.n - lo < " + c +
         " ? a.n - lo : " + c +
         ";\n  } else {  // the recursion's top levels: block g's subtree by g's bits\n"
         "    const int depth = 31 - __clz(static_cast<int>(gridDim.x));\n    int level = 0;\n"
         "    for (; level < depth && n > 128; ++level) {\n"
         "      const long long h = sot_half(n);\n"
         "      if (((blockIdx.x >> (depth - 1 - level)) & 1u) != 0) {\n        lo += h;\n"
         "        n -= h;\n      } else {\n        n = h;\n      }\n    }\n"
         "    mine = (blockIdx.x & ((1u << (depth - level)) - 1u)) == 0;\n  }\n"
         "  const long long part = n;\n  int level = 0;\n"
         "  for (; level < 8 && n > 128; ++level) {\n    const long long h = sot_half(n);\n"
         "    if (((threadIdx.x >> (7 - level)) & 1u) != 0) {\n      lo += h;\n      n -= h;\n"
         "    } else {\n      n = h;\n    }\n  }\n"
         "  const bool own = mine && (threadIdx.x & ((1u << (8 - level)) - 1u)) == 0;\n"
         "  red[threadIdx.x] = own ? sot_pairwise<" +
         t + ">(n, 32, [&](long long at, long long m, unsigned long long, unsigned& f) { return " +
         k + "_leaf(a, nullptr, lo + at, m, f); }, fl) : static_cast<" + t +
         ">(0);\n  __syncthreads();\n  if (threadIdx.x == 0) static_cast<" + t +
         "*>(a.partial)[blockIdx.x] = mine ? sot_pairwise<" + t +
         ">(part, 8, [&](long long, long long, unsigned long long p, unsigned&) { return red[p]; "
         "}, fl) : static_cast<" +
         t + ">(0);\n  if (fl != 0) atomicOr(a.flags, fl);\n}\n" +
         cuda_reduction_entry(k + "_total") +
         "(const CudaArgs a) {\n  unsigned fl = 0;\n  if (threadIdx.x == 0) {\n"
         "    const " +
         t + "* partial = static_cast<const " + t + "*>(a.partial);\n    " + t + " x = 0;\n" +
         "    if (" + c +
         " > 0) {\n      for (long long g = 0; g < a.rows; ++g) x = sot_add(x, "
         "partial[g], fl);\n    } else {\n      x = sot_add(x, sot_pairwise<" +
         t +
         ">(a.n, 31 - __clz(static_cast<int>(a.rows)), [&](long long, long long, unsigned long "
         "long p, unsigned&) { return partial[p]; }, fl), fl);\n    }\n" +
         finish + "  }\n  if (fl != 0) atomicOr(a.flags, fl);\n}\n";
}

std::string cuda_pairwise_functions(const std::string& type, const std::string& kernel,
                                    const std::string& item_body, const std::string& reduced) {
  const std::string& t = type;
  const std::string& k = kernel;
  return std::string(kPairwiseWalk) + "__device__ __forceinline__ " + t + " " + k +
         "_item(const CudaArgs& a, const long long* base, long long j, unsigned& fl) {\n" +
         item_body + "    return " + reduced + ";\n}\n__device__ __forceinline__ " + t + " " + k +
         "_leaf(const CudaArgs& a, const long long* base, long long lo, long long n, "
         "unsigned& fl) {\n  " +
         t + " r0 = 0, r1 = 0, r2 = 0, r3 = 0, r4 = 0, r5 = 0, r6 = 0, r7 = 0;\n  " + t +
         " res = 0;\n  const long long eights = n < 8 ? 0 : n - n % 8;\n"
         "  for (long long i = 0; i < n; ++i) {\n    const " +
         t + " v = " + k +
         "_item(a, base, lo + i, fl);\n"
         "    if (i >= eights) {\n      res = sot_add(res, v, fl);\n      continue;\n    }\n"
         "    switch (i & 7) {\n" +
         partial_sums() +
         "    }\n    if (i == eights - 1) res = sot_add(sot_add(sot_add(r0, r1, fl), sot_add(r2, "
         "r3, fl), fl), sot_add(sot_add(r4, r5, fl), sot_add(r6, r7, fl), fl), fl);\n"
         "  }\n  return res;\n}\n";
}

}  // namespace sot::graph
