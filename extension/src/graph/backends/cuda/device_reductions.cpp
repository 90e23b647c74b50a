#include "graph/backends/cuda/device_reductions.hpp"

#include <pybind11/pybind11.h>

#include <algorithm>
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
#include "graph/backends/cuda/device_copy.hpp"
#include "graph/backends/cuda/device_inplace.hpp"
#include "graph/backends/cuda/late_scalars.hpp"
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

// The step's operand, axes and keepdims: (x), (x, axis) positional, axis= and keepdims= by name;
// the axis None, an int or a tuple of ints. nullopt for anything else (dtype=, out=, where=,
// initial=, an empty tuple, an axis of another type).
struct Call {
  PyObject* x = nullptr;
  bool all_axes = true;    // no axis, or None
  std::vector<long> axes;  // else the axes given
  bool keepdims = false;
};

bool read_axes(PyObject* axis, Call* c) {
  if (axis == nullptr || axis == Py_None) {
    return true;
  }
  c->all_axes = false;
  const auto one = [&](PyObject* a) {
    if (!PyLong_CheckExact(a)) {
      return false;
    }
    const long v = PyLong_AsLong(a);
    if (v == -1 && PyErr_Occurred() != nullptr) {
      PyErr_Clear();
      return false;
    }
    c->axes.push_back(v);
    return true;
  };
  if (!PyTuple_CheckExact(axis)) {
    return one(axis);
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(axis); ++i) {
    if (!one(PyTuple_GET_ITEM(axis, i))) {
      return false;
    }
  }
  return !c->axes.empty();
}

std::optional<Call> parse(PyObject* const* args, std::size_t nargs, PyObject* kwnames) {
  if (nargs < 1 || nargs > 2) {
    return std::nullopt;
  }
  Call c;
  c.x = args[0];
  PyObject* axis = nargs == 2 ? args[1] : nullptr;
  bool axis_named = false;
  const Py_ssize_t named = kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t i = 0; i < named; ++i) {
    const char* name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, i));
    PyObject* value = args[nargs + static_cast<std::size_t>(i)];
    if (name == nullptr) {
      PyErr_Clear();
      return std::nullopt;
    }
    if (std::strcmp(name, "axis") == 0 && nargs == 1 && !axis_named) {
      axis = value;
      axis_named = true;
    } else if (std::strcmp(name, "keepdims") == 0 && (value == Py_True || value == Py_False)) {
      c.keepdims = value == Py_True;
    } else {
      return std::nullopt;
    }
  }
  if (!read_axes(axis, &c)) {
    return std::nullopt;
  }
  return c;
}

// Which of x's axes the call reduces; nullopt where an axis is out of range or repeated (NumPy
// raises, on the host).
std::optional<std::vector<bool>> reduced_axes(const DeviceValue& x, const Call& c) {
  const auto rank = static_cast<long>(x.shape.size());
  std::vector<bool> out(x.shape.size(), c.all_axes);
  for (const long a : c.axes) {
    if (a < -rank || a >= rank) {
      return std::nullopt;
    }
    const auto d = static_cast<std::size_t>(a < 0 ? a + rank : a);
    if (out[d]) {
      return std::nullopt;
    }
    out[d] = true;
  }
  return out;
}

// One loop of the reduction: `size` steps of `stride` bytes, over reduced axes or kept ones.
struct LoopDim {
  std::int64_t size = 0;
  std::int64_t stride = 0;
  bool reduced = false;
};

