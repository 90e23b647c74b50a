// The CUDA backend's overrides (cuda_overrides.hpp): its form of each op of
// graph/rules/op_list.hpp.
#include "graph/backends/cuda/cuda_overrides.hpp"

#include <string>
#include <vector>

namespace sot::graph {

namespace {

CudaOp float_fn(const char* form, const char* pole = nullptr) {
  return CudaOp{form, nullptr, nullptr, false, pole};
}

CudaOp compare(const char* form) {
  return CudaOp{form, form, form, true, nullptr};
}

}  // namespace

const std::map<std::string, CudaOp>& cuda_ops() {
  static const std::map<std::string, CudaOp> table = {
      {"add", {"$0 + $1", "($T)(($U)$0 + ($U)$1)", "($0 || $1)"}},
      {"subtract", {"$0 - $1", "($T)(($U)$0 - ($U)$1)"}},
      {"multiply", {"$0 * $1", "($T)(($U)$0 * ($U)$1)", "($0 && $1)"}},
      {"divide", float_fn("$0 / $1", "$1 == 0")},
      {"true_divide", float_fn("$0 / $1", "$1 == 0")},
      {"negative", {"-$0", "($T)(($U)0 - ($U)$0)"}},
      {"positive", {"$0", "$0"}},
      {"conjugate", {"$0", "$0"}},
      {"absolute", {"fabs($0)", "($0 < 0 ? ($T)(($U)0 - ($U)$0) : $0)", "$0"}},
      {"fabs", float_fn("fabs($0)")},
      {"square", {"$0 * $0", "($T)(($U)$0 * ($U)$0)"}},
      {"reciprocal", float_fn("($T)1 / $0", "$0 == 0")},
      {"sqrt", float_fn("sqrt($0)")},
      {"cbrt", float_fn("cbrt($0)")},
      {"exp", float_fn("exp($0)")},
      {"exp2", float_fn("exp2($0)")},
      {"expm1", float_fn("expm1($0)")},
      {"log", float_fn("log($0)", "1")},
      {"log2", float_fn("log2($0)", "1")},
      {"log10", float_fn("log10($0)", "1")},
      {"log1p", float_fn("log1p($0)", "1")},
      {"sin", float_fn("sin($0)")},
      {"cos", float_fn("cos($0)")},
      {"tan", float_fn("tan($0)")},
      {"arcsin", float_fn("asin($0)")},
      {"arccos", float_fn("acos($0)")},
      {"arctan", float_fn("atan($0)")},
      {"sinh", float_fn("sinh($0)")},
      {"cosh", float_fn("cosh($0)")},
      {"tanh", float_fn("tanh($0)")},
      {"arcsinh", float_fn("asinh($0)")},
      {"arccosh", float_fn("acosh($0)")},
      {"arctanh", float_fn("atanh($0)", "1")},
      {"arctan2", float_fn("atan2($0, $1)")},
      {"hypot", float_fn("hypot($0, $1)")},
      {"power", float_fn("pow($0, $1)", "$0 == 0")},
      {"copysign", float_fn("copysign($0, $1)")},
      {"floor", float_fn("floor($0)")},
      {"ceil", float_fn("ceil($0)")},
      {"trunc", float_fn("trunc($0)")},
      {"rint", float_fn("rint($0)")},
      {"sign",
       {"($0 > 0 ? ($T)1 : ($0 < 0 ? ($T)-1 : ($0 == 0 ? ($T)0 : $0)))",
        "($T)(($0 > 0) - ($0 < 0))"}},
      {"maximum", {"sot_max($0, $1)", "($0 >= $1 ? $0 : $1)", "($0 || $1)"}},
      {"minimum", {"sot_min($0, $1)", "($0 <= $1 ? $0 : $1)", "($0 && $1)"}},
      {"fmax", float_fn("sot_fmax($0, $1)")},
      {"fmin", float_fn("sot_fmin($0, $1)")},
      {"clip", {"sot_min(sot_max($0, $1), $2)", "sot_min(sot_max($0, $1), $2)"}},
      {"greater", compare("($0 > $1)")},
      {"greater_equal", compare("($0 >= $1)")},
      {"less", compare("($0 < $1)")},
      {"less_equal", compare("($0 <= $1)")},
      {"equal", compare("($0 == $1)")},
      {"not_equal", compare("($0 != $1)")},
      {"isnan", {"isnan($0)", nullptr, nullptr, true}},
      {"isinf", {"isinf($0)", nullptr, nullptr, true}},
      {"isfinite", {"isfinite($0)", nullptr, nullptr, true}},
      {"signbit", {"signbit($0)", nullptr, nullptr, true}},
      {"bitwise_and", {nullptr, "($T)($0 & $1)", "($0 && $1)"}},
      {"bitwise_or", {nullptr, "($T)($0 | $1)", "($0 || $1)"}},
      {"bitwise_xor", {nullptr, "($T)($0 ^ $1)", "($0 != $1)"}},
      {"invert", {nullptr, "($T)(~$0)", "!$0"}},
  };
  return table;
}

// Ops on the truth of their operands, whatever their types (a NaN is true).
const std::map<std::string, const char*>& logical_ops() {
  static const std::map<std::string, const char*> table = {
      {"logical_and", "(($0 != 0) && ($1 != 0))"},
      {"logical_or", "(($0 != 0) || ($1 != 0))"},
      {"logical_xor", "(($0 != 0) != ($1 != 0))"},
      {"logical_not", "($0 == 0)"},
  };
  return table;
}

std::vector<std::string> cuda_override_names() {
  std::vector<std::string> names;
  for (const auto& [name, form] : logical_ops()) {
    names.push_back(name);
  }
  for (const auto& [name, op] : cuda_ops()) {
    names.push_back(name);
  }
  return names;
}

std::string cuda_form(const std::string& name) {
  if (const auto logical = logical_ops().find(name); logical != logical_ops().end()) {
    return std::string("any: ") + logical->second;
  }
  const auto found = cuda_ops().find(name);
  if (found == cuda_ops().end()) {
    // Stated refusals: NumPy's floor division and remainders follow the divisor's sign and treat a
    // zero divisor per dtype (integers give 0 and warn); not written for the device yet.
    static const char* const kRefused[] = {"floor_divide", "remainder", "mod", "fmod"};
    for (const char* r : kRefused) {
      if (name == r) {
        return "refused: NumPy's floor division and remainder rules (the divisor's sign, zero "
               "divisors per dtype) are not written for the device; the group runs on the host";
      }
    }
    return "";
  }
  const CudaOp& op = found->second;
  std::string s;
  auto part = [&](const char* kind, const char* form) {
    if (form != nullptr) {
      s += (s.empty() ? "" : "; ") + std::string(kind) + ": " + form;
    }
  };
  part("float", op.f);
  part("int", op.i);
  part("bool", op.b);
  return s;
}

}  // namespace sot::graph
