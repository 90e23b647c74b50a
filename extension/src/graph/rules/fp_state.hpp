// NumPy's floating-point error state, as the CPU backend needs it: run a fused group with every
// error ignored (it reads the hardware flags itself, so that a group split into blocks reports an
// error once, as eager NumPy's one call per op would), and tell which raised flags the user's
// current state reports (np.seterr: anything but "ignore").
#pragma once

#include <pybind11/pybind11.h>

#include <cfenv>

namespace sot::graph {

// The floating-point exception flags NumPy reports (FE_DIVBYZERO, FE_OVERFLOW, FE_UNDERFLOW,
// FE_INVALID; not FE_INEXACT).
int numpy_fe_flags();

// The current NumPy error state as NumPy 1.x's error mask: 3 bits per error (divide at 0, over at
// 3, under at 6, invalid at 9), each NumPy's mode number (ignore 0, warn 1, raise 2, call 3,
// print 4, log 5). NumPy 1.x: its error object's mask; NumPy 2: made from np.geterr() once per
// error-state object (a new one per change). Throws when NumPy cannot be imported.
long numpy_error_mask();

// Of `flags`, those the current NumPy error state does not ignore.
int reported_fe_flags(int flags);

// True when NumPy can report floating-point flags the way a ufunc does after its loop, through its
// C API's PyUFunc_GiveFloatingpointErrors (NumPy 2; NumPy 1.x has no such call).
bool numpy_reports_fp_flags();

// Reports `fe_flags` (FE_* bits) raised by ufunc `name` as NumPy does after that ufunc's loop, in
// the current error state: a RuntimeWarning "overflow encountered in multiply", a print, a log
// call, or nothing. False with a Python error set when that raised (a warning filter "error").
// Only when numpy_reports_fp_flags().
bool report_fp_flags(const char* name, int fe_flags);

// Clears this thread's floating-point flags where one NumPy reports is set (numpy_fe_flags: the
// inexact flag, set by nearly every operation and read by nobody, is left): feclearexcept rewrites
// the x87 environment every time (tens of nanoseconds, a small kernel run's largest single cost),
// fetestexcept only reads the status words.
inline void clear_fe_flags() {
  if (std::fetestexcept(FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID) != 0) {
    std::feclearexcept(FE_ALL_EXCEPT);
  }
}

// Within its scope NumPy ignores every floating-point error (as np.errstate(all="ignore")).
class IgnoreNumpyErrors {
 public:
  IgnoreNumpyErrors();
  ~IgnoreNumpyErrors();
  IgnoreNumpyErrors(const IgnoreNumpyErrors&) = delete;
  IgnoreNumpyErrors& operator=(const IgnoreNumpyErrors&) = delete;
  IgnoreNumpyErrors(IgnoreNumpyErrors&&) = delete;
  IgnoreNumpyErrors& operator=(IgnoreNumpyErrors&&) = delete;
  // False when the state could not be changed (a Python error is set).
  bool ok() const { return ok_; }

 private:
  PyObject* token_ = nullptr;  // NumPy 2: the context variable's reset token
  PyObject* contextvar_ =
      nullptr;                 // NumPy 2: the context variable (borrowed: lives for the process)
  PyObject* saved_ = nullptr;  // NumPy 1.x: the error object to restore
  PyObject* seterrobj_ = nullptr;  // NumPy 1.x: numpy.seterrobj (borrowed: lives for the process)
  bool ok_ = false;
};

}  // namespace sot::graph
