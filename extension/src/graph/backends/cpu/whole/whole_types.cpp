#include "graph/backends/cpu/whole/whole_types.hpp"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/loaded_module.hpp"

namespace py = pybind11;

namespace sot::graph::whole {

std::string c_type(DType t) {
  switch (t) {
    case DType::kBool:
      return "bool";
    case DType::kInt8:
      return "int8_t";
    case DType::kInt16:
      return "int16_t";
    case DType::kInt32:
      return "int32_t";
    case DType::kInt64:
      return "long long";
    case DType::kUInt8:
      return "uint8_t";
    case DType::kUInt16:
      return "uint16_t";
    case DType::kUInt32:
      return "uint32_t";
    case DType::kUInt64:
      return "unsigned long long";
    case DType::kFloat32:
      return "float";
    case DType::kFloat64:
      return "double";
    case DType::kFloat16:
    case DType::kComplex64:
    case DType::kComplex128:
      break;
  }
  return "";
}

std::string WType::c_type() const {
  switch (kind) {
    case Kind::kPyInt:
      return "long long";
    case Kind::kPyFloat:
      return "double";
    case Kind::kPyBool:
      return "bool";
    case Kind::kScalar:
    case Kind::kArray:
      break;
  }
  return whole::c_type(dtype);
}

char WType::c_kind() const {
  switch (kind) {
    case Kind::kPyInt:
      return 'i';
    case Kind::kPyFloat:
      return 'f';
    case Kind::kPyBool:
      return 'b';
    case Kind::kScalar:
    case Kind::kArray:
      break;
  }
  return graph::kind(dtype);
}

std::optional<WType> type_of(const ValueInfo& info, std::string* why) {
  WType t;
  if (info.is_tuple()) {
    *why = "a tuple value";
    return std::nullopt;
  }
  if (info.python != 0) {
    switch (info.python) {
      case 'i':
        t.kind = Kind::kPyInt;
        t.dtype = DType::kInt64;
        return t;
      case 'f':
        t.kind = Kind::kPyFloat;
        t.dtype = DType::kFloat64;
        return t;
      case 'b':
        t.kind = Kind::kPyBool;
        t.dtype = DType::kBool;
        return t;
      default:
        *why = info.python == 'l' ? "a Python list" : "a Python str";
        return std::nullopt;
    }
  }
  if (whole::c_type(info.dtype).empty()) {
    *why = std::string("a ") + std::string(name(info.dtype)) + " value";
    return std::nullopt;
  }
  t.dtype = info.dtype;
  t.kind = info.scalar ? Kind::kScalar : Kind::kArray;
  t.ndim = info.scalar ? 0 : info.ndim();
  return t;
}

namespace {

std::string double_literal(double d) {
  char text[64];
  if (std::isfinite(d)) {
    std::snprintf(text, sizeof text, "%a", d);
    return text;
  }
  std::uint64_t bits = 0;
  std::memcpy(&bits, &d, sizeof bits);
  std::snprintf(text, sizeof text, "sot_f64(0x%016" PRIx64 "ULL)", bits);
  return text;
}

}  // namespace

std::optional<Literal> literal(const py::handle& value, std::string* why) {
  PyObject* v = value.ptr();
  Literal lit;
  if (PyBool_Check(v)) {
    lit.type.kind = Kind::kPyBool;
    lit.type.dtype = DType::kBool;
    lit.expr = v == Py_True ? "true" : "false";
    return lit;
  }
  if (PyLong_CheckExact(v)) {
    int overflow = 0;
    const long long i = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow != 0 || (i == -1 && PyErr_Occurred() != nullptr)) {
      PyErr_Clear();
      *why = "a Python int past 64 bits";
      return std::nullopt;
    }
    lit.type.kind = Kind::kPyInt;
    lit.expr = i == INT64_MIN ? "(-9223372036854775807LL - 1)" : std::to_string(i) + "LL";
    return lit;
  }
  if (PyFloat_CheckExact(v)) {
    lit.type.kind = Kind::kPyFloat;
    lit.type.dtype = DType::kFloat64;
    lit.expr = double_literal(PyFloat_AS_DOUBLE(v));
    return lit;
  }
  // A NumPy scalar: its dtype's name, its value through float() or int().
  if (!py::isinstance(value, loaded_module("numpy").attr("generic"))) {
    *why = "a constant of type " + std::string(Py_TYPE(v)->tp_name);
    return std::nullopt;
  }
  const std::string dname = py::str(value.attr("dtype").attr("name"));
  const auto t = dtype_from_name(dname);
  if (!t || whole::c_type(*t).empty()) {
    *why = "a NumPy " + dname + " constant";
    return std::nullopt;
  }
  lit.type.kind = Kind::kScalar;
  lit.type.dtype = *t;
  const char k = graph::kind(*t);
  if (k == 'f') {
    const double d = value.attr("__float__")().cast<double>();
    lit.expr = "static_cast<" + whole::c_type(*t) + ">(" + double_literal(d) + ")";
  } else if (k == 'b') {
    lit.expr = PyObject_IsTrue(v) == 1 ? "true" : "false";
  } else if (k == 'u') {
    lit.expr = "static_cast<" + whole::c_type(*t) + ">(" +
               std::to_string(value.attr("__int__")().cast<unsigned long long>()) + "ULL)";
  } else {
    const long long i = value.attr("__int__")().cast<long long>();
    lit.expr =
        "static_cast<" + whole::c_type(*t) + ">(" +
        (i == INT64_MIN ? std::string("(-9223372036854775807LL - 1)") : std::to_string(i) + "LL") +
        ")";
  }
  return lit;
}

std::string cast_to(const std::string& expr, const WType& from, DType to) {
  if (from.kind != Kind::kPyBool && from.kind != Kind::kPyInt && from.kind != Kind::kPyFloat &&
      from.dtype == to) {
    return expr;
  }
  return "static_cast<" + c_type(to) + ">(" + expr + ")";
}

}  // namespace sot::graph::whole
