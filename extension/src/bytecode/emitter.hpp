// Builds instructions to insert into a Bytecode, with the differences between 3.11, 3.12 and 3.13
// kept here: opcodes by name, labels for forward jumps, exception-table coverage, constants that
// keep the code object hashable, and the sequences whose layout differs between versions (a call's
// NULL and PRECALL, method loads, MAKE_FUNCTION with defaults and a closure, cell loads). Code that
// emits through it holds no version test.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "bytecode/bytecode.hpp"

namespace sot::bytecode {

// The emitted code cannot be built (an opcode this Python lacks, a label never placed).
class EmitError : public BytecodeError {
 public:
  using BytecodeError::BytecodeError;
};

// The opcode named `name` on this Python, or an EmitError.
int opcode_named(const char* name);

// A load that pushes a NULL for a call besides its value (LOAD_GLOBAL with its NULL bit, a method
// load): true, with the same load without the NULL in `plain` (a method load becomes a plain
// attribute load) and the NULL's place among the two results in `null_position` (0: below).
bool strip_call_null(const Instruction& ins, Instruction* plain, int* null_position);
// Whether a call's NULL lies between the callable and its arguments (3.13) rather than below the
// callable.
bool call_null_above_callable();
// Whether `ins` takes only an exact bool (3.13's POP_JUMP_IF_TRUE/FALSE and UNARY_NOT: the
// compiler put TO_BOOL before them).
bool takes_exact_bool(const Instruction& ins);

class Emitter {
 public:
  explicit Emitter(Bytecode& target) : bc(target) {}
  Emitter(const Emitter&) = delete;
  Emitter& operator=(const Emitter&) = delete;
  virtual ~Emitter() = default;

  Bytecode& bc;                  // the code the instructions go into (names, constants)
  Position pos;                  // the source position each instruction carries
  std::vector<Instruction> out;  // emitted so far

  void emit(int op, int arg = 0);
  void emit(const char* name, int arg = 0) { emit(opcode_named(name), arg); }

  // Labels: made, jumped to (forward or back), placed at the current end.
  int new_label();
  void place(int label);
  // A jump by its 3.12 name (3.11's POP_JUMP_FORWARD_IF_* where 3.12 has POP_JUMP_IF_*).
  void emit_jump_op(const char* name, int label);
  // A copy of the original's jump `original` (opcode, argument, position), to `label`.
  void emit_jump(const Instruction& original, int label);
  // A jump to an instruction of the code being built, by its id.
  void emit_jump_to_id(const char* name, int id);
  // The instructions from `first` to the current end are covered by a handler at `label`.
  void cover(std::size_t first, int label, int depth, bool lasti);
  // Inserts the instructions into `target` at `at` (default: the end) and resolves jumps and
  // handlers. Emitted instructions are covered only by the handlers given with cover().
  void finish_into(Bytecode& target, std::size_t at = SIZE_MAX);

  // A constant. A code object must stay hashable (tools hash code objects: stack_data in
  // IPython's tracebacks, coverage): an unhashable constant (a slice before 3.12, a tuple holding
  // one) is built instead, a slice by calling a hashable constant that returns that very slice
  // (loaded twice, it is the same object twice: copy.copy(s) is s).
  void load_const(const pybind11::object& value);
  // obj -> obj.name
  void load_attr(const std::string& name);
  // name (a global or builtin), without a NULL
  void load_global(const std::string& name);
  // The cell in slot `slot`, as a closure tuple's item (LOAD_CLOSURE; 3.13: LOAD_FAST).
  void load_cell(int slot);
  // Pushes the top value rotated below the `n` values under it.
  void rotate_down(std::size_t n);

  // Calls: [callable, args...] laid out as this Python's CALL wants it, then the call.
  // `nargs` arguments already pushed above a callable pushed by push_callable().
  void push_callable(const std::function<void()>& load_callable);
  void call(int nargs);
  // [arg, callable] -> ready for call(1): the NULL put where this Python wants it.
  void callable_over_argument();
  // Calls the constant `callable` with the values `push_args` pushes (`nargs` of them).
  void call_constant(const pybind11::object& callable, const std::function<void()>& push_args,
                     int nargs);
  // Replaces the value on top by the result of calling its attribute `name` with the constant
  // `arg` (or none).
  void call_attribute(const std::string& name, const pybind11::object& arg);
  // Calls the bound method `name` of the value on top with the constant `arg` (or none), leaving
  // that value (not the result) on top.
  void call_method_keep(const char* name, const pybind11::object& arg);
  // [args tuple, callable] -> callable(*args), its result popped.
  void call_ex_discard();

  // The instructions a FOR_ITER's exhausted path skips past its target (3.12: END_FOR; 3.13:
  // END_FOR, POP_TOP), emitted so that the same instructions stand at a label: their count.
  std::size_t emit_for_iter_exit();

  // A function of the code object `code`: `load_part(bit)` pushes each of its parts in `parts`
  // (bit 0 defaults, 1 keyword defaults, 2 annotations), `load_closure` its tuple of cells when
  // `closure`.
  void make_function(const pybind11::object& code, int parts, bool closure,
                     const std::function<void(int bit)>& load_part,
                     const std::function<void()>& load_closure);

 protected:
  // Called after each instruction emit() appends, and at each jump (the stack depth after a jump
  // is the target's): hooks for emitters that follow the stack.
  virtual void emitted(const Instruction& /*ins*/) {}
  virtual void jumped() {}

 private:
  struct Cover {
    std::size_t first;
    std::size_t end;
    int label;
    int depth;
    bool lasti;
  };
  long label_index(int label) const;

  std::vector<long> labels_;                        // label -> index in out (-1: not placed)
  std::vector<std::pair<std::size_t, int>> jumps_;  // (index in out, label)
  std::vector<Cover> covers_;
};

}  // namespace sot::bytecode
