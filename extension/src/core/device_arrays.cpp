#include "core/device_arrays.hpp"

#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>

namespace sot::core {

namespace {

using namespace dlpack;  // NOLINT(google-build-using-namespace): the C structures' names

PyObject* interned(const char* s) {
  return PyUnicode_InternFromString(s);  // (callers keep it for the process)
}

bool type_has(PyObject* obj, PyObject* name) {
  return name != nullptr && _PyType_Lookup(Py_TYPE(obj), name) != nullptr;
}

bool has_interface(PyObject* obj) {
  static PyObject* const name = interned("__cuda_array_interface__");
  return type_has(obj, name);
}

bool has_dlpack(PyObject* obj) {
  static PyObject* const dlpack = interned("__dlpack__");
  static PyObject* const device = interned("__dlpack_device__");
  return type_has(obj, dlpack) && type_has(obj, device);
}

std::vector<std::int64_t> c_strides(const std::vector<std::int64_t>& shape, std::int64_t item) {
  std::vector<std::int64_t> out(shape.size(), 0);
  for (std::size_t d = shape.size(); d-- > 0;) {
    out[d] = item;
    item *= shape[d];
  }
  return out;
}

// A tuple of ints into `out` (false, no error set, when it is not one).
bool int_tuple(PyObject* t, std::vector<std::int64_t>* out) {
  if (t == nullptr || PyTuple_Check(t) == 0) {
    return false;
  }
  out->clear();
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t); ++i) {
    const long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(t, i));
    if (v == -1 && PyErr_Occurred() != nullptr) {
      PyErr_Clear();
      return false;
    }
    out->push_back(v);
  }
  return true;
}

bool read_interface(PyObject* obj, DeviceArrayView* out, std::string* why) {
  PyObject* cai = PyObject_GetAttrString(obj, "__cuda_array_interface__");
  if (cai == nullptr || PyDict_Check(cai) == 0) {
    PyErr_Clear();
    Py_XDECREF(cai);
    *why = "a device array whose __cuda_array_interface__ is not a dict";
    return false;
  }
  bool ok = false;
  PyObject* typestr = PyDict_GetItemString(cai, "typestr");  // (borrowed, as below)
  PyObject* mask = PyDict_GetItemString(cai, "mask");
  PyObject* data = PyDict_GetItemString(cai, "data");
  PyObject* strides = PyDict_GetItemString(cai, "strides");
  const char* text =
      typestr != nullptr && PyUnicode_Check(typestr) != 0 ? PyUnicode_AsUTF8(typestr) : nullptr;
  if (mask != nullptr && mask != Py_None) {
    *why = "a device array with a mask";
  } else if (text == nullptr || std::strlen(text) < 3 ||
             !int_tuple(PyDict_GetItemString(cai, "shape"), &out->shape) || data == nullptr ||
             PyTuple_Check(data) == 0 || PyTuple_GET_SIZE(data) != 2) {
    *why = "a device array whose __cuda_array_interface__ lacks shape, typestr or data";
  } else if (strides != nullptr && strides != Py_None && !int_tuple(strides, &out->strides)) {
    *why = "a device array whose strides are not a tuple of ints";
  } else {
    out->typestr = text;
    out->itemsize = std::atoi(text + 2);
    out->data = PyLong_AsUnsignedLongLongMask(PyTuple_GET_ITEM(data, 0));
    out->readonly = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1)) == 1;
    if (strides == nullptr || strides == Py_None) {
      out->strides = c_strides(out->shape, out->itemsize);
    }
    Py_INCREF(obj);
    out->keeper = obj;
    ok = PyErr_Occurred() == nullptr;
  }
  PyErr_Clear();
  Py_DECREF(cai);
  return ok;
}

// The typestr of a DLPack dtype (one lane), or empty.
std::string dlpack_typestr(const DLDataType& t) {
  static const char kinds[] = {'i', 'u', 'f', '?', '?', 'c', 'b'};  // by DLPack's type code
  if (t.lanes != 1 || t.code >= sizeof kinds || kinds[t.code] == '?' || t.bits % 8 != 0) {
    return {};
  }
  const int bytes = t.bits / 8;
  return std::string(bytes == 1 ? "|" : "<") + kinds[t.code] + std::to_string(bytes);
}

