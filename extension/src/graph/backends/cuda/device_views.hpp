// Views of a device array made where it lives, as NumPy makes them, with nothing copied:
// x.reshape(...) and numpy.reshape(x, shape) of a C-contiguous array (NumPy's reshape of one is
// always a view), x.transpose(...) and numpy.transpose(x[, axes]) (always a view), x.ravel() and
// numpy.ravel(x) of a C-contiguous array. Anything else runs on the host, as before: a reshape or
// ravel of another layout (NumPy may copy), order= or any other keyword, a shape or axes NumPy
// refuses (its error comes from the host). A step of these copied its array out before, and every
// step after it on the view read the host's copy.
#pragma once

#include <Python.h>

#include <cstddef>

namespace sot::graph {

class Residency;

// The view (a new reference, a device array), or nullptr with no error set when the step is not
// one of the above (`args`: `nargs` positional, then one per name of `kwnames`).
PyObject* run_device_view(Residency& r, PyObject* fn, PyObject* const* args, std::size_t nargs,
                          PyObject* kwnames);

}  // namespace sot::graph
