// Arrays that live on the device: a block of device memory (DeviceBlock) and an array over it
// (DeviceValue: an offset, a shape and strides, as NumPy's views over one buffer), bound as the
// Python type sot._sot.graph.DeviceArray. A block may mirror a host array of the same bytes (its
// origin: a NumPy array the run was given, or the host copy made when a host step read the block):
// each side says whether it holds the current contents, and the transfers here make one side
// current from the other, counted (TransferCounts). Which side must be current when is the
// residency's business (residency.hpp).
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/backends/cuda/cuda_launch.hpp"
#include "graph/ir/dtype.hpp"
#include "graph/runtime/cuda/cuda_device.hpp"

namespace sot::graph {

struct DeviceBlock {
  DeviceBlock(DeviceApi& device, std::shared_ptr<DevicePool> pool, std::vector<std::int64_t> shape,
              DType dtype);
  ~DeviceBlock();  // (the GIL held: it drops the origin)
  DeviceBlock(const DeviceBlock&) = delete;
  DeviceBlock& operator=(const DeviceBlock&) = delete;
  DeviceBlock(DeviceBlock&&) = delete;
  DeviceBlock& operator=(DeviceBlock&&) = delete;

  DeviceApi& device;
  std::shared_ptr<DevicePool> pool;
  std::vector<std::int64_t> shape;  // the whole array the block holds, C order
  DType dtype;
  std::size_t bytes = 0;
  std::uint64_t address = 0;   // 0 until the memory is taken
  PyObject* origin = nullptr;  // the host array of the same bytes (a strong reference), or none
  bool host_valid = false;     // the origin holds the current contents
  bool device_valid = false;   // the device memory does
  bool tracked = false;        // a residency keeps its origin coherent (Residency::track)
  // Memory the block does not own: a device array of the caller's (a CuPy array, anything with
  // __cuda_array_interface__ or DLPack), kept alive by `owner` (a strong reference: the array, or
  // its DLPack capsule); never the pool's.
  PyObject* owner = nullptr;
  bool readonly = false;      // the owner's memory may not be written
  bool outlives_run = false;  // the caller holds it (given to a run): no write while optimistic
  std::uint64_t serial;       // the blocks' count when it was made (next_block_serial)
};

// The serial the next block made will have.
std::uint64_t next_block_serial();

class DeviceValue {
 public:
  std::shared_ptr<DeviceBlock> block;
  std::int64_t offset = 0;  // bytes from the block's start
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;  // bytes
  // The block's own array (whole_value), whose host form is the origin itself; a view is another
  // array even where it covers the same bytes (NumPy's `x[::2]` of one row is not `x`).
  bool whole = false;

  DType dtype() const { return block->dtype; }
  std::int64_t size() const;
  bool c_contiguous() const;
  DeviceArray launch_array() const { return {block->address + offset, shape, strides}; }
};

// Whether `t` is float64 or float32: the dtypes the device's products, reductions and fills take.
inline bool is_float64_or_32(DType t) {
  return t == DType::kFloat64 || t == DType::kFloat32;
}

// A number as the double NumPy casts a float array's fill from: a Python float or an int a double
// holds exactly, and with `numpy_floats` NumPy's float64 and float32 scalars too; else nullopt.
std::optional<double> fill_number(PyObject* v, bool numpy_floats);

// The block's whole array as a value.
std::shared_ptr<DeviceValue> whole_value(std::shared_ptr<DeviceBlock> block);
// A shape or strides as the tuple of ints NumPy takes.
pybind11::tuple int_tuple(const std::vector<std::int64_t>& v);
// C-order strides in bytes.
std::vector<std::int64_t> c_strides(const std::vector<std::int64_t>& shape, std::int64_t itemsize);

// What moved between the host and the device for arrays (not the flag words), process-wide.
struct TransferCounts {
  std::uint64_t arrays_in = 0;
  std::uint64_t bytes_in = 0;
  std::uint64_t arrays_out = 0;
  std::uint64_t bytes_out = 0;
};
TransferCounts& transfer_counts();

// Whether the block may be written: not read-only memory of the caller's, nor the memory of a
// read-only host array (NumPy raises for those, on the host).
bool writeable(const DeviceBlock& b);
// Makes the device memory current (taken from the pool, the origin copied in); false with `why`.
bool make_device_current(DeviceBlock& block, std::string* why);
// Makes the origin current (made as a new NumPy array when there is none, the device memory
// copied out); false with a Python error set.
bool make_host_current(DeviceBlock& block);
// Copies C-contiguous ndarray `a` (of `dtype`'s items) into a new block of the pool's (`why` on
// failure).
std::shared_ptr<DeviceBlock> upload_copy(DeviceApi& device, const std::shared_ptr<DevicePool>& pool,
                                         PyObject* a, DType dtype, std::string* why);

// The caller's device array `obj` (core/device_arrays.hpp: __cuda_array_interface__ or DLPack; no
// mask, item strides of any sign) as a value over its memory, the block holding what keeps it
// alive; nullptr with `why` when the kernels cannot take it (a dtype they do not know).
std::shared_ptr<DeviceValue> external_value(DeviceApi& device, std::shared_ptr<DevicePool> pool,
                                            PyObject* obj, std::string* why);

// The Python object of a value (a new DeviceArray).
pybind11::object wrap(const std::shared_ptr<DeviceValue>& value);
// The same as a new reference, or nullptr with the error set.
PyObject* wrap_new(const std::shared_ptr<DeviceValue>& value);
// The value a Python object is, or nullptr when it is not a DeviceArray.
DeviceValue* device_value_of(PyObject* v);
// The host form of `v`, its block's origin made current: the origin itself for the whole array,
// else an ndarray over the origin's memory with v's offset, shape and strides (a new reference;
// nullptr with an error set).
PyObject* host_array(const DeviceValue& v);
// Registers the Python type (at module import; device_array_type.cpp).
void bind_device_array(pybind11::module_& m);
void set_device_array_type(PyTypeObject* type);

}  // namespace sot::graph