// x's axes as the loops NumPy's iterator runs for the reduction, in order: axes of one element
// left out, the others in memory order (NumPy's iterator sorts them by stride, outermost first:
// x.T's loops are x's), and an axis merged into the one before it where both are reduced (or both
// kept) and the earlier steps over exactly the later (the order of additions is then the same:
// each output element takes its items in index order over the merged axes, as NumPy's iterator
// coalesces them). nullopt where x is empty, a stride is not positive or two are equal, or the
// axes are out of memory order with more than one kept (NumPy's result then comes in its
// operand's order, not C order, and a later reduction of it would add in that order).
std::optional<std::vector<LoopDim>> loop_dims(const DeviceValue& x,
                                              const std::vector<bool>& reduced) {
  std::vector<LoopDim> axes;  // in x's order
  for (std::size_t d = 0; d < x.shape.size(); ++d) {
    if (x.shape[d] == 0) {
      return std::nullopt;  // (an empty reduction: NumPy's identity, error or warning)
    }
    if (x.shape[d] == 1) {
      continue;
    }
    if (x.strides[d] <= 0) {
      return std::nullopt;
    }
    axes.push_back(LoopDim{x.shape[d], x.strides[d], reduced[d]});
  }
  const auto outer_first = [](const LoopDim& a, const LoopDim& b) { return a.stride > b.stride; };
  if (!std::is_sorted(axes.begin(), axes.end(), outer_first)) {
    const auto kept =
        std::count_if(axes.begin(), axes.end(), [](const LoopDim& a) { return !a.reduced; });
    if (kept > 1) {
      return std::nullopt;
    }
    std::sort(axes.begin(), axes.end(), outer_first);
  }
  std::vector<LoopDim> dims;
  for (const LoopDim& a : axes) {
    if (!dims.empty() && dims.back().stride == a.stride) {
      return std::nullopt;
    }
    if (!dims.empty() && dims.back().reduced == a.reduced &&
        dims.back().stride == a.stride * a.size) {
      dims.back().size *= a.size;
      dims.back().stride = a.stride;
    } else {
      dims.push_back(a);
    }
  }
  if (dims.empty()) {  // (one element: a row of one, where an axis is reduced)
    const bool any = std::find(reduced.begin(), reduced.end(), true) != reduced.end();
    dims.push_back(LoopDim{1, itemsize(x.dtype()), any});
  }
  return dims;
}

// Whether the device runs `kind` over a `t` array: of floats all four, as NumPy computes them; of
// ints a sum (NumPy's int64 or uint64 wraps the same in any order), a max or a min, each exact in
// any order; of bools a sum; a mean of ints of at most 32 bits or of bools where exact_int_mean
// says so. (A mean of 64-bit ints, a max of bools: the host's.)
bool runs_here(Reduction::Fn kind, DType t) {
  switch (graph::kind(t)) {
    case 'f':
      return is_float64_or_32(t);
    case 'i':
    case 'u':
      return kind != Reduction::Fn::kMean || itemsize(t) <= 4;
    case 'b':
      return kind == Reduction::Fn::kSum || kind == Reduction::Fn::kMean;
    default:
      return false;
  }
}

// Whether NumPy's mean of `count` items of `t` (ints or bools: NumPy adds them in float64, in its
// order) is exact in any order: where count times the largest magnitude of `t` is at most 2^53,
// every partial sum is an integer float64 holds, so each addition is exact and the sum is the
// integers' sum, divided then as NumPy divides it.
bool exact_int_mean(DType t, std::int64_t count) {
  std::int64_t most = 0;
  switch (t) {
    case DType::kBool:
      most = 1;
      break;
    case DType::kInt8:
    case DType::kUInt8:
      most = 255;
      break;
    case DType::kInt16:
    case DType::kUInt16:
      most = 65535;
      break;
    case DType::kInt32:
    case DType::kUInt32:
      most = std::numeric_limits<std::uint32_t>::max();
      break;
    default:
      return false;
  }
  return count <= (std::int64_t{1} << 53) / most;
}

// The result's dtype: NumPy's sum's; a mean of ints or bools float64 (NumPy's `_mean` adds them
// with dtype f8); else t.
DType result_dtype(Reduction::Fn kind, DType t) {
  if (kind == Reduction::Fn::kSum) {
    return sum_dtype(t);
  }
  return kind == Reduction::Fn::kMean && graph::kind(t) != 'f' ? DType::kFloat64 : t;
}

