#include "translator/numpy/numpy_errstate.hpp"
#include "core/loaded_module.hpp"
#include "graph/rules/fp_state.hpp"

#include <string>

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

// Python's warnings filters turn a RuntimeWarning (NumPy's floating-point warnings, ComplexWarning
// among them) into an exception (`-W error`, `simplefilter("error")`): the first filter for
// RuntimeWarning or a subclass of it whose action is "error", before one that takes every
// RuntimeWarning with another action (a filter with a message or module pattern is taken as
// possibly matching).
bool warnings_raise() {
  PyObject* warnings = PyImport_GetModule(py::str("warnings").ptr());  // new reference or null
  if (warnings == nullptr) {
    PyErr_Clear();
    return false;
  }
  const py::object module = py::reinterpret_steal<py::object>(warnings);
  const py::object filters = module.attr("filters");
  if (!PyList_Check(filters.ptr())) {
    return false;
  }
  PyObject* runtime = PyExc_RuntimeWarning;
  for (const py::handle f : filters) {
    if (!PyTuple_Check(f.ptr()) || PyTuple_GET_SIZE(f.ptr()) < 5) {
      return true;  // (not a filter this reads: taken as raising)
    }
    PyObject* category = PyTuple_GET_ITEM(f.ptr(), 2);
    const int takes_all = PyObject_IsSubclass(runtime, category);
    const int takes_some = takes_all == 1 ? 1 : PyObject_IsSubclass(category, runtime);
    if (takes_all < 0 || takes_some < 0) {
      PyErr_Clear();
      return true;
    }
    if (takes_some == 0) {
      continue;
    }
    if (PyUnicode_Check(PyTuple_GET_ITEM(f.ptr(), 0)) &&
        PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(f.ptr(), 0), "error") == 0) {
      return true;
    }
    const bool unconditional = PyTuple_GET_ITEM(f.ptr(), 1) == Py_None &&
                               PyTuple_GET_ITEM(f.ptr(), 3) == Py_None &&
                               PyLong_Check(PyTuple_GET_ITEM(f.ptr(), 4)) &&
                               PyLong_AsLong(PyTuple_GET_ITEM(f.ptr(), 4)) == 0;
    if (takes_all == 1 && unconditional) {
      return false;
    }
  }
  return false;
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
