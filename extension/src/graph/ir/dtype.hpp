// NumPy's numeric dtypes as the graph IR sees them, and NumPy's promotion between two of them
// (np.promote_types: the same in NumPy 1.x and 2.x; Python scalars mixed with arrays follow other
// rules per version and are handled where values are typed).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sot::graph {

enum class DType : std::uint8_t {
  kBool,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kUInt16,
  kUInt32,
  kUInt64,
  kFloat16,
  kFloat32,
  kFloat64,
  kComplex64,
  kComplex128,
};

inline constexpr int kDTypeCount = 14;

// NumPy's kind character: 'b', 'i', 'u', 'f' or 'c'.
char kind(DType t);
// Bytes per element.
int itemsize(DType t);
// NumPy's name ("bool", "int8", ..., "complex128").
std::string_view name(DType t);
std::optional<DType> dtype_from_name(std::string_view n);

// np.promote_types(a, b): the smallest dtype both cast to safely.
DType promote_types(DType a, DType b);

// A Python scalar (bool, int, float, complex) mixed with an array in an operation.
struct PyScalar {
  enum class Kind : std::uint8_t { kBool, kInt, kFloat, kComplex };
  Kind kind = Kind::kInt;
  long double value = 0;  // kBool, kInt, kFloat; kComplex: the real part
  long double imag = 0;   // kComplex
};

// How Python scalars take part in promotion: NumPy 1.x looks at the value (the smallest dtype that
// holds it, when its kind is not above the array's); NumPy 2.x (NEP 50) treats them as "weak": the
// array's dtype wins within its kind.
enum class ScalarPromotion : std::uint8_t { kValueBased, kWeak };

// The dtype a Python scalar becomes on its own (bool, int64 - uint64 for an int beyond int64 -,
// float64, complex128).
DType default_dtype(const PyScalar& s);

// The result dtype of an operation on an array of `array` and the Python scalar `s`
// (np.result_type(array, s)), or nullopt and `error` when NumPy raises (NEP 50: a Python int out
// of the array's range).
std::optional<DType> result_type_with_scalar(DType array, const PyScalar& s, ScalarPromotion mode,
                                             std::string* error);

}  // namespace sot::graph
