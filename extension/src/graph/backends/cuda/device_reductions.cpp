#include "graph/backends/cuda/device_reductions.hpp"

#include <pybind11/pybind11.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/loaded_module.hpp"
#include "graph/backends/cuda/cuda_kernel.hpp"
#include "graph/backends/cuda/device_array.hpp"
#include "graph/backends/cuda/residency.hpp"
#include "graph/rules/fp_state.hpp"
#include "graph/rules/reductions.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

// Below this many outputs, a reduced axis longer than kLongestFew is the host's: a thread adding a
// long axis alone is slower than copying the operand out.
constexpr std::int64_t kFewOutputs = 256;
constexpr std::int64_t kLongestFew = 4096;

struct Named {
  PyObject* fn;
  Reduction::Fn kind;
};

// The callables, by identity: NumPy's functions and the ndarray methods.
const std::vector<Named>& reductions() {
  static const std::vector<Named>* const table = [] {
    auto* t = new std::vector<Named>();
    const py::module_ numpy = loaded_module("numpy");
    const py::object ndarray = numpy.attr("ndarray");
    std::vector<std::pair<const char*, Reduction::Fn>> names = {{"amax", Reduction::Fn::kMax},
                                                                {"amin", Reduction::Fn::kMin}};
    for (const Reduction::Fn fn : Reduction::kFns) {
      names.emplace_back(Reduction::name(fn), fn);
    }
    for (const auto& [name, kind] : names) {
      for (const py::object& owner : {py::object(numpy), ndarray}) {
        if (py::hasattr(owner, name)) {
          t->push_back(Named{py::object(owner.attr(name)).release().ptr(), kind});
        }
      }
    }
    return t;
  }();
  return *table;
}

std::optional<Reduction::Fn> kind_of(PyObject* fn) {
  for (const Named& n : reductions()) {
    if (n.fn == fn) {
      return n.kind;
    }
  }
  return std::nullopt;
}

// The step's operand, axis and keepdims: (x), (x, axis) positional, axis= and keepdims= by name;
// nullopt for anything else (dtype=, out=, where=, initial=, an axis that is not an int).
struct Call {
  PyObject* x = nullptr;
  long axis = 0;
  bool keepdims = false;
};

std::optional<Call> parse(PyObject* const* args, std::size_t nargs, PyObject* kwnames) {
  if (nargs < 1 || nargs > 2) {
    return std::nullopt;
  }
  Call c;
  c.x = args[0];
  PyObject* axis = nargs == 2 ? args[1] : nullptr;
  const Py_ssize_t named = kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t i = 0; i < named; ++i) {
    const char* name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, i));
    PyObject* value = args[nargs + static_cast<std::size_t>(i)];
    if (name == nullptr) {
      PyErr_Clear();
      return std::nullopt;
    }
    if (std::strcmp(name, "axis") == 0 && axis == nullptr) {
      axis = value;
    } else if (std::strcmp(name, "keepdims") == 0 && (value == Py_True || value == Py_False)) {
      c.keepdims = value == Py_True;
    } else {
      return std::nullopt;
    }
  }
  if (axis == nullptr || !PyLong_CheckExact(axis)) {
    return std::nullopt;  // (over all axes: the fused groups' passes, or the host)
  }
  c.axis = PyLong_AsLong(axis);
  if (c.axis == -1 && PyErr_Occurred() != nullptr) {
    PyErr_Clear();
    return std::nullopt;
  }
  return c;
}

