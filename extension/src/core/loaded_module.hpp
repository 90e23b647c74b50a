// Modules the translator uses, read from sys.modules when already loaded: a translation runs while
// the frame being translated is the current one, and an import statement's machinery reads that
// frame's builtins, which may have no __import__ (namedtuple's generated methods run with
// __builtins__ = {}).
#pragma once

#include <pybind11/pybind11.h>

namespace sot {

inline pybind11::module_ loaded_module(const char* name) {
  PyObject* m = PyImport_GetModule(pybind11::str(name).ptr());  // new reference or nullptr
  if (m != nullptr) {
    return pybind11::reinterpret_steal<pybind11::module_>(m);
  }
  if (PyErr_Occurred() != nullptr) {
    throw pybind11::error_already_set();
  }
  return pybind11::module_::import(name);
}

}  // namespace sot
