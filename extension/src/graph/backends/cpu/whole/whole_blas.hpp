// NumPy's own BLAS, found in the process: the cblas_ddot that NumPy's dot of two float64 vectors
// calls (`a @ b`, its DOUBLE_dot) and the cblas_dgemv of its matmul of a matrix and a vector
// (DOUBLE_gemv), so that tier C's dot products are NumPy's bit for bit. NumPy's
// _multiarray_umath links it: scipy_cblas_ddot64_ in NumPy 2's wheels, cblas_ddot64_ in 1.x's,
// cblas_ddot where NumPy was built on a system BLAS; it is looked up through that module's own
// handle, so the function found is the one NumPy resolves.
#pragma once

#include <string>

namespace sot::graph::whole {

// The generated code's `env->ddot`: n and the strides in elements, 64-bit whatever the BLAS's ints.
using DdotFn = double (*)(long long n, const double* x, long long incx, const double* y,
                          long long incy);

// cblas_dgemv(order, trans, m, n, alpha, a, lda, x, incx, beta, y, incy), CBLAS's enums as ints
// (kRowMajor ...), the sizes 64-bit whatever the BLAS's ints.
using DgemvFn = void (*)(int order, int trans, long long m, long long n, double alpha,
                         const double* a, long long lda, const double* x, long long incx,
                         double beta, double* y, long long incy);
constexpr int kRowMajor = 101;
constexpr int kColMajor = 102;
constexpr int kTrans = 112;

// The function (looked up once, with the GIL held), or nullptr and `why` when NumPy's BLAS is
// not found.
DdotFn numpy_ddot(std::string* why);
DgemvFn numpy_dgemv(std::string* why);

}  // namespace sot::graph::whole
