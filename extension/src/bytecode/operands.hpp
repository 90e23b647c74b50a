// What an instruction's argument means, and how the stack around it is laid out, on this Python:
// the questions a simulator of the bytecode asks, answered from the version tables (version.hpp)
// so that it tests no version itself.
#pragma once

#include <cstddef>

#include "bytecode/version.hpp"

namespace sot::bytecode::operand {

// LOAD_GLOBAL: the index of the name; whether it also pushes a NULL for a call.
inline int global_name(int arg) {
  return arg >> version::kLoadGlobalNameShift;
}
inline bool global_pushes_null(int arg) {
  return (arg & 1) != 0;
}
// LOAD_ATTR: the index of the name; whether it loads a method (3.12+: bit 0; 3.11 has
// LOAD_METHOD, whose argument is the name index).
inline int attr_name(int arg) {
  return arg >> version::kLoadAttrNameShift;
}
inline bool attr_loads_method(int arg) {
  return version::kLoadAttrNameShift == 1 && (arg & 1) != 0;
}
// LOAD_SUPER_ATTR: the index of the name; whether it loads a method.
inline int super_attr_name(int arg) {
  return arg >> version::kLoadSuperAttrNameShift;
}
inline bool super_attr_loads_method(int arg) {
  return (arg & 1) != 0;
}
// COMPARE_OP: the comparison (Py_LT ... Py_GE).
inline int comparison(int arg) {
  return arg >> version::kCompareOpShift;
}
// MAKE_FUNCTION: the parts it takes from the stack (defaults, keyword defaults, annotations,
// closure as bits 0-3); 3.13 takes none (SET_FUNCTION_ATTRIBUTE sets them).
inline int make_function_flags(int arg) {
  return version::kMakeFunctionHasFlags ? arg : 0;
}
// The closure's bit among MAKE_FUNCTION's flags and SET_FUNCTION_ATTRIBUTE's argument.
inline constexpr int kFunctionClosure = version::kMakeFunctionClosure;
// Whether MAKE_FUNCTION gets its closure with it (before 3.13) rather than afterwards.
inline bool make_function_takes_closure() {
  return version::kMakeFunctionHasFlags;
}
// FOR_ITER at exhaustion continues this many instructions past its target.
inline std::size_t for_iter_exit_skip() {
  return version::kForIterExhaustSkip;
}
// The values END_FOR pops.
inline int end_for_pops() {
  return version::kEndForPops;
}
// Whether a call's NULL lies below the callable (3.11, 3.12) rather than above it (3.13).
inline bool call_null_below_callable() {
  return version::kNullBeforeCallable;
}

}  // namespace sot::bytecode::operand
