// The rules of np.searchsorted (and ndarray.searchsorted), np.digitize and np.isclose: graph ops
// that run NumPy's function, their results of the searched (or compared) values' shape, their
// dtypes (intp, bool) and whether a result is a NumPy scalar from the running NumPy
// (numpy_probe.cpp). np.digitize raises on bins that are not monotonic: refused while side effects
// wait to be replayed after the graph.
#include <string>

#include "graph/ir/shape.hpp"
#include "translator/numpy/numpy_call.hpp"

namespace py = pybind11;

namespace sot::translator {

using graph::Shape;
using graph::ValueInfo;

namespace {

// The shape NumPy gives an operand of a ufunc-like function: an array's, or () for a NumPy scalar
// or a Python number.
Shape operand_shape(const graph::Operand& o) {
  return !o.is_python && !o.info.scalar ? o.info.shape : Shape{};
}

}  // namespace

VarPtr OpcodeExecutor::NumpyCall::searchsorted() {
  const ValueInfo a = array_param("a");
  if (a.scalar || a.ndim() != 1) {
    refuse("a sorted array that is not 1-d (raises ValueError)");
  }
  const py::object side = value_of("side");
  if (!side.is_none() &&
      !(PyUnicode_Check(side.ptr()) && (str_of(side) == "left" || str_of(side) == "right"))) {
    refuse("the side " + str_of(py::repr(side)));
  }
  if (!value_of("sorter").is_none()) {
    refuse("sorter=");
  }
  const VarPtr v = get("v");
  return result(probed(probe(), v ? operand_shape(static_operand(v)) : Shape{}));
}

VarPtr OpcodeExecutor::NumpyCall::digitize() {
  const ValueInfo x = array_param("x");
  const ValueInfo bins = array_param("bins");
  if (bins.scalar || bins.ndim() != 1) {
    refuse("bins that are not 1-d (raises ValueError)");
  }
  bool_param("right");
  raises_on_data("ValueError (bins that are not monotonic)");
  return result(probed(probe(), x.scalar ? Shape{} : x.shape));
}

VarPtr OpcodeExecutor::NumpyCall::isclose() {
  const graph::Operand a = static_operand(get("a"));
  const graph::Operand b = static_operand(get("b"));
  for (const char* p : {"rtol", "atol"}) {
    const py::object v = value_of(p);
    if (!v.is_none() && !PyFloat_CheckExact(v.ptr()) && !PyLong_CheckExact(v.ptr())) {
      refuse(std::string("a ") + p + " that is not a Python number");
    }
  }
  bool_param("equal_nan");
  const auto shape = graph::broadcast_shapes(operand_shape(a), operand_shape(b), &why);
  if (!shape) {
    refuse(why);
  }
  return result(probed(probe(), *shape));
}

}  // namespace sot::translator
