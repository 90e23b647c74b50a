// The rules of np.hanning (a graph op making a window), np.fft.rfft and np.fft.rfftfreq, and
// np.insert with one int position (library ops: NumPy's function runs where the graph runs).
// Shapes from graph/rules/library_rules.hpp; the dtypes of rfft (NumPy 2 keeps float32 as
// complex64) and rfftfreq from the running NumPy (numpy_probe.cpp).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "graph/rules/library_rules.hpp"
#include "translator/numpy/numpy_call.hpp"

namespace py = pybind11;

namespace sot::translator {

using graph::DType;
using graph::Shape;
using graph::ValueInfo;

VarPtr OpcodeExecutor::NumpyCall::hanning() {
  if (!get("M")) {
    refuse("no M");
  }
  const std::int64_t m = int_param("M", 0);
  return result(array_of(DType::kFloat64, {m > 0 ? m : 0}));
}

VarPtr OpcodeExecutor::NumpyCall::rfft() {
  no_out();
  const ValueInfo a = array_param("a");
  if (a.scalar || a.ndim() == 0) {
    refuse("a NumPy scalar or a 0-d array");
  }
  if (graph::kind(a.dtype) == 'c') {
    refuse("a complex input (NumPy 1.x drops the imaginary part with a warning, 2.x raises)");
  }
  const std::int64_t n = int_param("n", -1);
  const auto axis = static_cast<int>(int_param("axis", -1));
  const py::object norm = value_of("norm");
  const std::string nm = PyUnicode_Check(norm.ptr()) ? str_of(norm) : "";
  if (!norm.is_none() && nm != "backward" && nm != "ortho" && nm != "forward") {
    refuse("the norm " + str_of(py::repr(norm)));
  }
  const auto shape = graph::rfft_shape(
      a.shape, get("n") && !value_of("n").is_none() ? std::optional(n) : std::nullopt, axis, &why);
  if (!shape) {
    refuse(why);
  }
  return result(probed(probe(), *shape));
}

VarPtr OpcodeExecutor::NumpyCall::rfftfreq() {
  if (!get("n")) {
    refuse("no n");
  }
  const std::int64_t n = int_param("n", 0);
  if (n < 1) {
    refuse("n " + std::to_string(n) + " (not modelled: ZeroDivisionError or an empty result)");
  }
  const py::object d = value_of("d");
  const bool number = PyFloat_CheckExact(d.ptr()) != 0 || PyLong_CheckExact(d.ptr()) != 0;
  int overflow = 0;
  const long long whole =
      PyLong_CheckExact(d.ptr()) != 0 ? PyLong_AsLongLongAndOverflow(d.ptr(), &overflow) : 0;
  const double v = number && overflow == 0 ? PyFloat_AsDouble(d.ptr()) : 0.0;
  PyErr_Clear();
  if (!d.is_none() &&
      (!number || overflow != 0 || std::llabs(whole) > (1LL << 30) || v == 0.0 || std::isnan(v))) {
    refuse("the d " + str_of(py::repr(d)) + " (not a nonzero Python number)");
  }
  if (!value_of("device").is_none()) {
    refuse("device=");
  }
  return result(probed(probe(), {n / 2 + 1}));
}

VarPtr OpcodeExecutor::NumpyCall::insert() {
  const ValueInfo arr = array_param("arr");
  if (arr.scalar || arr.ndim() == 0) {
    refuse("a NumPy scalar or a 0-d array");
  }
  if (!get("obj") || !get("values")) {
    refuse("its arguments");
  }
  const std::int64_t obj = int_param("obj", 0);
  const bool flat = value_of("axis").is_none();
  const auto axis = static_cast<int>(int_param("axis", 0));
  const bool one_d = flat || arr.ndim() == 1;
  // How many items go in: the values as an array of arr's dtype (a scalar: one; a 1-d array: its
  // length along a 1-d result).
  std::int64_t count = 1;
  const VarPtr values = get("values");
  if (ex.is_array_like(values)) {
    const ValueInfo v = ex.static_info(ex.array_operand(values).id);
    if (graph::kind(v.dtype) == 'c' && graph::kind(arr.dtype) != 'c') {
      refuse("complex values into a real array (NumPy warns)");
    }
    if (v.ndim() > 1 || (v.ndim() == 1 && !one_d)) {
      refuse("values of " + std::to_string(v.ndim()) + " dimensions");
    }
    count = v.ndim() == 1 ? v.shape[0] : 1;
  } else {
    py::object c = value_of("values");
    graph::PyScalar unused;
    if (!graph::python_scalar(c.ptr(), &unused)) {
      refuse("values that are not a Python number or an array");
    }
    py::dict kw;
    kw["dtype"] = py::str(graph::name(arr.dtype));
    std::string error;
    if (!quiet_call(np, np.attr("asarray"), py::make_tuple(c), kw, &error)) {
      refuse("values it cannot cast to " + std::string(graph::name(arr.dtype)) + " (" + error +
             ")");
    }
  }
  const auto shape = graph::insert_shape(arr.shape, obj, count, axis, flat, &why);
  if (!shape) {
    refuse(why);
  }
  return result(array_of(arr.dtype, *shape));
}

VarPtr OpcodeExecutor::NumpyCall::convolve() {
  const ValueInfo a = array_param("a");
  const ValueInfo v = array_param("v");
  if (a.scalar || v.scalar || a.ndim() != 1 || v.ndim() != 1) {
    refuse("operands that are not 1-d arrays");
  }
  const std::int64_t n = a.shape[0];
  const std::int64_t m = v.shape[0];
  if (n == 0 || m == 0) {
    refuse("an empty operand (raises ValueError)");
  }
  const py::object mode = value_of("mode");
  const std::string md = mode.is_none() ? (name == "convolve" ? "full" : "valid")
                                        : (PyUnicode_Check(mode.ptr()) ? str_of(mode) : "");
  std::int64_t length = 0;
  if (md == "full") {
    length = n + m - 1;
  } else if (md == "same") {
    length = std::max(n, m);
  } else if (md == "valid") {
    length = std::max(n, m) - std::min(n, m) + 1;
  } else {
    refuse("the mode " + str_of(py::repr(mode)));
  }
  return result(probed(probe(), {length}));
}

VarPtr OpcodeExecutor::NumpyCall::interp() {
  const VarPtr xv = get("x");
  const bool number =
      xv && !ex.is_array_like(xv) &&
      (PyFloat_CheckExact(value_of("x").ptr()) || PyLong_CheckExact(value_of("x").ptr()));
  const ValueInfo x = number ? array_of(DType::kFloat64, {}) : array_param("x");
  const ValueInfo xp = array_param("xp");
  const ValueInfo fp = array_param("fp");
  if (xp.scalar || fp.scalar || xp.ndim() != 1 || fp.ndim() != 1 || xp.shape != fp.shape ||
      xp.shape[0] == 0) {
    refuse("xp and fp that are not 1-d arrays of one nonzero length");
  }
  if (!value_of("period").is_none()) {
    refuse("period=");
  }
  for (const char* p : {"left", "right"}) {
    const py::object v = value_of(p);
    if (!v.is_none() && !PyFloat_CheckExact(v.ptr()) && !PyLong_CheckExact(v.ptr())) {
      refuse(std::string("a ") + p + " that is not a Python number");
    }
  }
  return result(probed(probe(), x.scalar || number ? Shape{} : x.shape));
}

}  // namespace sot::translator
