// Reductions along an axis of a device array, run on the device: numpy.sum, numpy.mean,
// numpy.max and numpy.min (and amax, amin, the ndarray methods) of a float64 or float32 device
// array over one axis that is not its innermost, with keepdims or not. NumPy adds along such an
// axis in index order, one output element at a time (its innermost loop runs over the axes
// kept), from 0: the kernel does the same, one thread an output element (bit for bit NumPy's sum;
// max and min as NumPy's maximum and minimum, NaN propagated). Reductions over the innermost axis
// end fused groups instead (the rows kernels). And max and min over all axes of a C-contiguous
// float64 or float32 device array (no axis, no keyword), as one row of the rows kernel, its NumPy
// scalar copied out; where it is a zero or a NaN (whose bits depend on the order of comparisons)
// the host computes it. So do sum and mean over all axes of such an array: the row adds in NumPy's
// pairwise order (bit for bit, past NumPy 1.x's buffer size too), and the mean is NumPy's own
// `type(s)(s / intp(n))` of the sum. Anything else runs on the host.
#pragma once

#include <Python.h>

#include <cstddef>

namespace sot::graph {

class Residency;

// Whether `fn` is one of the reductions above.
bool is_reduction(PyObject* fn);

// The reduction's result (a new reference, a device array), or nullptr with no error set when the
// step is not one this runs (`args`: `nargs` positional, then one per name of `kwnames`, a tuple
// or nullptr).
PyObject* run_device_reduction(Residency& r, PyObject* fn, PyObject* const* args, std::size_t nargs,
                               PyObject* kwnames);

}  // namespace sot::graph
