// Simulates a frame's bytecode on Variables: a virtual frame (locals, value stack, globals,
// builtins) stepped one instruction at a time from the frame's entry. Pure operations on constants
// are folded; the first instruction it cannot simulate ends the run in a graph break (the
// generated code runs that instruction for real and resumes after it) or, where a break cannot be
// made sound, a failure (the original code runs).
#pragma once

#include <pybind11/pybind11.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bytecode/bytecode.hpp"
#include "graph/exec/loop_op.hpp"
#include "graph/rules/rules.hpp"
#include "translator/effects/side_effects.hpp"
#include "translator/guards/guards.hpp"
#include "translator/numpy/array_state.hpp"
#include "translator/values/variable.hpp"

namespace sot::graph {
struct CondSpec;  // (graph/exec/cond_op.hpp)
}  // namespace sot::graph

namespace sot::translator {

struct BinaryOperator;  // (binary_operators.hpp)
struct ListBuffer;      // (numpy/array_state.hpp)

// The state of the virtual frame at the instruction where simulation stopped.
struct FrameState {
  std::vector<VarPtr> locals;  // by localsplus index; nullptr = unbound (or a cell / free slot)
  std::vector<VarPtr> stack;   // bottom first
};

struct SimulationResult {
  enum class Kind : std::uint8_t {
    kReturn,  // the frame returns `value`
    kBreak,   // run instructions [first, last] for real, then resume (see codegen)
    kFail,    // the original code must run: `reason`
  };
  Kind kind = Kind::kFail;
  VarPtr value;
  std::size_t first = 0;  // kBreak: the first instruction to run for real (KW_NAMES / PRECALL)
  std::size_t last = 0;   // kBreak: the instruction whose successors resume; kReturn: the return
  FrameState state;       // kBreak: before `first`
  std::string reason;     // kBreak, kFail
  int lineno = -1;        // kBreak, kFail: the user's line
  std::vector<VarPtr> entry_locals;  // the Variables of the locals at entry (unchanged = same)
  // Side effects the generated code replays after it has loaded every value it needs: input lists
  // emptied with `del x[:]` (the resume functions' argument lists), and the rest
  // (side_effects.hpp).
  std::vector<VarPtr> cleared_lists;
  SideEffects effects;
  std::size_t simulated = 0;  // instructions simulated
  std::size_t folded = 0;     // operations folded at translation time
  // The NumPy operations captured (nullptr: none); kArray Variables are its values.
  std::shared_ptr<ArrayState> arrays;
};

struct FrameInputs {
  PyCodeObject* code = nullptr;
  PyObject* globals = nullptr;   // borrowed
  PyObject* builtins = nullptr;  // borrowed
  // For an inlined function of another module: its globals and builtins as tracked values
  // (fn.__globals__, fn.__builtins__); nullptr for the translated frame's own globals.
  VarPtr globals_var;
  VarPtr builtins_var;
  std::vector<pybind11::object> locals;  // the frame's localsplus values at entry (null = unbound)
  // For a resume function: the index of its prologue's jump; its STORE_FASTs before it may fill
  // cell slots with the caller's cells. 0 for other code.
  std::size_t resume_prologue_end = 0;
  // Shapes: the code's translator data (shapes seen by earlier translations), and whether
  // dimensions may become dynamic.
  pybind11::dict shape_history;
  bool dynamic_shapes = true;
  // The graph backend that will compile the graphs, by name (it may compile a loop natively).
  std::string backend;
};

// The name `co` uses that looks at its own frame (locals, vars, super, sys._getframe, ...), or
// empty: such code would see the frames of resume functions (not translated, not inlined).
std::string frame_introspection(PyCodeObject* co, bool allow_super = false);

// The opcodes (of this Python) the executor simulates; every other one is a graph break.
std::vector<std::string> simulated_opcode_names();

// The NumPy functions, ufuncs and ndarray methods the translator captures, each with how it runs:
// "ufunc (fused)", "graph op" or "library op" (numpy_names.cpp; docs/numpy_coverage.md).
std::vector<std::pair<std::string, std::string>> numpy_coverage();

class OpcodeExecutor {
 public:
  // Instructions simulated before giving up (unrolled loops count each time).
  static constexpr std::size_t kMaxSteps = 20000;
  // The longest `for` loop of Python numbers on constants that unrolls (and folds) rather than
  // breaking the graph (loop_capture.cpp).
  static constexpr std::int64_t kPythonUnrollMax = 256;

  // Calls inlined into one another, at most (deeper calls break the graph).
  static constexpr int kMaxInlineDepth = 8;
  // What inlined calls share with the frame that runs them.
  struct Shared {
    SideEffects effects;
    // The Variables of globals and module attributes loaded so far ((nullptr, "global name"),
    // (module, "attr name")): the same place gives the same Variable.
    std::map<std::pair<const Variable*, std::string>, VarPtr> loaded;
    // The NumPy graph (made on the first array operation), and the top frame's shape settings.
    std::shared_ptr<ArrayState> arrays;
    pybind11::dict shape_history;
    bool dynamic_shapes = true;
    std::string backend;  // (FrameInputs::backend)
    // Inlined calls made from an instruction inside a try or with block: an exception in the
    // callee must reach that block's handler.
    int calls_under_handler = 0;
    // Loop bodies being captured (loop_capture.cpp): changes are logged to tell what they touch.
    int loop_depth = 0;
    // Ifs being captured (if_capture.cpp): one at a time (an if inside a way breaks it).
    int cond_depth = 0;
  };

  OpcodeExecutor(const bytecode::Bytecode& code, const FrameInputs& inputs, GuardSet* guards);
  // An inlined call: the callee's locals start as `locals` (the caller's Variables; its free slots
  // hold the closure's cells); it shares the caller's guards, side-effect state and instruction
  // budget.
  OpcodeExecutor(const bytecode::Bytecode& code, const FrameInputs& inputs, GuardSet* guards,
                 std::vector<VarPtr> locals, int depth, Shared* shared, std::size_t simulated);
  SimulationResult run();

