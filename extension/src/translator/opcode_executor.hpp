// Simulates a frame's bytecode on Variables: a virtual frame (locals, value stack, globals,
// builtins) stepped one instruction at a time from the frame's entry. Pure operations on constants
// are folded; the first instruction it cannot simulate ends the run in a graph break (the
// generated code runs that instruction for real and resumes after it) or, where a break cannot be
// made sound, a failure (the original code runs).
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bytecode/bytecode.hpp"
#include "graph/rules.hpp"
#include "translator/array_state.hpp"
#include "translator/guards.hpp"
#include "translator/variable.hpp"

namespace sot::translator {

// The state of the virtual frame at the instruction where simulation stopped.
struct FrameState {
  std::vector<VarPtr> locals;  // by localsplus index; nullptr = unbound (or a cell / free slot)
  std::vector<VarPtr> stack;   // bottom first
};

// A change to the list or dict received from outside: type(x).<method>(x, *args), replayed as
// such (the same operations in the same order, so that anything watching the object - a sort in
// progress - sees what it would have seen).
struct ModelOp {
  pybind11::object method;  // the method descriptor, e.g. list.append
  std::vector<VarPtr> args;
};

struct AttrStore {
  VarPtr object;
  pybind11::object name;
  VarPtr value;  // nullptr: deleted
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
  // emptied with `del x[:]` (the resume functions' argument lists).
  std::vector<VarPtr> cleared_lists;
  // Globals the frame assigned (STORE_GLOBAL), in order: replayed by the generated code too.
  std::vector<std::pair<pybind11::object, VarPtr>> global_stores;
  // Cells the frame wrote (their contents now differ from their initial contents, or not).
  std::vector<VarPtr> cells;
  // The list or dict received from outside that the frame changed, and its new contents; the
  // attributes it set or deleted on objects received from outside, in order.
  VarPtr modeled;
  VarPtr model;
  std::vector<ModelOp> model_ops;
  std::vector<AttrStore> attr_stores;
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
};

// The name `co` uses that looks at its own frame (locals, vars, super, sys._getframe, ...), or
// empty: such code would see the frames of resume functions (not translated, not inlined).
std::string frame_introspection(PyCodeObject* co, bool allow_super = false);

// The opcodes (of this Python) the executor simulates; every other one is a graph break.
std::vector<std::string> simulated_opcode_names();

class OpcodeExecutor {
 public:
  // Instructions simulated before giving up (unrolled loops count each time).
  static constexpr std::size_t kMaxSteps = 20000;

  // Calls inlined into one another, at most (deeper calls break the graph).
  static constexpr int kMaxInlineDepth = 8;
  // Lists and cells changed by an inlined call, with their items before the change, so that a call
  // that cannot finish is undone.
  using UndoLog = std::vector<std::pair<VarPtr, Variable::State>>;
  // What inlined calls share with the frame that runs them.
  struct Shared {
    UndoLog undo;
    std::vector<std::pair<pybind11::object, VarPtr>> global_stores;  // STORE_GLOBAL, in order
    std::vector<VarPtr> cells;  // cells written (STORE_DEREF, DELETE_DEREF), first write first
    // The one list or dict received from outside whose contents the frame changes, and its
    // contents as the frame changes them (a list or dict Variable, never loaded itself).
    VarPtr modeled;
    VarPtr model;
    std::vector<ModelOp> model_ops;
    // Attributes set (value) or deleted (nullptr) on objects received from outside, in order.
    std::vector<AttrStore> attr_stores;
    // The Variables of globals and module attributes loaded so far ((nullptr, "global name"),
    // (module, "attr name")): the same place gives the same Variable.
    std::map<std::pair<const Variable*, std::string>, VarPtr> loaded;
    // The NumPy graph (made on the first array operation), and the top frame's shape settings.
    std::shared_ptr<ArrayState> arrays;
    pybind11::dict shape_history;
    bool dynamic_shapes = true;
    // Inlined calls made from an instruction inside a try or with block: an exception in the
    // callee must reach that block's handler.
    int calls_under_handler = 0;
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

  // Handlers return normally to continue at next_.
  void step(const bytecode::Instruction& ins);
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
  void call_list_method(const VarPtr& method, const std::vector<VarPtr>& args, std::size_t nargs);
  // The result of calling the user function `callable` inline, or nullptr (and `why`) when it
  // cannot be inlined or does not finish (everything it did is undone).
  VarPtr inline_call(const VarPtr& callable, const std::vector<VarPtr>& args,
                     const pybind11::object& kwnames, std::string* why);
  void remember(const VarPtr& list);
  // Where the side-effect state stands, to undo everything after it (an inlined call or a step of
  // a map/filter that cannot finish).
  struct Mark {
    std::size_t undo = 0, stores = 0, cells = 0, attrs = 0, ops = 0, cleared = 0;
    bool modeled = false;
    ArrayState::Mark graph;
  };
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
  // next(it): the item, or nullptr when it is exhausted (fails when it cannot tell).
  VarPtr iter_next(const VarPtr& it);
  // Items of `it` by iter_next: one (`all` false; nullptr at the end) or all of them. A graph
  // break on the way (a map or filter function that cannot be simulated) first puts `it`, the
  // iterators in it and every side effect of the calls back as they were.
  std::vector<VarPtr> take(const VarPtr& it, bool all);
  // A builtin that works on the structure of modelled values (len, enumerate, zip, reversed,
  // list, tuple): its result, or nullptr.
  VarPtr structural_call(const pybind11::object& fn, const std::vector<VarPtr>& args,
                         std::size_t nkw);
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
  VarPtr array_attr(const VarPtr& base, const pybind11::object& name);
  // A NumPy function or an array method called with `args` (keywords last, named by kwnames): its
  // result, or nullptr when `callable` is neither.
  VarPtr array_call(const VarPtr& callable, const std::vector<VarPtr>& args,
                    const pybind11::object& kwnames);
  VarPtr numpy_function(const std::string& name, const VarPtr& callable,
                        const std::vector<VarPtr>& args,
                        const std::vector<std::pair<std::string, VarPtr>>& kwargs,
                        const VarPtr& self);
  // The value of a static argument (an axis, a shape, a dtype): a constant (guarded), or a null
  // object.
  pybind11::object static_arg(const VarPtr& v);
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
  Shared own_shared_;
  Shared* shared_ = &own_shared_;
  SimulationResult result_;
};

}  // namespace sot::translator
