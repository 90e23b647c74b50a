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

PyObject* errors_raise(PyObject* /*self*/, PyObject* /*unused*/) {
  try {
    return PyBool_FromLong(raises_now() ? 1 : 0);
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  }
}

PyMethodDef g_errors_raise_def = {"numpy_errors_raise", errors_raise, METH_NOARGS,
                                  "True when NumPy's error state raises or calls on some error."};

}  // namespace

py::object numpy_errors_raise_probe() {
  static PyObject* fn = PyCFunction_New(&g_errors_raise_def, nullptr);  // lives for the process
  if (fn == nullptr) {
    throw py::error_already_set();
  }
  return py::reinterpret_borrow<py::object>(fn);
}

}  // namespace sot::translator
