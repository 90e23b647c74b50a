// A new uninitialised C-order array from C++, through NumPy's own PyArray_Empty (entry 184 of its
// array C API table, the capsule _ARRAY_API, the same in NumPy 1.x and 2.x): numpy.empty called
// from C parses its arguments and converts its shape and dtype first, the larger part of a small
// kernel run's allocation. The extension builds without NumPy's headers, as array_fields.hpp.
#pragma once

#include <Python.h>

#include <cstdint>
#include <vector>

namespace sot {

// A new reference to an array of `dims` of dtype `descr` (a numpy.dtype), or null with an error
// set.
PyObject* numpy_empty(const std::vector<std::int64_t>& dims, PyObject* descr);

}  // namespace sot
