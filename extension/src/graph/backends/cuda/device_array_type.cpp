// The Python type of device arrays (device_array.hpp): sot._sot.graph.DeviceArray. What the
// frames of a run hold for the arrays that live on the device. Basic slicing makes views on the
// device, and assigning one device array into a basic slice of another copies on the device;
// everything else reads the array's host form (copied out once, and kept coherent by the run's
// residency), so a DeviceArray behaves as the NumPy array it stands for.
#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <vector>

#include "core/array_fields.hpp"
#include "core/loaded_module.hpp"
#include "graph/backends/cuda/device_array.hpp"
#include "graph/backends/cuda/residency.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

py::object host_of(const py::handle& self) {
  Residency* r = current_residency();
  PyObject* h = r != nullptr ? r->host_form(self.ptr()) : host_array(*py::cast<DeviceValue*>(self));
  if (h == nullptr) {
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(h);
}

py::object numpy_dtype(DType t) {
  return loaded_module("numpy").attr("dtype")(std::string(name(t)));
}

// One item of a basic index applied to axis `axis` of `out` (false: not a basic item, or one
// NumPy raises for; the host form then answers as NumPy does).
bool apply_item(PyObject* item, const DeviceValue& in, std::size_t axis, DeviceValue* out) {
  const std::int64_t n = in.shape[axis];
  const std::int64_t stride = in.strides[axis];
  if (PyLong_CheckExact(item)) {
    std::int64_t i = PyLong_AsLongLong(item);
    if (i == -1 && PyErr_Occurred() != nullptr) {
      PyErr_Clear();
      return false;
    }
    i = i < 0 ? i + n : i;
    if (i < 0 || i >= n) {
      return false;
    }
    out->offset += i * stride;
    return true;
  }
  if (!PySlice_Check(item)) {
    return false;
  }
  Py_ssize_t start = 0, stop = 0, step = 0;
  if (PySlice_Unpack(item, &start, &stop, &step) < 0) {
    PyErr_Clear();
    return false;
  }
  const Py_ssize_t len = PySlice_AdjustIndices(static_cast<Py_ssize_t>(n), &start, &stop, step);
  out->offset += len > 0 ? start * stride : 0;
  out->shape.push_back(len);
  out->strides.push_back(stride * step);
  return true;
}

// The view `v[key]` for a basic key of ints and slices leaving at least one axis, else nullopt.
std::optional<DeviceValue> basic_view(const DeviceValue& v, PyObject* key) {
  std::vector<PyObject*> items;
  if (PyTuple_CheckExact(key)) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(key); ++i) {
      items.push_back(PyTuple_GET_ITEM(key, i));
    }
  } else {
    items.push_back(key);
  }
  if (items.size() > v.shape.size()) {
    return std::nullopt;
  }
  DeviceValue out;
  out.block = v.block;
  out.offset = v.offset;
  for (std::size_t axis = 0; axis < v.shape.size(); ++axis) {
    if (axis >= items.size()) {
      out.shape.push_back(v.shape[axis]);
      out.strides.push_back(v.strides[axis]);
    } else if (!apply_item(items[axis], v, axis, &out)) {
      return std::nullopt;
    }
  }
  if (out.shape.empty()) {
    return std::nullopt;  // (an element: NumPy gives a scalar)
  }
  return out;
}

py::object getitem(const py::object& self, const py::object& key) {
  const DeviceValue& v = *py::cast<DeviceValue*>(self);
  if (auto view = basic_view(v, key.ptr())) {
    return wrap(std::make_shared<DeviceValue>(std::move(*view)));
  }
  Residency* r = current_residency();
  if (r != nullptr && !r->flush()) {  // (the key may be a host view of an array the device wrote)
    throw py::error_already_set();
  }
  return host_of(self)[key];
}

bool writeable(const DeviceBlock& b) {
  return b.origin == nullptr || (array_fields(b.origin)->flags & kArrayWriteable) != 0;
}

