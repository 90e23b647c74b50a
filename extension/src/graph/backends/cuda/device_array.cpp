#include "graph/backends/cuda/device_array.hpp"

#include <pybind11/stl.h>

#include <cstring>
#include <optional>
#include <utility>

#include "core/array_fields.hpp"
#include "core/device_arrays.hpp"
#include "core/loaded_module.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

std::int64_t product(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (const std::int64_t d : shape) {
    n *= d;
  }
  return n;
}

PyTypeObject* g_type = nullptr;  // DeviceArray (set by bind_device_array)

// The blocks made so far (the GIL held: DeviceBlocks are made and dropped under it).
std::uint64_t& block_serials() {
  static std::uint64_t count = 0;
  return count;
}

}  // namespace

DeviceBlock::DeviceBlock(DeviceApi& d, std::shared_ptr<DevicePool> p,
                         std::vector<std::int64_t> whole_shape, DType t)
    : device(d),
      pool(std::move(p)),
      shape(std::move(whole_shape)),
      dtype(t),
      serial(block_serials()++) {
  bytes = static_cast<std::size_t>(product(shape) * itemsize(dtype));
}

std::uint64_t next_block_serial() {
  return block_serials();
}

DeviceBlock::~DeviceBlock() {
  // A block the device wrote whose origin outlives it (a host view of the origin is held): the
  // origin shows what the device wrote.
  if (origin != nullptr && !host_valid && device_valid && Py_REFCNT(origin) > 1 && bytes > 0) {
    std::string why;
    if (device.copy_to_host(array_fields(origin)->data, address, bytes, &why)) {
      ++transfer_counts().arrays_out;
      transfer_counts().bytes_out += bytes;
    }
  }
  if (address != 0 && owner == nullptr) {
    pool->give(address, bytes);
  }
  Py_XDECREF(origin);
  Py_XDECREF(owner);
}

std::int64_t DeviceValue::size() const {
  return product(shape);
}

bool DeviceValue::c_contiguous() const {
  std::int64_t expected = itemsize(dtype());
  for (std::size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1 && strides[d] != expected) {
      return false;
    }
    expected *= shape[d];
  }
  return true;
}

py::tuple int_tuple(const std::vector<std::int64_t>& v) {
  py::tuple t(v.size());
  for (std::size_t d = 0; d < v.size(); ++d) {
    t[d] = py::int_(static_cast<long long>(v[d]));
  }
  return t;
}

std::vector<std::int64_t> c_strides(const std::vector<std::int64_t>& shape, std::int64_t itemsize) {
  std::vector<std::int64_t> strides(shape.size(), 0);
  std::int64_t s = itemsize;
  for (std::size_t d = shape.size(); d-- > 0;) {
    strides[d] = s;
    s *= shape[d];
  }
  return strides;
}

std::shared_ptr<DeviceValue> whole_value(std::shared_ptr<DeviceBlock> block) {
  auto v = std::make_shared<DeviceValue>();
  v->shape = block->shape;
  v->strides = c_strides(block->shape, itemsize(block->dtype));
  v->whole = true;
  v->block = std::move(block);
  return v;
}

TransferCounts& transfer_counts() {
  static TransferCounts counts;
  return counts;
}

bool writeable(const DeviceBlock& b) {
  return !b.readonly &&
         (b.origin == nullptr || (array_fields(b.origin)->flags & kArrayWriteable) != 0);
}

bool make_device_current(DeviceBlock& block, std::string* why) {
  if (block.device_valid) {
    return true;
  }
  // A host array's first copy in goes on the device's copy stream where it has one: into memory
  // no queued kernel may still use, so that it runs beside the kernels queued before it.
  const bool aside = block.address == 0 && block.origin != nullptr && block.bytes > 0 &&
                     block.device.copies_aside();
  if (block.address == 0) {
    block.address =
        aside ? block.pool->take_for_copy(block.bytes, why) : block.pool->take(block.bytes, why);
    if (block.address == 0) {
      *why = "device memory: " + *why;
      return false;
    }
  }
  if (block.origin != nullptr && block.bytes > 0) {
    const void* data = array_fields(block.origin)->data;
    if (!(aside ? block.device.copy_to_device_aside(block.address, data, block.bytes, why)
                : block.device.copy_to_device(block.address, data, block.bytes, why))) {
      return false;
    }
    ++transfer_counts().arrays_in;
    transfer_counts().bytes_in += block.bytes;
  }
  block.device_valid = true;
  return true;
}

bool make_host_current(DeviceBlock& block) {
  if (block.host_valid) {
    return true;
  }
  if (block.origin == nullptr) {
    try {
      const py::module_ numpy = loaded_module("numpy");
      py::object made = numpy.attr("empty")(int_tuple(block.shape), std::string(name(block.dtype)));
      if (block.readonly) {
        made.attr("flags").attr("writeable") = false;  // (as the caller's memory is)
      }
      block.origin = made.release().ptr();
    } catch (py::error_already_set& e) {
      e.restore();
      return false;
    }
  }
  std::string why;
  if (block.bytes > 0 && block.device_valid) {
    if (!block.device.copy_to_host(array_fields(block.origin)->data, block.address, block.bytes,
                                   &why)) {
      PyErr_SetString(PyExc_RuntimeError, ("the device's copy to the host failed: " + why).c_str());
      return false;
    }
    ++transfer_counts().arrays_out;
    transfer_counts().bytes_out += block.bytes;
  }
  block.host_valid = true;
  return true;
}

