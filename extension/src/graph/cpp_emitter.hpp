// Tier B of the CPU backend, the source: a kernel as one C++ loop over a contiguous block, every
// value in a register. Emitted only where the result is eager NumPy's bit for bit by
// construction: float32/float64 kernels (booleans beside) whose operations are IEEE-exact (+, -,
// *, /, sqrt, abs, negation, square) on operands of the kernel's dtype, quiet comparisons, selects
// (where) and logic on booleans, compiled without FMA contraction or fast-math. Anything else
// (transcendental functions, maximum/minimum/clip, casts, integers, reductions) keeps tier A.
#pragma once

#include <optional>
#include <string>

#include "graph/kernel_ir.hpp"

namespace sot::graph {

struct NativeSource {
  std::string code;  // defines extern "C" void sot_kernel(char* const*, const double*, long long)
};

// The C++ of `k`, or nullopt and `why` (the first op or operand it does not emit).
std::optional<NativeSource> emit_cpp(const kir::Kernel& k, std::string* why);

}  // namespace sot::graph
