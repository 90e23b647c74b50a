// Arrays joined on the device, as NumPy joins them on the host: numpy.stack(arrays, axis=0) and
// numpy.concatenate(arrays, axis=0) of a list or tuple of device arrays of one dtype (the axis an
// int, positional or axis=), into a new C-ordered device array, each part copied into its place
// by the copy kernel (device_copy.hpp). Anything else leaves the step to the host: a part that is
// not a device array, parts of several dtypes (NumPy promotes), shapes that do not fit, an axis
// out of range (NumPy raises), any other keyword (out=, dtype=, casting=). Without this a loop
// that keeps each step's array in a list and stacks them at the end copied every one of them out.
#pragma once

#include <Python.h>

#include <cstddef>

namespace sot::graph {

class Residency;

// The joined array (a new reference, a device array), or nullptr with no error set when the step
// is not one of the above (`args`: `nargs` positional, then one per name of `kwnames`).
PyObject* run_device_join(Residency& r, PyObject* fn, PyObject* const* args, std::size_t nargs,
                          PyObject* kwnames);

}  // namespace sot::graph