void setitem(const py::object& self, const py::object& key, const py::object& value) {
  const DeviceValue& v = *py::cast<DeviceValue*>(self);
  Residency* r = current_residency();
  const DeviceValue* src = device_value_of(value.ptr());
  if (r != nullptr && src != nullptr && writeable(*v.block)) {
    if (auto view = basic_view(v, key.ptr())) {
      std::string why;
      if (copy_on_device(*r, *view, *src, &why)) {
        return;
      }
    }
  }
  // On the host, as NumPy assigns (its casts, broadcasting and errors).
  if (r != nullptr && !r->flush()) {
    throw py::error_already_set();
  }
  const py::object target = host_of(self);
  const py::object source = device_value_of(value.ptr()) != nullptr ? host_of(value) : value;
  const int status = PyObject_SetItem(target.ptr(), key.ptr(), source.ptr());
  if (r != nullptr) {
    r->after_host_step(true);
  }
  if (status < 0) {
    throw py::error_already_set();
  }
}

py::dict cuda_array_interface(const DeviceValue& v) {
  std::string why;
  if (!make_device_current(*v.block, &why)) {
    throw std::runtime_error("the array could not be made current on the device: " + why);
  }
  py::dict d;
  d["shape"] = int_tuple(v.shape);
  d["typestr"] = numpy_dtype(v.dtype()).attr("str");
  d["data"] = py::make_tuple(py::int_(v.block->address + static_cast<std::uint64_t>(v.offset)),
                             !writeable(*v.block));
  d["strides"] = v.c_contiguous() ? py::object(py::none()) : py::object(int_tuple(v.strides));
  d["version"] = 3;
  return d;
}

}  // namespace

void bind_device_array(py::module_& m) {
  auto cls = py::class_<DeviceValue, std::shared_ptr<DeviceValue>>(
      m, "DeviceArray",
      "An array the cuda backend keeps on the device during a run (graph/backends/cuda/"
      "device_array.hpp): basic slices are views there and assignments between device arrays "
      "copies there; anything else reads its host form, as NumPy would.");
  cls.def_property_readonly("shape", [](const DeviceValue& v) { return int_tuple(v.shape); })
      .def_property_readonly("strides", [](const DeviceValue& v) { return int_tuple(v.strides); })
      .def_property_readonly("dtype", [](const DeviceValue& v) { return numpy_dtype(v.dtype()); })
      .def_property_readonly("ndim", [](const DeviceValue& v) { return v.shape.size(); })
      .def_property_readonly("size", [](const DeviceValue& v) { return v.size(); })
      .def_property_readonly("T",
                             [](const DeviceValue& v) {
                               auto t = std::make_shared<DeviceValue>();
                               t->block = v.block;
                               t->offset = v.offset;
                               t->shape.assign(v.shape.rbegin(), v.shape.rend());
                               t->strides.assign(v.strides.rbegin(), v.strides.rend());
                               return t;
                             })
      .def_property_readonly("__cuda_array_interface__", &cuda_array_interface)
      .def(
          "get", [](const py::object& self) { return host_of(self).attr("copy")(); },
          "A new NumPy array holding the values.")
      .def(
          "__array__",
          [](const py::object& self, const py::object& dtype, const py::object& copy) {
            py::object h = host_of(self);
            if (!dtype.is_none()) {
              h = h.attr("astype")(dtype, py::arg("copy") = false);
            }
            return copy.is_none() || !copy.cast<bool>() ? h : h.attr("copy")();
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def("__getitem__", &getitem)
      .def("__setitem__", &setitem)
      .def("__len__", [](const py::object& self) { return py::len(host_of(self)); })
      .def("__bool__", [](const py::object& self) { return py::bool_(host_of(self)); })
      .def("__float__", [](const py::object& self) { return py::float_(host_of(self)); })
      .def("__int__", [](const py::object& self) { return py::int_(host_of(self)); })
      .def("__index__",
           [](const py::object& self) {
             PyObject* i = PyNumber_Index(host_of(self).ptr());
             if (i == nullptr) {
               throw py::error_already_set();
             }
             return py::reinterpret_steal<py::object>(i);
           })
      .def("__repr__", [](const DeviceValue& v) {
        std::string shape;
        for (std::size_t d = 0; d < v.shape.size(); ++d) {
          shape += (d > 0 ? ", " : "") + std::to_string(v.shape[d]);
        }
        return "DeviceArray(shape=(" + shape + (v.shape.size() == 1 ? ",)" : ")") +
               ", dtype=" + std::string(name(v.dtype())) + ")";
      });
  set_device_array_type(reinterpret_cast<PyTypeObject*>(cls.ptr()));
}

}  // namespace sot::graph
