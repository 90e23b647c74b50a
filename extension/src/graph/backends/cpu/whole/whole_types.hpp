// Tier C's kinds of values: what each value of a graph is in the generated code. A Python int is a
// 64-bit int (checked for overflow: past it the function gives up), a Python float a double, a
// Python bool a bool, a NumPy scalar its dtype's C type, an array a view (data, shape, strides)
// of an array the runner passes. Anything else (strings, tuples, float16, complex) is not emitted.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <string>

#include "graph/ir/dtype.hpp"
#include "graph/ir/graph.hpp"

namespace sot::graph::whole {

enum class Kind : std::uint8_t { kPyInt, kPyFloat, kPyBool, kScalar, kArray };

struct WType {
  Kind kind = Kind::kPyInt;
  DType dtype = DType::kInt64;  // kScalar, kArray (Python numbers: int64, float64, bool)
  int ndim = 0;                 // kArray

  bool number() const { return kind != Kind::kArray; }
  bool python() const {
    return kind == Kind::kPyInt || kind == Kind::kPyFloat || kind == Kind::kPyBool;
  }
  // The C type of a number's value, or of an array's elements.
  std::string c_type() const;
  // 'b', 'i', 'u' or 'f' of the value (a Python int: 'i', a float: 'f', a bool: 'b').
  char c_kind() const;
  bool operator==(const WType& o) const {
    return kind == o.kind && dtype == o.dtype && ndim == o.ndim;
  }
};

// The kind of a graph value described by `info`, or nullopt (and `why`) when tier C has none.
std::optional<WType> type_of(const ValueInfo& info, std::string* why);

// The C type of dtype `t` ("double", "long long", "bool", "int32_t", ...), or "" when tier C does
// not compute in it (float16, complex).
std::string c_type(DType t);

// A constant in the generated code: its C expression and kind.
struct Literal {
  std::string expr;
  WType type;
};
// A Python bool, int (of 64 bits), float, or NumPy scalar as a literal (bit-exact for floats), or
// nullopt and `why`.
std::optional<Literal> literal(const pybind11::handle& value, std::string* why);
// The expression `expr` of kind `from` converted to dtype `to` as NumPy casts it (a C cast:
// int to float rounds to nearest, float to float rounds, bool to a number is 0 or 1).
std::string cast_to(const std::string& expr, const WType& from, DType to);

}  // namespace sot::graph::whole
