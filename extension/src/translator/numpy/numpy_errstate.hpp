// Whether NumPy's floating-point error state raises (np.seterr(...='raise' or 'call') for some
// error), or Python's warnings filters make its RuntimeWarnings errors (-W error): a translation
// that captures array operations relies on it (an op that raises where the graph runs, not where
// the frame did it, would lose or reorder the frame's other effects), so it is guarded, and the
// guard must be cheap: a C function reading graph::numpy_error_mask() (NumPy 2's state read once
// per error-state object, NumPy 1.x's error mask).
#pragma once

#include <pybind11/pybind11.h>

namespace sot::translator {

// A callable taking no arguments that returns an int: kErrstateRaises when NumPy's current error
// state raises or calls on some error (never when NumPy cannot be imported), plus kWarningsRaise
// when a warnings filter turns a RuntimeWarning into an exception. Made on first use.
constexpr int kWarningsRaise = 1;
constexpr int kErrstateRaises = 2;
pybind11::object numpy_errors_raise_probe();

}  // namespace sot::translator