// (A mean of ints here is one run_device_reduction found exact: exact_int_mean.)
kir::Kernel reduction_ir(const std::string& name, DType dtype, DType out, std::size_t rank,
                         Reduction::Fn fn, bool ordered) {
  kir::Kernel k = load_store_kernel(name, dtype, rank);  // e0 = load b0
  k.buffers[1].dtype = out;
  k.buffers[1].shape.back() = kir::Dim{1, -1};
  kir::Expr e;  // e1
  e.kind = kir::Expr::Kind::kReduce;
  e.dtype = out;
  e.operands = {0};
  e.reduce.fn = fn;
  e.reduce.keepdims = true;  // (the output is given the domain's rank, its last size 1)
  e.reduce.ordered = ordered;
  e.reduce.exact_int_mean = fn == Reduction::Fn::kMean && graph::kind(dtype) != 'f';
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

// How a reduction runs: its one reduced loop last in the domain, after the kept ones.
//   kAll: every element (one row, the rows kernel adding it in NumPy's pairwise order);
//   kRows: the innermost loop (a row each output, the rows kernel);
//   kOrdered: another loop (one thread an output, adding in index order).
struct Plan {
  enum class Way : std::uint8_t { kAll, kRows, kOrdered };
  Way way = Way::kAll;
  std::vector<std::int64_t> kept;  // the kept loops' sizes
  std::vector<std::int64_t> domain;
  std::vector<std::int64_t> strides;  // the operand's, bytes
};

// The plan of `way` over loops `dims`: the kept ones first, in order, then the reduced loop `r`
// (no kept loop: one output); nullopt for an ordered plan of a long reduced loop to few outputs (a
// thread adding it alone is slower than copying the operand out).
std::optional<Plan> kept_then(const std::vector<LoopDim>& dims, const LoopDim& r, Plan::Way way) {
  Plan p;
  p.way = way;
  std::int64_t outputs = 1;
  for (const LoopDim& d : dims) {
    if (!d.reduced) {
      p.kept.push_back(d.size);
      p.domain.push_back(d.size);
      p.strides.push_back(d.stride);
      outputs *= d.size;
    }
  }
  if (p.kept.empty()) {
    p.kept = {1};
    p.domain = {1};
    p.strides = {r.size * r.stride};
  }
  p.domain.push_back(r.size);
  p.strides.push_back(r.stride);
  if (way == Plan::Way::kOrdered && outputs < kFewOutputs && r.size > kLongestFew) {
    return std::nullopt;
  }
  return p;
}

// The plan for x's loops `dims` (loop_dims); nullopt where NumPy's order is not one of these:
// loops reduced in several places (the iterator's order), a strided innermost reduced loop, a long
// reduced loop to few outputs (a thread adding it alone is slower than copying the operand out).
std::optional<Plan> plan_of(const DeviceValue& x, const std::vector<LoopDim>& dims) {
  std::size_t reduced = dims.size();
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (dims[d].reduced) {
      if (reduced != dims.size()) {
        return std::nullopt;
      }
      reduced = d;
    }
  }
  // (no loop reduced: the axes reduced are of one element, each output element 0 plus one item,
  // or the identity's max or min with it: a reduced loop of one)
  const bool none = reduced == dims.size();
  const LoopDim r = none ? LoopDim{1, itemsize(x.dtype()), true} : dims[reduced];
  const bool innermost = !none && reduced + 1 == dims.size();
  if (innermost && r.stride != itemsize(x.dtype())) {
    return std::nullopt;
  }
  if (innermost && dims.size() == 1) {  // (one row of all elements)
    return kept_then(dims, r, Plan::Way::kAll);
  }
  return kept_then(dims, r, innermost ? Plan::Way::kRows : Plan::Way::kOrdered);
}

