#include "graph/backends/cuda/device_copy.hpp"

#include <pybind11/pybind11.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "core/loaded_module.hpp"
#include "graph/backends/cuda/cuda_kernel.hpp"
#include "graph/backends/cuda/residency.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

// The copy kernel of one dtype and rank: dst[i] = src[i] over dst's shape, src broadcast.
OwnKernel& copy_kernel(DeviceApi& device, DType dtype, std::size_t rank) {
  const std::string name = "copy_" + std::string(graph::name(dtype)) + "_" + std::to_string(rank);
  return own_kernel(device, name, [&] {
    kir::Kernel k = load_store_kernel(name, dtype, rank);
    k.stores.push_back(kir::Store{0, 1});
    return k;
  });
}

// A flag word per device the copy kernels may write (they never report an error).
std::uint64_t copy_flags(DeviceApi& device, DevicePool& pool, std::string* why) {
  static auto* words = new std::map<DeviceApi*, std::uint64_t>();
  auto& word = (*words)[&device];
  if (word == 0) {
    word = pool.take(sizeof(unsigned), why);
    if (word != 0 && !device.zero(word, sizeof(unsigned), why)) {
      word = 0;
    }
  }
  return word;
}

bool overlaps(const DeviceValue& a, const DeviceValue& b) {
  if (a.block != b.block) {
    return false;
  }
  auto extent = [](const DeviceValue& v) {
    std::int64_t lo = v.offset;
    std::int64_t hi = v.offset + itemsize(v.dtype());
    for (std::size_t d = 0; d < v.shape.size(); ++d) {
      const std::int64_t span = (v.shape[d] - 1) * v.strides[d];
      (span < 0 ? lo : hi) += span;
    }
    return std::pair<std::int64_t, std::int64_t>(lo, hi);
  };
  const auto [alo, ahi] = extent(a);
  const auto [blo, bhi] = extent(b);
  return alo < bhi && blo < ahi;
}

}  // namespace

bool launch_copy(Residency& r, const DeviceValue& dst, const DeviceValue& src, std::string* why) {
  OwnKernel& ck = copy_kernel(r.device(), dst.dtype(), dst.shape.size());
  if (!ck.cuda->usable()) {
    *why = ck.cuda->why();
    return false;
  }
  const std::uint64_t flags = copy_flags(r.device(), *r.pool(), why);
  if (flags == 0) {
    return false;
  }
  Staging staging(*r.pool());
  std::uint64_t launches = 0;
  return ck.cuda->launch(ck.k, dst.shape, {src.launch_array(), dst.launch_array()}, {}, flags,
                         staging, &launches, why) == CudaKernel::Launched::kQueued;
}

bool copy_on_device(Residency& r, const DeviceValue& dst, const DeviceValue& src,
                    std::string* why) {
  const std::size_t rank = dst.shape.size();
  if (src.dtype() != dst.dtype() || rank == 0 || src.shape.size() > rank) {
    *why = "not a copy of one dtype into an array";
    return false;
  }
  for (std::size_t d = 0; d < src.shape.size(); ++d) {
    const std::int64_t n = src.shape[d];
    if (n != 1 && n != dst.shape[rank - src.shape.size() + d]) {
      *why = "shapes that do not broadcast";
      return false;
    }
  }
  if (dst.size() == 0) {
    return true;
  }
  if (!make_device_current(*src.block, why) || !make_device_current(*dst.block, why)) {
    return false;
  }
  if (overlaps(dst, src)) {
    auto temp =
        whole_value(std::make_shared<DeviceBlock>(r.device(), r.pool(), src.shape, src.dtype()));
    if (!make_device_current(*temp->block, why) || !launch_copy(r, *temp, src, why)) {
      return false;
    }
    if (!launch_copy(r, dst, *temp, why)) {
      return false;
    }
  } else if (!launch_copy(r, dst, src, why)) {
    return false;
  }
  r.wrote(*dst.block);
  return true;
}

namespace {

// The fill kernel of one dtype and rank: every element of buffer 0 (any strides) the kernel's one
// scalar.
OwnKernel& fill_kernel(DeviceApi& device, DType dtype, std::size_t rank) {
  const std::string name = "fill_" + std::string(graph::name(dtype)) + "_" + std::to_string(rank);
  return own_kernel(device, name, [&] {
    kir::Kernel k;
    k.name = name;
    for (std::size_t d = 0; d < rank; ++d) {
      k.domain.push_back(kir::Dim{1, static_cast<int>(d)});
    }
    k.buffers.push_back(kir::Buffer{-1, dtype, k.domain, true, false});
    kir::Expr value;
    value.kind = kir::Expr::Kind::kScalar;
    value.dtype = dtype;
    value.scalar = 0;
    k.scalars.push_back(kir::Scalar{-1, py::float_(0.0)});  // (a Python float: its bits at launch)
    k.exprs.push_back(value);
    k.stores.push_back(kir::Store{0, 0});
    return k;
  });
}

}  // namespace

bool fill_on_device(Residency& r, const DeviceValue& dst, double value, std::string* why) {
  if (!is_float64_or_32(dst.dtype())) {
    *why = "a fill of a dtype other than float64 or float32";
    return false;
  }
  if (dst.size() == 0) {
    return true;
  }
  // (an element, a 0-d view, as one of one element)
  const std::vector<std::int64_t> shape =
      dst.shape.empty() ? std::vector<std::int64_t>{1} : dst.shape;
  const std::vector<std::int64_t> strides =
      dst.shape.empty() ? std::vector<std::int64_t>{itemsize(dst.dtype())} : dst.strides;
  OwnKernel& fk = fill_kernel(r.device(), dst.dtype(), shape.size());
  if (!fk.cuda->usable()) {
    *why = fk.cuda->why();
    return false;
  }
  const std::uint64_t flags = copy_flags(r.device(), *r.pool(), why);
  if (flags == 0 || !make_device_current(*dst.block, why)) {
    return false;
  }
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  const DeviceArray target{dst.block->address + static_cast<std::uint64_t>(dst.offset), shape,
                           strides};
  Staging staging(*r.pool());
  std::uint64_t launches = 0;
  if (fk.cuda->launch(fk.k, shape, {target}, {bits}, flags, staging, &launches, why) !=
      CudaKernel::Launched::kQueued) {
    return false;
  }
  r.wrote(*dst.block);
  return true;
}

std::optional<py::object> read_element(Residency& r, std::uint64_t address, DType dtype) {
  r.did_host_work();
  if (!r.check_flags_before_read()) {
    throw py::error_already_set();
  }
  const auto item = static_cast<std::size_t>(itemsize(dtype));
  std::string bytes(item, '\0');
  std::string why;
  if (!r.device().copy_to_host(bytes.data(), address, item, &why)) {
    return std::nullopt;
  }
  return numpy_scalar(bytes.data(), dtype);
}

py::object numpy_scalar(const void* bytes, DType dtype) {
  const py::module_ numpy = loaded_module("numpy");
  const py::object type = numpy.attr("dtype")(std::string(name(dtype)));
  const py::bytes item(static_cast<const char*>(bytes), static_cast<std::size_t>(itemsize(dtype)));
  return py::object(numpy.attr("frombuffer")(item, type)[py::int_(0)]);
}

}  // namespace sot::graph