 private:
  struct Stop {};  // thrown by handlers to end the run (the result is already set)

  // Runs the handler of `ins`; handlers return normally to continue at next_.
  void step(const bytecode::Instruction& ins);

  // Opcode handlers, one per opcode (or per family of opcodes that differ in nothing the
  // simulation sees), grouped by family in handlers_<family>.cpp. handler_table.cpp maps this
  // Python's opcode numbers to them; an opcode without a handler is a graph break.
  using Handler = void (OpcodeExecutor::*)(const bytecode::Instruction&);
  static const std::array<Handler, 256>& handlers();
  friend std::vector<std::string> simulated_opcode_names();
  // handlers_locals.cpp
  void op_nop(const bytecode::Instruction& ins);
  void op_resume(const bytecode::Instruction& ins);
  void op_load_fast(const bytecode::Instruction& ins);
  void op_load_fast_and_clear(const bytecode::Instruction& ins);
  void op_load_fast_load_fast(const bytecode::Instruction& ins);
  void op_store_fast(const bytecode::Instruction& ins);
  void op_store_fast_load_fast(const bytecode::Instruction& ins);
  void op_store_fast_store_fast(const bytecode::Instruction& ins);
  void op_delete_fast(const bytecode::Instruction& ins);
  void op_load_const(const bytecode::Instruction& ins);
  void op_return_value(const bytecode::Instruction& ins);
  void op_return_const(const bytecode::Instruction& ins);
  void op_load_global(const bytecode::Instruction& ins);
  void op_store_global(const bytecode::Instruction& ins);
  void op_delete_global(const bytecode::Instruction& ins);
  // handlers_import.cpp
  void op_import_name(const bytecode::Instruction& ins);
  void op_import_from(const bytecode::Instruction& ins);
  // sys.modules[name] as a value tracked there (a break where it is not imported yet).
  VarPtr imported_module(const std::string& name);
  // handlers_stack.cpp
  void op_pop_top(const bytecode::Instruction& ins);
  void op_push_null(const bytecode::Instruction& ins);
  void op_copy(const bytecode::Instruction& ins);
  void op_swap(const bytecode::Instruction& ins);
  // handlers_operators.cpp
  void op_binary_op(const bytecode::Instruction& ins);
  void op_compare_op(const bytecode::Instruction& ins);
  void op_is_op(const bytecode::Instruction& ins);
  void op_contains_op(const bytecode::Instruction& ins);
  void op_call_intrinsic_1(const bytecode::Instruction& ins);
  void op_unary_negative(const bytecode::Instruction& ins);
  void op_unary_positive(const bytecode::Instruction& ins);
  void op_unary_invert(const bytecode::Instruction& ins);
  void op_unary_not(const bytecode::Instruction& ins);
  void op_to_bool(const bytecode::Instruction& ins);
  void op_format_value(const bytecode::Instruction& ins);
  void op_format_simple(const bytecode::Instruction& ins);
  void op_format_with_spec(const bytecode::Instruction& ins);
  void op_convert_value(const bytecode::Instruction& ins);
  void op_build_string(const bytecode::Instruction& ins);
  // handlers_control.cpp
  void op_pop_jump_if_true(const bytecode::Instruction& ins);
  void op_pop_jump_if_false(const bytecode::Instruction& ins);
  void op_pop_jump_if_none(const bytecode::Instruction& ins);
  void op_pop_jump_if_not_none(const bytecode::Instruction& ins);
  void op_jump_if_true_or_pop(const bytecode::Instruction& ins);
  void op_jump_if_false_or_pop(const bytecode::Instruction& ins);
  void op_jump(const bytecode::Instruction& ins);
  // handlers_build.cpp
  void op_build_tuple(const bytecode::Instruction& ins);
  void op_build_list(const bytecode::Instruction& ins);
  void op_list_append(const bytecode::Instruction& ins);
  void op_list_extend(const bytecode::Instruction& ins);
  void op_list_to_tuple(const bytecode::Instruction& ins);
  void op_build_slice(const bytecode::Instruction& ins);
  void op_build_map(const bytecode::Instruction& ins);
  void op_build_const_key_map(const bytecode::Instruction& ins);
  void op_map_add(const bytecode::Instruction& ins);
  void op_dict_update(const bytecode::Instruction& ins);
  void op_dict_merge(const bytecode::Instruction& ins);
  void op_build_set(const bytecode::Instruction& ins);
  void op_set_add(const bytecode::Instruction& ins);
  void op_set_update(const bytecode::Instruction& ins);
  // handlers_subscr.cpp
  void op_binary_subscr(const bytecode::Instruction& ins);
  void op_binary_slice(const bytecode::Instruction& ins);
  void op_store_subscr(const bytecode::Instruction& ins);
  void op_store_slice(const bytecode::Instruction& ins);
  void op_delete_subscr(const bytecode::Instruction& ins);
  // handlers_attr.cpp
  void op_load_attr(const bytecode::Instruction& ins);
  void op_load_method(const bytecode::Instruction& ins);
  void op_store_attr(const bytecode::Instruction& ins);
  void op_delete_attr(const bytecode::Instruction& ins);
  void op_load_super_attr(const bytecode::Instruction& ins);
  // handlers_call.cpp
  void op_kw_names(const bytecode::Instruction& ins);
  void op_precall(const bytecode::Instruction& ins);
  void op_call(const bytecode::Instruction& ins);
  void op_call_kw(const bytecode::Instruction& ins);
  void op_call_function_ex(const bytecode::Instruction& ins);
  // handlers_iter.cpp
  void op_get_iter(const bytecode::Instruction& ins);
  void op_for_iter(const bytecode::Instruction& ins);
  void op_end_for(const bytecode::Instruction& ins);
  void op_unpack_sequence(const bytecode::Instruction& ins);
  // loop_capture.cpp: a `for` loop over a long range whose body is array code becomes one loop op
  // of the graph (its body simulated once); false when it cannot (the loop then unrolls).
  static constexpr std::int64_t kLoopUnrollMax = 16;  // ranges up to this long still unroll
  static constexpr Py_ssize_t kLoopPeelMax = 2;  // steps unrolled before a loop op is tried again
  struct LoopSite;
  bool capture_loop(const bytecode::Instruction& ins, const VarPtr& it);
  bool range_loop_bounds(const VarPtr& it, LoopSite* site);
  // range_loops.cpp (and runtime_range_loop below)
  bool runtime_loop_ok(
      const LoopSite& site);  // (such a loop leaves nothing a range of no steps breaks)
  struct RuntimeRange {
    pybind11::object range;     // the stand-in range the body is simulated over
    int start = -1, stop = -1;  // the bounds, values of the graph
  };
  std::optional<RuntimeRange> runtime_range_;  // while such a loop is being captured
  bool rows_loop_bounds(const VarPtr& it, LoopSite* site);
  bool loop_shape(const bytecode::Instruction& ins, LoopSite* site) const;
  // Whether an instruction of [from, to) yields (a generator's loop is never a loop op).
  bool yields_in(std::size_t from, std::size_t to) const;
  bool loop_targets(LoopSite* site) const;
  void slots_stored(std::size_t from, std::size_t to, LoopSite* site) const;
  void loop_numbers(LoopSite* site);
  void loop_placeholders(LoopSite* site);
  bool simulate_loop_body(LoopSite* site);
  bool loop_state_ok(LoopSite* site);
  void abandon_loop(const LoopSite& site);
  // A loop whose body computes single elements only (Python numbers, NumPy scalars, one-element
  // arrays) is not a loop op (loop_capture.cpp) unless the backend runs it as native code: true
  // when it is to unroll (abandoned), a graph break at the loop when CPython is to run it.
  bool scalar_loop(const LoopSite& site);
  // What a loop's body computes (scalar_loop decides by it).
  struct ElementWork {
    bool elements = false;  // single elements only (else array work)
    bool numbers = true;    // Python numbers only
    bool constants = true;  // reading only constants from before the loop
  };
  ElementWork element_work(const LoopSite& site) const;
  // A body holding a cond op, or a slice of its ints (L[i, :i]), that the backend's native code
  // would not run: abandoned (true). native_spec: the spec the backend is asked about.
  bool body_needs_native(const LoopSite& site);
  graph::LoopSpec native_spec(const LoopSite& site);
  // The loop op of `site` as it would be made: its spec, the frame's values it takes (ids of the
  // frame's graph as it is, the body's ops in it) and the kinds of its outputs.
  struct BuiltLoop {
    graph::LoopSpec spec;
    std::vector<int> outer_args;
    std::vector<graph::ValueInfo> out_infos;
  };
  BuiltLoop build_loop(const LoopSite& site) const;
  // x[i], x[..., i, ..., j, ...] with ints of a loop body (control/loop_key.hpp).
  struct LoopKey;
  std::optional<LoopKey> loop_key(const VarPtr& container, const VarPtr& key);
  // A Python int of the graph whose range is known (a loop variable, i + 1).
  bool ranged_int(const VarPtr& v);
  // slice(start, stop[, step]) as a kSlice Variable when a start or stop is such an int (the rest
  // constants: None or ints), else nullptr.
  VarPtr ranged_slice(const std::vector<VarPtr>& parts);
  // The text of how the Python int `id` was made (`add(v12,1)`), and the largest id it names.
  std::string int_form(int id, int* max_id);
  bool slice_places(const graph::ValueInfo& in, const std::vector<VarPtr>& slices,
                    pybind11::list* parts, std::vector<pybind11::object>* templates, LoopKey* k);
  // loop_lists.cpp: lists made before a loop that its body appends to, as buffers of the graph.
  void note_append(const VarPtr& list, const VarPtr& value);
  bool buffer_lists(LoopSite* site);
  void unbuffer_lists(const LoopSite& site);
  bool next_list_plans(LoopSite* site) const;
  ListBuffer* list_buffer(const VarPtr& list);
  int buffer_count(const ListBuffer& b);  // int(count[0])
  void buffered_append(const VarPtr& list, const VarPtr& value);
  bool lists_ok(LoopSite* site);
  void lists_after_loop(const LoopSite& site);
  VarPtr list_length(const VarPtr& v);  // len() of such a list (nullptr: another value)
  bool list_subscript();                // [list, key] on the stack: list[k] of such a list
  bool promotes(const LoopSite& site, int slot, int placeholder, int end);  // (a Python float)
  VarPtr promoted_float(const VarPtr& v);  // np.float64(v) of a Python float constant
  VarPtr array_of_list(const VarPtr& v, const std::string& name);  // np.array(L), sum(L), ...
  void emit_loop_op(LoopSite* site);
  void loop_locals_after(const LoopSite& site, const std::vector<int>& outs,
                         const std::vector<graph::ValueInfo>& out_infos);
  // loop_exits.cpp: an `if` in the body of a `for` loop being captured whose one way leaves the
  // loop (a `break`, or a `return` of a local or a constant) becomes the loop op's exit test.
  LoopSite* body_loop_ = nullptr;  // the `for` loop whose body is being simulated (none: null)
  bool index_values_ = false;      // a loop's index is a value an exit's ways may hand on
  struct IfSite;
  // The way (0, 1) of the `if` at `site` that leaves body_loop_ as an exit can, else 2.
  std::size_t exit_way_of(const IfSite& site);
  bool capture_exit(IfSite* site, std::size_t exit_way);
  // The tests of the exits inside the ways of `site` as outputs of its cond op (the way without
  // the exit hands on a test that goes on).
  bool exit_test_outputs(IfSite* site);
  // How many tests body_loop_ has (none: 0).
  std::size_t loop_tests() const;
  void exit_needs_var(LoopSite* site) const;
  bool simulate_to_head(IfSite* site, std::size_t start);
  // Whether the way at `start` pops the iterator and then runs what the loop's end runs (at
  // `after`): a `break`.
  bool breaks_out(std::size_t start, std::size_t after) const;
  // Whether the code at `start` is a jump to `after` or runs what the code at `after` runs, up to
  // its return (3.12 and 3.13 copy a short end into a `break`'s way).
  bool runs_end(std::size_t start, std::size_t after) const;
  // Where a `break` of `loop` goes: after a `for` loop's iterator is popped, a while loop's exit.
  static std::size_t loop_end(const LoopSite& loop);
  // Where straight code from `start` reaches such a break (npos: it does not).
  std::size_t break_at(std::size_t start, std::size_t after) const;
  // The value the way at `start` returns when it only loads locals or constants and returns.
  VarPtr returned_by(std::size_t start, const std::vector<VarPtr>& stack);
  // After the body: what an exit needs (the loop variable's last value where it is read after the
  // loop; for a `return`, the code after the loop returning a local or a constant too).
  bool loop_exit_ok(LoopSite* site, const VarPtr& it);
  // A `return` exit taken or not, after its loop op: the frame returns the value the last test
  // picks (a cond op of the two).
  struct ExitReturn {
    int test = -1;
    bool go_on_if = true;
    VarPtr exit_value, after_value;
  };
  std::optional<ExitReturn> exit_return_;
  void return_at_exit();
  // The locals an exit's outputs (from `k` on) set after its loop op, and a `return`'s values.
  void loop_exit_values(const LoopSite& site, const std::vector<int>& outs,
                        const std::vector<graph::ValueInfo>& out_infos, std::size_t k);
  // while_capture.cpp: a `while` loop whose test jumps on a value of the graph becomes one loop op
  // whose trip count is known only where the graph runs; false when it cannot (the test then
  // breaks the graph).
  bool capture_while(const bytecode::Instruction& ins, bool jump_if);
  // if_capture.cpp: an `if` on a value of the graph becomes one cond op (each way simulated, its
  // ops a graph of their own; only the way the test picks runs); false when it cannot (the jump
  // then breaks the graph).
  bool capture_if(const bytecode::Instruction& ins, bool jump_if);
  bool simulate_way(IfSite* site, std::size_t start, bool first);
  // The last cond op made (its jump's target and where its ways met), counted: a way whose step
  // made one that took its `else` block is an `and`'s (if_capture.cpp).
  std::uint64_t conds_made_ = 0;
  std::size_t last_cond_target_ = 0, last_cond_join_ = 0;
  // The FOR_ITER of the `for` loop whose body this frame is capturing as a loop op (npos: none):
  // two ways of an `if` that each jump back to it meet there, at the end of the step.
  std::size_t loop_head_ = static_cast<std::size_t>(-1);
  bool way_ok(IfSite* site, std::size_t w) const;
  // No instruction of the code outside [skip_from, skip_to) reads local `slot` (only stores).
  bool never_read(int slot, std::size_t skip_from = 0, std::size_t skip_to = 0) const;
  // The last loop not made a loop op here, [from, to) its instructions, and why: a break inside it
  // says so.
  struct DeclinedLoop {
    std::size_t from = 0, to = 0;
    std::string why;
  };
  DeclinedLoop declined_loop_;
  // The result of a capture given up: no failure, no value (the simulation goes on as before it).
  void clear_result();
  bool cond_output(IfSite* site, const std::array<VarPtr, 2>& way, int slot, int stack);
  bool cond_outputs(IfSite* site);
  bool way_value(const VarPtr& v, int* id, graph::ValueInfo* info, pybind11::object* constant);
  bool build_cond(IfSite* site, graph::CondSpec* spec, std::vector<int>* outer);
  // A cond op on `test` (its ways `spec`, taking `args`) and a cond_output per output of kind
  // `infos`, at the source line of `at`: the outputs' ids.
  std::vector<int> add_cond_op(int test, const std::vector<int>& args, graph::CondSpec spec,
                               const std::vector<graph::ValueInfo>& infos,
                               const bytecode::Instruction& at);
  void emit_cond_op(IfSite* site);
  // A jump on a constant: the loop tried as a loop op once it has gone on kLoopUnrollMax times.
  bool long_while(const bytecode::Instruction& ins, bool jump_if);
  bool while_shape(LoopSite* site) const;
  struct LoopTest {
    std::size_t leave = 0;  // where the loop goes when the test says stop
    bool go_on_if = true;   // the truth that goes on
  };
  std::optional<LoopTest> loop_test(const LoopSite& site, const bytecode::Instruction& ins,
                                    bool jump_if) const;
  bool while_test_value(const VarPtr& v);
  bool while_test(LoopSite* site, const bytecode::Instruction& ins, bool jump_if, bool entry);
  bool while_entry(LoopSite* site, const bytecode::Instruction& ins, bool jump_if);
  // A test of the loop followed by work and the next test (`while j >= 0 and a[j] > key:`): the
  // work and the next test's value become one cond op on the first test, its value the one test
  // of both, so that the work runs only where Python runs it.
  bool short_circuit_test(LoopSite* loop, const LoopTest& first, std::size_t go_on_at);
  bool simulate_test_work(LoopSite* loop, IfSite* site, std::size_t from);
  bool simulate_while_body(LoopSite* site);
  // The step of while loop `site` from `from` to its jump back (false, and site->why, where it is
  // no step).
  bool simulate_while_step(LoopSite* site, std::size_t from);
  // Whether test `t` (of the jump `at`, at pc_) goes on to tests alone up to the loop's jump back.
  bool tests_only(const LoopSite& site, const LoopTest& t, const bytecode::Instruction& at) const;
  // handlers_closure.cpp
  void op_make_cell(const bytecode::Instruction& ins);
  void op_load_deref(const bytecode::Instruction& ins);
  void op_load_closure(const bytecode::Instruction& ins);
  void op_store_deref(const bytecode::Instruction& ins);
  void op_delete_deref(const bytecode::Instruction& ins);
  void op_make_function(const bytecode::Instruction& ins);
  void op_set_function_attribute(const bytecode::Instruction& ins);