// A reduction over loops reduced apart (axis=(0, 2) of a 3-d array), its innermost loop reduced:
// NumPy adds each innermost row pairwise (a max or min compares it) and combines the rows' results
// into each output element in index order over the outer reduced loops, from 0 (a sum) or the
// first. So the rows kernel first, each other loop kept, into a contiguous block `between` of the
// other loops' sizes; then the reduction in index order over that block's reduced loops, which
// must be one loop there. Floats: a sum or mean only (the rows kernel compares a max or min in
// another order); only where the loop before the innermost is kept (reduced loops side by side
// that do not merge, as in x[:, ::2].sum(axis=(1, 2)), NumPy copies into its buffer and adds
// pairwise across them); and only where NumPy adds a row in one part (NumPy >= 2.3, or a row no
// longer than 1.x's buffer size: past it NumPy adds each part to the element, not the row's sum).
// Ints add and compare exactly in any order.
struct Split {
  Plan rows;
  std::vector<std::int64_t> between;
  Plan ordered;
};

std::optional<Split> split_plan(const DeviceValue& x, const std::vector<LoopDim>& dims,
                                Reduction::Fn kind) {
  const std::int64_t item = itemsize(x.dtype());
  if (dims.size() < 2 || !dims.back().reduced || dims.back().stride != item) {
    return std::nullopt;
  }
  if (graph::kind(x.dtype()) == 'f') {
    if (kind == Reduction::Fn::kMax || kind == Reduction::Fn::kMin ||
        dims[dims.size() - 2].reduced) {
      return std::nullopt;
    }
    const py::module_ numpy = loaded_module("numpy");
    const auto bufsize = numpy.attr("getbufsize")().cast<std::int64_t>();
    const SumOrder order = numpy_sum_order(bufsize, numpy);
    if (order == SumOrder::kUnknown ||
        (order == SumOrder::kChunked && dims.back().size > bufsize)) {
      return std::nullopt;
    }
  }
  Split s;
  std::vector<LoopDim> rows = dims;
  for (std::size_t d = 0; d + 1 < rows.size(); ++d) {
    rows[d].reduced = false;
    s.between.push_back(rows[d].size);
  }
  std::optional<Plan> first = plan_of(x, rows);
  if (!first) {
    return std::nullopt;
  }
  s.rows = std::move(*first);
  // The block's loops, neighbours of one kind merged (it is contiguous), then one reduced loop.
  const std::vector<std::int64_t> strides =
      c_strides(s.between, itemsize(result_dtype(kind, x.dtype())));
  std::vector<LoopDim> merged;
  for (std::size_t d = 0; d < s.between.size(); ++d) {
    if (!merged.empty() && merged.back().reduced == dims[d].reduced) {
      merged.back().size *= s.between[d];
      merged.back().stride = strides[d];
    } else {
      merged.push_back(LoopDim{s.between[d], strides[d], dims[d].reduced});
    }
  }
  const auto reduced = [](const LoopDim& l) { return l.reduced; };
  if (std::count_if(merged.begin(), merged.end(), reduced) != 1) {
    return std::nullopt;
  }
  const LoopDim r = *std::find_if(merged.begin(), merged.end(), reduced);
  std::optional<Plan> ordered = kept_then(merged, r, Plan::Way::kOrdered);
  if (!ordered) {
    return std::nullopt;
  }
  s.ordered = std::move(*ordered);
  return s;
}

