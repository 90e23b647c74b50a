// Copies and fills on the device, by the backend's own kernels (cuda_kernel.hpp: kernels of the
// kernel IR that no fused group lowers): a copy kernel per dtype and rank (dst[i] = src[i] over
// dst's shape, src broadcast) and a fill kernel per dtype and rank (every element one value). They
// never report a floating-point error, and write a flag word of their own that nothing reads. And
// the one copy of an element out to the host, as a NumPy scalar.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <string>

#include "graph/backends/cuda/device_array.hpp"

namespace sot::graph {

class Residency;

// Queues the copy of `src` into `dst` (same dtype, src broadcast to dst's shape, no overlap, both
// current on the device); false with `why`.
bool launch_copy(Residency& r, const DeviceValue& dst, const DeviceValue& src, std::string* why);

// Copies `src` into `dst` on the device (same dtype; src broadcast to dst's shape), through a
// temporary block when the two overlap; false with `why` (nothing written) when it cannot.
bool copy_on_device(Residency& r, const DeviceValue& dst, const DeviceValue& src, std::string* why);

// Sets every element of `dst` (a float64 or float32 array or view, any strides; 0-d: one element)
// to `value`, cast to its dtype as NumPy casts a Python float; false with `why`.
bool fill_on_device(Residency& r, const DeviceValue& dst, double value, std::string* why);

// The `dtype` element at device `address` as NumPy's scalar of that dtype, copied out once the
// run's flags are read (Residency::check_flags_before_read; a read is host work: the step is not
// replayed). nullopt where the copy fails; throws pybind11::error_already_set where the flags said
// an error (the run's rerun on the host).
std::optional<pybind11::object> read_element(Residency& r, std::uint64_t address, DType dtype);
// The `dtype` item at `bytes` (host memory) as NumPy's scalar of that dtype.
pybind11::object numpy_scalar(const void* bytes, DType dtype);

}  // namespace sot::graph
