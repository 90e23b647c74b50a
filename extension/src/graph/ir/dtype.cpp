#include "graph/ir/dtype.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace sot::graph {

namespace {

struct Info {
  DType type;
  char kind;
  int size;
  std::string_view name;
};

constexpr std::array<Info, kDTypeCount> kInfo = {{
    {DType::kBool, 'b', 1, "bool"},
    {DType::kInt8, 'i', 1, "int8"},
    {DType::kInt16, 'i', 2, "int16"},
    {DType::kInt32, 'i', 4, "int32"},
    {DType::kInt64, 'i', 8, "int64"},
    {DType::kUInt8, 'u', 1, "uint8"},
    {DType::kUInt16, 'u', 2, "uint16"},
    {DType::kUInt32, 'u', 4, "uint32"},
    {DType::kUInt64, 'u', 8, "uint64"},
    {DType::kFloat16, 'f', 2, "float16"},
    {DType::kFloat32, 'f', 4, "float32"},
    {DType::kFloat64, 'f', 8, "float64"},
    {DType::kComplex64, 'c', 8, "complex64"},
    {DType::kComplex128, 'c', 16, "complex128"},
}};

const Info& info(DType t) {
  return kInfo.at(static_cast<std::size_t>(t));
}

DType of(char k, int size) {
  for (const Info& i : kInfo) {
    if (i.kind == k && i.size == size) {
      return i.type;
    }
  }
  return DType::kFloat64;  // not reached for the sizes promote_types asks for
}

// The size of the smallest float that holds every value of the integer dtype `t` (as NumPy counts:
// 8-bit ints fit float16, 16-bit ints float32, wider ones float64).
int float_size_for_int(DType t) {
  const int size = itemsize(t);
  return size == 1 ? 2 : (size == 2 ? 4 : 8);
}

}  // namespace

char kind(DType t) {
  return info(t).kind;
}

int itemsize(DType t) {
  return info(t).size;
}

std::string_view name(DType t) {
  return info(t).name;
}

std::optional<DType> dtype_from_name(std::string_view n) {
  for (const Info& i : kInfo) {
    if (i.name == n) {
      return i.type;
    }
  }
  return std::nullopt;
}

DType promote_types(DType a, DType b) {
  if (a == b) {
    return a;
  }
  if (a == DType::kBool) {
    return b;
  }
  if (b == DType::kBool) {
    return a;
  }
  // Order the pair by kind: integers (i, u) before floats before complex.
  auto rank = [](DType t) {
    const char k = kind(t);
    return k == 'c' ? 3 : (k == 'f' ? 2 : 1);
  };
  if (rank(a) > rank(b) || (rank(a) == rank(b) && kind(a) == 'u' && kind(b) == 'i')) {
    std::swap(a, b);
  }
  const char ka = kind(a);
  const char kb = kind(b);
  const int sa = itemsize(a);
  const int sb = itemsize(b);
  if (ka == kb) {
    return sa >= sb ? a : b;
  }
  if (ka == 'i' && kb == 'u') {
    // A signed type wider than the unsigned one holds it; else the next wider signed one, and
    // no signed type holds uint64: float64.
    if (sa > sb) {
      return a;
    }
    return sb < 8 ? of('i', 2 * sb) : DType::kFloat64;
  }
  if (kb == 'f') {  // an integer with a float
    return of('f', std::max(float_size_for_int(a), sb));
  }
  // kb == 'c': an integer or a float with a complex (whose components have half its size).
  const int component = ka == 'f' ? sa : float_size_for_int(a);
  return of('c', std::max({2 * component, sb, 8}));
}

namespace {

// NumPy 1.x's simplified kind order for scalar promotion: bool, integers, then floats and complex
// together.
int category(DType t) {
  const char k = kind(t);
  return k == 'b' ? 0 : ((k == 'f' || k == 'c') ? 2 : 1);
}

int category(PyScalar::Kind k) {
  return k == PyScalar::Kind::kBool ? 0 : (k == PyScalar::Kind::kInt ? 1 : 2);
}

}  // namespace

// The dtype a Python scalar becomes on its own (bool, int64 - uint64 for an int beyond int64 -,
// float64, complex128).
DType default_dtype(const PyScalar& s) {
  switch (s.kind) {
    case PyScalar::Kind::kBool:
      return DType::kBool;
    case PyScalar::Kind::kInt:
      return s.value > 9223372036854775807.0L ? DType::kUInt64 : DType::kInt64;
    case PyScalar::Kind::kFloat:
      return DType::kFloat64;
    case PyScalar::Kind::kComplex:
      return DType::kComplex128;
  }
  return DType::kFloat64;
}

