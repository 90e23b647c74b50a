// The rules of np.linalg's functions, np.cov and np.histogram, captured as library ops: each op
// runs the NumPy function itself where the graph runs (LinAlgError for a singular matrix comes
// from NumPy), its shapes from graph/rules/linalg_rules.hpp, its dtypes (float32 in, float32 out;
// ints to float64; cov's float64) from the running NumPy (numpy_probe.cpp). A call that may raise
// on its data is refused while side effects wait to be replayed after the graph.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "graph/rules/linalg_rules.hpp"
#include "translator/numpy/numpy_call.hpp"

namespace py = pybind11;

namespace sot::translator {

using graph::Shape;
using graph::ValueInfo;

namespace {

// A Python int, not a bool.
bool plain_int(const py::handle& v) {
  return PyLong_CheckExact(v.ptr()) != 0;
}

// A Python int or float (not a bool), finite.
bool finite_real(const py::handle& v, double* out) {
  if (!PyLong_CheckExact(v.ptr()) && !PyFloat_CheckExact(v.ptr())) {
    return false;
  }
  *out = PyFloat_AsDouble(v.ptr());
  if (PyErr_Occurred() != nullptr) {
    PyErr_Clear();
    return false;
  }
  return std::isfinite(*out);
}

}  // namespace

VarPtr OpcodeExecutor::NumpyCall::linalg_square() {
  const ValueInfo in = array_param("a");
  if (in.scalar) {
    refuse("a NumPy scalar");
  }
  const auto square = graph::square_stack(in.shape, &why);
  if (!square) {
    refuse(why);
  }
  const bool det = name == "linalg.det";
  const Shape shape = det ? Shape(square->begin(), square->end() - 2) : *square;
  const py::object sample = probe();
  if (!det) {
    raises_on_data("LinAlgError");
  }
  return result(probed(sample, shape));
}

VarPtr OpcodeExecutor::NumpyCall::linalg_solve() {
  const ValueInfo a = array_param("a");
  const ValueInfo b = array_param("b");
  if (a.scalar || b.scalar) {
    refuse("a NumPy scalar");
  }
  const auto shape = graph::solve_shape(a.shape, b.shape, &why);
  if (!shape) {
    refuse(why);
  }
  const py::object sample = probe();
  raises_on_data("LinAlgError");
  return result(probed(sample, *shape));
}

VarPtr OpcodeExecutor::NumpyCall::linalg_factor() {
  const ValueInfo in = array_param("a");
  if (in.scalar) {
    refuse("a NumPy scalar");
  }
  std::optional<std::vector<Shape>> shapes;
  if (name == "linalg.qr") {
    const py::object mode = value_of("mode");
    const std::string m = PyUnicode_Check(mode.ptr()) ? str_of(mode) : "";
    if (!mode.is_none() && m != "reduced" && m != "complete") {
      refuse("mode " + str_of(py::repr(mode)));
    }
    shapes = graph::qr_shapes(in.shape, m == "complete", &why);
  } else if (name == "linalg.svd") {
    const bool full = !get("full_matrices") || bool_param("full_matrices");
    const bool uv = !get("compute_uv") || bool_param("compute_uv");
    if (bool_param("hermitian")) {
      refuse("hermitian=True");
    }
    shapes = graph::svd_shapes(in.shape, full, uv, &why);
  } else {
    const py::object uplo = value_of("UPLO");
    const std::string u = PyUnicode_Check(uplo.ptr()) ? str_of(uplo) : "";
    if (!uplo.is_none() && u != "L" && u != "U") {
      refuse("UPLO " + str_of(py::repr(uplo)));
    }
    shapes = graph::eigh_shapes(in.shape, &why);
  }
  if (!shapes) {
    refuse(why);
  }
  const py::object sample = probe();
  if (name != "linalg.qr") {
    raises_on_data("LinAlgError (no convergence)");
  }
  if (shapes->size() == 1) {
    return result(probed(sample, (*shapes)[0]));  // svd(compute_uv=False): S alone
  }
  return results(sample, *shapes);
}

VarPtr OpcodeExecutor::NumpyCall::linalg_norm() {
  using K = graph::NormOrder::Kind;
  const ValueInfo x = array_param("x");
  if (x.scalar) {
    refuse("a NumPy scalar");
  }
  graph::NormOrder ord;
  const py::object o = value_of("ord");
  if (plain_int(o) || PyFloat_CheckExact(o.ptr())) {
    ord.kind = K::kNumber;
    ord.value = PyFloat_AsDouble(o.ptr());
    if (PyErr_Occurred() != nullptr || std::isnan(ord.value)) {
      PyErr_Clear();
      refuse("the ord " + str_of(py::repr(o)));
    }
  } else if (PyUnicode_Check(o.ptr()) && (str_of(o) == "fro" || str_of(o) == "f")) {
    ord.kind = K::kFro;
  } else if (PyUnicode_Check(o.ptr()) && str_of(o) == "nuc") {
    ord.kind = K::kNuc;
  } else if (!o.is_none()) {
    refuse("the ord " + str_of(py::repr(o)));
  }
  std::vector<int> axes;
  const bool all = !axes_param("axis", &axes);
  const bool keepdims = bool_param("keepdims");
  bool svd = false;
  const auto shape = graph::norm_shape(x.shape, ord, axes, all, keepdims, &svd, &why);
  if (!shape) {
    refuse(why);
  }
  const py::object sample = probe();
  if (svd) {
    raises_on_data("LinAlgError (no convergence)");
  }
  return result(probed(sample, *shape));
}

VarPtr OpcodeExecutor::NumpyCall::cov() {
  const ValueInfo m = array_param("m");
  if (m.scalar) {
    refuse("a NumPy scalar");
  }
  for (const char* p : {"y", "fweights", "aweights"}) {
    if (!value_of(p).is_none()) {
      refuse(std::string(p) + "=");
    }
  }
  const bool rowvar = !get("rowvar") || bool_param("rowvar");
  bool_param("bias");
  const py::object ddof = value_of("ddof");
  if (!ddof.is_none() && !plain_int(ddof)) {
    refuse("a ddof that is not an int");
  }
  dtype_param("dtype");
  const auto shape = graph::cov_shape(m.shape, rowvar, &why);
  if (!shape) {
    refuse(why);
  }
  // (samples of two variables, not one: the result is squeezed)
  return result(probed(probe(2), *shape));
}

VarPtr OpcodeExecutor::NumpyCall::histogram() {
  const ValueInfo a = array_param("a");
  if (a.scalar) {
    refuse("a NumPy scalar");
  }
  const py::object bins = value_of("bins");
  if (!bins.is_none() && !plain_int(bins)) {
    refuse("bins that are not an int");
  }
  const py::object range = value_of("range");
  double lo = 0;
  double hi = 0;
  const bool pair =
      (PyTuple_CheckExact(range.ptr()) || PyList_CheckExact(range.ptr())) && py::len(range) == 2;
  if (!pair || !finite_real(range[py::int_(0)], &lo) || !finite_real(range[py::int_(1)], &hi) ||
      lo > hi) {
    refuse(
        "a range that is not two finite numbers in order (without one the edges come from "
        "the data)");
  }
  const py::object density = value_of("density");
  if (!density.is_none() && !PyBool_Check(density.ptr())) {
    refuse("a density that is not a bool");
  }
  if (!value_of("weights").is_none()) {
    refuse("weights=");
  }
  int overflow = 0;
  const long long n = bins.is_none() ? 10 : PyLong_AsLongLongAndOverflow(bins.ptr(), &overflow);
  if (overflow != 0) {
    refuse("bins out of range");
  }
  const auto shapes = graph::histogram_shapes(n, &why);
  if (!shapes) {
    refuse(why);
  }
  return results(probe(), *shapes);
}

}  // namespace sot::translator