// Runs `fn` as planned into a new block of `shape` (its elements the kept loops' in order): the
// block, or nullptr where the host must run the step (with an error set where the run's flags
// said one).
std::shared_ptr<DeviceBlock> run_plan(Residency& r, const Plan& p, Reduction::Fn fn,
                                      const DeviceValue& x,
                                      const std::vector<std::int64_t>& shape) {
  std::string why;
  if (!make_device_current(*x.block, &why)) {
    return nullptr;
  }
  static constexpr const char* kPrefix[] = {"all_", "rows_", "axis_"};
  const DType out = result_dtype(fn, x.dtype());
  const std::string name = std::string(kPrefix[static_cast<int>(p.way)]) + Reduction::name(fn) +
                           "_" + std::string(graph::name(x.dtype())) + "_r" +
                           std::to_string(p.domain.size());
  OwnKernel& own = own_kernel(r.device(), name, [&] {
    return reduction_ir(name, x.dtype(), out, p.domain.size(), fn, p.way == Plan::Way::kOrdered);
  });
  if (!own.cuda->usable()) {
    return nullptr;
  }
  auto block = std::make_shared<DeviceBlock>(r.device(), r.pool(), shape, out);
  if (!make_device_current(*block, &why)) {
    return nullptr;
  }
  std::vector<std::int64_t> out_shape = p.kept;
  out_shape.push_back(1);
  std::vector<std::int64_t> out_strides = c_strides(p.kept, itemsize(out));
  out_strides.push_back(0);
  const std::vector<DeviceArray> arrays = {
      DeviceArray{x.block->address + static_cast<std::uint64_t>(x.offset), p.domain, p.strides},
      DeviceArray{block->address, out_shape, out_strides}};
  const std::optional<bool> ok = launch(r, own, p.domain, arrays);
  return ok && *ok ? block : nullptr;
}

// How a reduction runs: one plan, or a split one (both stages adding for a mean, whose division
// comes after).
struct Planned {
  std::optional<Plan> one;
  std::optional<Split> split;

  std::shared_ptr<DeviceBlock> run(Residency& r, Reduction::Fn fn, const DeviceValue& x,
                                   const std::vector<std::int64_t>& shape) const {
    if (one) {
      return run_plan(r, *one, fn, x, shape);
    }
    const Reduction::Fn add = fn == Reduction::Fn::kMean ? Reduction::Fn::kSum : fn;
    const std::shared_ptr<DeviceBlock> rows = run_plan(r, split->rows, add, x, split->between);
    return rows ? run_plan(r, split->ordered, add, *whole_value(rows), shape) : nullptr;
  }
};

// `kind` over all of x as NumPy's scalar: the sum, max or min copied out (after the run's flags);
// a mean is NumPy's own `_mean` of the sum, `type(s)(s / intp(n))`, in Python. nullptr (no error
// set) where the host gives it: a float max or min that is a zero or a NaN (the order of
// comparisons decides between +0.0 and -0.0, and among NaNs; any other has one bit pattern); with
// an error set where the run's flags said one.
PyObject* full_scalar(Residency& r, const Planned& p, Reduction::Fn kind, const DeviceValue& x) {
  const Reduction::Fn fn = kind == Reduction::Fn::kMean ? Reduction::Fn::kSum : kind;
  const std::shared_ptr<DeviceBlock> block = p.run(r, fn, x, {1});
  if (!block) {
    return nullptr;
  }
  std::optional<py::object> value;
  try {  // (a sum may be read late: late_scalars.hpp)
    value =
        element_now_or_late(r, block, block->address, block->dtype, kind == Reduction::Fn::kSum);
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  }
  if (!value) {
    return nullptr;
  }
  if (graph::kind(x.dtype()) == 'f' && fn != Reduction::Fn::kSum) {
    const double v = PyFloat_AsDouble(value->ptr());
    if (v == 0.0 || std::isnan(v)) {
      return nullptr;
    }
  }
  if (kind == Reduction::Fn::kMean) {
    const py::module_ numpy = loaded_module("numpy");
    if (graph::kind(x.dtype()) != 'f') {  // (the ints' exact sum, as NumPy's float64 one)
      *value = numpy.attr("float64")(*value);
    }
    const py::object count = numpy.attr("intp")(x.size());
    *value = value->attr("dtype").attr("type")(*value / count);
  }
  return value->release().ptr();
}