  // Shared by several handlers of a family.
  VarPtr local_or_break(int index);  // the local's Variable, or a break when it is unbound
  void store_local(int index, VarPtr v);
  bool cell_slot(int index) const;  // a cell or free slot (holds a cell, not a value)
  void no_cell_slot(int index);     // a break when `index` is a cell or free slot
  void to_bool(bool negate);        // UNARY_NOT, TO_BOOL
  // FORMAT_VALUE and 3.13's CONVERT_VALUE / FORMAT_SIMPLE / FORMAT_WITH_SPEC.
  void format(int conversion, bool has_spec, bool convert_only);
  void jump_on_none(const bytecode::Instruction& ins, bool want_none);
  void jump_or_pop(const bytecode::Instruction& ins, bool jump_if);
  void build_sequence(const bytecode::Instruction& ins, bool tuple);
  void build_map(const bytecode::Instruction& ins, bool const_keys);
  void dict_update(const bytecode::Instruction& ins, bool merge);
  void set_add(const bytecode::Instruction& ins, bool add);
  void subscript(bool slice);                  // BINARY_SUBSCR, BINARY_SLICE
  pybind11::object subscript_key(bool slice);  // the constant key (guarded), or a break
  // container[key] by what the container is: built inside (dict, tuple, list), the model of an
  // input the frame changed, an input list/tuple/dict (read again through it), a constant. Each
  // gives nullptr when it does not apply.
  VarPtr item_of_built(const VarPtr& container, const pybind11::object& key);
  VarPtr item_of_model(const VarPtr& container, const pybind11::object& key);
  VarPtr item_of_input(const VarPtr& container, const pybind11::object& key);
  VarPtr item_of_constant(const VarPtr& container, const pybind11::object& key);
  void attribute_load(const bytecode::Instruction& ins, bool load_method);

