// A Python error kept (kept_error.hpp).
#include "core/kept_error.hpp"

namespace sot {

void KeptError::keep() {
  clear();
  PyErr_Fetch(&type_, &value_, &trace_);
  Py_XINCREF(type_), Py_XINCREF(value_), Py_XINCREF(trace_);
  PyErr_Restore(type_, value_, trace_);
}

void KeptError::restore(const char* otherwise) const {
  if (type_ == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, otherwise);
    return;
  }
  Py_XINCREF(type_), Py_XINCREF(value_), Py_XINCREF(trace_);
  PyErr_Restore(type_, value_, trace_);
}

void KeptError::clear() {
  Py_CLEAR(type_);
  Py_CLEAR(value_);
  Py_CLEAR(trace_);
}

}  // namespace sot