// The mean of a split reduction: its sums divided on the device by the count each adds, as NumPy's
// `_mean` divides them (true_divide by an intp, into the sums' dtype: for float32 sums the float32
// quotient, whether NumPy divides in float32 or in float64 and rounds, for a count that float32
// holds exactly). nullptr where the device did not take it.
PyObject* split_mean(Residency& r, std::shared_ptr<DeviceBlock> sums, std::int64_t count) {
  const py::object value = wrap(whole_value(std::move(sums)));
  const py::object divide = loaded_module("operator").attr("itruediv");
  const py::int_ n(count);
  PyObject* const args[] = {value.ptr(), n.ptr()};
  return run_device_inplace(r, divide.ptr(), args, 2, nullptr);
}

}  // namespace

bool is_reduction(PyObject* fn) {
  return kind_of(fn).has_value();
}

PyObject* run_device_reduction(Residency& r, PyObject* fn, PyObject* const* args, std::size_t nargs,
                               PyObject* kwnames) {
  const std::optional<Reduction::Fn> kind = kind_of(fn);
  const std::optional<Call> call = kind ? parse(args, nargs, kwnames) : std::nullopt;
  const DeviceValue* x = call ? device_value_of(call->x) : nullptr;
  if (x == nullptr || x->shape.empty() || !runs_here(*kind, x->dtype())) {
    return nullptr;
  }
  const std::optional<std::vector<bool>> reduced = reduced_axes(*x, *call);
  const std::optional<std::vector<LoopDim>> dims = reduced ? loop_dims(*x, *reduced) : std::nullopt;
  Planned planned;
  planned.one = dims ? plan_of(*x, *dims) : std::nullopt;
  if (dims && !planned.one) {
    planned.split = split_plan(*x, *dims, *kind);
  }
  if (!planned.one && !planned.split) {
    return nullptr;
  }
  const bool extreme = kind == Reduction::Fn::kMax || kind == Reduction::Fn::kMin;
  const bool floats = graph::kind(x->dtype()) == 'f';
  // (an array only the host holds, as a caller's array no kernel read: the host's, copying
  // nothing)
  if (planned.one && planned.one->way == Plan::Way::kAll && x->block->host_valid &&
      !x->block->device_valid) {
    return nullptr;
  }
  std::vector<std::int64_t> shape;  // the result's
  std::int64_t count = 1;           // the elements each result element reduces
  for (std::size_t d = 0; d < x->shape.size(); ++d) {
    if (!(*reduced)[d] || call->keepdims) {
      shape.push_back((*reduced)[d] ? 1 : x->shape[d]);
    }
    count *= (*reduced)[d] ? x->shape[d] : 1;
  }
  if (*kind == Reduction::Fn::kMean && !floats && !exact_int_mean(x->dtype(), count)) {
    return nullptr;
  }
  try {
    if (shape.empty()) {
      return full_scalar(r, planned, *kind, *x);
    }
    // (a float max or min over a row: which of +0.0 and -0.0, and which NaN, depends on the order
    // of comparisons)
    if (extreme && floats && planned.one && planned.one->way != Plan::Way::kOrdered) {
      return nullptr;
    }
    constexpr std::int64_t kFloat32Exact = std::int64_t{1} << 24;
    const bool mean_after = planned.split && *kind == Reduction::Fn::kMean;
    if (mean_after && (!floats || (x->dtype() == DType::kFloat32 && count > kFloat32Exact))) {
      return nullptr;  // (a split mean of ints: the in-place division keeps the int64 sums' dtype)
    }
    std::shared_ptr<DeviceBlock> block = planned.run(r, *kind, *x, shape);
    if (!block) {
      return nullptr;
    }
    return mean_after ? split_mean(r, std::move(block), count)
                      : wrap(whole_value(std::move(block))).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  }
}

}  // namespace sot::graph
