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

enum class Made : std::uint8_t { kCopyC, kCopyK, kZeros, kEmpty, kOnes, kFull, kRoll };

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
        {numpy.attr("roll"), Made::kRoll},
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
    case Made::kRoll:  // (roll_into)
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

// An integer as NumPy's roll takes a shift or an axis (a Python int, or NumPy's integer scalars;
// no bool, no array): nullopt where the host should take it.
std::optional<std::int64_t> int_argument(PyObject* v) {
  if (PyBool_Check(v) || !(PyLong_Check(v) || PyIndex_Check(v)) ||
      PyObject_HasAttrString(v, "shape") != 0) {
    return std::nullopt;
  }
  const Py_ssize_t n = PyNumber_AsSsize_t(v, nullptr);
  if (n == -1 && PyErr_Occurred() != nullptr) {
    PyErr_Clear();
    return std::nullopt;
  }
  return n;
}

// `v` over `length` items of axis `axis` from item `start` on.
DeviceValue axis_slice(const DeviceValue& v, std::size_t axis, std::int64_t start,
                       std::int64_t length) {
  DeviceValue s = v;
  s.whole = false;
  s.offset += start * v.strides[axis];
  s.shape[axis] = length;
  return s;
}

// `v` C-contiguous as one axis.
DeviceValue flat(const DeviceValue& v) {
  DeviceValue f = v;
  f.whole = false;
  f.shape = {v.size()};
  f.strides = {static_cast<std::int64_t>(itemsize(v.dtype()))};
  return f;
}

// numpy.roll(x, shift[, axis]) into the new block `out` of x's shape, by two copies: the items
// rolled past the end, and the rest. Where `axis` is none x is rolled as its C-order items.
// False with `why`, or false with `why` empty where the host should take it.
bool roll_into(Residency& r, const DeviceValue& x, const DeviceValue& out, std::int64_t shift,
               std::optional<std::int64_t> axis, std::string* why) {
  std::size_t ax = 0;
  DeviceValue from = x;
  DeviceValue to = out;
  if (!axis) {
    if (!x.c_contiguous()) {
      return false;
    }
    from = flat(x);
    to = flat(out);
  } else {
    const auto rank = static_cast<std::int64_t>(x.shape.size());
    if (*axis < -rank || *axis >= rank) {
      return false;  // (the host raises NumPy's AxisError)
    }
    ax = static_cast<std::size_t>(*axis < 0 ? *axis + rank : *axis);
  }
  const std::int64_t n = from.shape[ax];
  const std::int64_t s = n == 0 ? 0 : ((shift % n) + n) % n;
  if (s == 0 || x.size() == 0) {
    return copy_on_device(r, to, from, why);
  }
  if (!make_device_current(*x.block, why) ||
      !launch_copy(r, axis_slice(to, ax, s, n - s), axis_slice(from, ax, 0, n - s), why) ||
      !launch_copy(r, axis_slice(to, ax, 0, s), axis_slice(from, ax, n - s, s), why)) {
    return false;
  }
  r.wrote(*out.block);
  return true;
}

// A roll's shift and axis from its arguments, or false where the host should take the call.
bool roll_arguments(PyObject* const* args, std::size_t nargs, PyObject* kwnames,
                    std::int64_t* shift, std::optional<std::int64_t>* axis) {
  PyObject* axis_arg = nargs == 3 ? args[2] : nullptr;
  const Py_ssize_t named = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
  if (nargs < 2 || nargs + static_cast<std::size_t>(named) > 3) {
    return false;
  }
  if (named == 1) {
    if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "axis") != 0) {
      return false;
    }
    axis_arg = args[nargs];
  }
  const std::optional<std::int64_t> s = int_argument(args[1]);
  if (!s) {
    return false;
  }
  *shift = *s;
  if (axis_arg != nullptr && axis_arg != Py_None) {
    *axis = int_argument(axis_arg);
    return axis->has_value();
  }
  return true;
}

}  // namespace

PyObject* run_device_creation(Residency& r, PyObject* fn, PyObject* const* args, std::size_t nargs,
                              PyObject* kwnames) {
  const std::optional<Made> made = made_by(fn);
  std::int64_t shift = 0;
  std::optional<std::int64_t> axis;
  if (!made ||
      (*made == Made::kRoll ? !roll_arguments(args, nargs, kwnames, &shift, &axis)
                            : kwnames != nullptr || nargs != (*made == Made::kFull ? 2U : 1U))) {
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
  const bool made_here = make_device_current(*out->block, &why) &&
                         (*made == Made::kRoll ? roll_into(r, *x, *out, shift, axis, &why)
                                               : make_contents(r, *made, *x, *out, value, &why));
  if (!made_here) {
    return nullptr;
  }
  return wrap_new(out);
}

}  // namespace sot::graph
