#include "graph/runtime/cuda/cublas.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

namespace sot::graph {

namespace {

// cublasStatus_t and cublasOperation_t are ints (0: success; 0 'N', 1 'T').
using Gemm = int (*)(void*, int, int, int, int, int, const void*, const void*, int, const void*,
                     int, const void*, void*, int);

struct CublasApi {
  void* handle = nullptr;
  int (*create)(void**) = nullptr;
  Gemm dgemm = nullptr;
  Gemm sgemm = nullptr;
  std::string why;  // why it could not be loaded ("" when loaded)
};

template <typename F>
bool bind(void* lib, const char* name, F* fn) {
  *fn = reinterpret_cast<F>(dlsym(lib, name));  // NOLINT(*-reinterpret-cast): dlsym's result
  return *fn != nullptr;
}

CublasApi load() {
  CublasApi api;
  std::vector<std::string> names;
  if (const char* path = std::getenv("SOT_CUBLAS"); path != nullptr && *path != '\0') {
    names.emplace_back(path);
  }
  for (const char* n : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"}) {
    names.emplace_back(n);
    names.push_back(std::string("/usr/local/cuda/lib64/") + n);
  }
  void* lib = nullptr;
  for (const std::string& n : names) {
    lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) {
      break;
    }
  }
  if (lib == nullptr) {
    api.why = "cuBLAS (libcublas.so) cannot be loaded";
    return api;
  }
  if (!bind(lib, "cublasCreate_v2", &api.create) || !bind(lib, "cublasDgemm_v2", &api.dgemm) ||
      !bind(lib, "cublasSgemm_v2", &api.sgemm)) {
    api.why = "cuBLAS lacks cublasCreate_v2 / cublasDgemm_v2 / cublasSgemm_v2";
    return api;
  }
  if (const int rc = api.create(&api.handle); rc != 0) {
    api.why = "cublasCreate failed (status " + std::to_string(rc) + ")";
  }
  return api;
}

}  // namespace

bool cublas_gemm(char kind, std::int64_t m, std::int64_t n, std::int64_t k, const GemmMatrix& a,
                 const GemmMatrix& b, const GemmMatrix& c, std::string* why) {
  static const CublasApi api = load();
  if (!api.why.empty()) {
    *why = api.why;
    return false;
  }
  // Row-major C = A B is column-major C^T = B^T A^T: the library's A is our B, its B our A. A
  // row-major matrix is its transpose in column-major order, so an operand stored transposed
  // is read with op T.
  const double one = 1.0;
  const double zero = 0.0;
  const float one_f = 1.0F;
  const float zero_f = 0.0F;
  const bool f64 = kind == 'd';
  const int rc = (f64 ? api.dgemm : api.sgemm)(
      api.handle, b.transposed ? 1 : 0, a.transposed ? 1 : 0, static_cast<int>(n),
      static_cast<int>(m), static_cast<int>(k), f64 ? static_cast<const void*>(&one) : &one_f,
      reinterpret_cast<const void*>(b.address),  // NOLINT(*-int-to-ptr): a device address
      static_cast<int>(b.ld),
      reinterpret_cast<const void*>(a.address),  // NOLINT(*-int-to-ptr)
      static_cast<int>(a.ld), f64 ? static_cast<const void*>(&zero) : &zero_f,
      reinterpret_cast<void*>(c.address),  // NOLINT(*-int-to-ptr)
      static_cast<int>(c.ld));
  if (rc != 0) {
    *why = "cuBLAS gemm failed (status " + std::to_string(rc) + ")";
    return false;
  }
  return true;
}

}  // namespace sot::graph