namespace {

// NumPy 1.x's np.min_scalar_type(value), and whether a non-negative integer also fits the signed
// type of the same size ("small unsigned": it then promotes as that signed type with signed ones).
std::optional<DType> min_scalar_type(const PyScalar& s, bool* small_unsigned) {
  *small_unsigned = false;
  const long double v = s.value;
  auto float_size = [](long double x) {
    if (!(x == x) || x == HUGE_VALL || x == -HUGE_VALL || (x > -65000 && x < 65000)) {
      return 2;  // nan and inf too
    }
    return (x > -3.4e38L && x < 3.4e38L) ? 4 : 8;
  };
  switch (s.kind) {
    case PyScalar::Kind::kBool:
      return DType::kBool;
    case PyScalar::Kind::kInt: {
      if (v >= 0) {
        static const std::array<std::pair<long double, DType>, 4> kUnsigned = {{
            {255.0L, DType::kUInt8},
            {65535.0L, DType::kUInt16},
            {4294967295.0L, DType::kUInt32},
            {18446744073709551615.0L, DType::kUInt64},
        }};
        for (const auto& [max, t] : kUnsigned) {
          if (v <= max) {
            *small_unsigned = v <= (max - 1) / 2;
            return t;
          }
        }
        return std::nullopt;  // beyond uint64: NumPy makes an object array
      }
      static const std::array<std::pair<long double, DType>, 4> kSigned = {{
          {-128.0L, DType::kInt8},
          {-32768.0L, DType::kInt16},
          {-2147483648.0L, DType::kInt32},
          {-9223372036854775808.0L, DType::kInt64},
      }};
      for (const auto& [min, t] : kSigned) {
        if (v >= min) {
          return t;
        }
      }
      return std::nullopt;
    }
    case PyScalar::Kind::kFloat:
      return of('f', float_size(v));
    case PyScalar::Kind::kComplex: {
      const int size = std::max(float_size(v), float_size(s.imag));
      return size <= 4 ? DType::kComplex64 : DType::kComplex128;
    }
  }
  return std::nullopt;
}

DType signed_of(DType unsigned_type) {
  return of('i', itemsize(unsigned_type));
}

}  // namespace

std::optional<DType> result_type_with_scalar(DType array, const PyScalar& s, ScalarPromotion mode,
                                             std::string* error) {
  if (mode == ScalarPromotion::kWeak) {
    // NEP 50: a weak scalar of a kind above the array's takes its default dtype (int64, float64,
    // complex128; a complex scalar with a float array keeps the array's precision); within the
    // array's kind the array's dtype wins. A Python int must fit the integer result (NumPy 2
    // raises OverflowError).
    const int scalar_rank = static_cast<int>(s.kind);  // bool, int, float, complex
    const char k = kind(array);
    const int array_rank = k == 'b' ? 0 : (k == 'c' ? 3 : (k == 'f' ? 2 : 1));
    DType result = array;
    if (scalar_rank > array_rank) {
      result = s.kind == PyScalar::Kind::kComplex && k == 'f'
                   ? of('c', 2 * std::max(itemsize(array), 4))
                   : promote_types(
                         array, s.kind == PyScalar::Kind::kInt ? DType::kInt64 : default_dtype(s));
    }
    const char rk = kind(result);
    if (s.kind == PyScalar::Kind::kInt && (rk == 'i' || rk == 'u')) {
      const int bits = 8 * itemsize(result);
      const long double lo = rk == 'u' ? 0.0L : -std::ldexp(1.0L, bits - 1);
      const long double hi =
          rk == 'u' ? std::ldexp(1.0L, bits) - 1 : std::ldexp(1.0L, bits - 1) - 1;
      if (s.value < lo || s.value > hi) {
        if (error != nullptr) {
          *error = "Python integer out of bounds for " + std::string(name(result));
        }
        return std::nullopt;
      }
    }
    return result;
  }
  if (category(s.kind) > category(array)) {
    return promote_types(array, default_dtype(s));
  }
  bool small_unsigned = false;
  const auto min = min_scalar_type(s, &small_unsigned);
  if (!min) {
    if (error != nullptr) {
      *error = "a Python integer too large for any integer dtype";
    }
    return std::nullopt;
  }
  if (small_unsigned && kind(array) != 'b' && kind(array) != 'u') {
    return promote_types(signed_of(*min), array);
  }
  return promote_types(*min, array);
}

}  // namespace sot::graph
