// NumPy's BLAS (whole_blas.hpp).
#include "graph/backends/cpu/whole/whole_blas.hpp"

#include <dlfcn.h>
#include <pybind11/pybind11.h>

#include "core/loaded_module.hpp"

namespace py = pybind11;

namespace sot::graph::whole {

namespace {

using Ddot64 = double (*)(long long, const double*, long long, const double*, long long);
using Ddot32 = double (*)(int, const double*, int, const double*, int);

Ddot32 g_ddot32 = nullptr;

// (a BLAS of 32-bit ints: the code checks n and the strides below 2**31 before it calls)
double ddot32(long long n, const double* x, long long incx, const double* y, long long incy) {
  return g_ddot32(static_cast<int>(n), x, static_cast<int>(incx), y, static_cast<int>(incy));
}

struct Found {
  DdotFn fn = nullptr;
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
  struct Name {
    const char* symbol;
    bool ilp64;
  };
  for (const Name n : {Name{"scipy_cblas_ddot64_", true}, Name{"cblas_ddot64_", true},
                       Name{"scipy_cblas_ddot", false}, Name{"cblas_ddot", false}}) {
    void* sym = dlsym(handle, n.symbol);
    if (sym == nullptr) {
      continue;
    }
    if (n.ilp64) {
      f.fn = reinterpret_cast<Ddot64>(sym);  // NOLINT: dlsym's symbol
    } else {
      g_ddot32 = reinterpret_cast<Ddot32>(sym);  // NOLINT: dlsym's symbol
      f.fn = ddot32;
    }
    break;
  }
  dlclose(handle);  // (RTLD_NOLOAD took a reference: NumPy's own keeps the library loaded)
  if (f.fn == nullptr) {
    f.why = "NumPy links no cblas_ddot";
  }
  return f;
}

}  // namespace

DdotFn numpy_ddot(std::string* why) {
  static const Found found = find();
  if (found.fn == nullptr && why != nullptr) {
    *why = found.why;
  }
  return found.fn;
}

}  // namespace sot::graph::whole