std::shared_ptr<DeviceBlock> upload_copy(DeviceApi& device, const std::shared_ptr<DevicePool>& pool,
                                         PyObject* a, DType dtype, std::string* why) {
  const ArrayFields* f = array_fields(a);
  auto block = std::make_shared<DeviceBlock>(
      device, pool, std::vector<std::int64_t>(f->dimensions, f->dimensions + f->nd), dtype);
  if (!make_device_current(*block, why)) {
    return nullptr;
  }
  if (block->bytes > 0) {
    if (!device.copy_to_device(block->address, f->data, block->bytes, why)) {
      return nullptr;
    }
    ++transfer_counts().arrays_in;
    transfer_counts().bytes_in += block->bytes;
  }
  return block;
}

std::shared_ptr<DeviceValue> external_value(DeviceApi& device, std::shared_ptr<DevicePool> pool,
                                            PyObject* obj, std::string* why) {
  core::DeviceArrayView view;
  if (!core::read_device_array(obj, &view, why)) {
    return nullptr;
  }
  std::optional<DType> t;
  try {
    const py::object dtype = loaded_module("numpy").attr("dtype")(view.typestr);
    t = dtype.attr("isnative").cast<bool>()
            ? dtype_from_name(dtype.attr("name").cast<std::string>())
            : std::nullopt;
  } catch (py::error_already_set& e) {
    *why = std::string("its dtype: ") + e.what();
    return nullptr;
  }
  if (!t || itemsize(*t) != view.itemsize) {
    *why = "a device array of a dtype the kernels do not know";
    return nullptr;
  }
  // The block: every byte the array reaches, from the lowest (strides may be negative).
  std::int64_t lo = 0;
  std::int64_t hi = view.itemsize;
  for (std::size_t d = 0; d < view.shape.size(); ++d) {
    if (view.shape[d] == 0) {
      lo = hi = 0;
      break;
    }
    (view.strides[d] < 0 ? lo : hi) += (view.shape[d] - 1) * view.strides[d];
  }
  auto block = std::make_shared<DeviceBlock>(
      device, std::move(pool), std::vector<std::int64_t>{(hi - lo) / view.itemsize}, *t);
  block->address = hi > lo ? view.data + static_cast<std::uint64_t>(lo) : 0;
  block->device_valid = true;
  block->readonly = view.readonly;
  block->outlives_run = true;
  block->owner = view.keeper;
  view.keeper = nullptr;  // (the block's now)
  auto v = std::make_shared<DeviceValue>();
  v->offset = -lo;
  v->shape = std::move(view.shape);
  v->strides = std::move(view.strides);
  v->block = std::move(block);
  return v;
}

py::object wrap(const std::shared_ptr<DeviceValue>& value) {
  return py::cast(value);
}

PyObject* wrap_new(const std::shared_ptr<DeviceValue>& value) {
  try {
    return wrap(value).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  }
}

DeviceValue* device_value_of(PyObject* v) {
  if (g_type == nullptr || Py_TYPE(v) != g_type) {
    return nullptr;
  }
  return py::cast<DeviceValue*>(py::handle(v));
}

void set_device_array_type(PyTypeObject* type) {
  g_type = type;
}

PyObject* host_array(const DeviceValue& v) {
  if (!make_host_current(*v.block)) {
    return nullptr;
  }
  if (v.whole) {
    Py_INCREF(v.block->origin);
    return v.block->origin;
  }
  try {
    const py::module_ numpy = loaded_module("numpy");
    py::object view = numpy.attr("ndarray")(
        int_tuple(v.shape), std::string(name(v.dtype())), py::handle(v.block->origin),
        py::int_(static_cast<long long>(v.offset)), int_tuple(v.strides));
    return view.release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  }
}

std::optional<double> fill_number(PyObject* v, bool numpy_floats) {
  if (numpy_floats ? PyFloat_Check(v) : PyFloat_CheckExact(v)) {  // (NumPy's float64 subclasses it)
    return PyFloat_AS_DOUBLE(v);
  }
  if (PyLong_CheckExact(v)) {
    int overflow = 0;
    const long long n = PyLong_AsLongLongAndOverflow(v, &overflow);
    constexpr long long kExact = 1LL << 53;
    if (overflow == 0 && PyErr_Occurred() == nullptr && n <= kExact && n >= -kExact) {
      return static_cast<double>(n);
    }
    PyErr_Clear();
    return std::nullopt;
  }
  if (numpy_floats && std::strcmp(Py_TYPE(v)->tp_name, "numpy.float32") == 0) {
    const double d = PyFloat_AsDouble(v);
    if (d == -1.0 && PyErr_Occurred() != nullptr) {
      PyErr_Clear();
      return std::nullopt;
    }
    return d;
  }
  return std::nullopt;
}

}  // namespace sot::graph