// Where NumPy adds along `axis` of `v` in index order: the axes of more than one element have
// positive, decreasing strides (C order, as NumPy's iterator keeps them), and one of them comes
// after `axis` (the innermost loop runs over it). The axis normalized, or nullopt.
std::optional<std::size_t> ordered_axis(const DeviceValue& v, long axis) {
  const auto rank = static_cast<long>(v.shape.size());
  if (axis < -rank || axis >= rank) {
    return std::nullopt;  // (NumPy raises its AxisError on the host)
  }
  const auto a = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
  std::int64_t previous = std::numeric_limits<std::int64_t>::max();
  bool later = false;
  for (std::size_t d = 0; d < v.shape.size(); ++d) {
    if (v.shape[d] <= 1) {
      continue;
    }
    if (v.strides[d] <= 0 || v.strides[d] >= previous) {
      return std::nullopt;
    }
    previous = v.strides[d];
    later = later || d > a;
  }
  if (!later) {
    return std::nullopt;
  }
  return a;
}

// `axis` as the innermost axis of C-contiguous `v` of more than one axis (nullopt: another axis,
// another layout, an axis NumPy raises for).
std::optional<std::size_t> innermost_axis(const DeviceValue& v, long axis) {
  const auto rank = static_cast<long>(v.shape.size());
  if (rank < 2 || (axis != -1 && axis != rank - 1) || !v.c_contiguous()) {
    return std::nullopt;
  }
  return static_cast<std::size_t>(rank - 1);
}

kir::Kernel reduction_ir(const std::string& name, DType dtype, std::size_t rank, Reduction::Fn fn,
                         bool ordered) {
  kir::Kernel k = load_store_kernel(name, dtype, rank);  // e0 = load b0
  k.buffers[1].shape.back() = kir::Dim{1, -1};
  kir::Expr e;  // e1
  e.kind = kir::Expr::Kind::kReduce;
  e.dtype = dtype;
  e.operands = {0};
  e.reduce.fn = fn;
  e.reduce.keepdims = true;  // (the output is given the domain's rank, its last size 1)
  e.reduce.ordered = ordered;
  e.fn = e.reduce.ufunc_name();
  e.ufunc = loaded_module("numpy").attr(e.fn.c_str());
  k.exprs.push_back(e);
  k.stores.push_back(kir::Store{1, 1});
  return k;
}

// The kernel's run: queued with the run's flag word while the run is optimistic (a flagged error
// reruns it on the host), else with a word of its own read now (nullopt: leave it to the host).
std::optional<bool> launch(Residency& r, OwnKernel& own, const std::vector<std::int64_t>& domain,
                           const std::vector<DeviceArray>& arrays) {
  std::string why;
  Staging staging(*r.pool());
  LaunchFlags flags(r, staging, false, &why);
  if (flags.address() == 0) {
    return std::nullopt;
  }
  std::uint64_t launches = 0;
  if (own.cuda->launch(own.k, domain, arrays, {}, flags.address(), staging, &launches, &why) !=
      CudaKernel::Launched::kQueued) {
    return std::nullopt;
  }
  const std::optional<unsigned> word = flags.settle(&why);
  if (!word) {
    return std::nullopt;
  }
  return reported_fe_flags(fe_flags_of(*word)) == 0;  // (else NumPy's warnings, on the host)
}

