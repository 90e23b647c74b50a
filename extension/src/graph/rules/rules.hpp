// What NumPy operations make, worked out without running them: the dtype, shape and kind (array or
// NumPy scalar) of a ufunc, reduction, matmul, shape operation or indexing result. A rule that
// cannot tell (a dtype that depends on a value, an input NumPy would reject) returns nullopt with
// the reason, and the translator breaks the graph there (the operation then runs, or raises, for
// real).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/ir/dtype.hpp"
#include "graph/ir/graph.hpp"
#include "graph/ir/shape.hpp"

namespace sot::graph {

// An operand of an elementwise operation: an array value (ndarray or NumPy scalar) or a Python
// scalar with its value.
struct Operand {
  bool is_python = false;
  ValueInfo info;   // !is_python
  PyScalar scalar;  // is_python
  static Operand array(ValueInfo i) {
    Operand o;
    o.info = std::move(i);
    return o;
  }
  static Operand python(PyScalar s) {
    Operand o;
    o.is_python = true;
    o.scalar = s;
    return o;
  }
};

// The dtype the operands promote to (np.result_type), following NumPy 1.x value-based casting
// (NumPy scalars and 0-d arrays take part by value: when that value is unknown and would matter,
// nullopt with the reason) or NEP 50 (weak Python scalars).
std::optional<DType> result_dtype(const std::vector<Operand>& operands, ScalarPromotion mode,
                                  std::string* why);
// The broadcast shape of the operands' shapes (Python scalars count as 0-d); symbols carried over.
std::optional<ValueInfo> broadcast_info(const std::vector<Operand>& operands, std::string* why);

// How a ufunc's output dtype follows from the promoted input dtype.
enum class UfuncKind : std::uint8_t {
  kArith,        // add, multiply, maximum, ...: the promoted dtype (bool - bool is an error)
  kSubtract,     // subtract: no bool
  kTrueDivide,   // ints and bool -> float64
  kFloorDivide,  // floor_divide, remainder: bool -> int8
  kPower,        // bool -> int8
  kCompare,      // -> bool
  kLogical,      // logical_and/or/xor/not -> bool
  kBitwise,      // bool and ints only
  kFloat,      // exp, log, sqrt, sin, ...: bool/int8/uint8 -> float16, 16-bit -> float32, wider ->
               // float64
  kSame,       // negative, positive, square, ...: the input dtype (no bool for negative)
  kAbs,        // absolute: complex -> its float
  kRound,      // floor, ceil, trunc, rint: floats only here
  kPredicate,  // isnan, isfinite, isinf, signbit -> bool
};

// NumPy's same_kind casting (in-place operators, out=): a safe cast, or one within a kind or to a
// higher kind (bool < integers < floats < complex).
bool can_cast_same_kind(DType from, DType to);

// The result of the ufunc over `operands` (elementwise with broadcasting); a 0-d result is a NumPy
// scalar. `name` is for messages.
std::optional<ValueInfo> ufunc_result(const std::string& name, UfuncKind kind,
                                      const std::vector<Operand>& operands, ScalarPromotion mode,
                                      std::string* why);

enum class ReduceKind : std::uint8_t {
  kSum,   // sum, prod, cumsum, cumprod: small ints -> int64/uint64, bool -> int64
  kMean,  // ints, bool -> float64
  kVar,   // var, std: ints, bool -> float64; complex -> its float
  kSame,  // max, min
  kArg,   // argmax, argmin: int64, one axis or none
  kBool,  // any, all
};
// A reduction of `in` over `axes` (`all`: every axis) with keepdims; `dtype` overrides the
// accumulator's dtype (sum(dtype=...)); a 0-d result is a NumPy scalar.
std::optional<ValueInfo> reduce_result(ReduceKind kind, const ValueInfo& in,
                                       const std::vector<int>& axes, bool all, bool keepdims,
                                       std::optional<DType> dtype, std::string* why);
// cumsum/cumprod: the input's shape (flattened when `all`), the sum dtype.
std::optional<ValueInfo> cumulative_result(const ValueInfo& in, int axis, bool all,
                                           std::optional<DType> dtype, std::string* why);

std::optional<ValueInfo> matmul_result(const ValueInfo& a, const ValueInfo& b, std::string* why);
// np.dot for 1-d and 2-d operands (others: nullopt).
std::optional<ValueInfo> dot_result(const ValueInfo& a, const ValueInfo& b, std::string* why);

// np.einsum(subscripts, *operands) for explicit or implicit subscripts without ellipsis.
std::optional<ValueInfo> einsum_result(const std::string& subscripts,
                                       const std::vector<ValueInfo>& operands, std::string* why);

// reshape to `shape` (one -1 allowed).
std::optional<ValueInfo> reshape_result(const ValueInfo& in, const std::vector<std::int64_t>& shape,
                                        std::string* why);
// transpose by `axes` (empty: reversed).
std::optional<ValueInfo> transpose_result(const ValueInfo& in, const std::vector<int>& axes,
                                          std::string* why);
std::optional<ValueInfo> swapaxes_result(const ValueInfo& in, int a, int b, std::string* why);
std::optional<ValueInfo> moveaxis_result(const ValueInfo& in, const std::vector<int>& from,
                                         const std::vector<int>& to, std::string* why);
std::optional<ValueInfo> expand_dims_result(const ValueInfo& in, const std::vector<int>& axes,
                                            std::string* why);
// squeeze over `axes` (`all`: every axis of size 1).
std::optional<ValueInfo> squeeze_result(const ValueInfo& in, const std::vector<int>& axes, bool all,
                                        std::string* why);
std::optional<ValueInfo> concatenate_result(const std::vector<ValueInfo>& in, int axis,
                                            ScalarPromotion mode, std::string* why);
std::optional<ValueInfo> stack_result(const std::vector<ValueInfo>& in, int axis,
                                      ScalarPromotion mode, std::string* why);
std::optional<ValueInfo> broadcast_to_result(const ValueInfo& in, const Shape& shape,
                                             std::string* why);

// One item of a basic index: an integer, a slice (start, stop, step; absent parts as flags),
// None (a new axis) or Ellipsis.
struct IndexItem {
  enum class Kind : std::uint8_t { kInt, kSlice, kNewAxis, kEllipsis };
  Kind kind = Kind::kInt;
  std::int64_t index = 0;                         // kInt
  std::optional<std::int64_t> start, stop, step;  // kSlice
};
// x[items] for basic indexing: the result (a view, or a NumPy scalar when every axis is taken by
// an integer), or nullopt (an index out of range: IndexError for real).
std::optional<ValueInfo> index_result(const ValueInfo& in, const std::vector<IndexItem>& items,
                                      std::string* why);

}  // namespace sot::graph