  [[noreturn]] void graph_break(const std::string& reason);
  [[noreturn]] void fail(const std::string& reason);
  [[noreturn]] void finish(VarPtr value);

  VarPtr pop();
  VarPtr& peek(std::size_t depth);  // 1 = top
  void push(VarPtr v);
  void jump_to(int target_id);
  void push_callable(VarPtr v, bool with_null);
  void unary(PyObject* (*operation)(PyObject*));
  void list_to_tuple();

  VarPtr load_global(const pybind11::object& name);
  VarPtr load_attr(const VarPtr& base, const pybind11::object& name);
  // The Python value of a constant-like variable (a kConst, or a tuple/list built inside of
  // constants); nullptr-object when it has none. Relies on it (guards it).
  pybind11::object constant_value(const VarPtr& v);
  // constant_value(v) inside the containers `open` (being converted, outermost first).
  pybind11::object constant_value(const VarPtr& v, std::vector<const Variable*>* open);
  VarPtr make_result(pybind11::object value);
  void binary_op(int op);
  void compare_op(int op);
  void call(int argc, const pybind11::object& kwnames, std::size_t extra = 0);
  // A call's parts, read off the stack (CALL: [callable, self or NULL, args..., extra...]).
  struct CallSite {
    VarPtr callable;
    std::vector<VarPtr> args;  // self first, when there is one
    std::size_t nargs = 0;     // the call's oparg
    std::size_t extra = 0;     // values above the arguments (3.13's keyword-names tuple)
    std::size_t nkw = 0;
    pybind11::object kwnames;
  };
  CallSite call_site(int argc, const pybind11::object& kwnames, std::size_t extra);
  void replace_call(const CallSite& site, VarPtr result);  // pops the call's values, pushes result
  // range_loops.cpp: `for i in range(j + 1, n)` of Python ints of the graph in a loop body being
  // captured: a loop op of bounds known where it runs (true), or a graph break at the call.
  bool runtime_range_loop(const CallSite& site);
  void call_method(const CallSite& site);          // a method of a list, dict or set
  VarPtr call_super(const CallSite& site);         // super() in an inlined method, or nullptr
  VarPtr call_bound_method(const CallSite& site);  // a bound method received, or nullptr
  VarPtr call_function(const CallSite& site);      // folded, or inlined; else a break
  // Instances made in the frame (instances.cpp): a call of a plain class (nullptr: not one), an
  // attribute read (pushes it, or the function and the instance for a method call) and an
  // attribute store or delete (`value` nullptr).
  VarPtr instantiate(const CallSite& site);
  bool class_attr(const VarPtr& cls, const pybind11::object& name, bool method);
  // The property `descr` of class `cls` read on `self`: its getter inlined (else a break).
  VarPtr property_value(const VarPtr& cls, PyObject* descr, const pybind11::object& name,
                        const VarPtr& self);
  bool made_instance_attr(const VarPtr& base, const pybind11::object& name, bool method);
  void store_made_instance_attr(const VarPtr& obj, const pybind11::object& name,
                                const VarPtr& value);
  void call_list_method(const VarPtr& method, const std::vector<VarPtr>& args, std::size_t nargs);
  // The result of calling the user function `callable` inline, or nullptr (and `why`) when it
  // cannot be inlined or does not finish (everything it did is undone).
  VarPtr inline_call(const VarPtr& callable, const std::vector<VarPtr>& args,
                     const pybind11::object& kwnames, std::string* why, bool collect = false);
  // Generators consumed at once (generators.cpp): a generator function made in the frame or
  // received, called where the next CALL hands its generator whole to sum(), list(), tuple(),
  // sorted(), max(), min(), set() or frozenset(), runs inline to its end and gives the list of
  // what it yielded (`collect`: yields are gathered, not a break); nullptr when it is not such a
  // call or does not finish.
  VarPtr generator_consumed_at_once(const CallSite& site);
  bool consumed_by_next_call(const CallSite& site);
  // Whether `ins` runs under an exception handler of the user's (a generator's own StopIteration
  // wrapper, 3.12+, is none while its yields are gathered).
  bool under_handler(const bytecode::Instruction& ins) const;
  void op_return_generator(const bytecode::Instruction& ins);
  void op_yield_value(const bytecode::Instruction& ins);
  VarPtr builtin_sum(const std::vector<VarPtr>& args);
  // int(x) or float(x) of a NumPy scalar or 0-d array x of the graph: an op making the Python
  // number where the graph runs, a value the frame may return or keep but not compute with
  // (python_numbers.cpp); nullptr when the call is not one.
  VarPtr python_number_of(const VarPtr& callable, const std::vector<VarPtr>& args, std::size_t nkw);
  // Python floats the frame received whose value changed since an earlier translation of this
  // code (its locals, where one is an ndarray) become inputs of the graph (python_numbers.cpp).
  void changed_floats_as_inputs();
  // math.sqrt(x), math.exp(x), ... of a number of the graph: a Python float made where it runs.
  VarPtr math_of(const VarPtr& callable, const std::vector<VarPtr>& args, std::size_t nkw);
  VarPtr math_isclose(
      const CallSite& site);  // math.isclose of numbers of the graph: a bool made there
  // A Python number made in the graph ('i' or 'f', its graph value), or a Python int or float
  // constant; kind 0: neither.
  struct NumberOperand {
    char kind = 0;
    int id = -1;      // made in the graph
    VarPtr constant;  // a constant
  };
  // -x ("neg"), +x ("pos"), ~x ("invert") of a Python number made in the graph; false for others.
  bool python_number_unary(const char* name);
  // x.shape where its first dimension is a size known only where the graph runs (x[mask], x[:i] in
  // a loop body): a tuple whose first item is a Python int made there, len(x), the other sizes
  // relied on; nullptr for any other array.
  VarPtr runtime_shape(int id);
  NumberOperand number_operand(const VarPtr& v);
  int number_value(const NumberOperand& n);  // its graph value (a constant added, guarded)
  VarPtr number_op(const char* name, const pybind11::object& fn, const std::vector<int>& args,
                   char kind);
  // The values to try the rules of an array operation with, for a Python number made in the graph
  // (a loop variable included); empty for anything else.
  std::vector<graph::PyScalar> number_probes(const VarPtr& v);
  // The range of `result` = a <op> b when both ranges are known (ArrayState::int_ranges).
  void track_int_range(int base, const NumberOperand& a, const NumberOperand& b, int result);
  // BINARY_OP of Python numbers made in the graph: an op (false: not such operands).
  bool python_number_binary(int op);
  bool python_number_compare(int op);
  VarPtr python_number_builtin(const char* name, const std::vector<VarPtr>& args);
  VarPtr builtin_max(const std::vector<VarPtr>& args);
  VarPtr scalar_extreme(const char* name, const std::vector<VarPtr>& args);
  VarPtr builtin_min(const std::vector<VarPtr>& args);
  // min(d, key=d.get) / max(d, key=d.get) of a dict made in the frame (python_numbers.cpp).
  VarPtr extreme_by_key(const char* name, const std::vector<VarPtr>& args);
  VarPtr builtin_abs(const std::vector<VarPtr>& args);
  // Formatting in the graph (python_numbers.cpp): FORMAT_VALUE and 3.13's forms of a NumPy scalar
  // or a number made in the graph, and BUILD_STRING of strs made in the graph (false: not such).
  bool format_in_graph(const VarPtr& value, const VarPtr& spec, int conversion, bool convert_only);
  bool join_in_graph(int count);
  // What inlining a call needs to know of the function (inline_call.cpp).
  struct InlineTarget {
    bool made = false;                 // made in the frame (a kFunction Variable)
    PyFunctionObject* fn = nullptr;    // borrowed; received functions only
    PyCodeObject* co = nullptr;        // borrowed
    PyObject* globals = nullptr;       // borrowed
    VarPtr globals_var, builtins_var;  // another module's, as tracked values
    std::vector<VarPtr> closure;       // its cells
    bool generator = false;            // a generator function, run to its end (collect)
  };
  bool inline_target(const VarPtr& callable, InlineTarget* t, std::string* why);
  // The callee's locals: arguments bound as CPython binds them, then defaults, *args, **kwargs and
  // the closure's cells; false (and `why`) where CPython would raise.
  bool bind_arguments(const VarPtr& callable, const InlineTarget& t,
                      const std::vector<VarPtr>& args, const pybind11::object& kwnames,
                      std::vector<VarPtr>* locals, std::string* why);
  bool bind_defaults(const VarPtr& callable, const InlineTarget& t, std::vector<VarPtr>* locals,
                     std::string* why);
  void remember(const VarPtr& list);
  // Where the side-effect state stands, to undo everything after it (an inlined call or a step of
  // a map/filter that cannot finish).
  struct Mark {
    SideEffects::Mark effects;
    std::size_t cleared = 0;
    ArrayState::Mark graph;
  };
  SideEffects& effects() { return shared_->effects; }
  const SideEffects& effects() const { return shared_->effects; }
  Mark mark() const;
  void rollback(const Mark& m);
  // `v` (a list, dict or set built inside) is about to change.
  void mutate(const VarPtr& v);
  // The contents of the list or dict `v` received from outside, as the frame changed them, or
  // nullptr when it has not changed them.
  VarPtr model_of(const VarPtr& v) const;
  // The model of `v` for a change (made on the first change: only one such object per frame).
  VarPtr model_for_write(const VarPtr& v);
  // Records type(x).<name>(x, *args) on the changed object x for the generated code to replay.
  void record_model_op(const char* name, std::vector<VarPtr> args);
  // Breaks when `v`, received from outside, could be an object the frame changed through another
  // name (read before any change, or through its model, it is what the generated code sees).
  void read_input(const VarPtr& v);
  void store_attr(const bytecode::Instruction& ins, bool del);
  // LOAD_ATTR of an instance of a user class: pushes the value (or, for a method call, the class's
  // function and the instance) and returns true, or returns false (not modelled).
  bool load_instance_attr(const VarPtr& base, const pybind11::object& name, bool method);
  // super(cls, self).name: pushes the method and the instance (method loads) or a class
  // attribute's value; breaks when it cannot tell.
  void super_attr(const VarPtr& cls, const VarPtr& self, const pybind11::object& name, bool method);
  // iter(v) as GET_ITER does it, or nullptr when it is not modelled.
  VarPtr make_iterator(const VarPtr& v);
  // Dicts received from outside, iterated (input_dicts.cpp): whether `v` is one, its view
  // d.keys()/values()/items() (`name`), an iterator over it as it is now (nullptr: not modelled),
  // and the check of each step (a change by the frame gives up, but for same-keys stores).
  bool is_input_dict(const VarPtr& v) const;
  VarPtr input_dict_view(const VarPtr& d, const std::string& name);
  VarPtr input_dict_iterator(const VarPtr& d, const std::string& name);
  // d.get(args[0][, args[1]]) of such a dict not changed by the frame, read; nullptr where the key
  // is not a hashable constant.
  VarPtr input_dict_get(const VarPtr& d, const std::vector<VarPtr>& args);
  void check_input_dict_step(const VarPtr& it);
  // next(it): the item, or nullptr when it is exhausted (fails when it cannot tell).
  VarPtr iter_next(const VarPtr& it);
  // The next item of a map() or filter() (running its function), of a zip(): false when an inner
  // iterator is exhausted (the position is left as it is).
  bool next_of_map(const VarPtr& it, VarPtr* item);
  bool next_of_zip(const VarPtr& it, VarPtr* item);
  // Items of `it` by iter_next: one (`all` false; nullptr at the end) or all of them. A graph
  // break on the way (a map or filter function that cannot be simulated) first puts `it`, the
  // iterators in it and every side effect of the calls back as they were.
  std::vector<VarPtr> take(const VarPtr& it, bool all);
  // A builtin that works on the structure of modelled values (len, enumerate, zip, reversed,
  // list, tuple): its result, or nullptr.
  VarPtr structural_call(const pybind11::object& fn, const std::vector<VarPtr>& args,
                         const pybind11::object& kwnames);
  // The builtins structural_call models (builtin_calls.cpp), each given the call's arguments:
  // its result, or nullptr (a real call).
  VarPtr builtin_len(const std::vector<VarPtr>& args);
  VarPtr builtin_enumerate(const std::vector<VarPtr>& args);
  VarPtr builtin_zip(const std::vector<VarPtr>& args);
  VarPtr builtin_type(const std::vector<VarPtr>& args);
  VarPtr builtin_isinstance(const std::vector<VarPtr>& args);
  VarPtr builtin_map(const std::vector<VarPtr>& args);
  VarPtr builtin_filter(const std::vector<VarPtr>& args);
  VarPtr builtin_reversed(const std::vector<VarPtr>& args);
  VarPtr builtin_tuple(const std::vector<VarPtr>& args);
  VarPtr builtin_list(const std::vector<VarPtr>& args);
  VarPtr builtin_sorted(const std::vector<VarPtr>& args);
  VarPtr type_test(const std::vector<VarPtr>& args, bool isinstance);  // type(x), isinstance
  VarPtr lazy_iterator(const std::vector<VarPtr>& args, bool map);     // map(), filter()
  enum class Items : std::uint8_t { kList, kTuple, kSorted };
  VarPtr items_of(const std::vector<VarPtr>& args, Items kind);  // list(), tuple(), sorted()
  // Sorts tuples by their first items where those decide (distinct strs or ints); false: not so.
  bool sorted_by_first(std::vector<VarPtr>* items);
  // The items iterating `v` would give, when they are known without consuming anything.
  bool known_items(const VarPtr& v, std::vector<VarPtr>* items);
  // The items of constant `v` (a tuple or frozenset) as constants. They no longer carry where `v`
  // came from, so `v` is guarded by value here: every read of a constant's contents goes through
  // this (a splice `(*args)`, a call `f(*args)`, unpacking, set updates, defaults).
  std::vector<VarPtr> const_items(const VarPtr& v);
  void call_dict_method(const VarPtr& method, const std::vector<VarPtr>& args, std::size_t nargs);
  void call_set_method(const VarPtr& method, const std::vector<VarPtr>& args, std::size_t nargs);
  // The constant hashable key `v` (guarded), or a null object.
  pybind11::object hashable_key(const VarPtr& v);
  void store_subscr();
  // The index the int `key` names among the items of the tuple or list built inside `container`
  // (negative counted from the end); a break when it does not fit or is out of range.
  Py_ssize_t item_index(const VarPtr& container, PyObject* key, const char* out_of_range);
  void delete_subscr();
  void call_function_ex(int flags);
  // fn(*args) for an inlinable function or a pure builtin on constants: the result, or nullptr
  // (`why` says why; nothing it did is left behind).
  VarPtr call_value(const VarPtr& fn, const std::vector<VarPtr>& args, std::string* why);
  // Local `index` is about to be deleted or overwritten: a graph break when that drops the frame's
  // last reference to an object received from outside whose freeing runs code (a __del__, a
  // generator's finally), so that it runs where plain Python runs it.
  void drop_local(int local);
  // The same for the `n` values on top of the stack an instruction consumes (POP_TOP, an attribute
  // load, a subscript, an operator) that a resume function received on its stack.
  void drop_values(std::size_t n);
  // The object received from outside that dropping `v` (or a container made in the frame holding
  // it) may free and whose freeing runs code, else nullptr (borrowed).
  PyObject* finalized_by_dropping(const VarPtr& v, int depth);
  // The cell in local `index`, or a graph break.
  VarPtr cell_at(int index);
  void write_cell(const VarPtr& cell, VarPtr contents);
  void make_function(int flags);
  static bool is_constant_method(const pybind11::object& callable);

