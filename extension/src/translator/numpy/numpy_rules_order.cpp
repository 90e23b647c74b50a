// The rules of NumPy's outer products, ufunc methods (outer, reduce, accumulate), flips, rolls,
// triangles, sorts and take_along_axis: the shapes from graph/rules/order_rules.hpp, the dtypes of
// outer products and ufunc methods (their casting) from the running NumPy (numpy_probe.cpp).
#include <string>
#include <utility>
#include <vector>

#include "graph/rules/order_rules.hpp"
#include "translator/numpy/numpy_call.hpp"

namespace py = pybind11;

namespace sot::translator {

using graph::Shape;
using graph::ValueInfo;

namespace {

// A Python int (not a bool) that fits in an int.
bool small_int(const py::handle& v, int* out) {
  if (!PyLong_CheckExact(v.ptr())) {
    return false;
  }
  int overflow = 0;
  const long long n = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  if (overflow != 0 || n < -(1LL << 30) || n > (1LL << 30)) {
    return false;
  }
  *out = static_cast<int>(n);
  return true;
}

// How many ints `v` is (an int, or a tuple or list of ints): 0 when it is not.
std::size_t int_count(const py::handle& v) {
  int unused = 0;
  if (small_int(v, &unused)) {
    return 1;
  }
  if (!PyTuple_CheckExact(v.ptr()) && !PyList_CheckExact(v.ptr())) {
    return 0;
  }
  std::size_t n = 0;
  for (const py::handle item : v) {
    if (!small_int(item, &unused)) {
      return 0;
    }
    ++n;
  }
  return n;
}

}  // namespace

py::object OpcodeExecutor::NumpyCall::ufunc_of() const {
  return g.fn.attr("__self__");
}

VarPtr OpcodeExecutor::NumpyCall::outer() {
  no_out();
  std::vector<ArrayOperand> ops;
  for (const char* p : {"a", "b"}) {
    const VarPtr v = get(p);
    ops.push_back(v ? ex.array_operand(v) : ArrayOperand{});
    if (ops.back().kind == ArrayOperand::Kind::kNone) {
      refuse(std::string("an operand ") + p + " that is not an array or a Python number");
    }
  }
  // (two vectors keep their shape symbols - slices of a loop's ints, A[k + 1:, k] - as their
  // sizes are the result's; any other operand is raveled: sizes needed)
  const auto vector = [&](const ArrayOperand& o) {
    if (o.kind != ArrayOperand::Kind::kValue) {
      return false;
    }
    const ValueInfo info = ex.array_info(o.id);
    return !info.is_tuple() && !info.scalar && info.ndim() == 1;
  };
  const bool vectors = vector(ops[0]) && vector(ops[1]);
  std::vector<Shape> shapes;
  std::vector<int> symbols;
  for (const ArrayOperand& o : ops) {
    if (vectors) {
      const ValueInfo info = ex.array_info(o.id);
      shapes.push_back(info.shape);
      symbols.push_back(info.symbols.empty() ? -1 : info.symbols[0]);
    } else {
      shapes.push_back(o.kind == ArrayOperand::Kind::kValue ? ex.static_info(o.id).shape : Shape{});
    }
  }
  // (Its dtype: the operands as 1-d arrays multiplied; Python numbers as their default dtypes.)
  ValueInfo info = probed(probe(), graph::outer_shape(shapes[0], shapes[1]));
  if (vectors && (symbols[0] >= 0 || symbols[1] >= 0)) {
    info.symbols = symbols;
  }
  return result(info);
}

VarPtr OpcodeExecutor::NumpyCall::ufunc_outer() {
  Shape shape;
  for (const char* p : {"A", "B"}) {
    const ValueInfo in = array_param(p);
    if (in.scalar || in.ndim() == 0) {
      // (a 0-d operand takes part by value under NumPy 1.x: not modelled)
      refuse("a 0-d or NumPy scalar operand");
    }
    shape.insert(shape.end(), in.shape.begin(), in.shape.end());
  }
  ValueInfo info = probed(probe(), std::move(shape));
  if (str_of(ufunc_of().attr("__name__")) == "power" && graph::kind(info.dtype) != 'f' &&
      graph::kind(info.dtype) != 'c') {
    refuse("integer power (NumPy raises ValueError for negative exponents)");
  }
  return result(info);
}

VarPtr OpcodeExecutor::NumpyCall::ufunc_reduce() {
  no_out();
  const bool accumulate = name == "ufunc.accumulate";
  const ValueInfo in = array_param("array");
  if (in.scalar || in.ndim() == 0) {
    refuse("a 0-d or NumPy scalar operand");
  }
  std::vector<int> axes = {0};  // the default axis
  const bool all = get("axis") && !axes_param("axis", &axes);
  if (accumulate && (all || axes.size() != 1)) {
    refuse("an axis that is not one int");
  }
  const auto normal = graph::normalize_axes(axes, all, in.ndim(), &why);
  if (!normal) {
    refuse(why);
  }
  dtype_param("dtype");  // (a dtype it knows; its effect comes from NumPy)
  const bool keepdims = !accumulate && bool_param("keepdims");
  if (!accumulate) {
    const py::object initial = value_of("initial");
    graph::PyScalar unused;
    if (!initial.is_none() && !graph::python_scalar(initial.ptr(), &unused)) {
      refuse("an initial value that is not a Python number");
    }
  }
  Shape shape = accumulate ? in.shape : graph::reduced_shape(in.shape, *normal, keepdims);
  ValueInfo info = probed(probe(), std::move(shape));
  if (str_of(ufunc_of().attr("__name__")) == "power" && graph::kind(info.dtype) != 'f' &&
      graph::kind(info.dtype) != 'c') {
    refuse("integer power (NumPy raises ValueError for negative exponents)");
  }
  if (accumulate) {
    info.scalar = false;
  }
  return result(info);
}

VarPtr OpcodeExecutor::NumpyCall::flip() {
  const ValueInfo in = array_param("m");
  std::optional<ValueInfo> r;
  if (name == "flip") {
    std::vector<int> axes;
    const bool all = !axes_param("axis", &axes);
    r = graph::flip_result(in, axes, all, &why);
  } else {
    r = graph::flip_side_result(in, name == "fliplr" ? 2 : 1, &why);
  }
  g.view = true;
  return result(r);
}

VarPtr OpcodeExecutor::NumpyCall::roll() {
  const ValueInfo in = array_param("a");
  const py::object shift = value_of("shift");
  const std::size_t shifts = int_count(shift);
  if (shifts == 0) {
    refuse("the shift " + str_of(py::repr(shift)));
  }
  std::vector<int> axes;
  const bool all = !axes_param("axis", &axes);
  return result(graph::roll_result(in, shifts, axes, all, &why));
}

VarPtr OpcodeExecutor::NumpyCall::triangle() {
  const ValueInfo in = array_param("m");
  const py::object k = value_of("k");
  int unused = 0;
  if (!k.is_none() && !small_int(k, &unused)) {
    refuse("the k " + str_of(py::repr(k)));
  }
  return result(graph::triangle_result(in, &why));
}

VarPtr OpcodeExecutor::NumpyCall::sort() {
  const bool indices = name == "argsort";
  if (!value_of("order").is_none()) {
    refuse("order=");
  }
  const py::object kind = value_of("kind");
  if (!kind.is_none()) {
    const std::string k = PyUnicode_Check(kind.ptr()) ? str_of(kind) : "";
    if (k != "quicksort" && k != "mergesort" && k != "heapsort" && k != "stable") {
      refuse("the kind " + str_of(py::repr(kind)));
    }
  }
  int axis = -1;
  const py::object a = value_of("axis");
  const bool all = get("axis") && a.is_none();
  if (!all && !a.is_none() && !small_int(a, &axis)) {
    refuse("the axis " + str_of(py::repr(a)));
  }
  const VarPtr target = get("a");
  const ValueInfo in = all && target && ex.is_array_like(target)
                           ? ex.static_info(ex.array_operand(target).id)  // (flattened: sizes)
                           : array_param("a");
  auto r = graph::sort_result(in, axis, all, indices, &why);
  if (self && !indices) {
    // x.sort(): in place, None returned.
    if (!r || all) {
      refuse(all ? "axis=None" : why);
    }
    g.mutates = true;
    ex.add_array_op(std::move(g), ex.array_info(ex.array_operand(self).id));
    return Variable::constant(py::none());
  }
  return result(r);
}

VarPtr OpcodeExecutor::NumpyCall::take_along_axis() {
  const ValueInfo arr = array_param("arr");
  const ValueInfo indices = array_param("indices");
  if (!get("axis")) {
    refuse("no axis (its default differs between NumPy versions)");
  }
  const py::object a = value_of("axis");
  int axis = 0;
  if (!a.is_none() && !small_int(a, &axis)) {
    refuse("the axis " + str_of(py::repr(a)));
  }
  auto r = graph::take_along_axis_result(arr, indices, axis, a.is_none(), &why);
  if (r) {
    raises_on_data("IndexError (an index out of bounds)");
  }
  return result(r);
}

}  // namespace sot::translator
