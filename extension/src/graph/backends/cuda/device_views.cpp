#include "graph/backends/cuda/device_views.hpp"

#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/loaded_module.hpp"
#include "graph/backends/cuda/device_array.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

enum class View : std::uint8_t { kReshape, kTranspose, kRavel };

struct Named {
  PyObject* fn;
  View view;
};

// The callables, by identity: NumPy's functions and the ndarray methods.
const std::vector<Named>& views() {
  static const std::vector<Named>* const table = [] {
    auto* t = new std::vector<Named>();
    const py::module_ numpy = loaded_module("numpy");
    const py::object ndarray = numpy.attr("ndarray");
    const std::pair<const char*, View> names[] = {
        {"reshape", View::kReshape}, {"transpose", View::kTranspose}, {"ravel", View::kRavel}};
    for (const auto& [name, view] : names) {
      for (const py::object& owner : {py::object(numpy), ndarray}) {
        t->push_back(Named{py::object(owner.attr(name)).release().ptr(), view});
      }
    }
    return t;
  }();
  return *table;
}

std::optional<View> view_of(PyObject* fn) {
  for (const Named& n : views()) {
    if (n.fn == fn) {
      return n.view;
    }
  }
  return std::nullopt;
}

// The ints of `args` (one tuple or list of them, or the ints spread out, as x.reshape(2, 3)
// takes them); nullopt for anything else (NumPy's integer scalars, floats: the host's).
std::optional<std::vector<std::int64_t>> ints_of(PyObject* const* args, std::size_t n) {
  PyObject* const* items = args;
  if (n == 1 && (PyTuple_CheckExact(args[0]) || PyList_CheckExact(args[0]))) {
    items = PySequence_Fast_ITEMS(args[0]);
    n = static_cast<std::size_t>(PySequence_Fast_GET_SIZE(args[0]));
  }
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < n; ++i) {
    if (!PyLong_CheckExact(items[i])) {
      return std::nullopt;
    }
    const long long v = PyLong_AsLongLong(items[i]);
    if (v == -1 && PyErr_Occurred() != nullptr) {
      PyErr_Clear();
      return std::nullopt;
    }
    out.push_back(v);
  }
  return out;
}

// x's elements in `shape` (one -1 the size the rest leaves), or nullopt where NumPy raises.
std::optional<std::vector<std::int64_t>> reshaped(const DeviceValue& x,
                                                  std::vector<std::int64_t> shape) {
  std::int64_t known = 1;
  std::size_t unknown = shape.size();
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1 && unknown == shape.size()) {
      unknown = d;
    } else if (shape[d] < 0) {
      return std::nullopt;
    } else {
      known *= shape[d];
    }
  }
  if (unknown < shape.size()) {
    if (known == 0 || x.size() % known != 0) {
      return std::nullopt;
    }
    shape[unknown] = x.size() / known;
  } else if (known != x.size()) {
    return std::nullopt;
  }
  return shape;
}

// x's axes in the order `axes` gives (none: reversed), or nullopt where NumPy raises.
std::optional<std::vector<std::size_t>> permutation(const DeviceValue& x, PyObject* const* args,
                                                    std::size_t n) {
  const auto rank = static_cast<std::int64_t>(x.shape.size());
  std::vector<std::size_t> order;
  if (n == 0 || (n == 1 && args[0] == Py_None)) {
    for (std::int64_t d = rank - 1; d >= 0; --d) {
      order.push_back(static_cast<std::size_t>(d));
    }
    return order;
  }
  const std::optional<std::vector<std::int64_t>> axes = ints_of(args, n);
  if (!axes || static_cast<std::int64_t>(axes->size()) != rank) {
    return std::nullopt;
  }
  std::vector<bool> seen(x.shape.size(), false);
  for (const std::int64_t a : *axes) {
    if (a < -rank || a >= rank) {
      return std::nullopt;
    }
    const auto d = static_cast<std::size_t>(a < 0 ? a + rank : a);
    if (seen[d]) {
      return std::nullopt;
    }
    seen[d] = true;
    order.push_back(d);
  }
  return order;
}

// The view of x that `view` makes with the arguments after x, or nullptr.
std::shared_ptr<DeviceValue> view_of(const DeviceValue& x, View view, PyObject* const* rest,
                                     std::size_t n) {
  auto out = std::make_shared<DeviceValue>();
  out->block = x.block;
  out->offset = x.offset;
  if (view == View::kTranspose) {
    const std::optional<std::vector<std::size_t>> order = permutation(x, rest, n);
    if (!order) {
      return nullptr;
    }
    for (const std::size_t d : *order) {
      out->shape.push_back(x.shape[d]);
      out->strides.push_back(x.strides[d]);
    }
    return out;
  }
  if (!x.c_contiguous()) {
    return nullptr;
  }
  std::optional<std::vector<std::int64_t>> shape;
  if (view == View::kRavel) {
    if (n == 0) {
      shape = std::vector<std::int64_t>{x.size()};
    }
  } else {
    const std::optional<std::vector<std::int64_t>> given = n > 0 ? ints_of(rest, n) : std::nullopt;
    shape = given ? reshaped(x, *given) : std::nullopt;
  }
  if (!shape) {
    return nullptr;
  }
  out->shape = std::move(*shape);
  out->strides = c_strides(out->shape, itemsize(x.dtype()));
  return out;
}

}  // namespace

PyObject* run_device_view(Residency& /*r*/, PyObject* fn, PyObject* const* args, std::size_t nargs,
                          PyObject* kwnames) {
  const std::optional<View> view = view_of(fn);
  if (!view || nargs == 0 || kwnames != nullptr) {
    return nullptr;
  }
  const DeviceValue* x = device_value_of(args[0]);
  if (x == nullptr) {
    return nullptr;
  }
  std::shared_ptr<DeviceValue> made = view_of(*x, *view, args + 1, nargs - 1);
  return made ? wrap_new(made) : nullptr;
}

}  // namespace sot::graph