  // NumPy (array_ops.cpp). Each returns false (or nullptr) when its operands are not NumPy values,
  // pushes or returns the captured result, or breaks the graph with a NumPy reason.
  ArrayState& arrays();
  // An operand of a NumPy operation: a graph value (an array made in the frame, or an ndarray or
  // NumPy scalar received from outside, which becomes a graph input under guards), or a Python
  // number (its value guarded).
  struct ArrayOperand {
    enum class Kind : std::uint8_t { kNone, kValue, kPython };
    Kind kind = Kind::kNone;
    int id = -1;
    graph::PyScalar scalar;
    pybind11::object constant;  // kPython
  };
  ArrayOperand array_operand(const VarPtr& v);
  // A Python number made in the graph as an operand (kPython with its id; `probe` its scalar).
  static ArrayOperand number_array_operand(const VarPtr& v, const graph::PyScalar& probe);
  // An operand of a binary operator: array_operand(v), or a Python number made in the graph with
  // its probes (number_probes) in *probes; and the break when the result's dtype would depend on
  // such a number's value.
  ArrayOperand binary_operand(const VarPtr& v, std::vector<graph::PyScalar>* probes);
  // The value of `x[k] = value` into an array of `target`: array_operand(value), or a Python
  // number made in the graph where NumPy stores it exactly (array_operators.cpp).
  ArrayOperand store_operand(const VarPtr& value, const graph::ValueInfo& target);
  void require_value_independent(const BinaryOperator& bo, const graph::ValueInfo& info,
                                 const std::vector<graph::PyScalar>& xprobes,
                                 const std::vector<graph::PyScalar>& yprobes, ArrayOperand* x,
                                 ArrayOperand* y);
  bool is_array_like(const VarPtr& v);
  // What the graph knows of value `id` (specialized symbols as static sizes).
  graph::ValueInfo array_info(int id);
  // array_info(id) with its symbols specialized first (for rules that need sizes).
  graph::ValueInfo static_info(int id);
  // rule(), run again with the symbols of `ids` specialized when it fails on dynamic shapes.
  std::optional<graph::ValueInfo> retry_static(
      const std::vector<int>& ids, const std::function<std::optional<graph::ValueInfo>()>& rule);
  VarPtr add_array_op(graph::Op op, graph::ValueInfo info);
  bool array_binary_op(int op);
  // The result dtype of `x ** y` as the running NumPy computes it (into *info).
  void power_dtype_from_numpy(const ArrayOperand& x, const ArrayOperand& y, graph::ValueInfo* info);
  bool array_compare_op(int op);
  bool array_unary(const char* which);
  bool array_subscript(std::size_t n);
  bool array_store_subscr();
  struct AdvancedIndex;  // x[mask], x[idx] and their stores (array_indexing.hpp)
  // Iteration over an array and unpacking (array_iteration.cpp): iter(x) (nullptr: not an array),
  // row i made when it is taken (nullptr past the last), every row at once (false: not an array).
  VarPtr array_iterator(const VarPtr& v);
  VarPtr array_row(const VarPtr& v, Py_ssize_t i);
  // Row i of `v` about to be taken by an unrolled loop: a break past the rows that may unroll.
  void check_unrolled_row(const VarPtr& v, Py_ssize_t i);
  // The instructions simulated when a loop over an array's rows took its second row, by array.
  std::map<const Variable*, std::size_t> row_step_marks_;
  // Row x[t] of `v` where t is the loop index `index` (a graph value, first `first`).
  VarPtr array_row_at(const VarPtr& v, int index, std::int64_t first);
  bool array_rows(const VarPtr& v, std::vector<VarPtr>* rows);
  VarPtr array_attr(const VarPtr& base, const pybind11::object& name);
  // A NumPy function or an array method called with `args` (keywords last, named by kwnames): its
  // result, or nullptr when `callable` is neither.
  VarPtr array_call(const VarPtr& callable, const std::vector<VarPtr>& args,
                    const pybind11::object& kwnames);
  struct NumpyCall;  // a NumPy function call being captured (numpy_call.hpp)
  VarPtr numpy_function(const std::string& name, const VarPtr& callable,
                        const std::vector<VarPtr>& args,
                        const std::vector<std::pair<std::string, VarPtr>>& kwargs,
                        const VarPtr& self);
  // The value of a static argument (an axis, a shape, a dtype): a constant (guarded), or a null
  // object.
  pybind11::object static_arg(const VarPtr& v);
  void written_input(const graph::Op& op);  // the input an op writes into: guarded writeable
  bool truth(const VarPtr& v, bool* value);
  void branch(const bytecode::Instruction& ins, bool jump_if);

