#include "graph/rules/ufuncs.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <string>
#include <utility>

#include "core/loaded_module.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

// Operators whose NumPy method is exactly the ufunc of the op's name for the operand types a graph
// holds (ndarrays, NumPy scalars, Python numbers). Not `pow`: ndarray ** 2 runs `square`, whose
// result dtype differs for bools (see power_ufunc).
constexpr const char* kUfuncOperators[] = {
    "add", "sub", "mul",    "truediv", "floordiv", "mod", "neg", "pos", "abs", "and_",
    "or_", "xor", "invert", "lshift",  "rshift",   "lt",  "le",  "gt",  "ge",
};
// The in-place operators whose ndarray method is the ufunc with `out=` the target (`x += y` is
// np.add(x, y, out=x)). Not `**=` (special-cased exponents) nor `@=`.
constexpr const char* kInPlaceUfuncOperators[] = {
    "iadd", "isub", "imul", "itruediv", "ifloordiv", "imod",
    "iand", "ior",  "ixor", "ilshift",  "irshift",
};

}  // namespace

py::object ufunc_of(const Op& op, const py::module_& numpy) {
  const py::object ufunc = numpy.attr("ufunc");
  if (py::isinstance(op.fn, ufunc)) {
    return op.fn;
  }
  const py::module_ operator_module = loaded_module("operator");
  auto matches = [&](const char* name) {
    return op.fn.is(operator_module.attr(name)) && py::hasattr(numpy, op.name.c_str());
  };
  const bool in_place =
      std::any_of(std::begin(kInPlaceUfuncOperators), std::end(kInPlaceUfuncOperators), matches);
  if (in_place || std::any_of(std::begin(kUfuncOperators), std::end(kUfuncOperators), matches)) {
    py::object u = numpy.attr(op.name.c_str());
    return py::isinstance(u, ufunc) ? u : py::none();
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

// The ufunc named in the floating-point error of `sample ** exponent` under errstate(all="raise")
// ("" when it does not raise).
std::string ufunc_in_error(const py::module_& numpy, double sample, DType dtype,
                           const py::handle& exponent) {
  const py::object a = numpy.attr("full")(1, sample, std::string(name(dtype)));
  PyObject* r = PyNumber_Power(a.ptr(), exponent.ptr(), Py_None);
  std::string named;
  if (r == nullptr) {
    PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
    PyErr_Fetch(&type, &value, &tb);
    PyObject* text = value != nullptr ? PyObject_Str(value) : nullptr;
    const char* utf8 = text != nullptr ? PyUnicode_AsUTF8(text) : nullptr;
    const std::string message = utf8 != nullptr ? utf8 : "";
    const std::size_t at = message.rfind(" in ");
    named = at == std::string::npos ? "" : message.substr(at + 4);
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    PyErr_Clear();
  }
  Py_XDECREF(r);
  return named;
}

// The ufunc the running NumPy computes `array ** exponent` of `dtype` with (a Python int or float
// exponent): its method special-cases some exponents (2: square, 0.5: sqrt; NumPy 1.x also -1:
// reciprocal, 0: ones_like, 1: positive) and calls `power` otherwise. Asked once per dtype and
// exponent: the op named in the error of one-item samples that raise in power and in those
// (-1.5: invalid, a value whose square overflows: overflow, 0: divide by zero). "" when no sample
// raises (1, 0, ...: not fused).
std::string power_ufunc(DType dtype, const py::handle& exponent, const py::module_& numpy) {
  static std::map<std::pair<DType, std::string>, std::string> known;
  const auto key = std::make_pair(dtype, py::repr(exponent).cast<std::string>());
  const auto found = known.find(key);
  if (found != known.end()) {
    return found->second;
  }
  const py::object state = numpy.attr("errstate")(py::arg("all") = "raise");
  state.attr("__enter__")();
  std::string named;
  for (const double sample : {-1.5, overflowing(dtype), 0.0}) {
    named = ufunc_in_error(numpy, sample, dtype, exponent);
    if (!named.empty()) {
      break;
    }
  }
  state.attr("__exit__")(py::none(), py::none(), py::none());
  if (named != "power" && named != "square" && named != "sqrt" && named != "reciprocal") {
    named.clear();
  }
  known[key] = named;
  return named;
}

bool python_number(const Arg& a) {
  return a.kind == Arg::Kind::kConst &&
         (PyLong_CheckExact(a.constant.ptr()) || PyFloat_CheckExact(a.constant.ptr()));
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

// `a == b` or `a != b` (operator.eq, ne) of arrays as numpy.equal or not_equal: where the two
// cannot fail to broadcast (a Python number or a NumPy scalar on one side, or the very same shape
// on both), the
// operator is the ufunc (NumPy 1.x's `==` returns False with a warning where shapes do not
// broadcast; numpy.equal raises).
bool equality_ufunc(const Graph& graph, const Op& op, const py::module_& operator_module) {
  if (op.args.size() != 2 || !op.kwargs.empty() ||
      !((op.name == "equal" && op.fn.is(operator_module.attr("eq"))) ||
        (op.name == "not_equal" && op.fn.is(operator_module.attr("ne"))))) {
    return false;
  }
  if (python_number(op.args[0]) || python_number(op.args[1])) {
    return true;
  }
  if (op.args[0].kind != Arg::Kind::kValue || op.args[1].kind != Arg::Kind::kValue) {
    return false;
  }
  const ValueInfo& a = graph.value(op.args[0].value).info;
  const ValueInfo& b = graph.value(op.args[1].value).info;
  if (a.is_tuple() || b.is_tuple() || a.python != 0 || b.python != 0) {
    return false;
  }
  // (a NumPy scalar broadcasts to anything; arrays of the same sizes and the same shape symbols
  // keep the same shape whatever the symbols' sizes)
  return a.scalar || b.scalar || (a.shape == b.shape && a.symbols == b.symbols);
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
  if (equality_ufunc(graph, op, operator_module)) {
    call.ufunc = numpy.attr(op.name.c_str());
    call.args = op.args;
    return call;
  }
  if (op.fn.is(operator_module.attr("pow")) && op.args.size() == 2 &&
      op.args[0].kind == Arg::Kind::kValue && python_number(op.args[1])) {
    const ValueInfo& base = graph.value(op.args[0].value).info;
    const char k = kind(base.dtype);
    const std::string fn = !base.scalar && (k == 'f' || k == 'c')
                               ? power_ufunc(base.dtype, op.args[1].constant, numpy)
                               : std::string();
    if (fn == "power") {
      call.ufunc = numpy.attr("power");
      call.args = op.args;
    } else if (!fn.empty()) {
      call.ufunc = numpy.attr(fn.c_str());
      call.args = {op.args[0]};
    }
  }
  return call;
}

}  // namespace sot::graph