// `kind` over all items of `x` (C-contiguous, float, not empty) as one row of the rows kernel,
// its value copied out (the run's flags read first, in batches); nullopt where the device did not
// give it, with an error set where the run's flags said one.
std::optional<double> full_row_value(Residency& r, Reduction::Fn kind, const DeviceValue& x) {
  const std::int64_t n = x.size();
  std::string why;
  // (an array only the host holds, as a caller's array no kernel read: the host's, copying nothing)
  const bool host_only = x.block->host_valid && !x.block->device_valid;
  if (n == 0 || host_only || !x.c_contiguous() || !make_device_current(*x.block, &why)) {
    return std::nullopt;
  }
  const std::string name =
      std::string("all_") + Reduction::name(kind) + "_" + std::string(graph::name(x.dtype()));
  OwnKernel& own =
      own_kernel(r.device(), name, [&] { return reduction_ir(name, x.dtype(), 2, kind, false); });
  if (!own.cuda->usable()) {
    return std::nullopt;
  }
  auto block = std::make_shared<DeviceBlock>(r.device(), r.pool(), std::vector<std::int64_t>{1, 1},
                                             x.dtype());
  if (!make_device_current(*block, &why)) {
    return std::nullopt;
  }
  const std::int64_t item = itemsize(x.dtype());
  const std::vector<DeviceArray> arrays = {
      DeviceArray{
          x.block->address + static_cast<std::uint64_t>(x.offset), {1, n}, {n * item, item}},
      DeviceArray{block->address, {1, 1}, {item, 0}}};
  const std::optional<bool> ok = launch(r, own, {1, n}, arrays);
  if (!ok || !*ok) {
    return std::nullopt;
  }
  r.did_host_work();
  if (!r.check_flags_before_read()) {
    return std::nullopt;  // (the rerun error set: the run goes to the host)
  }
  if (x.dtype() == DType::kFloat64) {
    double value = 0;
    return r.device().copy_to_host(&value, block->address, sizeof value, &why)
               ? std::optional<double>(value)
               : std::nullopt;
  }
  float single = 0;
  return r.device().copy_to_host(&single, block->address, sizeof single, &why)
             ? std::optional<double>(single)
             : std::nullopt;
}

// A value of x's dtype as its NumPy scalar (a new reference; nullptr with an error set).
PyObject* numpy_scalar(DType dtype, double value) {
  try {
    const char* type = dtype == DType::kFloat64 ? "float64" : "float32";
    return loaded_module("numpy").attr(type)(value).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  }
}

// max or min over all axes of `x` (full_row_value; NumPy's maximum or minimum, NaN propagated):
// the NumPy scalar, or nullptr (no error set) where the host must give it: an order of
// comparisons decides between +0.0 and -0.0 and among NaNs, so a result that is a zero or a NaN is
// NumPy's own, from the host; any other maximum has one bit pattern, whatever the order. With an
// error set where the run's flags said one.
PyObject* full_extreme(Residency& r, Reduction::Fn kind, const DeviceValue& x) {
  const std::optional<double> value = full_row_value(r, kind, x);
  if (!value || *value == 0.0 || std::isnan(*value)) {
    return nullptr;
  }
  return numpy_scalar(x.dtype(), *value);
}

// sum or mean over all axes of `x` (full_row_value): NumPy adds a C-contiguous array's items as
// one run of pairwise summation, as the rows kernel adds a row, so the sum is NumPy's bit for bit;
// the mean is then NumPy's own `_mean` of it: `type(s)(s / intp(n))`, in Python. nullptr as
// full_extreme.
PyObject* full_sum(Residency& r, Reduction::Fn kind, const DeviceValue& x) {
  const std::optional<double> value = full_row_value(r, Reduction::Fn::kSum, x);
  if (!value) {
    return nullptr;
  }
  PyObject* sum = numpy_scalar(x.dtype(), *value);
  if (sum == nullptr || kind == Reduction::Fn::kSum) {
    return sum;
  }
  try {
    const py::object s = py::reinterpret_steal<py::object>(sum);
    const py::object count = loaded_module("numpy").attr("intp")(x.size());
    return s.attr("dtype").attr("type")(s / count).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  }
}

// The operand of max(x), min(x), x.max() (no axis, no keyword): a float device array, else nullptr.
const DeviceValue* lone_float_operand(PyObject* const* args, std::size_t nargs, PyObject* kwnames) {
  if (nargs != 1 || kwnames != nullptr) {
    return nullptr;
  }
  const DeviceValue* x = device_value_of(args[0]);
  if (x == nullptr || x->shape.empty() || !is_float64_or_32(x->dtype())) {
    return nullptr;
  }
  return x;
}

}  // namespace

bool is_reduction(PyObject* fn) {
  return kind_of(fn).has_value();
}

