// The Python type of device arrays (device_array.hpp): sot._sot.graph.DeviceArray. What the
// frames of a run hold for the arrays that live on the device. Basic slicing makes views on the
// device, and assigning one device array into a basic slice of another copies on the device;
// everything else reads the array's host form (copied out once, and kept coherent by the run's
// residency), so a DeviceArray behaves as the NumPy array it stands for.
#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <vector>

#include "core/device_arrays.hpp"
#include "core/loaded_module.hpp"
#include "graph/backends/cuda/device_array.hpp"
#include "graph/backends/cuda/device_copy.hpp"
#include "graph/backends/cuda/residency.hpp"
#include "graph/runtime/cuda/simulated_device.hpp"

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

PyTypeObject* array_type() {
  static PyObject* const type = py::object(loaded_module("numpy").attr("ndarray")).release().ptr();
  return reinterpret_cast<PyTypeObject*>(type);
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

// The view `v[key]` for a basic key of ints, slices, None and at most one Ellipsis leaving at
// least one axis (with `element`, an element too, but for an Ellipsis: NumPy gives a 0-d array),
// else nullopt.
std::optional<DeviceValue> basic_view(const DeviceValue& v, PyObject* key, bool element = false) {
  std::vector<PyObject*> items;
  if (PyTuple_CheckExact(key)) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(key); ++i) {
      items.push_back(PyTuple_GET_ITEM(key, i));
    }
  } else {
    items.push_back(key);
  }
  // (None adds an axis of one item and takes none of v's; one Ellipsis stands for the axes the
  // other items leave)
  std::size_t taking = 0;
  std::size_t ellipses = 0;
  for (PyObject* item : items) {
    ellipses += item == Py_Ellipsis ? 1 : 0;
    taking += item != Py_None && item != Py_Ellipsis ? 1 : 0;
  }
  if (taking > v.shape.size() || ellipses > 1) {
    return std::nullopt;
  }
  DeviceValue out;
  out.block = v.block;
  out.offset = v.offset;
  std::size_t axis = 0;
  auto keep = [&](std::size_t n) {
    for (std::size_t i = 0; i < n; ++i, ++axis) {
      out.shape.push_back(v.shape[axis]);
      out.strides.push_back(v.strides[axis]);
    }
  };
  for (PyObject* item : items) {
    if (item == Py_None) {
      out.shape.push_back(1);
      out.strides.push_back(0);
    } else if (item == Py_Ellipsis) {
      keep(v.shape.size() - taking);
    } else if (!apply_item(item, v, axis++, &out)) {
      return std::nullopt;
    }
  }
  keep(v.shape.size() - axis);
  if (out.shape.empty() && (!element || ellipses > 0)) {
    return std::nullopt;  // (an element: NumPy gives a scalar; with an Ellipsis, a 0-d array)
  }
  return out;
}