  const bytecode::Bytecode& code_;
  const FrameInputs& inputs_;
  GuardSet* guards_;
  std::vector<VarPtr> locals_;
  std::vector<VarPtr> entry_locals_;  // the Variables of the frame's locals at entry
  std::vector<VarPtr> stack_;
  std::size_t pc_ = 0;           // index of the instruction being simulated
  std::size_t next_ = 0;         // index of the next one
  std::size_t group_first_ = 0;  // KW_NAMES / PRECALL that belong to the coming CALL
  bool started_ = false;         // past the code's first RESUME (its prefix)
  bool in_group_ = false;
  pybind11::object kwnames_;  // set by KW_NAMES for the next CALL
  // The stack a break reports instead of the current one (CALL_FUNCTION_EX rewrites its stack).
  const std::vector<VarPtr>* break_stack_ = nullptr;
  std::vector<VarPtr> cleared_;  // input lists emptied by `del x[:]`
  int depth_ = 0;                // inlined calls this frame is nested in
  // while_capture.cpp: how often each jump on a constant went on, and the jumps whose loop was
  // tried once already
  std::map<std::size_t, std::int64_t> constant_tests_;
  std::set<std::size_t> while_tried_;
  bool collect_yields_ = false;  // an inlined generator run to its end: its yields gathered
  std::vector<VarPtr> yielded_;  // ... here
  Shared own_shared_;
  Shared* shared_ = &own_shared_;
  SimulationResult result_;
};

}  // namespace sot::translator
