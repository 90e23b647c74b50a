// cuBLAS, loaded at run time as NVRTC is (dlopen of $SOT_CUBLAS, else libcublas.so.13, .so.12 or
// .so from the loader's path or the toolkit's lib64): the device's matrix products. Row-major
// products are asked of the column-major library as their transposes.
#pragma once

#include <cstdint>
#include <string>

namespace sot::graph {

// One operand or result of a row-major product: a device address, its rows' stride in elements,
// and whether it is stored transposed (its columns contiguous: a NumPy `.T` of a C array).
struct GemmMatrix {
  std::uint64_t address = 0;
  std::int64_t ld = 0;
  bool transposed = false;
  // What NumPy's product saw: 2 a matrix, 1 a vector (a matrix of one row or one column here), 0
  // a scalar (the 1 x 1 result of two vectors). cuBLAS takes each as the matrix it is; the
  // simulated device gives NumPy's matmul the vectors and scalars, so that its result is NumPy's
  // own (a matrix-vector product is another BLAS routine than a matrix product).
  int dims = 2;
};

// C (m x n) = A (m x k) @ B (k x n) on the current context's default stream, float64 (`kind` 'd')
// or float32 ('f', FP32 math); false with `why` (no library, an error).
bool cublas_gemm(char kind, std::int64_t m, std::int64_t n, std::int64_t k, const GemmMatrix& a,
                 const GemmMatrix& b, const GemmMatrix& c, std::string* why);

}  // namespace sot::graph
