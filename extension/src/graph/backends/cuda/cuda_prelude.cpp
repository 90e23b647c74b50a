#include "graph/backends/cuda/cuda_prelude.hpp"

namespace sot::graph {

const char* cuda_prelude() {
  return R"(struct CudaArgs {
  char* b[SOT_NB];
  long long st[SOT_NB][SOT_R];
  long long size[SOT_R];
  long long n;
  long long rows;
  unsigned long long s[SOT_NS];
  void* partial;
  unsigned int* flags;
};
template <typename T> __device__ __forceinline__ T sot_max(T a, T b) { return (a >= b || a != a) ? a : b; }
template <typename T> __device__ __forceinline__ T sot_min(T a, T b) { return (a <= b || a != a) ? a : b; }
template <typename T> __device__ __forceinline__ T sot_fmax(T a, T b) { return (a >= b || b != b) ? a : b; }
template <typename T> __device__ __forceinline__ T sot_fmin(T a, T b) { return (a <= b || b != b) ? a : b; }
template <typename T> __device__ __forceinline__ T sot_add(T a, T b, unsigned& fl) {
  const T r = a + b;
  if (isinf(r) && isfinite(a) && isfinite(b)) fl |= 2u;
  if (isnan(r) && !isnan(a) && !isnan(b)) fl |= 8u;
  return r;
}
// (integer sums wrap, as NumPy's do, and raise nothing)
__device__ __forceinline__ long long sot_add(long long a, long long b, unsigned&) {
  return static_cast<long long>(static_cast<unsigned long long>(a) + static_cast<unsigned long long>(b));
}
__device__ __forceinline__ unsigned long long sot_add(unsigned long long a, unsigned long long b, unsigned&) {
  return a + b;
}
// The flat domain index `i` as each buffer's element offset (strides 0 where broadcast).
__device__ __forceinline__ void sot_offsets(const CudaArgs& a, long long i, int dims, long long* off) {
#pragma unroll
  for (int b = 0; b < SOT_NB; ++b) off[b] = 0;
#pragma unroll
  for (int d = SOT_R - 1; d >= 0; --d) {
    if (d >= dims) continue;
    const long long c = i % a.size[d];
    i /= a.size[d];
#pragma unroll
    for (int b = 0; b < SOT_NB; ++b) off[b] += c * a.st[b][d];
  }
}
)";
}

}  // namespace sot::graph
