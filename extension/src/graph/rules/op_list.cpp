// The one list of elementwise ops (op_list.hpp).
#include "graph/rules/op_list.hpp"

namespace sot::graph {

namespace {

constexpr Exactness kE = Exactness::kExact;
constexpr Exactness kC = Exactness::kCompare;
constexpr Exactness kL = Exactness::kLogical;
constexpr Exactness kM = Exactness::kLibm;
constexpr Exactness kI = Exactness::kIntegerOp;

}  // namespace

const std::vector<OpDef>& op_list() {
  static const std::vector<OpDef> ops = {
      {"add", 2, UfuncKind::kArith, kE, true},
      {"subtract", 2, UfuncKind::kSubtract, kE, true},
      {"multiply", 2, UfuncKind::kArith, kE, true},
      {"true_divide", 2, UfuncKind::kTrueDivide, kE, true},
      {"divide", 2, UfuncKind::kTrueDivide, kE, true},
      {"floor_divide", 2, UfuncKind::kFloorDivide, kI, true},
      {"remainder", 2, UfuncKind::kFloorDivide, kI, true},
      {"mod", 2, UfuncKind::kFloorDivide, kI, true},
      {"fmod", 2, UfuncKind::kFloorDivide, kI, true},
      {"power", 2, UfuncKind::kPower, kI, true},
      {"maximum", 2, UfuncKind::kArith, kE, true},
      {"minimum", 2, UfuncKind::kArith, kE, true},
      {"fmax", 2, UfuncKind::kArith, kE, true},
      {"fmin", 2, UfuncKind::kArith, kE, true},
      {"arctan2", 2, UfuncKind::kFloat, kM, true},
      {"hypot", 2, UfuncKind::kFloat, kM, true},
      {"exp", 1, UfuncKind::kFloat, kM, true},
      {"exp2", 1, UfuncKind::kFloat, kM, true},
      {"expm1", 1, UfuncKind::kFloat, kM, true},
      {"log", 1, UfuncKind::kFloat, kM, true},
      {"log2", 1, UfuncKind::kFloat, kM, true},
      {"log10", 1, UfuncKind::kFloat, kM, true},
      {"log1p", 1, UfuncKind::kFloat, kM, true},
      {"sqrt", 1, UfuncKind::kFloat, kE, true},
      {"cbrt", 1, UfuncKind::kFloat, kM, true},
      {"sin", 1, UfuncKind::kFloat, kM, true},
      {"cos", 1, UfuncKind::kFloat, kM, true},
      {"tan", 1, UfuncKind::kFloat, kM, true},
      {"arcsin", 1, UfuncKind::kFloat, kM, true},
      {"arccos", 1, UfuncKind::kFloat, kM, true},
      {"arctan", 1, UfuncKind::kFloat, kM, true},
      {"sinh", 1, UfuncKind::kFloat, kM, true},
      {"cosh", 1, UfuncKind::kFloat, kM, true},
      {"tanh", 1, UfuncKind::kFloat, kM, true},
      {"arcsinh", 1, UfuncKind::kFloat, kM, true},
      {"arccosh", 1, UfuncKind::kFloat, kM, true},
      {"arctanh", 1, UfuncKind::kFloat, kM, true},
      {"square", 1, UfuncKind::kSame, kE, true},
      {"negative", 1, UfuncKind::kSame, kE, true},
      {"positive", 1, UfuncKind::kSame, kE, true},
      {"conjugate", 1, UfuncKind::kSame, kE, true},  // (of real numbers: themselves)
      {"absolute", 1, UfuncKind::kAbs, kE, true},
      {"fabs", 1, UfuncKind::kRound, kE, true},
      {"sign", 1, UfuncKind::kSame, kE, true},
      {"floor", 1, UfuncKind::kRound, kE, true},
      {"ceil", 1, UfuncKind::kRound, kE, true},
      {"trunc", 1, UfuncKind::kRound, kE, true},
      {"rint", 1, UfuncKind::kRound, kE, true},
      {"isnan", 1, UfuncKind::kPredicate, kC, true},
      {"isinf", 1, UfuncKind::kPredicate, kC, true},
      {"isfinite", 1, UfuncKind::kPredicate, kC, true},
      {"logical_and", 2, UfuncKind::kLogical, kL, true},
      {"logical_or", 2, UfuncKind::kLogical, kL, true},
      {"logical_xor", 2, UfuncKind::kLogical, kL, true},
      {"logical_not", 1, UfuncKind::kLogical, kL, true},
      {"greater", 2, UfuncKind::kCompare, kC, true},
      {"greater_equal", 2, UfuncKind::kCompare, kC, true},
      {"less", 2, UfuncKind::kCompare, kC, true},
      {"less_equal", 2, UfuncKind::kCompare, kC, true},
      {"equal", 2, UfuncKind::kCompare, kC, true},
      {"not_equal", 2, UfuncKind::kCompare, kC, true},
      {"bitwise_and", 2, UfuncKind::kBitwise, kL, true},
      {"bitwise_or", 2, UfuncKind::kBitwise, kL, true},
      {"bitwise_xor", 2, UfuncKind::kBitwise, kL, true},
      {"invert", 1, UfuncKind::kBitwise, kL, true},
      {"clip", 3, UfuncKind::kArith, kE, false},
      {"reciprocal", 1, UfuncKind::kSame, kE, false},
      {"copysign", 2, UfuncKind::kFloat, kE, false},
      {"signbit", 1, UfuncKind::kPredicate, kC, false},
  };
  return ops;
}

const OpDef* find_op(const std::string& name) {
  for (const OpDef& op : op_list()) {
    if (name == op.name) {
      return &op;
    }
  }
  return nullptr;
}

const char* exactness_name(Exactness e) {
  switch (e) {
    case Exactness::kExact:
      return "exact";
    case Exactness::kCompare:
      return "compare";
    case Exactness::kLogical:
      return "logical";
    case Exactness::kLibm:
      return "libm";
    case Exactness::kIntegerOp:
      return "integer op";
  }
  return "?";
}

}  // namespace sot::graph
