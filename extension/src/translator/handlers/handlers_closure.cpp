// Closures and functions: MAKE_CELL, LOAD_DEREF, LOAD_CLOSURE, STORE_DEREF, DELETE_DEREF,
// MAKE_FUNCTION, SET_FUNCTION_ATTRIBUTE.
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

void OpcodeExecutor::op_make_cell(const bytecode::Instruction& ins) {
  if (started_) {
    graph_break("MAKE_CELL inside the body (an inlined comprehension's cell)");
  }
  // The slot's value (an argument, or nothing) moves into a new cell; in the translated frame
  // the generated code's prefix makes the same cell there.
  if (ins.arg < 0 || static_cast<std::size_t>(ins.arg) >= locals_.size()) {
    fail("a local index out of range (malformed bytecode)");
  }
  VarPtr& slot = locals_[static_cast<std::size_t>(ins.arg)];
  slot = Variable::cell(slot, depth_ == 0 ? ins.arg : -1, /*outside=*/false);
}

void OpcodeExecutor::op_load_deref(const bytecode::Instruction& ins) {
  VarPtr v = cell_at(ins.arg)->contents();
  if (!v) {
    graph_break("a read of an empty cell (raises NameError)");
  }
  push(std::move(v));
}

void OpcodeExecutor::op_load_closure(const bytecode::Instruction& ins) {
  push(cell_at(ins.arg));
}

void OpcodeExecutor::op_store_deref(const bytecode::Instruction& ins) {
  const VarPtr cell = cell_at(ins.arg);
  write_cell(cell, peek(1));
  pop();
}

void OpcodeExecutor::op_delete_deref(const bytecode::Instruction& ins) {
  const VarPtr cell = cell_at(ins.arg);
  if (!cell->contents()) {
    graph_break("del of an empty cell (raises NameError)");
  }
  write_cell(cell, nullptr);
}

void OpcodeExecutor::op_make_function(const bytecode::Instruction& ins) {
  make_function(bytecode::operand::make_function_flags(ins.arg));
}

void OpcodeExecutor::op_set_function_attribute(const bytecode::Instruction& ins) {
  // 3.13: [value, function] -> function.
  const VarPtr fn = peek(1);
  const VarPtr value = peek(2);
  constexpr int kClosure = bytecode::operand::kFunctionClosure;
  if (fn->kind() != Variable::Kind::kFunction || ins.arg <= 0 || ins.arg > kClosure ||
      (ins.arg & (ins.arg - 1)) != 0) {
    graph_break("SET_FUNCTION_ATTRIBUTE on " + fn->describe());
  }
  if (ins.arg == kClosure) {
    const auto* co = reinterpret_cast<PyCodeObject*>(fn->value().ptr());
    bool cells = value->kind() == Variable::Kind::kTuple &&
                 value->items().size() == static_cast<std::size_t>(co->co_nfreevars);
    for (std::size_t k = 0; cells && k < value->items().size(); ++k) {
      cells = value->items()[k]->kind() == Variable::Kind::kCell;
    }
    if (!cells) {
      graph_break("a closure that is not a tuple of cells");
    }
    fn->items() = value->items();
  } else {
    const int bit = ins.arg == 1 ? 0 : (ins.arg == 2 ? 1 : 2);
    fn->part(static_cast<Variable::Part>(bit)) = value;
  }
  pop();
  pop();
  push(fn);
}

VarPtr OpcodeExecutor::cell_at(int index) {
  if (index < 0 || static_cast<std::size_t>(index) >= locals_.size()) {
    fail("a local index out of range (malformed bytecode)");
  }
  VarPtr c = locals_[static_cast<std::size_t>(index)];
  if (!c || c->kind() != Variable::Kind::kCell) {
    graph_break("a cell the translator does not model");
  }
  return c;
}

void OpcodeExecutor::write_cell(const VarPtr& cell, VarPtr contents) {
  // Code outside the translation may hold the same cell under another name (a sibling closure, the
  // caller's frame): a write to it runs for real, so that every read after it sees the cell itself.
  // Cells the frame made (MAKE_CELL here or in an inlined call) are seen by simulated code only.
  if (cell->outside()) {
    graph_break("a write to a cell that code outside the translation may share");
  }
  remember(cell);
  effects().wrote_cell(cell);
  cell->set_contents(std::move(contents));
}

void OpcodeExecutor::make_function(int flags) {
  // 3.11/3.12: [defaults?, kwdefaults?, annotations?, closure?, code] (by flag 1, 2, 4, 8); 3.13
  // sets them afterwards with SET_FUNCTION_ATTRIBUTE.
  const VarPtr code = peek(1);
  if (code->tracker().is_input() || !PyCode_Check(code->value().ptr())) {
    graph_break("MAKE_FUNCTION of " + code->describe());
  }
  std::size_t depth = 2;
  VarPtr closure;
  std::array<VarPtr, 3> parts;
  constexpr int kClosure = bytecode::operand::kFunctionClosure;
  if ((flags & kClosure) != 0) {
    closure = peek(depth++);
  }
  for (int bit = 2; bit >= 0; --bit) {
    if ((flags & (1 << bit)) != 0) {
      parts[static_cast<std::size_t>(bit)] = peek(depth++);
    }
  }
  std::vector<VarPtr> cells;
  if (closure) {
    if (closure->kind() != Variable::Kind::kTuple) {
      graph_break("a closure that is not a tuple of cells");
    }
    for (const VarPtr& c : closure->items()) {
      if (c->kind() != Variable::Kind::kCell) {
        graph_break("a closure that is not a tuple of cells");
      }
    }
    cells = closure->items();
  }
  // (3.13 sets the closure afterwards.)
  if (bytecode::operand::make_function_takes_closure() &&
      cells.size() != static_cast<std::size_t>(
                          reinterpret_cast<PyCodeObject*>(code->value().ptr())->co_nfreevars)) {
    graph_break("a closure of the wrong size");
  }
  VarPtr fn = Variable::function(code->value(), std::move(cells));
  fn->globals() = inputs_.globals_var;
  for (int bit = 0; bit < 3; ++bit) {
    fn->part(static_cast<Variable::Part>(bit)) = parts[static_cast<std::size_t>(bit)];
  }
  for (std::size_t k = 1; k < depth; ++k) {
    pop();
  }
  push(std::move(fn));
}

}  // namespace sot::translator
