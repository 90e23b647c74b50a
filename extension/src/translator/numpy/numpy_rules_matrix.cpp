// The rules of np.diag, np.trace, np.vander and np.polyval (graph ops that run NumPy's function)
// and of np.linalg.lstsq (a library op of four results: the residuals' size is known only when it
// runs). Shapes from graph/rules/library_rules.hpp; dtypes other than the input's from the running
// NumPy (numpy_probe.cpp).
#include <cmath>
#include <string>
#include <vector>

#include "graph/rules/library_rules.hpp"
#include "translator/numpy/numpy_call.hpp"

namespace py = pybind11;

namespace sot::translator {

using graph::Shape;
using graph::ValueInfo;

VarPtr OpcodeExecutor::NumpyCall::diag() {
  const ValueInfo v = array_param("v");
  if (v.scalar || v.ndim() == 0) {
    refuse("a 0-d array or NumPy scalar (raises ValueError)");
  }
  const std::int64_t k = int_param("k", 0);
  const auto shape = graph::diag_shape(v.shape, k, &why);
  if (!shape) {
    refuse(why);
  }
  g.view = v.ndim() == 2;  // (a read-only view of the diagonal)
  return result(array_of(v.dtype, *shape));
}

VarPtr OpcodeExecutor::NumpyCall::trace() {
  no_out();
  const ValueInfo a = array_param("a");
  if (a.scalar) {
    refuse("a NumPy scalar");
  }
  int_param("offset", 0);
  const auto axis1 = static_cast<int>(int_param("axis1", 0));
  const auto axis2 = static_cast<int>(int_param("axis2", 1));
  dtype_param("dtype");  // (a dtype it knows; its effect comes from NumPy)
  const auto shape = graph::trace_shape(a.shape, axis1, axis2, &why);
  if (!shape) {
    refuse(why);
  }
  // (The dtype of a sum: ints widened, bools counted.)
  return result(probed(probe(), *shape));
}

VarPtr OpcodeExecutor::NumpyCall::vander() {
  const ValueInfo x = array_param("x");
  if (x.scalar) {
    refuse("a NumPy scalar (raises ValueError)");
  }
  bool_param("increasing");
  const std::int64_t n = int_param("N", x.ndim() == 1 ? x.shape[0] : 0);
  const auto shape = graph::vander_shape(x.shape, n, &why);
  if (!shape) {
    refuse(why);
  }
  // (x's dtype promoted with int's)
  return result(probed(probe(), *shape));
}

VarPtr OpcodeExecutor::NumpyCall::polyval() {
  const ValueInfo p = array_param("p");
  if (p.scalar || p.ndim() != 1) {
    refuse("coefficients that are not a 1-d array");
  }
  // x a Python number, a NumPy scalar or a 0-d array: NumPy makes it a 0-d array and adds each
  // coefficient (a NumPy scalar) to y * x, scalars all along (no value-based casting among
  // them); the result a NumPy scalar of the dtype the running NumPy gives.
  const VarPtr xv = get("x");
  if (xv && xv->kind() == Variable::Kind::kConst &&
      (PyFloat_CheckExact(xv->value().ptr()) || PyLong_CheckExact(xv->value().ptr()))) {
    return result(probed(probe(), Shape{}));
  }
  const ValueInfo x = array_param("x");
  if (x.scalar || x.ndim() == 0) {
    return result(probed(probe(), Shape{}));
  }
  // y = y * x + p[i] for each coefficient, y from zeros_like(x): NumPy 1.x's value-based casting
  // of the coefficients (NumPy scalars) would make the dtype depend on their values unless they
  // cast safely to x's dtype.
  if (st.promotion == graph::ScalarPromotion::kValueBased &&
      graph::promote_types(p.dtype, x.dtype) != x.dtype) {
    refuse("coefficients of " + std::string(graph::name(p.dtype)) + " with an x of " +
           std::string(graph::name(x.dtype)) +
           " (value-based casting: the dtype would depend on their values)");
  }
  return result(probed(probe(), x.shape));
}

VarPtr OpcodeExecutor::NumpyCall::linalg_lstsq() {
  const ValueInfo a = array_param("a");
  const ValueInfo b = array_param("b");
  if (a.scalar || b.scalar) {
    refuse("a NumPy scalar");
  }
  if (!get("rcond") && str_of(np.attr("__version__")).rfind("1.", 0) == 0) {
    refuse("no rcond (NumPy 1.x warns that its default changes)");
  }
  const py::object rcond = value_of("rcond");
  if (!rcond.is_none()) {
    const bool number = PyFloat_CheckExact(rcond.ptr()) != 0 || PyLong_CheckExact(rcond.ptr()) != 0;
    const double r = number ? PyFloat_AsDouble(rcond.ptr()) : 0.0;
    PyErr_Clear();
    if (!number || !std::isfinite(r)) {
      refuse("the rcond " + str_of(py::repr(rcond)));
    }
  }
  const auto shapes = graph::lstsq_shapes(a.shape, b.shape, &why);
  if (!shapes) {
    refuse(why);
  }
  const py::object sample = probe();
  raises_on_data("LinAlgError (no convergence)");
  // The residuals: (1,) or (K,) when a has full column rank and more rows than columns, else
  // empty.
  return results(sample, *shapes, {-1, kOwnCount, -1, -1});
}

}  // namespace sot::translator