bool read_dlpack(PyObject* obj, DeviceArrayView* out, std::string* why) {
  PyObject* where = PyObject_CallMethod(obj, "__dlpack_device__", nullptr);
  std::vector<std::int64_t> device;
  const bool described = int_tuple(where, &device) && device.size() == 2;
  Py_XDECREF(where);
  PyErr_Clear();
  if (!described || (device[0] != kDLCUDA && device[0] != kDLCUDAManaged)) {
    *why = "a DLPack array that is not on a CUDA device";
    return false;
  }
  PyObject* capsule = PyObject_CallMethod(obj, "__dlpack__", nullptr);
  auto* managed = capsule != nullptr
                      ? static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"))
                      : nullptr;
  if (managed == nullptr) {
    PyErr_Clear();
    Py_XDECREF(capsule);
    *why = "a DLPack array whose __dlpack__ gave no tensor";
    return false;
  }
  const DLTensor& t = managed->dl_tensor;
  out->typestr = dlpack_typestr(t.dtype);
  out->itemsize = t.dtype.bits / 8;
  out->shape.assign(t.shape, t.shape + t.ndim);
  if (t.strides == nullptr) {
    out->strides = c_strides(out->shape, out->itemsize);
  } else {
    out->strides.assign(t.strides, t.strides + t.ndim);
    for (std::int64_t& s : out->strides) {
      s *= out->itemsize;
    }
  }
  out->data = reinterpret_cast<std::uint64_t>(t.data) + t.byte_offset;
  out->device = static_cast<int>(t.device.device_id);
  out->keeper = capsule;  // (not consumed: its destructor gives the tensor back)
  if (out->typestr.empty()) {
    *why = "a DLPack array of a dtype with lanes or no NumPy equivalent";
    return false;
  }
  return true;
}

}  // namespace

namespace {

// Whether values of `type` follow NumPy's rules (a graph of them computes what their own operators
// would): not PyTorch's tensors nor JAX's arrays, whose operators promote types their own way (an
// int tensor / 2 is float32 there). Asked once per type.
// Whether the module of type `t` is not one of PyTorch's or JAX's.
bool numpy_like_module(PyTypeObject* t) {
  PyObject* module = PyObject_GetAttrString(reinterpret_cast<PyObject*>(t), "__module__");
  const char* name =
      module != nullptr && PyUnicode_Check(module) != 0 ? PyUnicode_AsUTF8(module) : nullptr;
  bool numpy_like = true;
  if (name != nullptr) {
    const std::string m(name);
    for (const char* other : {"torch", "jax", "jaxlib"}) {
      const std::string prefix(other);
      numpy_like = numpy_like && m != prefix && m.rfind(prefix + ".", 0) != 0;
    }
  }
  Py_XDECREF(module);
  PyErr_Clear();
  return numpy_like;
}

bool follows_numpy(PyObject* obj) {
  static auto* seen = new std::unordered_map<PyTypeObject*, bool>();  // (types kept: Py_INCREF)
  PyTypeObject* const type = Py_TYPE(obj);
  const auto found = seen->find(type);
  if (found != seen->end()) {
    return found->second;
  }
  bool numpy_like = numpy_like_module(type);
  for (PyTypeObject* t = type->tp_base; numpy_like && t != nullptr; t = t->tp_base) {
    numpy_like = numpy_like_module(t);
  }
  Py_INCREF(reinterpret_cast<PyObject*>(type));
  seen->emplace(type, numpy_like);
  return numpy_like;
}

}  // namespace

bool may_be_device_array(PyObject* obj) {
  return std::strncmp(Py_TYPE(obj)->tp_name, "numpy.", 6) != 0 &&
         (has_interface(obj) || has_dlpack(obj)) && follows_numpy(obj);
}

bool read_device_array(PyObject* obj, DeviceArrayView* out, std::string* why) {
  if (!may_be_device_array(obj)) {
    *why = "not a device array";
    return false;
  }
  if (!(has_interface(obj) ? read_interface(obj, out, why) : read_dlpack(obj, out, why))) {
    return false;
  }
  if (out->itemsize <= 0 || out->strides.size() != out->shape.size()) {
    *why = "a device array whose strides do not match its shape";
    return false;
  }
  for (const std::int64_t s : out->strides) {
    if (s % out->itemsize != 0) {
      *why = "a device array whose strides are not whole items";
      return false;
    }
  }
  return true;
}

}  // namespace sot::core
