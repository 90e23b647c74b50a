// Stack opcodes: POP_TOP, PUSH_NULL, COPY, SWAP, and the value stack itself.
#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "bytecode/operands.hpp"
#include "translator/executor_support.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

VarPtr OpcodeExecutor::pop() {
  if (stack_.empty()) {
    fail("the value stack ran empty (malformed bytecode)");
  }
  VarPtr v = std::move(stack_.back());
  stack_.pop_back();
  return v;
}

VarPtr& OpcodeExecutor::peek(std::size_t depth) {
  if (depth == 0 || depth > stack_.size()) {
    fail("the value stack is too shallow (malformed bytecode)");
  }
  return stack_[stack_.size() - depth];
}

void OpcodeExecutor::push(VarPtr v) {
  stack_.push_back(std::move(v));
}

void OpcodeExecutor::push_callable(VarPtr v, bool with_null) {
  // The NULL of a call goes below the callable on 3.11 and 3.12, above it on 3.13.
  if (with_null && bytecode::operand::call_null_below_callable()) {
    push(Variable::null());
  }
  push(std::move(v));
  if (with_null && !bytecode::operand::call_null_below_callable()) {
    push(Variable::null());
  }
}

void OpcodeExecutor::op_pop_top(const bytecode::Instruction& /*ins*/) {
  // A value from outside dropped here may be the last reference to an object with a finalizer
  // (a call's result a resume function received): plain Python runs its __del__ now, before what
  // follows (handlers_locals.cpp, drop_local).
  drop_values(1);
  pop();
}

void OpcodeExecutor::op_push_null(const bytecode::Instruction& /*ins*/) {
  push(Variable::null());
}

void OpcodeExecutor::op_copy(const bytecode::Instruction& ins) {
  push(peek(static_cast<std::size_t>(ins.arg)));
}

void OpcodeExecutor::op_swap(const bytecode::Instruction& ins) {
  std::swap(peek(1), peek(static_cast<std::size_t>(ins.arg)));
}

}  // namespace sot::translator