// In a run, `v[key]` where the key picks one element, as the NumPy scalar NumPy's `x[i]` gives;
// nullopt where the host should answer as for any other key. The run stays optimistic (its flags
// read in batches, as for any scalar read).
// - Of a block only the device holds: its bytes copied out, not the array (`u[0] = u[-2]` each
//   step of a loop copied the whole array out twice).
// - Of a block whose host copy is current (a caller's array no kernel wrote): read there, nothing
//   copied out or waited for (a read all the same: the step is not replayed).
std::optional<py::object> run_element(Residency& r, const DeviceValue& v, const py::object& key) {
  const std::optional<DeviceValue> e = basic_view(v, key.ptr(), true);
  if (!e || !e->shape.empty()) {
    return std::nullopt;
  }
  const DeviceBlock& b = *e->block;
  if (!b.host_valid && b.device_valid && b.address != 0) {
    return read_element(r, b.address + static_cast<std::uint64_t>(e->offset), e->dtype());
  }
  if (!b.host_valid || b.origin == nullptr) {
    return std::nullopt;
  }
  r.did_host_work();
  PyObject* h = host_array(v);
  if (h == nullptr) {
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(h)[key];
}

py::object getitem(const py::object& self, const py::object& key) {
  const DeviceValue& v = *py::cast<DeviceValue*>(self);
  if (auto view = basic_view(v, key.ptr())) {
    return wrap(std::make_shared<DeviceValue>(std::move(*view)));
  }
  Residency* r = current_residency();
  if (r != nullptr) {
    if (std::optional<py::object> item = run_element(*r, v, key)) {
      return *item;
    }
  }
  if (r != nullptr && !r->flush()) {  // (the key may be a host view of an array the device wrote)
    throw py::error_already_set();
  }
  py::object item = host_of(self)[key];
  if (r == nullptr && PyObject_TypeCheck(item.ptr(), array_type()) != 0) {
    item = item.attr("copy")();  // (outside a run nothing keeps a view of the host copy coherent)
  }
  return item;
}

// The host copy of `self` changed (outside a run: the device's is stale now; in a run the
// residency hears of it as of a host step's change).
void host_changed(const py::object& self) {
  if (Residency* r = current_residency()) {
    r->after_host_step(true);
    return;
  }
  DeviceBlock& b = *py::cast<DeviceValue*>(self)->block;
  b.device_valid = false;
  b.host_valid = true;
}

void setitem(const py::object& self, const py::object& key, const py::object& value) {
  const DeviceValue& v = *py::cast<DeviceValue*>(self);
  Residency* r = current_residency();
  const DeviceValue* src = device_value_of(value.ptr());
  if (r != nullptr && src != nullptr && writeable(*v.block)) {
    if (auto view = basic_view(v, key.ptr())) {
      std::string why;
      if (!r->before_write(v.block)) {
        throw py::error_already_set();
      }
      if (copy_on_device(*r, *view, *src, &why)) {
        return;
      }
    }
  }
  // A number into a float array's basic slice or element: filled on the device (a boundary value
  // set each step: `u[0] = 1.0`).
  const std::optional<double> number = r != nullptr ? fill_number(value.ptr(), true) : std::nullopt;
  if (number && is_float64_or_32(v.dtype()) && writeable(*v.block)) {
    if (auto view = basic_view(v, key.ptr(), true)) {
      std::string why;
      if (!r->before_write(v.block)) {
        throw py::error_already_set();
      }
      if (fill_on_device(*r, *view, *number, &why)) {
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
  host_changed(self);
  if (status < 0) {
    throw py::error_already_set();
  }
}

// A NumPy array (anything np.ascontiguousarray takes) copied to the cuda backend's device (the
// simulated one under cuda_simulate).
py::object to_device(const py::object& a) {
  std::string why;
  DeviceApi* device = cuda_simulate().load() ? &simulated_device() : cuda_device(&why);
  if (device == nullptr) {
    throw std::runtime_error("sot.to_device: no CUDA device: " + why);
  }
  const py::object host = loaded_module("numpy").attr("ascontiguousarray")(a);
  const py::object dtype = host.attr("dtype");
  const auto t = dtype_from_name(dtype.attr("name").cast<std::string>());
  if (!t || !dtype.attr("isnative").cast<bool>()) {
    throw py::type_error("sot.to_device: a dtype the cuda backend does not know: " +
                         py::repr(dtype).cast<std::string>());
  }
  auto block = upload_copy(*device, device_pool(*device), host.ptr(), *t, &why);
  if (!block) {
    throw std::runtime_error("sot.to_device: " + why);
  }
  return wrap(whole_value(std::move(block)));
}

// DLPack's export (the "dltensor" capsule): the tensor holds the DeviceArray, given back by its
// deleter, which the capsule's destructor calls while no consumer has taken it.
struct Exported {
  core::dlpack::DLManagedTensor managed{};
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;  // items
  PyObject* array = nullptr;          // (a strong reference)
};

void delete_exported(core::dlpack::DLManagedTensor* m) {
  auto* e = static_cast<Exported*>(m->manager_ctx);
  const PyGILState_STATE gil = PyGILState_Ensure();
  Py_XDECREF(e->array);
  delete e;  // NOLINT(cppcoreguidelines-owning-memory): made by dlpack_capsule
  PyGILState_Release(gil);
}

void capsule_destructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, "dltensor") != 0) {  // (not consumed)
    auto* m =
        static_cast<core::dlpack::DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    m->deleter(m);
  }
}

std::uint8_t dlpack_code(DType t) {
  switch (kind(t)) {
    case 'b':
      return core::dlpack::kDLBool;
    case 'i':
      return core::dlpack::kDLInt;
    case 'u':
      return core::dlpack::kDLUInt;
    case 'c':
      return core::dlpack::kDLComplex;
    default:
      return core::dlpack::kDLFloat;
  }
}

py::object dlpack_capsule(const py::object& self, const py::object& stream) {
  (void)stream;  // (one stream: the launches before are ordered before the consumer's)
  const DeviceValue& v = *py::cast<DeviceValue*>(self);
  std::string why;
  if (!make_device_current(*v.block, &why)) {
    throw std::runtime_error("the array could not be made current on the device: " + why);
  }
  auto* e = new Exported();  // NOLINT(cppcoreguidelines-owning-memory): freed by its deleter
  e->shape = v.shape;
  for (const std::int64_t s : v.strides) {
    e->strides.push_back(s / itemsize(v.dtype()));
  }
  e->array = self.inc_ref().ptr();
  core::dlpack::DLTensor& t = e->managed.dl_tensor;
  // NOLINTNEXTLINE(performance-no-int-to-ptr): a device address, as DLPack carries it
  t.data = reinterpret_cast<void*>(v.block->address + static_cast<std::uint64_t>(v.offset));
  t.device = {core::dlpack::kDLCUDA, 0};
  t.ndim = static_cast<std::int32_t>(v.shape.size());
  t.dtype = {dlpack_code(v.dtype()), static_cast<std::uint8_t>(itemsize(v.dtype()) * 8), 1};
  t.shape = e->shape.data();
  t.strides = e->strides.data();
  t.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = delete_exported;
  PyObject* capsule = PyCapsule_New(&e->managed, "dltensor", capsule_destructor);
  if (capsule == nullptr) {
    delete_exported(&e->managed);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(capsule);
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
          "__dlpack__",
          [](const py::object& self, const py::object& stream, const py::kwargs&) {
            return dlpack_capsule(self, stream);  // (max_version etc.: the 0.x capsule answers)
          },
          py::arg("stream") = py::none(),
          "The array as a DLPack capsule (no copy: the consumer shares the device memory).")
      .def("__dlpack_device__", [](const DeviceValue&) { return py::make_tuple(2, 0); })
      .def(
          "get", [](const py::object& self) { return host_of(self).attr("copy")(); },
          "A new NumPy array holding the values.")
      .def(
          "__array__",
          [](const py::object& self, const py::object& dtype, const py::object& copy) {
            py::object h = host_of(self);
            const bool in_run = current_residency() != nullptr;
            if (!in_run && !copy.is_none() && !copy.cast<bool>()) {
              throw py::value_error("a DeviceArray's values are on the device: a copy is needed");
            }
            if (!dtype.is_none()) {
              h = h.attr("astype")(dtype, py::arg("copy") = false);
            }
            // (outside a run, a copy: nothing would keep the host copy and the device's coherent)
            return !in_run || (!copy.is_none() && copy.cast<bool>()) ? h.attr("copy")() : h;
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none(),
          "The values as a NumPy array (outside a run, a copy)")
      .def(
          "_host_form", [](const py::object& self) { return host_of(self); },
          "The host copy itself (made current; after writing it, call _host_changed).")
      .def("_host_changed", &host_changed,
           "The host copy (_host_form) was written: the device's copy is stale.")
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
  m.def("to_device", &to_device, py::arg("a"),
        "A copy of array `a` on the cuda backend's device (the simulated one under "
        "cuda_simulate()), as a DeviceArray.");
}

}  // namespace sot::graph
