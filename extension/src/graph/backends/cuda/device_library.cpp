#include "graph/backends/cuda/device_library.hpp"

#include <pybind11/pybind11.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "core/loaded_module.hpp"
#include "graph/backends/cuda/device_array.hpp"
#include "graph/backends/cuda/residency.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

bool is_product(PyObject* fn) {
  static PyObject* const fns[3] = {
      py::object(loaded_module("numpy").attr("matmul")).release().ptr(),
      py::object(loaded_module("numpy").attr("dot")).release().ptr(),
      py::object(loaded_module("operator").attr("matmul")).release().ptr(),
  };
  return fn == fns[0] || fn == fns[1] || fn == fns[2];
}

// A device operand of a product: the value itself, or a host array's mirror.
std::optional<DeviceValue> operand(Residency& r, PyObject* v) {
  if (const DeviceValue* d = device_value_of(v)) {
    return *d;
  }
  if (auto m = r.mirror(v)) {
    return *m;
  }
  return std::nullopt;
}

// `v` as a row-major matrix for the BLAS (its rows' stride, or its columns' when it is stored
// transposed), or nullopt for another layout.
std::optional<GemmMatrix> as_matrix(const DeviceValue& v) {
  const std::int64_t item = itemsize(v.dtype());
  const std::int64_t rows = v.shape[0];
  const std::int64_t cols = v.shape[1];
  const std::int64_t s0 = v.strides[0];
  const std::int64_t s1 = v.strides[1];
  const std::uint64_t address = v.block->address + static_cast<std::uint64_t>(v.offset);
  if ((cols == 1 || s1 == item) && s0 > 0 && s0 % item == 0 && s0 / item >= cols) {
    return GemmMatrix{address, s0 / item, false};
  }
  if (rows == 1 && s1 == item) {
    return GemmMatrix{address, cols, false};
  }
  if ((rows == 1 || s0 == item) && s1 > 0 && s1 % item == 0 && s1 / item >= rows) {
    return GemmMatrix{address, s1 / item, true};
  }
  return std::nullopt;
}

}  // namespace

PyObject* run_library_op(Residency& r, PyObject* fn, PyObject* const* args, std::size_t nargs) {
  if (nargs != 2 || !is_product(fn) ||
      (device_value_of(args[0]) == nullptr && device_value_of(args[1]) == nullptr)) {
    return nullptr;
  }
  const auto a = operand(r, args[0]);
  const auto b = operand(r, args[1]);
  if (!a || !b || a->dtype() != b->dtype() || a->shape.size() != 2 || b->shape.size() != 2 ||
      (a->dtype() != DType::kFloat64 && a->dtype() != DType::kFloat32)) {
    return nullptr;
  }
  const std::int64_t m = a->shape[0];
  const std::int64_t k = a->shape[1];
  const std::int64_t n = b->shape[1];
  constexpr std::int64_t kMost = std::numeric_limits<int>::max();
  if (b->shape[0] != k || m <= 0 || n <= 0 || k <= 0 || m > kMost || n > kMost || k > kMost) {
    return nullptr;
  }
  std::string why;
  if (!make_device_current(*a->block, &why) || !make_device_current(*b->block, &why)) {
    return nullptr;
  }
  const auto ma = as_matrix(*a);
  const auto mb = as_matrix(*b);
  if (!ma || !mb) {
    return nullptr;
  }
  auto block = std::make_shared<DeviceBlock>(r.device(), r.pool(), std::vector<std::int64_t>{m, n},
                                             a->dtype());
  if (!make_device_current(*block, &why)) {
    return nullptr;
  }
  const char kind = a->dtype() == DType::kFloat64 ? 'd' : 'f';
  if (!r.device().gemm(kind, m, n, k, *ma, *mb, GemmMatrix{block->address, n, false}, &why)) {
    return nullptr;
  }
  return wrap(whole_value(std::move(block))).release().ptr();
}

}  // namespace sot::graph
