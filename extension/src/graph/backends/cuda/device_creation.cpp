#include "graph/backends/cuda/device_creation.hpp"

#include <pybind11/pybind11.h>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/loaded_module.hpp"
#include "graph/backends/cuda/device_array.hpp"
#include "graph/backends/cuda/device_copy.hpp"
#include "graph/backends/cuda/residency.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

enum class Made : std::uint8_t { kCopyC, kCopyK, kZeros, kEmpty, kOnes, kFull };

struct Named {
  PyObject* fn;
  Made made;
};

// The callables, by identity.
const std::vector<Named>& creations() {
  static const std::vector<Named>* const table = [] {
    auto* t = new std::vector<Named>();
    const py::module_ numpy = loaded_module("numpy");
    const std::pair<py::object, Made> named[] = {
        {numpy.attr("ndarray").attr("copy"), Made::kCopyC},
        {numpy.attr("copy"), Made::kCopyK},
        {numpy.attr("zeros_like"), Made::kZeros},
        {numpy.attr("empty_like"), Made::kEmpty},
        {numpy.attr("ones_like"), Made::kOnes},
        {numpy.attr("full_like"), Made::kFull},
    };
    for (const auto& [fn, made] : named) {
      t->push_back(Named{py::object(fn).release().ptr(), made});
    }
    return t;
  }();
  return *table;
}

std::optional<Made> made_by(PyObject* fn) {
  for (const Named& n : creations()) {
    if (n.fn == fn) {
      return n.made;
    }
  }
  return std::nullopt;
}

// Whether NumPy's order "K" gives `v`'s copy in C order: its axes of more than one element have
// strides of decreasing size (of any sign: K order makes them positive).
bool keeps_c_order(const DeviceValue& v) {
  std::int64_t previous = std::numeric_limits<std::int64_t>::max();
  for (std::size_t d = 0; d < v.shape.size(); ++d) {
    if (v.shape[d] <= 1) {
      continue;
    }
    const std::int64_t size = std::llabs(v.strides[d]);
    if (size == 0 || size >= previous) {
      return false;
    }
    previous = size;
  }
  return true;
}

// Fills the new block `out` as `made` says (copying from `x`); false with `why`.
bool make_contents(Residency& r, Made made, const DeviceValue& x, const DeviceValue& out,
                   double value, std::string* why) {
  switch (made) {
    case Made::kCopyC:
    case Made::kCopyK:
      return copy_on_device(r, out, x, why);
    case Made::kOnes:
    case Made::kFull:
      return fill_on_device(r, out, value, why);
    case Made::kZeros:
    case Made::kEmpty:
      break;
  }
  if (is_float64_or_32(out.dtype())) {
    return fill_on_device(r, out, 0.0, why);  // (a launch: a loop step making it may replay)
  }
  r.did_host_work();  // (a memset is no launch: a step doing one is not replayed)
  if (!r.device().zero(out.block->address, out.block->bytes, why)) {
    return false;
  }
  r.wrote(*out.block);
  return true;
}

}  // namespace

PyObject* run_device_creation(Residency& r, PyObject* fn, PyObject* const* args, std::size_t nargs,
                              PyObject* kwnames) {
  const std::optional<Made> made = made_by(fn);
  if (!made || kwnames != nullptr || nargs != (*made == Made::kFull ? 2U : 1U)) {
    return nullptr;
  }
  const DeviceValue* x = device_value_of(args[0]);
  if (x == nullptr || x->shape.empty() || (*made != Made::kCopyC && !keeps_c_order(*x))) {
    return nullptr;
  }
  double value = *made == Made::kOnes ? 1.0 : 0.0;
  if (*made == Made::kOnes || *made == Made::kFull) {
    const std::optional<double> v = *made == Made::kFull ? fill_number(args[1], false) : value;
    if (!v || !is_float64_or_32(x->dtype())) {
      return nullptr;
    }
    value = *v;
  }
  std::string why;
  auto out = whole_value(std::make_shared<DeviceBlock>(r.device(), r.pool(), x->shape, x->dtype()));
  if (!make_device_current(*out->block, &why) || !make_contents(r, *made, *x, *out, value, &why)) {
    return nullptr;
  }
  try {
    return wrap(out).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  }
}

}  // namespace sot::graph
