// The leading fields of NumPy's array object (PyArrayObject_fields), the same in NumPy 1.x and
// 2.x, read without NumPy's C API (the extension builds without NumPy's headers), and the flags
// the executors test.
#pragma once

#include <Python.h>

namespace sot {

struct ArrayFields {
  PyObject_HEAD char* data;
  int nd;
  Py_ssize_t* dimensions;
  Py_ssize_t* strides;
  PyObject* base;
  PyObject* descr;
  int flags;
  PyObject* weakreflist;
};

constexpr int kArrayCContiguous = 0x0001;
constexpr int kArrayOwnData = 0x0004;
constexpr int kArrayAligned = 0x0100;
constexpr int kArrayWriteable = 0x0400;

// `a` must be an ndarray.
inline const ArrayFields* array_fields(PyObject* a) {
  return reinterpret_cast<const ArrayFields*>(a);
}

}  // namespace sot
