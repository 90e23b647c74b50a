// CodeGen's emitter: the bytecode emitter (bytecode/emitter.hpp) with what rebuilding a frame's
// state needs: what each local holds as the generated code runs, values built once into home
// locals, the captured graph's call and its outputs on the stack, and the replayed side effects.
// Its methods live by concern: codegen_rebuild.cpp (values), codegen_graph.cpp (the graph call).
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bytecode/emitter.hpp"
#include "bytecode/localsplus.hpp"
#include "bytecode/opcode_table.hpp"
#include "translator/codegen/codegen.hpp"

namespace sot::translator {

inline bool is_op(const bytecode::Instruction& ins, const char* name) {
  return ins.opcode == bytecode::opcode_by_name(name);
}

// Index just past the code's prefix (MAKE_CELL, COPY_FREE_VARS, ..., the first RESUME).
inline std::size_t prefix_end(const bytecode::Bytecode& bc) {
  for (std::size_t i = 0; i < bc.size(); ++i) {
    if (is_op(bc.at(i), "RESUME")) {
      return i + 1;
    }
  }
  throw CodegenError("the code has no RESUME");
}

struct CodeGen::Emitter : bytecode::Emitter {
  const std::string& kinds;
  GuardSet* guards;
  std::vector<VarPtr> current;    // what each local holds at this point of the generated code
  std::vector<bool> overwritten;  // stored by the generated code (no longer the entry value)
  std::map<const Variable*, int> built;  // mutable containers built so far -> local holding it

  // The compiled graph the code calls (None: no graph), its inputs (Variables received from
  // outside) and the arrays it returns, in order. With one output referenced once the call is made
  // where that array is loaded ("lazy"). Otherwise it is made first and its result (the output, or
  // the tuple of outputs) stays at the bottom of the value stack while the state is rebuilt: each
  // load of an output copies it from there (no local is needed), and remove_graph_result() drops
  // it at the end.
  pybind11::object graph_fn = pybind11::none();
  std::vector<VarPtr> graph_inputs;
  std::vector<const Variable*> graph_outputs;
  bool graph_lazy = false;
  bool graph_done = false;
  bool result_on_stack = false;
  int above = 0;  // values on the stack above the graph's result (while it is there)
  bool depth_known = true;

  void emit_graph_call();

  void emit_graph_prologue();

  // Output `v` copied from the graph's result at the bottom of the stack.
  void load_graph_output(const Variable* v);

  // Drops the graph's result from below the `above` values above it.
  void remove_graph_result();

  // `entry`: the Variables of the frame's locals at entry (what each local holds before any store).
  Emitter(bytecode::Bytecode& target, const std::string& k, GuardSet* g,
          const std::vector<VarPtr>& entry);

  // CPython interns the strings of a code object's constants that look like identifiers, which
  // would make a string the frame computed identical to a literal of the same text: such a string
  // is loaded out of a one-item list constant instead (lists are not interned into).
  void load_constant_keeping_identity(const pybind11::object& value);

  int local_holding(const VarPtr& v) const;

  // Loads a value through its tracker; false when that is not possible here.
  bool load_tracked(const VarPtr& v);

  // The side effects of the frame, replayed once every value the generated code needs is loaded:
  // assignments to globals (the last one of each name, in order of first assignment), writes to
  // cells whose contents changed, and `del x[:]` of input lists. Every value is loaded before any
  // effect happens (a value may be read through what an effect changes), in reverse order, so
  // that the effects then run in order, each taking its values from the top.
  // `on_stack(v)` is how deep v already lies on the stack (1 = top), or 0: a value made in the
  // frame that is there is copied, not built twice.
  void emit_effects(const SimulationResult& r,
                    const std::function<std::size_t(const Variable*)>& on_stack);

  // An iterator made in the frame, at its position: built as the frame built it, then moved on.
  void load_iterator(const VarPtr& v);

  // Values being loaded (a value that contains itself cannot be rebuilt).
  std::set<const Variable*> loading;

  // Shared values made in the frame -> the local that keeps them once built (see assign_homes).
  std::map<const Variable*, int> home;

  void load(const VarPtr& v);

  // Counts the references to values made in the frame within `v` (a value built once is looked
  // into once; an immutable container is rebuilt, and so looked into, at every reference).
  struct Refs {
    std::map<const Variable*, int> count;
    std::vector<const Variable*> order;  // first reference first
    std::set<int> entry_locals;          // locals whose entry values are read (LOAD_FAST)
  };
  // Values made in the frame that `roots` refer to more than once are built once, into a home
  // local: `preferred` (the local that ends up holding the value), else the next of `scratch`.
  // Returns the scratch locals used.
  std::vector<int> assign_homes(const std::vector<VarPtr>& roots,
                                const std::map<const Variable*, int>& preferred,
                                const std::vector<int>& scratch);

  static bool made_tuple(const VarPtr& v);

  static void count_refs(const VarPtr& v, Refs* refs);

  void load_value(const VarPtr& v);

 protected:
  // Follows the stack above the graph's result while it is there.
  void emitted(const bytecode::Instruction& ins) override;
  void jumped() override;
};

}  // namespace sot::translator
