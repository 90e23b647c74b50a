#include "core/numpy_empty.hpp"

#include <pybind11/pybind11.h>

#include <cstddef>

#include "core/loaded_module.hpp"

namespace py = pybind11;

namespace sot {

namespace {

// PyArray_Empty(nd, dims, descr, fortran): steals its reference to descr.
using EmptyFn = PyObject* (*)(int, const Py_ssize_t*, PyObject*, int);

// NumPy's PyArray_Empty, or null where its table cannot be read (numpy.empty is called then).
EmptyFn empty_fn() {
  static const EmptyFn fn = []() -> EmptyFn {
    constexpr std::size_t kEntry = 184;
    for (const char* module : {"numpy._core._multiarray_umath", "numpy.core._multiarray_umath"}) {
      try {
        const py::object capsule = loaded_module(module).attr("_ARRAY_API");
        void* table = PyCapsule_GetPointer(capsule.ptr(), nullptr);
        if (table != nullptr) {
          return reinterpret_cast<EmptyFn>(static_cast<void**>(table)[kEntry]);
        }
        PyErr_Clear();
      } catch (py::error_already_set&) {
        // (NumPy 1.x has no numpy._core: the next name)
      }
    }
    return nullptr;
  }();
  return fn;
}

}  // namespace

PyObject* numpy_empty(const std::vector<std::int64_t>& dims, PyObject* descr) {
  static_assert(sizeof(std::int64_t) == sizeof(Py_ssize_t), "NumPy's npy_intp is 64 bits here");
  if (const EmptyFn fn = empty_fn()) {
    Py_INCREF(descr);  // (taken by the call)
    return fn(static_cast<int>(dims.size()), reinterpret_cast<const Py_ssize_t*>(dims.data()),
              descr, 0);
  }
  try {
    py::tuple shape(dims.size());
    for (std::size_t d = 0; d < dims.size(); ++d) {
      shape[d] = py::int_(dims[d]);
    }
    return loaded_module("numpy").attr("empty")(shape, py::handle(descr)).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  }
}

}  // namespace sot
