#include "translator/numpy/numpy_errstate.hpp"
#include "core/loaded_module.hpp"
#include "graph/rules/fp_state.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace py = pybind11;

namespace sot::translator {

namespace {

constexpr long kModeBits = 7;
constexpr long kRaise = 2;
constexpr long kCall = 3;

// The error state's mask (graph::numpy_error_mask: NumPy 2's state cached per state object)
// raises or calls for some error.
bool raises_now() {
  static const bool has_numpy = [] {
    try {
      loaded_module("numpy");
      return true;
    } catch (py::error_already_set&) {
      return false;  // no NumPy: nothing raises
    }
  }();
  if (!has_numpy) {
    return false;
  }
  const long mask = graph::numpy_error_mask();
  for (const int shift : {0, 3, 6, 9}) {
    const long mode = (mask >> shift) & kModeBits;
    if (mode == kRaise || mode == kCall) {
      return true;
    }
  }
  return false;
}

// The answer of warnings_raise (below) for the list `filters`.
bool filters_raise(PyObject* filters) {
  PyObject* runtime = PyExc_RuntimeWarning;
  const Py_ssize_t n = PyList_GET_SIZE(filters);
  for (Py_ssize_t k = 0; k < n; ++k) {
    PyObject* f = PyList_GET_ITEM(filters, k);
    if (!PyTuple_Check(f) || PyTuple_GET_SIZE(f) < 5) {
      return true;  // (not a filter this reads: taken as raising)
    }
    PyObject* category = PyTuple_GET_ITEM(f, 2);
    const int takes_all = PyObject_IsSubclass(runtime, category);
    const int takes_some = takes_all == 1 ? 1 : PyObject_IsSubclass(category, runtime);
    if (takes_all < 0 || takes_some < 0) {
      PyErr_Clear();
      return true;
    }
    if (takes_some == 0) {
      continue;
    }
    if (PyUnicode_Check(PyTuple_GET_ITEM(f, 0)) &&
        PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(f, 0), "error") == 0) {
      return true;
    }
    const bool unconditional =
        PyTuple_GET_ITEM(f, 1) == Py_None && PyTuple_GET_ITEM(f, 3) == Py_None &&
        PyLong_Check(PyTuple_GET_ITEM(f, 4)) && PyLong_AsLong(PyTuple_GET_ITEM(f, 4)) == 0;
    if (takes_all == 1 && unconditional) {
      return false;
    }
  }
  return false;
}

// The last filters read and what they gave: the same list object holding the same filter objects
// (tuples, immutable; held here, so no other object takes their addresses) gives the same answer.
// Every translated call reads this (its guard): a walk of the filters cost about 0.7 us a call.
struct FiltersSeen {
  py::object list;
  std::vector<py::object> items;
  bool raises = false;

  bool same(PyObject* filters) const {
    if (list.ptr() != filters ||
        static_cast<std::size_t>(PyList_GET_SIZE(filters)) != items.size()) {
      return false;
    }
    for (std::size_t k = 0; k < items.size(); ++k) {
      if (PyList_GET_ITEM(filters, static_cast<Py_ssize_t>(k)) != items[k].ptr()) {
        return false;
      }
    }
    return true;
  }
};

// Python's warnings filters turn a RuntimeWarning (NumPy's floating-point warnings, ComplexWarning
// among them) into an exception (`-W error`, `simplefilter("error")`): the first filter for
// RuntimeWarning or a subclass of it whose action is "error", before one that takes every
// RuntimeWarning with another action (a filter with a message or module pattern is taken as
// possibly matching).
bool warnings_raise() {
  // (these live for the process: never released after the interpreter ends)
  static PyObject* const modules_key = PyUnicode_InternFromString("warnings");
  static PyObject* const filters_key = PyUnicode_InternFromString("filters");
  static auto* const seen = new FiltersSeen();
  PyObject* warnings = PyImport_GetModule(modules_key);  // new reference or null
  if (warnings == nullptr) {
    PyErr_Clear();
    return false;
  }
  const py::object module = py::reinterpret_steal<py::object>(warnings);
  PyObject* filters = PyObject_GetAttr(module.ptr(), filters_key);
  if (filters == nullptr) {
    PyErr_Clear();
    return false;
  }
  const py::object held = py::reinterpret_steal<py::object>(filters);
  if (!PyList_Check(filters)) {
    return false;
  }
  if (seen->same(filters)) {
    return seen->raises;
  }
  const bool raises = filters_raise(filters);
  seen->list = held;
  seen->items.clear();
  for (Py_ssize_t k = 0; k < PyList_GET_SIZE(filters); ++k) {
    seen->items.push_back(py::reinterpret_borrow<py::object>(PyList_GET_ITEM(filters, k)));
  }
  seen->raises = raises;
  return raises;
}

PyObject* errors_raise(PyObject* /*self*/, PyObject* /*unused*/) {
  try {
    return PyLong_FromLong((raises_now() ? kErrstateRaises : 0) |
                           (warnings_raise() ? kWarningsRaise : 0));
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  }
}

PyMethodDef g_errors_raise_def = {
    "numpy_errors_raise", errors_raise, METH_NOARGS,
    "2 when NumPy's error state raises or calls on some error, plus 1 when a "
    "warnings filter makes a RuntimeWarning an error."};

}  // namespace

py::object numpy_errors_raise_probe() {
  static PyObject* fn = PyCFunction_New(&g_errors_raise_def, nullptr);  // lives for the process
  if (fn == nullptr) {
    throw py::error_already_set();
  }
  return py::reinterpret_borrow<py::object>(fn);
}

}  // namespace sot::translator
