// The rules of np.count_nonzero (over all axes NumPy 1.x's Python int, NumPy 2's intp scalar;
// intp counts over some axes), np.median, np.percentile, np.quantile and the NaN-skipping
// reductions (np.nansum, np.nanmean, np.nanmax, np.nanmin, np.nanstd, np.nanvar, np.nanmedian):
// graph ops that run NumPy's function. Shapes as a reduction's over the axes
// (graph/rules/rules.hpp), with q's dimensions first for percentile and quantile; dtypes from the
// running NumPy (numpy_probe.cpp). As they may warn on their data (NaNs, an all-NaN slice), they
// are refused while side effects wait to be replayed after the graph, so that the warning keeps its
// place among them.
#include <cmath>
#include <string>
#include <vector>

#include "translator/numpy/numpy_call.hpp"

namespace py = pybind11;

namespace sot::translator {

using graph::ReduceKind;
using graph::Shape;
using graph::ValueInfo;

namespace {

// Whether `q` (a Python number, or a flat list or tuple of them) lies in [0, top]; its count of
// items in `count` (-1: one number).
bool quantiles_in(const py::object& q, double top, std::int64_t* count) {
  const auto in_range = [&](const py::handle v) {
    if (!(PyFloat_CheckExact(v.ptr()) || PyLong_CheckExact(v.ptr()))) {
      return false;
    }
    const double d = PyFloat_AsDouble(v.ptr());
    if (d == -1.0 && PyErr_Occurred() != nullptr) {
      PyErr_Clear();
      return false;
    }
    return d >= 0.0 && d <= top;
  };
  if (PyList_CheckExact(q.ptr()) || PyTuple_CheckExact(q.ptr())) {
    *count = static_cast<std::int64_t>(py::len(q));
    for (const py::handle v : q) {
      if (!in_range(v)) {
        return false;
      }
    }
    return *count > 0;
  }
  *count = -1;
  return in_range(q);
}

}  // namespace

VarPtr OpcodeExecutor::NumpyCall::statistic() {
  no_out();
  if (bool_param("overwrite_input")) {
    refuse("overwrite_input=True");
  }
  const ValueInfo in = array_param("a");
  if (in.scalar) {
    refuse("a NumPy scalar");
  }
  for (const std::int64_t d : in.shape) {
    if (d == 0) {
      refuse("an empty array (NumPy warns or raises)");
    }
  }
  std::vector<int> axes;
  const bool all = !axes_param("axis", &axes);
  const bool keepdims = bool_param("keepdims");
  raises_on_data("a RuntimeWarning (NaNs, an all-NaN slice)");
  std::int64_t count = -1;
  if (name == "percentile" || name == "quantile") {
    if (!quantiles_in(value_of("q"), name == "percentile" ? 100.0 : 1.0, &count)) {
      refuse("q " + str_of(py::repr(value_of("q"))) + " that is not numbers in range");
    }
    const py::object method = value_of("method");
    if (!method.is_none() && str_of(method) != "linear") {
      refuse("a method other than linear");
    }
  }
  if (name == "nanstd" || name == "nanvar") {
    const py::object ddof = value_of("ddof");
    if (!ddof.is_none() && !PyLong_CheckExact(ddof.ptr())) {
      refuse("a non-int ddof");
    }
  }
  auto reduced =
      graph::reduce_result(ReduceKind::kSame, in, axes, all, keepdims, std::nullopt, &why);
  if (!reduced) {
    refuse(why);
  }
  Shape shape = count >= 0 ? Shape{count} : Shape{};
  shape.insert(shape.end(), reduced->shape.begin(), reduced->shape.end());
  return result(probed(probe(), shape));
}

VarPtr OpcodeExecutor::NumpyCall::count_nonzero() {
  const ValueInfo in = array_param("a");
  std::vector<int> axes;
  const bool all = !axes_param("axis", &axes);
  const bool keepdims = bool_param("keepdims");
  if (all && !keepdims) {
    // (NumPy 1.x gives a Python int, a number made where the graph runs; NumPy 2 an intp scalar)
    const py::object sample = probe();
    if (PyLong_CheckExact(sample.ptr())) {
      ValueInfo count;
      count.dtype = graph::DType::kInt64;
      count.scalar = true;
      count.python = 'i';
      return result(count);
    }
    return result(probed(sample, {}));
  }
  auto reduced =
      graph::reduce_result(ReduceKind::kSame, in, axes, all, keepdims, std::nullopt, &why);
  if (!reduced) {
    refuse(why);
  }
  // (intp counts, an array even of one element)
  return result(probed(probe(), reduced->shape));
}

}  // namespace sot::translator
