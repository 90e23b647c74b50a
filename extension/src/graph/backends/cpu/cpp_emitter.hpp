// Tier B of the CPU backend, the source: a kernel as C++ loops over a contiguous block, every value
// in a register. Emitted only where the result is eager NumPy's bit for bit by construction:
// float32/float64 kernels (booleans beside) whose operations are either IEEE-exact (+, -, *, /,
// sqrt, abs, negation, square) on operands of the kernel's dtype, quiet comparisons, selects
// (where) and logic on booleans, compiled without FMA contraction or fast-math, or calls of the
// very strided loop NumPy runs for that ufunc and dtype (exp, sin, maximum, clip, ...: see
// graph/backends/cpu/numpy_loops.hpp) on chunk-sized arrays. Casts, integers and reductions keep
// tier A.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graph/lower/kernel_ir.hpp"

namespace sot::graph {

// NumPy's strided loop for one ufunc call, as the generated code calls it (the layout of the
// `NativeLoop` the code declares): fn(context, data, &n, strides, auxdata), 0 on success.
struct NativeLoop {
  int (*fn)(void* context, char* const* data, const long* n, const long* strides, void* auxdata);
  void* context;
  void* auxdata;
};

// A ufunc call the code makes through NumPy's loop: the expression, and which of its operands are
// scalars (stride 0; the others are contiguous arrays of the kernel's dtype, as is the result).
struct LoopCall {
  int expr = -1;
  std::vector<bool> scalar;
};

struct NativeSource {
  // Defines extern "C" int sot_kernel(char* const* buffers, const double* scalars, long long n,
  // const NativeLoop* loops): 0, or -1 when a loop failed.
  std::string code;
  std::vector<LoopCall> loops;  // loops[i] is the code's f[i]
};

// Tier B's override of op `name` of graph/rules/op_list.hpp: "inline: <C++>" for an op it writes
// itself, or the NumPy loop it calls; "" for a name that is no listed op.
std::string cpp_form(const std::string& name);
// The ops tier B writes inline (its table's rows).
std::vector<std::string> cpp_override_names();

// The C++ of `k`, or nullopt and `why` (the first op or operand it does not emit).
std::optional<NativeSource> emit_cpp(const kir::Kernel& k, std::string* why);

}  // namespace sot::graph
