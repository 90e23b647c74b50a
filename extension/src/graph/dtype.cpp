#include "graph/dtype.hpp"

#include <algorithm>
#include <array>

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

}  // namespace sot::graph
