// The CUDA backend's overrides: how it writes each elementwise op of graph/rules/op_list.hpp (as
// Inductor's TritonOverrides do for its op list), and the ops it refuses with the reason. The
// emitter (cuda_emitter.cpp) writes kernels from these forms.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace sot::graph {

// How each ufunc is written, per kind of loop type: 'f' float, 'i' signed or unsigned integer,
// 'b' bool. $0..$2 are the operands (already of the loop type), $T the loop type, $U its unsigned
// counterpart. `boolean`: the result is a bool whatever the loop type (comparisons, tests).
// `pole`: when an infinite result from finite operands is NumPy's "divide by zero" rather than
// "overflow" (a condition on the operands, or "1" for always).
struct CudaOp {
  const char* f = nullptr;
  const char* i = nullptr;
  const char* b = nullptr;
  bool boolean = false;
  const char* pole = nullptr;
};

// The forms of the ops written per loop type, by the op's name.
const std::map<std::string, CudaOp>& cuda_ops();
// Ops on the truth of their operands, whatever their types (a NaN is true), by name.
const std::map<std::string, const char*>& logical_ops();

// The CUDA override of op `name` of graph/rules/op_list.hpp: its forms by operand kind ("float:
// exp($0)"; "any: ..." for logic on truth), or "refused: <why>" (a kernel holding it runs on the
// host); "" for a name the backend does not know.
std::string cuda_form(const std::string& name);
// The ops the CUDA emitter writes (its tables' rows).
std::vector<std::string> cuda_override_names();

}  // namespace sot::graph
