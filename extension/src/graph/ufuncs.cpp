#include "graph/ufuncs.hpp"

#include <cmath>
#include <map>
#include <string>

#include "core/loaded_module.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

// Operators whose NumPy method is exactly the ufunc of the op's name for the operand types a graph
// holds (ndarrays, NumPy scalars, Python numbers). Not `pow`: ndarray ** 2 runs `square`, whose
// result dtype differs for bools.
constexpr const char* kUfuncOperators[] = {
    "add", "sub", "mul",    "truediv", "floordiv", "mod", "neg", "pos", "abs", "and_",
    "or_", "xor", "invert", "lshift",  "rshift",   "lt",  "le",  "gt",  "ge",
};

}  // namespace

py::object ufunc_of(const Op& op, const py::module_& numpy) {
  const py::object ufunc = numpy.attr("ufunc");
  if (py::isinstance(op.fn, ufunc)) {
    return op.fn;
  }
  const py::module_ operator_module = loaded_module("operator");
  for (const char* name : kUfuncOperators) {
    if (op.fn.is(operator_module.attr(name)) && py::hasattr(numpy, op.name.c_str())) {
      py::object u = numpy.attr(op.name.c_str());
      return py::isinstance(u, ufunc) ? u : py::none();
    }
  }
  return py::none();
}

namespace {

// A value whose square overflows in `dtype` (float16, float32, float64, complex64, complex128).
double overflowing(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return 1e3;
    case DType::kFloat32:
    case DType::kComplex64:
      return 1e30;
    default:
      return 1e200;
  }
}

// True when the running NumPy computes `array ** 2` of `dtype` as np.square: the op named in the
// overflow error of a one-item sample.
bool power_two_is_square(DType dtype, const py::module_& numpy) {
  static std::map<DType, bool> known;
  const auto found = known.find(dtype);
  if (found != known.end()) {
    return found->second;
  }
  bool square = false;
  const py::object sample = numpy.attr("full")(1, overflowing(dtype), std::string(name(dtype)));
  const py::object state = numpy.attr("errstate")(py::arg("over") = "raise");
  state.attr("__enter__")();
  PyObject* r = PyNumber_Power(sample.ptr(), py::int_(2).ptr(), Py_None);
  if (r == nullptr) {
    PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
    PyErr_Fetch(&type, &value, &tb);
    PyObject* text = value != nullptr ? PyObject_Str(value) : nullptr;
    square = text != nullptr &&
             std::string(PyUnicode_AsUTF8(text)).find("in square") != std::string::npos;
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    PyErr_Clear();
  }
  Py_XDECREF(r);
  state.attr("__exit__")(py::none(), py::none(), py::none());
  known[dtype] = square;
  return square;
}

bool is_two(const Arg& a) {
  if (a.kind != Arg::Kind::kConst) {
    return false;
  }
  PyObject* c = a.constant.ptr();
  if (PyLong_CheckExact(c)) {
    int overflow = 0;
    return PyLong_AsLongLongAndOverflow(c, &overflow) == 2 && overflow == 0;
  }
  return PyFloat_CheckExact(c) && PyFloat_AS_DOUBLE(c) == 2.0;
}

// A bound `numpy.clip` passes to its ufunc as it is: a Python float or int (not a bool, not NaN:
// NumPy 1.x warns for a NaN bound), or an array of at least one dimension.
bool plain_clip_bound(const Graph& graph, const Arg& a) {
  if (a.kind == Arg::Kind::kValue) {
    const ValueInfo& info = graph.value(a.value).info;
    return !info.scalar && info.ndim() > 0;
  }
  if (a.kind != Arg::Kind::kConst) {
    return false;
  }
  PyObject* c = a.constant.ptr();
  if (PyFloat_CheckExact(c)) {
    return !std::isnan(PyFloat_AsDouble(c));
  }
  return PyLong_CheckExact(c);
}

// `numpy.clip(a, lo, hi)` (or `a.clip(lo, hi)`) of a float array: NumPy calls its `clip` ufunc
// with the same arguments (integer arrays first drop Python bounds outside their range).
py::object clip_ufunc(const Graph& graph, const Op& op) {
  if (op.name != "clip" || op.args.size() != 3 || !op.kwargs.empty() ||
      op.args[0].kind != Arg::Kind::kValue) {
    return py::none();
  }
  const ValueInfo& a = graph.value(op.args[0].value).info;
  if (a.scalar || kind(a.dtype) != 'f' || !plain_clip_bound(graph, op.args[1]) ||
      !plain_clip_bound(graph, op.args[2])) {
    return py::none();
  }
  try {
    return py::module_::import("numpy._core.umath").attr("clip");
  } catch (py::error_already_set&) {
    return py::module_::import("numpy.core.umath").attr("clip");  // NumPy 1.x
  }
}

}  // namespace

UfuncCall ufunc_call(const Graph& graph, const Op& op, const py::module_& numpy) {
  UfuncCall call;
  call.ufunc = ufunc_of(op, numpy);
  if (!call.ufunc.is_none()) {
    call.args = op.args;
    return call;
  }
  call.ufunc = clip_ufunc(graph, op);
  if (!call.ufunc.is_none()) {
    call.args = op.args;
    return call;
  }
  const py::module_ operator_module = loaded_module("operator");
  if (op.fn.is(operator_module.attr("pow")) && op.args.size() == 2 &&
      op.args[0].kind == Arg::Kind::kValue && is_two(op.args[1])) {
    const ValueInfo& base = graph.value(op.args[0].value).info;
    const char k = kind(base.dtype);
    if (!base.scalar && (k == 'f' || k == 'c') && power_two_is_square(base.dtype, numpy)) {
      call.ufunc = numpy.attr("square");
      call.args = {op.args[0]};
    }
  }
  return call;
}

}  // namespace sot::graph