PyObject* run_device_reduction(Residency& r, PyObject* fn, PyObject* const* args, std::size_t nargs,
                               PyObject* kwnames) {
  const std::optional<Reduction::Fn> kind = kind_of(fn);
  if (kind == Reduction::Fn::kMax || kind == Reduction::Fn::kMin) {
    if (const DeviceValue* x = lone_float_operand(args, nargs, kwnames)) {
      return full_extreme(r, *kind, *x);
    }
  }
  if (kind == Reduction::Fn::kSum || kind == Reduction::Fn::kMean) {
    if (const DeviceValue* x = lone_float_operand(args, nargs, kwnames)) {
      return full_sum(r, *kind, *x);
    }
  }
  const std::optional<Call> call = kind ? parse(args, nargs, kwnames) : std::nullopt;
  const DeviceValue* x = call ? device_value_of(call->x) : nullptr;
  if (x == nullptr || !is_float64_or_32(x->dtype())) {
    return nullptr;
  }
  // A sum or mean over the innermost axis of a C-contiguous array: the rows kernel, adding each row
  // in NumPy's pairwise order, as a fused group's row reduction (not max or min: which of +0.0 and
  // -0.0, and which NaN, a row gives depends on the order of comparisons); another axis: in index
  // order.
  const bool sums = kind == Reduction::Fn::kSum || kind == Reduction::Fn::kMean;
  const std::optional<std::size_t> rows_axis = sums ? innermost_axis(*x, call->axis) : std::nullopt;
  const std::optional<std::size_t> axis = rows_axis ? rows_axis : ordered_axis(*x, call->axis);
  if (!axis) {
    return nullptr;
  }
  // The domain: the kept axes in order, then the reduced one (the rows kernel's last axis).
  const std::int64_t length = x->shape[*axis];
  std::vector<std::int64_t> kept;
  std::vector<std::int64_t> domain;
  std::vector<std::int64_t> strides;
  for (std::size_t d = 0; d < x->shape.size(); ++d) {
    if (d != *axis) {
      kept.push_back(x->shape[d]);
      domain.push_back(x->shape[d]);
      strides.push_back(x->strides[d]);
    }
  }
  domain.push_back(length);
  strides.push_back(x->strides[*axis]);
  std::int64_t outputs = 1;
  for (const std::int64_t s : kept) {
    outputs *= s;
  }
  if (length == 0 || outputs == 0 ||
      (!rows_axis && outputs < kFewOutputs && length > kLongestFew)) {
    return nullptr;  // (an empty axis: NumPy's error or warning, on the host)
  }
  std::string why;
  if (!make_device_current(*x->block, &why)) {
    return nullptr;
  }
  const std::string name = std::string(rows_axis ? "rows_" : "axis_") + Reduction::name(*kind) +
                           "_" + std::string(graph::name(x->dtype())) + "_r" +
                           std::to_string(domain.size());
  OwnKernel& own = own_kernel(r.device(), name, [&] {
    return reduction_ir(name, x->dtype(), domain.size(), *kind, !rows_axis);
  });
  if (!own.cuda->usable()) {
    return nullptr;
  }
  std::vector<std::int64_t> shape = kept;
  if (call->keepdims) {
    shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(*axis), 1);
  }
  auto block = std::make_shared<DeviceBlock>(r.device(), r.pool(), shape, x->dtype());
  if (!make_device_current(*block, &why)) {
    return nullptr;
  }
  std::vector<std::int64_t> out_shape = kept;
  out_shape.push_back(1);
  std::vector<std::int64_t> out_strides = c_strides(kept, itemsize(x->dtype()));
  out_strides.push_back(0);
  const std::vector<DeviceArray> arrays = {
      DeviceArray{x->block->address + static_cast<std::uint64_t>(x->offset), domain, strides},
      DeviceArray{block->address, out_shape, out_strides}};
  const std::optional<bool> ok = launch(r, own, domain, arrays);
  if (!ok || !*ok) {
    return nullptr;
  }
  try {
    return wrap(whole_value(std::move(block))).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  }
}

}  // namespace sot::graph
