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

}  // namespace sot::graph
