// Library ops whose operands live on the device, run there: a matrix product of two device arrays
// (numpy.matmul, numpy.dot, the @ operator; 2-D float64 or float32 operands of one dtype, each
// C-ordered or a transposed C array) through the device's BLAS, its result a device array; and a
// reduction along an axis (device_reductions.hpp); creation, joins, in-place arithmetic and views
// (device_creation, device_joins, device_inplace, device_views). The residency asks here before a
// step would copy its operands out (Residency::try_run).
#pragma once

#include <Python.h>

#include <cstddef>

namespace sot::graph {

class Residency;

// The step's result (a new reference), or nullptr with no error set when it is not one of these
// (`args`: `nargs` positional, then one per name of `kwnames`, a tuple or nullptr).
PyObject* run_library_op(Residency& r, PyObject* fn, PyObject* const* args, std::size_t nargs,
                         PyObject* kwnames);

}  // namespace sot::graph
