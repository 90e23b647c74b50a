#include "graph/rules/reductions.hpp"

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/loaded_module.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

// The reductions a group may end in, by op name.
const std::map<std::string, Reduction::Fn>& reduction_names() {
  static const std::map<std::string, Reduction::Fn> names = [] {
    std::map<std::string, Reduction::Fn> m;
    for (const Reduction::Fn fn : Reduction::kFns) {
      m.emplace(Reduction::name(fn), fn);
    }
    return m;
  }();
  return names;
}

// A constant argument named `name` (keyword, or positional at `position`), or nullptr when absent.
// False when it is present but not a constant.
bool constant_arg(const Op& op, const char* name, std::size_t position, py::object* out) {
  for (const auto& [key, arg] : op.kwargs) {
    if (key == name) {
      if (arg.kind != Arg::Kind::kConst) {
        return false;
      }
      *out = arg.constant;
      return true;
    }
  }
  if (op.args.size() > position) {
    if (op.args[position].kind != Arg::Kind::kConst) {
      return false;
    }
    *out = op.args[position].constant;
  }
  return true;
}

// Which axis the reduction is over: true and `all` for None, true for the last axis; false
// otherwise (several axes, another axis).
bool axis_of(const py::object& axis, int ndim, bool* all) {
  if (!axis || axis.is_none()) {
    *all = true;
    return true;
  }
  if (!PyLong_CheckExact(axis.ptr())) {
    return false;
  }
  const long a = PyLong_AsLong(axis.ptr());
  if (a == -1 && PyErr_Occurred() != nullptr) {
    PyErr_Clear();
    return false;
  }
  *all = false;
  return a == -1 || a == ndim - 1;
}

// Where NumPy's pairwise recursion splits a range of n elements: n/2 rounded down to a multiple
// of 8.
std::int64_t pairwise_split(std::int64_t n) {
  const std::int64_t half = n / 2;
  return half - half % 8;
}

void collect_pairwise(std::int64_t lo, std::int64_t hi, std::int64_t block,
                      std::vector<std::pair<std::int64_t, std::int64_t>>& out) {
  const std::int64_t n = hi - lo;
  if (n <= block || n <= kPairwiseLeaf) {
    out.emplace_back(lo, hi);
    return;
  }
  const std::int64_t half = pairwise_split(n);
  collect_pairwise(lo, lo + half, block, out);
  collect_pairwise(lo + half, hi, block, out);
}

template <typename T>
T combine_pairwise(std::int64_t n, std::int64_t block, const std::vector<T>& leaves,
                   std::size_t& next) {
  if (n <= block || n <= kPairwiseLeaf) {
    return leaves[next++];
  }
  const std::int64_t half = pairwise_split(n);
  const T left = combine_pairwise(half, block, leaves, next);
  const T right = combine_pairwise(n - half, block, leaves, next);
  return static_cast<T>(left + right);
}

// True when the running NumPy's add.reduce of `x` (1-d) is the sum in `order`.
bool sums_as(SumOrder order, const py::object& x, std::int64_t chunk) {
  const auto n = x.attr("size").cast<std::int64_t>();
  const py::object add = loaded_module("numpy").attr("add");
  const std::int64_t block = order == SumOrder::kChunked ? chunk : 1024;
  std::vector<double> leaves;
  for (const auto& [lo, hi] : sum_leaves(order, n, block, chunk)) {
    leaves.push_back(add.attr("reduce")(x[py::slice(lo, hi, 1)]).cast<double>());
  }
  const bool single = x.attr("dtype").attr("itemsize").cast<int>() == 4;
  const double eager = add.attr("reduce")(x).cast<double>();
  if (single) {
    const std::vector<float> f(leaves.begin(), leaves.end());
    return static_cast<double>(combine_sums<float>(order, n, block, f)) == eager;
  }
  return combine_sums<double>(order, n, block, leaves) == eager;
}

}  // namespace

std::string Reduction::ufunc_name() const {
  switch (fn) {
    case Fn::kMax:
      return "maximum";
    case Fn::kMin:
      return "minimum";
    default:
      break;
  }
  return "add";
}

const char* Reduction::name(Fn fn) {
  switch (fn) {
    case Fn::kMean:
      return "mean";
    case Fn::kMax:
      return "max";
    case Fn::kMin:
      return "min";
    default:
      break;
  }
  return "sum";
}

std::string Reduction::text() const {
  std::string s = name(fn);
  s += all ? " over all axes" : " over the last axis";
  s += ordered ? ", in order" : "";
  return keepdims ? s + ", keepdims" : s;
}

