// `sot.jit`'s callable: a C type with vectorcall that opens a capture scope, calls the wrapped
// function with the caller's argument vector and closes the scope, with no Python frame of its own
// and no `with`. The translator of a call is the backend's default translator, resolved once per
// backend name and kept (the backend named at `jit`, else `sot.config.backend` at each call).
#pragma once

#include <pybind11/pybind11.h>

namespace sot::capture {

// A jit callable for `fn`. `resolve(backend_name)` returns the translator for a backend (a
// capture.Translator); `config.backend` names it when `backend` is None. The result has a
// `__dict__` (for functools.update_wrapper) and binds as a method like a function.
// `device_results`: the runs of its calls hand back device arrays (core/call_options.hpp).
pybind11::object make_jit_function(pybind11::object fn, pybind11::object resolve,
                                   pybind11::object config, pybind11::object backend,
                                   bool device_results = false);

}  // namespace sot::capture
