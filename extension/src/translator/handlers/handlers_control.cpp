// Control flow: the conditional jumps (on truth, on None), JUMP_IF_*_OR_POP and the plain jumps.
#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "translator/executor_support.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

void OpcodeExecutor::branch(const bytecode::Instruction& ins, bool jump_if) {
  bool value = false;
  if (peek(1)->kind() == Variable::Kind::kArray) {
    if (capture_while(ins, jump_if) || capture_if(ins, jump_if)) {
      return;  // (a while loop's test, or an if: one op, the run goes on after it)
    }
    graph_break("data-dependent branch: a jump on the truth of a " + peek(1)->describe());
  }
  if (!truth(peek(1), &value)) {
    graph_break("a jump on the truth of " + peek(1)->describe());
  }
  if (long_while(ins, jump_if)) {
    return;  // (a long while loop on Python numbers: one op, the run goes on after it)
  }
  pop();
  if (value == jump_if) {
    jump_to(ins.target);
  }
}

void OpcodeExecutor::op_pop_jump_if_true(const bytecode::Instruction& ins) {
  branch(ins, true);
}

void OpcodeExecutor::op_pop_jump_if_false(const bytecode::Instruction& ins) {
  branch(ins, false);
}

void OpcodeExecutor::jump_on_none(const bytecode::Instruction& ins, bool want_none) {
  const VarPtr& v = peek(1);
  bool is_none = false;
  if (v->is_const()) {
    guards_->value(v);
    is_none = v->value().is_none();
  } else if (v->kind() == Variable::Kind::kObject && v->tracker().is_input()) {
    guards_->type(v);  // not None, and stays not None
  } else if (!v->is_mutable_created() && v->kind() != Variable::Kind::kTuple) {
    graph_break("a jump on whether " + v->describe() + " is None");
  }
  pop();
  if (is_none == want_none) {
    jump_to(ins.target);
  }
}

void OpcodeExecutor::op_pop_jump_if_none(const bytecode::Instruction& ins) {
  jump_on_none(ins, true);
}

void OpcodeExecutor::op_pop_jump_if_not_none(const bytecode::Instruction& ins) {
  jump_on_none(ins, false);
}

void OpcodeExecutor::jump_or_pop(const bytecode::Instruction& ins, bool jump_if) {
  bool value = false;
  if (!truth(peek(1), &value)) {
    graph_break("a jump on the truth of " + peek(1)->describe());
  }
  if (value == jump_if) {
    jump_to(ins.target);
  } else {
    pop();
  }
}

void OpcodeExecutor::op_jump_if_true_or_pop(const bytecode::Instruction& ins) {
  jump_or_pop(ins, true);
}

void OpcodeExecutor::op_jump_if_false_or_pop(const bytecode::Instruction& ins) {
  jump_or_pop(ins, false);
}

void OpcodeExecutor::op_jump(const bytecode::Instruction& ins) {
  jump_to(ins.target);
}

}  // namespace sot::translator
