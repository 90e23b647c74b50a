#include "graph/backends/cuda/cuda_pairwise.hpp"

#include <string>

namespace sot::graph {

namespace {

// A recursive device function would keep its registers on the stack: the recursion is a loop over
// frames, frame d holding a split's right half and, once its left half is summed, that sum (32
// frames: a row of up to 128 * 2^32 elements).
constexpr const char* kPairwiseWalk =
    R"(__device__ __forceinline__ long long sot_half(long long n) {
  const long long h = n / 2;
  return h - h % 8;
}
template <typename T, typename Leaf>
__device__ __forceinline__ T sot_pairwise(long long n, int max_depth, Leaf leaf, unsigned& fl) {
  long long right_at[32], right_n[32];  // (a row of up to 128 * 2^32 elements)
  T left[32];
  unsigned long long in_right = 0;  // bit d: frame d's left half is summed
  long long at = 0;
  unsigned p = 0;
  int d = 0;
  for (;;) {
    for (; n > 128 && d < max_depth; ++d) {
      const long long h = sot_half(n);
      right_at[d] = at + h;
      right_n[d] = n - h;
      in_right &= ~(1ull << d);
      n = h;
    }
    T v = leaf(at, n, p, fl);
    for (; d > 0 && ((in_right >> (d - 1)) & 1ull) != 0; --d) v = sot_add(left[d - 1], v, fl);
    if (d == 0) return v;
    left[d - 1] = v;
    in_right |= 1ull << (d - 1);
    at = right_at[d - 1];
    n = right_n[d - 1];
    if (d - 1 < 8) p = (p & ~(0xFFu >> (d - 1))) | (0x80u >> (d - 1));
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
