// Arrays made on the device from a device array, as NumPy makes them on the host:
// - ndarray.copy (C order) and numpy.copy (order "K": C order where the operand's axes are in C
//   order up to signs, else the host's), by the copy kernel (device_copy.hpp);
// - numpy.zeros_like and empty_like (zeroed), ones_like and full_like (a float64 or float32
//   operand, the fill value a Python float or an int of at most 53 bits) by the fill kernel, of
//   the operand's shape and dtype, in C order under the same condition as numpy.copy;
// - numpy.roll with an integer shift, along one axis (under the same condition), or along none (of
//   a C-contiguous operand: its items in C order), by two copies.
// Any keyword argument (order=, dtype=, subok=, shape=) but roll's axis= leaves the step to the
// host. Without
// these a `new = u.copy()` in a loop's step copied `u` out and the new array in, every step.
#pragma once

#include <Python.h>

#include <cstddef>

namespace sot::graph {

class Residency;

// The new array (a new reference, a device array), or nullptr with no error set when the step is
// not one of the above (`args`: `nargs` positional, then one per name of `kwnames`).
PyObject* run_device_creation(Residency& r, PyObject* fn, PyObject* const* args, std::size_t nargs,
                              PyObject* kwnames);

}  // namespace sot::graph
