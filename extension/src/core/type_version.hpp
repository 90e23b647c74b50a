// Type version tags across 3.11-3.13, in one place: whether a type's tag is valid, and assigning
// one. (A guard on a type's version tag holds while the type and its bases are unchanged.)
#pragma once

#include <Python.h>

#include <pybind11/pybind11.h>

namespace sot::core {

// Whether `type` has a valid version tag (3.13 no longer sets Py_TPFLAGS_VALID_VERSION_TAG: a tag
// of 0 is the invalid one).
inline bool has_valid_version_tag(PyTypeObject* type) {
#if PY_VERSION_HEX >= 0x030D0000
  return type->tp_version_tag != 0;
#else
  return type->tp_version_tag != 0 && PyType_HasFeature(type, Py_TPFLAGS_VALID_VERSION_TAG);
#endif
}

// Gives `type` a version tag if it has none (3.11: a method-cache lookup assigns one).
inline void assign_version_tag(PyTypeObject* type) {
#if PY_VERSION_HEX >= 0x030C0000
  (void)PyUnstable_Type_AssignVersionTag(type);
#else
  (void)_PyType_Lookup(type, pybind11::str("__class__").ptr());
#endif
}

}  // namespace sot::core
