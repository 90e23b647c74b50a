#include "graph/backends/cuda/device_joins.hpp"

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/loaded_module.hpp"
#include "graph/backends/cuda/device_array.hpp"
#include "graph/backends/cuda/device_copy.hpp"
#include "graph/backends/cuda/residency.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

// numpy.stack (a new axis) or numpy.concatenate (an axis the parts share), by identity.
std::optional<bool> stacks(PyObject* fn) {
  static PyObject* const stack = py::object(loaded_module("numpy").attr("stack")).release().ptr();
  static PyObject* const concatenate =
      py::object(loaded_module("numpy").attr("concatenate")).release().ptr();
  if (fn == stack) {
    return true;
  }
  if (fn == concatenate) {
    return false;
  }
  return std::nullopt;
}

// The parts (borrowed device values of one dtype, at least one) and the axis as given (a Python
// int: nullopt for anything else).
struct Join {
  std::vector<const DeviceValue*> parts;
  long axis = 0;
};

std::optional<Join> join_of(PyObject* const* args, std::size_t nargs, PyObject* kwnames) {
  const Py_ssize_t named = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
  if (nargs < 1 || nargs + static_cast<std::size_t>(named) > 2 ||
      (named == 1 && PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "axis") != 0)) {
    return std::nullopt;
  }
  PyObject* seq = args[0];
  if (!PyList_CheckExact(seq) && !PyTuple_CheckExact(seq)) {
    return std::nullopt;
  }
  Join j;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  for (Py_ssize_t i = 0; i < n; ++i) {
    const DeviceValue* v = device_value_of(PySequence_Fast_GET_ITEM(seq, i));
    if (v == nullptr || (!j.parts.empty() && v->dtype() != j.parts.front()->dtype())) {
      return std::nullopt;
    }
    j.parts.push_back(v);
  }
  PyObject* axis = nargs == 2 ? args[1] : (named == 1 ? args[nargs] : nullptr);
  if (j.parts.empty() || (axis != nullptr && !PyLong_CheckExact(axis))) {
    return std::nullopt;
  }
  if (axis != nullptr) {
    j.axis = PyLong_AsLong(axis);
    if (j.axis == -1 && PyErr_Occurred() != nullptr) {
      PyErr_Clear();
      return std::nullopt;
    }
  }
  return j;
}

// The joined shape and the axis joined along (normalized), or false where the parts do not fit
// (NumPy raises, on the host).
bool place(const Join& j, bool stack, std::vector<std::int64_t>* shape, std::size_t* axis) {
  const std::vector<std::int64_t>& first = j.parts.front()->shape;
  const auto rank = static_cast<long>(first.size()) + (stack ? 1 : 0);
  if (rank == 0 || j.axis < -rank || j.axis >= rank) {
    return false;
  }
  *axis = static_cast<std::size_t>(j.axis < 0 ? j.axis + rank : j.axis);
  *shape = first;
  if (stack) {
    shape->insert(shape->begin() + static_cast<std::ptrdiff_t>(*axis),
                  static_cast<std::int64_t>(j.parts.size()));
  } else {
    (*shape)[*axis] = 0;
  }
  for (const DeviceValue* p : j.parts) {
    if (p->shape.size() != first.size()) {
      return false;
    }
    for (std::size_t d = 0; d < first.size(); ++d) {
      if (p->shape[d] != first[d] && (stack || d != *axis)) {
        return false;
      }
    }
    if (!stack) {
      (*shape)[*axis] += p->shape[*axis];
    }
  }
  return true;
}

// A part's place in `out`: at index `at` of the new axis (stack), or from item `at` of the
// shared axis on (concatenate).
DeviceValue part_view(const DeviceValue& out, const DeviceValue& part, bool stack, std::size_t axis,
                      std::int64_t at) {
  DeviceValue v = out;
  v.whole = false;
  v.offset += at * out.strides[axis];
  if (stack) {
    v.shape.erase(v.shape.begin() + static_cast<std::ptrdiff_t>(axis));
    v.strides.erase(v.strides.begin() + static_cast<std::ptrdiff_t>(axis));
  } else {
    v.shape[axis] = part.shape[axis];
  }
  return v;
}

}  // namespace

PyObject* run_device_join(Residency& r, PyObject* fn, PyObject* const* args, std::size_t nargs,
                          PyObject* kwnames) {
  const std::optional<bool> stack = stacks(fn);
  const std::optional<Join> j = stack ? join_of(args, nargs, kwnames) : std::nullopt;
  std::vector<std::int64_t> shape;
  std::size_t axis = 0;
  if (!j || !place(*j, *stack, &shape, &axis)) {
    return nullptr;
  }
  std::string why;
  auto out = whole_value(
      std::make_shared<DeviceBlock>(r.device(), r.pool(), shape, j->parts.front()->dtype()));
  if (!make_device_current(*out->block, &why)) {
    return nullptr;
  }
  std::int64_t at = 0;
  for (const DeviceValue* p : j->parts) {
    const DeviceValue to = part_view(*out, *p, *stack, axis, at);
    at += *stack ? 1 : p->shape[axis];
    if (p->size() == 0) {
      continue;
    }
    if (!make_device_current(*p->block, &why) || !launch_copy(r, to, *p, &why)) {
      return nullptr;
    }
  }
  r.wrote(*out->block);
  return wrap_new(out);
}

}  // namespace sot::graph