DType sum_dtype(DType t) {
  switch (kind(t)) {
    case 'b':
    case 'i':
      return DType::kInt64;
    case 'u':
      return DType::kUInt64;
    default:
      return t;
  }
}

std::optional<Reduction> fusable_reduction(const Graph& graph, const Op& op, std::string* why) {
  const auto found = reduction_names().find(op.name);
  if (found == reduction_names().end() || op.mutates || op.view || op.args.empty() ||
      op.args[0].kind != Arg::Kind::kValue) {
    *why = "not a reduction";
    return std::nullopt;
  }
  for (const auto& kw : op.kwargs) {
    if (kw.first != "axis" && kw.first != "keepdims") {
      *why = "a reduction with " + kw.first + "=";
      return std::nullopt;
    }
  }
  if (op.args.size() > 2) {
    *why = "a reduction with more than an axis as positional arguments";
    return std::nullopt;
  }
  const ValueInfo& in = graph.value(op.args[0].value).info;
  const ValueInfo& result = graph.value(op.result).info;
  if ((in.dtype != DType::kFloat32 && in.dtype != DType::kFloat64) || result.dtype != in.dtype ||
      in.scalar || in.ndim() == 0) {
    *why = "a reduction of " + in.text() + " (fused: float32 and float64)";
    return std::nullopt;
  }
  Reduction r;
  r.fn = found->second;
  py::object axis;
  py::object keepdims;
  if (!constant_arg(op, "axis", 1, &axis) || !constant_arg(op, "keepdims", 99, &keepdims) ||
      !axis_of(axis, in.ndim(), &r.all)) {
    *why = "a reduction over an axis other than the last";
    return std::nullopt;
  }
  r.keepdims = keepdims && keepdims.ptr() == Py_True;
  if (keepdims && !keepdims.is_none() && !PyBool_Check(keepdims.ptr())) {
    *why = "a reduction with a non-bool keepdims";
    return std::nullopt;
  }
  if (in.ndim() == 1 && !r.keepdims) {
    r.all = true;  // the one axis: the same order as over all axes
  }
  if (r.all && (r.keepdims || !result.scalar)) {
    *why = "a full reduction with keepdims";
    return std::nullopt;
  }
  if (r.all && (r.fn == Reduction::Fn::kMax || r.fn == Reduction::Fn::kMin)) {
    *why = "max/min over all axes (the order of +0.0 and -0.0 decides the result)";
    return std::nullopt;
  }
  return r;
}

std::vector<std::pair<std::int64_t, std::int64_t>> sum_leaves(SumOrder order, std::int64_t n,
                                                              std::int64_t block,
                                                              std::int64_t chunk) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  if (order == SumOrder::kChunked) {
    for (std::int64_t lo = 0; lo < n; lo += chunk) {
      out.emplace_back(lo, std::min(n, lo + chunk));
    }
  } else {
    collect_pairwise(0, n, block, out);
  }
  return out;
}

template <typename T>
T combine_sums(SumOrder order, std::int64_t n, std::int64_t block, const std::vector<T>& leaves) {
  T total = 0;
  if (order == SumOrder::kChunked) {
    for (const T leaf : leaves) {
      total = static_cast<T>(total + leaf);
    }
    return total;
  }
  std::size_t next = 0;
  return static_cast<T>(total + combine_pairwise<T>(n, block, leaves, next));
}

template float combine_sums<float>(SumOrder, std::int64_t, std::int64_t, const std::vector<float>&);
template double combine_sums<double>(SumOrder, std::int64_t, std::int64_t,
                                     const std::vector<double>&);

SumOrder numpy_sum_order(std::int64_t bufsize, const py::module_& numpy) {
  static std::mutex lock;
  static std::map<std::int64_t, SumOrder> known;
  const std::lock_guard<std::mutex> hold(lock);
  const auto found = known.find(bufsize);
  if (found != known.end()) {
    return found->second;
  }
  // Values over sixteen orders of magnitude: another order of additions gives another sum.
  const std::int64_t n = 3 * bufsize + 1237;
  const py::object rng = numpy.attr("random").attr("default_rng")(20261124);
  const py::object x = rng.attr("standard_normal")(n).attr("__mul__")(
      numpy.attr("power")(10.0, rng.attr("uniform")(-8.0, 8.0, n)));
  SumOrder order = SumOrder::kUnknown;
  for (const SumOrder candidate : {SumOrder::kPairwise, SumOrder::kChunked}) {
    if (order == SumOrder::kUnknown && sums_as(candidate, x, bufsize) &&
        sums_as(candidate, x.attr("astype")("float32"), bufsize)) {
      order = candidate;
    }
  }
  known[bufsize] = order;
  return order;
}

}  // namespace sot::graph
