// NumPy's BLAS (whole_blas.hpp).
#include "graph/backends/cpu/whole/whole_blas.hpp"

#include <dlfcn.h>
#include <pybind11/pybind11.h>

#include "core/loaded_module.hpp"

namespace py = pybind11;

namespace sot::graph::whole {

namespace {

using Ddot32 = double (*)(int, const double*, int, const double*, int);
using Dgemv32 = void (*)(int, int, int, int, double, const double*, int, const double*, int, double,
                         double*, int);

Ddot32 g_ddot32 = nullptr;
Dgemv32 g_dgemv32 = nullptr;

// (a BLAS of 32-bit ints: the code checks the sizes and strides below 2**31 before it calls)
double ddot32(long long n, const double* x, long long incx, const double* y, long long incy) {
  return g_ddot32(static_cast<int>(n), x, static_cast<int>(incx), y, static_cast<int>(incy));
}

void dgemv32(int order, int trans, long long m, long long n, double alpha, const double* a,
             long long lda, const double* x, long long incx, double beta, double* y,
             long long incy) {
  g_dgemv32(order, trans, static_cast<int>(m), static_cast<int>(n), alpha, a, static_cast<int>(lda),
            x, static_cast<int>(incx), beta, y, static_cast<int>(incy));
}

struct Found {
  DdotFn ddot = nullptr;
  DgemvFn dgemv = nullptr;
  std::string why;
};

// The path of NumPy's _multiarray_umath (numpy._core in NumPy 2, numpy.core in 1.x).
std::string multiarray_path() {
  for (const char* core : {"numpy._core._multiarray_umath", "numpy.core._multiarray_umath"}) {
    try {
      return py::str(loaded_module(core).attr("__file__")).cast<std::string>();
    } catch (py::error_already_set&) {
      continue;
    }
  }
  return "";
}

// The functions of the first family of names the module resolves (64-bit ints first).
Found find() {
  Found f;
  const std::string path = multiarray_path();
  if (path.empty()) {
    f.why = "NumPy's _multiarray_umath was not found";
    return f;
  }
  void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) {
    f.why = "NumPy's _multiarray_umath is not loaded";
    return f;
  }
  struct Family {
    const char* prefix;
    const char* suffix;
    bool ilp64;
  };
  for (const Family fam : {Family{"scipy_cblas_", "64_", true}, Family{"cblas_", "64_", true},
                           Family{"scipy_cblas_", "", false}, Family{"cblas_", "", false}}) {
    void* ddot = dlsym(handle, (std::string(fam.prefix) + "ddot" + fam.suffix).c_str());
    if (ddot == nullptr) {
      continue;
    }
    void* dgemv = dlsym(handle, (std::string(fam.prefix) + "dgemv" + fam.suffix).c_str());
    if (fam.ilp64) {
      f.ddot = reinterpret_cast<DdotFn>(ddot);     // NOLINT: dlsym's symbol
      f.dgemv = reinterpret_cast<DgemvFn>(dgemv);  // NOLINT: dlsym's symbol
    } else {
      g_ddot32 = reinterpret_cast<Ddot32>(ddot);  // NOLINT: dlsym's symbol
      f.ddot = ddot32;
      if (dgemv != nullptr) {
        g_dgemv32 = reinterpret_cast<Dgemv32>(dgemv);  // NOLINT: dlsym's symbol
        f.dgemv = dgemv32;
      }
    }
    break;
  }
  dlclose(handle);  // (RTLD_NOLOAD took a reference: NumPy's own keeps the library loaded)
  if (f.ddot == nullptr) {
    f.why = "NumPy links no cblas_ddot";
  } else if (f.dgemv == nullptr) {
    f.why = "NumPy links no cblas_dgemv";
  }
  return f;
}

const Found& found() {
  static const Found f = find();
  return f;
}

}  // namespace

DdotFn numpy_ddot(std::string* why) {
  if (found().ddot == nullptr && why != nullptr) {
    *why = found().why;
  }
  return found().ddot;
}

DgemvFn numpy_dgemv(std::string* why) {
  if (found().dgemv == nullptr && why != nullptr) {
    *why = found().why;
  }
  return found().dgemv;
}

}  // namespace sot::graph::whole
