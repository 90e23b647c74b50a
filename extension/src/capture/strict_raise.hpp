// SOT_STRICT=1: instead of falling back to the original code, the frame raises the reason. The
// frame is already made, so the runtime runs a code object with the original's layout that raises
// RuntimeError(reason) right after its prefix (MAKE_CELL, COPY_FREE_VARS, RETURN_GENERATOR...) and
// RESUME: CPython then clears and pops the frame as for any exception, on every version.
#pragma once

#include <Python.h>
#include <pybind11/pybind11.h>

#include <string>

namespace sot::capture {

// A new code object for `original` (borrowed) that raises RuntimeError("sot (SOT_STRICT=1): " +
// reason).
pybind11::object raising_code(PyCodeObject* original, const std::string& reason);

}  // namespace sot::capture
