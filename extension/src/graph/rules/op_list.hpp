// The one list of elementwise ops: each NumPy ufunc a graph op may compute and a fused kernel may
// hold, with its arity, the rule of its result dtype and how exact its results are. The
// translator's table of captured ufuncs takes its rows from here
// (translator/numpy/numpy_names.cpp), and each backend gives its form of an op by the op's name in
// a table of its own, its overrides (graph/backends/cpu/cpp_emitter.cpp,
// graph/backends/cuda/cuda_emitter.cpp, as Inductor's CppOverrides and TritonOverrides): a test
// (tests/cpp/graph/test_op_list.cpp) checks that every op has a form in each backend or a stated
// refusal, and that no backend names an op not listed here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/rules/rules.hpp"

namespace sot::graph {

// How exactly an op's results are known, which decides where a backend may compute it itself.
enum class Exactness : std::uint8_t {
  kExact,    // correctly rounded by IEEE 754 or exact (+, -, *, /, sqrt, abs, floor, max, ...)
  kCompare,  // a comparison or a predicate: a bool, exact (quiet: no flag for a NaN)
  kLogical,  // logic and bitwise operations on bools and integers: exact
  kLibm,     // an elementary function (exp, log, sin, ...): each implementation rounds its own way
  kIntegerOp,  // floor division, remainders, powers: NumPy's own integer and sign rules
};

struct OpDef {
  const char* name;  // the NumPy ufunc's name (np.<name>), also the kernel IR's expression name
  int nin;
  UfuncKind kind;  // how its result dtype follows from its operands' (graph/rules/rules.hpp)
  Exactness exactness;
  // The translator captures a call of np.<name> as this op (clip comes from np.clip's rule,
  // reciprocal from a power of -1, copysign and signbit only from the ufunc methods' tables).
  bool captured;
};

// Every op, in one order (the translator's and the coverage list's).
const std::vector<OpDef>& op_list();
// The op called `name`, or nullptr.
const OpDef* find_op(const std::string& name);
// "exact", "compare", "logical", "libm", "integer op".
const char* exactness_name(Exactness e);

}  // namespace sot::graph
