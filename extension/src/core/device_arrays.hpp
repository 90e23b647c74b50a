// The caller's device arrays, by either protocol that describes one: the CUDA array interface
// (__cuda_array_interface__: CuPy's arrays, Numba's, the cuda backend's DeviceArray, PyTorch's
// CUDA tensors) or DLPack (__dlpack__, with __dlpack_device__ saying CUDA: JAX's arrays, PyTorch's,
// CuPy's). One description for the translator (what the graph takes), the guards (what a cache
// entry needs) and the cuda backend (the memory it uses in place).
#pragma once

#include <Python.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sot::core {

// DLPack's C structures (dlpack.h, version 0.x: the capsule named "dltensor").
namespace dlpack {
struct DLDevice {
  std::int32_t device_type;
  std::int32_t device_id;
};
struct DLDataType {
  std::uint8_t code;
  std::uint8_t bits;
  std::uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  std::int32_t ndim;
  DLDataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;  // items; null: C order
  std::uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};
constexpr std::int32_t kDLCUDA = 2;
constexpr std::int32_t kDLCUDAManaged = 13;
// DLPack's type codes.
constexpr std::uint8_t kDLInt = 0;
constexpr std::uint8_t kDLUInt = 1;
constexpr std::uint8_t kDLFloat = 2;
constexpr std::uint8_t kDLComplex = 5;
constexpr std::uint8_t kDLBool = 6;
}  // namespace dlpack

struct DeviceArrayView {
  DeviceArrayView() = default;
  ~DeviceArrayView() { Py_XDECREF(keeper); }
  DeviceArrayView(const DeviceArrayView&) = delete;
  DeviceArrayView& operator=(const DeviceArrayView&) = delete;
  DeviceArrayView(DeviceArrayView&&) = delete;
  DeviceArrayView& operator=(DeviceArrayView&&) = delete;

  std::uint64_t data = 0;  // the first item's address
  std::string typestr;     // as NumPy's array interface writes it: "<f8", "|b1"
  int itemsize = 0;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;  // bytes, one per dimension (C order when none was given)
  bool readonly = false;
  int device = 0;  // the CUDA device's ordinal (DLPack's; 0 by the array interface, which has none)
  // What keeps the memory alive (a new reference): the object itself, or the DLPack capsule (its
  // destructor hands the tensor back to its producer).
  PyObject* keeper = nullptr;
};

// Whether `obj`'s type offers either protocol (no Python code runs; an ndarray's DLPack is the
// host's, and NumPy's types are not asked) and follows NumPy's rules: PyTorch's tensors and JAX's
// arrays do not (their operators promote types their own way), and are left to their libraries.
bool may_be_device_array(PyObject* obj);

// Whether `obj` is a device array the graph can take: described by either protocol (DLPack: on a
// CUDA device), no mask, strides of whole items. False (no error set) with `why` otherwise; `out`
// is filled when it is.
bool read_device_array(PyObject* obj, DeviceArrayView* out, std::string* why);

}  // namespace sot::core
