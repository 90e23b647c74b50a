// Small helpers shared by the executor's files (not part of its interface).
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "translator/numpy/array_state.hpp"  // str_of
#include "translator/values/variable.hpp"

namespace sot::translator {

// Whether the instance `o` has `name` in its own __dict__ (without running user code).
// A staticmethod's function or a classmethod bound to the class `cls`, read as cls.name
// (instances.cpp); nullptr for other descriptors.
VarPtr class_descriptor_value(const VarPtr& cls, PyObject* descr, const pybind11::object& name);

inline bool instance_dict_has(PyObject* o, const pybind11::object& name) {
  PyObject* dict = PyObject_GenericGetDict(o, nullptr);  // new reference, or null
  const bool has = dict != nullptr && PyDict_Contains(dict, name.ptr()) == 1;
  Py_XDECREF(dict);
  PyErr_Clear();
  return has;
}

// The items of the dict built inside `other` put into the dict built inside `d`, in order (a key
// already there keeps its place and takes the new value). (handlers_build.cpp)
void dict_update_items(const VarPtr& d, const VarPtr& other);

// Records an update of the set built inside `set` with `keys` (in that order), or with the
// frozenset constant `frozen`: generated code rebuilds the set by the same updates, so that its
// table, and so its iteration order, is the one the frame's set has. (handlers_build.cpp)
void set_update(const VarPtr& set, const std::vector<pybind11::object>& keys,
                const pybind11::object& frozen);

}  // namespace sot::translator
