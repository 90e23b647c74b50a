#include "translator/codegen.hpp"
#include "core/loaded_module.hpp"

#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "bytecode/opcode_table.hpp"
#include "bytecode/version.hpp"
#include "capture/code_cache.hpp"
#include "graph/backend.hpp"

namespace py = pybind11;

namespace sot::translator {

namespace {

using bytecode::Instruction;
namespace version = bytecode::version;

int opcode(const char* name) {
  const int code = bytecode::opcode_by_name(name);
  if (code < 0) {
    throw CodegenError(std::string("this Python has no opcode ") + name);
  }
  return code;
}

// A jump by its 3.12 name (3.11 has POP_JUMP_FORWARD_IF_NONE where 3.12 has POP_JUMP_IF_NONE).
int jump_opcode(const char* name) {
  const int code = bytecode::opcode_by_name(name);
  if (code >= 0) {
    return code;
  }
  const std::string n = name;
  if (n.rfind("POP_JUMP_IF_", 0) == 0) {
    return opcode(("POP_JUMP_FORWARD_IF_" + n.substr(12)).c_str());
  }
  return opcode(name);
}

bool is_op(const Instruction& ins, const char* name) {
  return ins.opcode == bytecode::opcode_by_name(name);
}

// True when `ins` takes only an exact bool (3.13: a COMPARE_OP with its to-bool flag, or TO_BOOL,
// made it), so that a value a graph made there (a NumPy bool) must be coerced with TO_BOOL first.
bool needs_exact_bool(const Instruction& ins) {
  return version::kBoolConsumersNeedExactBool &&
         (is_op(ins, "POP_JUMP_IF_TRUE") || is_op(ins, "POP_JUMP_IF_FALSE") ||
          is_op(ins, "UNARY_NOT"));
}

// Index just past the code's prefix (MAKE_CELL, COPY_FREE_VARS, ..., the first RESUME).
std::size_t prefix_end(const bytecode::Bytecode& bc) {
  for (std::size_t i = 0; i < bc.size(); ++i) {
    if (is_op(bc.at(i), "RESUME")) {
      return i + 1;
    }
  }
  throw CodegenError("the code has no RESUME");
}

bool is_plain_local(unsigned char kind) {
  return (kind & version::kFastLocal) != 0 &&
         (kind & (version::kFastCell | version::kFastFree)) == 0;
}

bool is_cell_or_free(unsigned char kind) {
  return (kind & (version::kFastCell | version::kFastFree)) != 0;
}

// How many values `ins` takes from the stack (before it pushes its results), or -1 when unknown.
int inputs_of(const Instruction& ins) {
  const std::string name = bytecode::opcode_info(ins.opcode).name;
  const int arg = ins.arg;
  struct Fixed {
    const char* name;
    int count;
  };
  static const Fixed fixed[] = {{"BINARY_OP", 2},
                                {"COMPARE_OP", 2},
                                {"IS_OP", 2},
                                {"CONTAINS_OP", 2},
                                {"BINARY_SUBSCR", 2},
                                {"BINARY_SLICE", 3},
                                {"STORE_SUBSCR", 3},
                                {"DELETE_SUBSCR", 2},
                                {"STORE_SLICE", 4},
                                {"LOAD_ATTR", 1},
                                {"LOAD_METHOD", 1},
                                {"STORE_ATTR", 2},
                                {"DELETE_ATTR", 1},
                                {"UNARY_NEGATIVE", 1},
                                {"UNARY_POSITIVE", 1},
                                {"UNARY_NOT", 1},
                                {"UNARY_INVERT", 1},
                                {"TO_BOOL", 1},
                                {"GET_ITER", 1},
                                {"GET_LEN", 0},
                                {"FORMAT_SIMPLE", 1},
                                {"FORMAT_WITH_SPEC", 2},
                                {"CONVERT_VALUE", 1},
                                {"CALL_INTRINSIC_1", 1},
                                {"CALL_INTRINSIC_2", 2},
                                {"LIST_APPEND", 1},
                                {"SET_ADD", 1},
                                {"LIST_EXTEND", 1},
                                {"SET_UPDATE", 1},
                                {"DICT_UPDATE", 1},
                                {"DICT_MERGE", 1},
                                {"MAP_ADD", 2},
                                {"UNPACK_SEQUENCE", 1},
                                {"UNPACK_EX", 1},
                                {"STORE_GLOBAL", 1},
                                {"STORE_DEREF", 1},
                                {"STORE_NAME", 1},
                                {"LOAD_GLOBAL", 0},
                                {"LOAD_DEREF", 0},
                                {"LOAD_CLOSURE", 0},
                                {"LOAD_NAME", 0},
                                {"LOAD_CONST", 0},
                                {"LOAD_FAST", 0},
                                {"LOAD_FAST_CHECK", 0},
                                {"DELETE_FAST", 0},
                                {"DELETE_DEREF", 0},
                                {"DELETE_GLOBAL", 0},
                                {"DELETE_NAME", 0},
                                {"LOAD_ASSERTION_ERROR", 0},
                                {"LOAD_BUILD_CLASS", 0},
                                {"IMPORT_NAME", 2},
                                {"IMPORT_FROM", 0},
                                {"POP_JUMP_IF_TRUE", 1},
                                {"POP_JUMP_IF_FALSE", 1},
                                {"POP_JUMP_IF_NONE", 1},
                                {"POP_JUMP_IF_NOT_NONE", 1},
                                {"POP_JUMP_FORWARD_IF_TRUE", 1},
                                {"POP_JUMP_FORWARD_IF_FALSE", 1},
                                {"POP_JUMP_FORWARD_IF_NONE", 1},
                                {"POP_JUMP_FORWARD_IF_NOT_NONE", 1},
                                {"POP_JUMP_BACKWARD_IF_TRUE", 1},
                                {"POP_JUMP_BACKWARD_IF_FALSE", 1},
                                {"POP_JUMP_BACKWARD_IF_NONE", 1},
                                {"POP_JUMP_BACKWARD_IF_NOT_NONE", 1},
                                {"JUMP_IF_TRUE_OR_POP", 1},
                                {"JUMP_IF_FALSE_OR_POP", 1},
                                {"FOR_ITER", 1},
                                {"RETURN_VALUE", 1},
                                {"RETURN_CONST", 0},
                                {"SET_FUNCTION_ATTRIBUTE", 2},
                                {"BEFORE_WITH", 1},
                                {"GET_YIELD_FROM_ITER", 1},
                                {"LOAD_FROM_DICT_OR_DEREF", 1},
                                {"LOAD_FROM_DICT_OR_GLOBALS", 1},
                                {"PRINT_EXPR", 1},
                                {"POP_TOP", 1},
                                {"NOP", 0}};
  for (const Fixed& f : fixed) {
    if (name == f.name) {
      return f.count;
    }
  }
  if (name == "CALL") {
    return arg + 2;
  }
  if (name == "CALL_KW") {
    return arg + 3;
  }
  if (name == "CALL_FUNCTION_EX") {
    return 3 + (arg & 1);
  }
  if (name == "FORMAT_VALUE") {
    return 1 + ((arg & 4) != 0 ? 1 : 0);
  }
  if (name == "BUILD_TUPLE" || name == "BUILD_LIST" || name == "BUILD_SET" ||
      name == "BUILD_STRING" || name == "BUILD_SLICE" || name == "RAISE_VARARGS") {
    return arg;
  }
  if (name == "BUILD_MAP") {
    return 2 * arg;
  }
  if (name == "BUILD_CONST_KEY_MAP") {
    return arg + 1;
  }
  if (name == "MAKE_FUNCTION") {
    if constexpr (version::kMakeFunctionHasFlags) {
      int flags = 0;
      for (int bit = 0; bit < 4; ++bit) {
        flags += (arg >> bit) & 1;
      }
      return 1 + flags;
    }
    return 1;
  }
  return -1;
}

constexpr std::size_t kForIterExhaustSkip =
    PY_VERSION_HEX >= 0x030D0000 ? 2 : (PY_VERSION_HEX >= 0x030C0000 ? 1 : 0);

}  // namespace

// Builds the instructions appended after the prefix, with labels for forward jumps.
struct CodeGen::Emitter {
  bytecode::Bytecode& bc;
  const std::string& kinds;
  GuardSet* guards;
  bytecode::Position pos;
  std::vector<Instruction> out;
  std::vector<long> labels;                        // label -> index in out (-1: not placed)
  std::vector<std::pair<std::size_t, int>> jumps;  // (index in out, label)
  std::vector<VarPtr> current;    // what each local holds at this point of the generated code
  std::vector<bool> overwritten;  // stored by the generated code (no longer the entry value)
  std::map<const Variable*, int> built;  // mutable containers built so far -> local holding it

  // The compiled graph the code calls (None: no graph), its inputs (Variables received from
  // outside) and the arrays it returns, in order. With one output referenced once the call is made
  // where that array is loaded ("lazy"). Otherwise it is made first and its result (the output, or
  // the tuple of outputs) stays at the bottom of the value stack while the state is rebuilt: each
  // load of an output copies it from there (no local is needed), and remove_graph_result() drops
  // it at the end.
  py::object graph_fn = py::none();
  std::vector<VarPtr> graph_inputs;
  std::vector<const Variable*> graph_outputs;
  bool graph_lazy = false;
  bool graph_done = false;
  bool result_on_stack = false;
  int above = 0;  // values on the stack above the graph's result (while it is there)
  bool depth_known = true;

  void emit_graph_call() {
    call_constant(
        graph_fn,
        [&] {
          for (const VarPtr& in : graph_inputs) {
            load(in);
          }
        },
        static_cast<int>(graph_inputs.size()));
    graph_done = true;
  }

  void emit_graph_prologue() {
    if (graph_fn.is_none() || graph_lazy) {
      return;
    }
    emit_graph_call();
    if (graph_outputs.empty()) {
      emit("POP_TOP");  // in-place changes only
      return;
    }
    result_on_stack = true;
    above = 0;
    depth_known = true;
  }

  // Output `v` copied from the graph's result at the bottom of the stack.
  void load_graph_output(const Variable* v) {
    if (!depth_known) {
      throw CodegenError("a graph output loaded after a jump");
    }
    const auto it = std::find(graph_outputs.begin(), graph_outputs.end(), v);
    if (it == graph_outputs.end()) {
      throw CodegenError("a NumPy value the graph does not output");
    }
    emit("COPY", above + 1);
    if (graph_outputs.size() > 1) {
      load_const(py::int_(it - graph_outputs.begin()));
      emit("BINARY_SUBSCR");
    }
  }

  // Drops the graph's result from below the `above` values above it.
  void remove_graph_result() {
    if (!result_on_stack) {
      return;
    }
    if (!depth_known) {
      throw CodegenError("the graph's result cannot be removed after a jump");
    }
    for (int k = 2; k <= above + 1; ++k) {
      emit("SWAP", k);
    }
    emit("POP_TOP");
    result_on_stack = false;
  }

  // `entry`: the Variables of the frame's locals at entry (what each local holds before any store).
  Emitter(bytecode::Bytecode& target, const std::string& k, GuardSet* g,
          const std::vector<VarPtr>& entry)
      : bc(target), kinds(k), guards(g), current(entry), overwritten(k.size(), false) {
    current.resize(k.size());
  }

  void emit(int op, int arg = 0) {
    Instruction ins;
    ins.opcode = op;
    ins.arg = arg;
    ins.position = pos;
    out.push_back(ins);
    if (result_on_stack) {
      int effect = 0;
      if (bytecode::stack_effect(op, arg, false, &effect)) {
        above += effect;
      } else {
        depth_known = false;
      }
    }
  }
  void emit(const char* name, int arg = 0) { emit(opcode(name), arg); }
  int new_label() {
    labels.push_back(-1);
    return static_cast<int>(labels.size() - 1);
  }
  void place(int label) { labels[static_cast<std::size_t>(label)] = static_cast<long>(out.size()); }
  void emit_jump_op(const char* name, int label) {
    depth_known = depth_known && !result_on_stack;
    Instruction ins;
    ins.opcode = jump_opcode(name);
    ins.position = pos;
    jumps.emplace_back(out.size(), label);
    out.push_back(ins);
  }
  void emit_jump(const Instruction& original, int label) {
    depth_known = depth_known && !result_on_stack;
    Instruction ins;
    ins.opcode = original.opcode;
    ins.arg = original.arg;
    ins.position = original.position;
    jumps.emplace_back(out.size(), label);
    out.push_back(ins);
  }
  // The instructions from `first` to the current end are covered by a handler at `label`.
  struct Cover {
    std::size_t first;
    std::size_t end;
    int label;
    int depth;
    bool lasti;
  };
  std::vector<Cover> covers;
  void cover(std::size_t first, int label, int depth, bool lasti) {
    covers.push_back(Cover{first, out.size(), label, depth, lasti});
  }
  long label_index(int label) const {
    const long at = labels[static_cast<std::size_t>(label)];
    if (at < 0) {
      throw CodegenError("a label was never placed");
    }
    return at;
  }
  // Inserts the instructions into `target` at `at` (default: the end) and resolves jumps and
  // handlers. Generated instructions are covered only by the handlers given with cover().
  void finish_into(bytecode::Bytecode& target, std::size_t at = SIZE_MAX) {
    for (const auto& [index, label] : jumps) {
      out[index].target = -static_cast<int>(label_index(label) + 2);
    }
    const std::size_t base = at == SIZE_MAX ? target.size() : at;
    const std::size_t count = out.size();
    const std::vector<int> ids = target.insert(base, std::move(out));
    for (std::size_t k = 0; k < count; ++k) {
      Instruction ins = target.at(base + k);
      if (ins.handler) {
        ins.handler.reset();
        target.replace(base + k, ins);
      }
    }
    for (const Cover& c : covers) {
      const int handler = ids.at(static_cast<std::size_t>(label_index(c.label)));
      for (std::size_t k = c.first; k < c.end; ++k) {
        Instruction ins = target.at(base + k);
        ins.handler = bytecode::Handler{handler, c.depth, c.lasti};
        target.replace(base + k, ins);
      }
    }
  }
  // A jump to an instruction of the code being built (by id).
  void emit_jump_to_id(const char* name, int id) {
    Instruction ins;
    ins.opcode = opcode(name);
    ins.position = pos;
    ins.target = id;
    out.push_back(ins);
  }

  // A code object must stay hashable (tools hash code objects: stack_data in IPython's tracebacks,
  // coverage): an unhashable constant (a slice before 3.12, a tuple holding one) is built instead,
  // a slice by calling a hashable constant that returns that very slice (loaded twice, it is the
  // same object twice: copy.copy(s) is s).
  void load_const(const py::object& value) {
    if (PyObject_Hash(value.ptr()) == -1) {
      PyErr_Clear();
      if (PySlice_Check(value.ptr())) {
        const py::object same_slice =
            loaded_module("itertools").attr("repeat")(value).attr("__next__");
        call_constant(
            same_slice, [] {}, 0);
        return;
      }
      if (PyTuple_CheckExact(value.ptr())) {
        for (const py::handle item : value) {
          load_const(py::reinterpret_borrow<py::object>(item));
        }
        emit("BUILD_TUPLE", static_cast<int>(PyTuple_GET_SIZE(value.ptr())));
        return;
      }
    }
    emit("LOAD_CONST", bc.add_const(value));
  }

  // CPython interns the strings of a code object's constants that look like identifiers, which
  // would make a string the frame computed identical to a literal of the same text: such a string
  // is loaded out of a one-item list constant instead (lists are not interned into).
  void load_constant_keeping_identity(const py::object& value) {
    PyObject* v = value.ptr();
    bool identifier_like =
        PyUnicode_CheckExact(v) && PyUnicode_CHECK_INTERNED(v) == 0 && PyUnicode_IS_ASCII(v) != 0;
    // ASCII: one byte per character, NULs included (the whole length is read, never up to a NUL).
    const auto* text = identifier_like ? PyUnicode_1BYTE_DATA(v) : nullptr;
    const Py_ssize_t size = identifier_like ? PyUnicode_GET_LENGTH(v) : 0;
    for (Py_ssize_t k = 0; identifier_like && k < size; ++k) {
      identifier_like = (std::isalnum(text[k]) != 0) || text[k] == '_';
    }
    if (!identifier_like) {
      load_const(value);
      return;
    }
    // (ASCII: made again from its bytes, a new string equal to it; a list constant holding it would
    // leave the code object unhashable.)
    load_const(py::bytes(reinterpret_cast<const char*>(text), static_cast<std::size_t>(size)));
    call_attribute("decode", py::str("ascii"));
  }

  // Pushes `v` rotated below the `n` values on top of the stack.
  void rotate_down(std::size_t n) {
    for (std::size_t k = n + 1; k >= 2; --k) {
      emit("SWAP", static_cast<int>(k));
    }
  }

  int local_holding(const VarPtr& v) const {
    for (std::size_t j = 0; j < current.size(); ++j) {
      if (current[j] == v && is_plain_local(static_cast<unsigned char>(kinds[j]))) {
        return static_cast<int>(j);
      }
    }
    return -1;
  }

  // Loads a value through its tracker; false when that is not possible here.
  bool load_tracked(const VarPtr& v) {
    const Tracker& t = v->tracker();
    switch (t.kind) {
      case Tracker::Kind::kLocal: {
        const auto i = static_cast<std::size_t>(t.index);
        if (t.deref || (i < kinds.size() &&
                        (static_cast<unsigned char>(kinds[i]) & version::kFastCell) != 0)) {
          // A free variable's contents, or an argument that MAKE_CELL (in the prefix) moved into
          // its cell: read through the cell, whose contents the generated code writes only after
          // every load.
          emit("LOAD_DEREF", t.index);
          return true;
        }
        if (i < overwritten.size() && !overwritten[i]) {
          emit("LOAD_FAST", t.index);
          return true;
        }
        const int j = local_holding(v);
        if (j >= 0) {
          emit("LOAD_FAST", j);
          return true;
        }
        return false;
      }
      case Tracker::Kind::kGlobal:
        emit("LOAD_GLOBAL", bc.add_name(py::str(t.key).cast<std::string>())
                                << version::kLoadGlobalNameShift);
        return true;
      case Tracker::Kind::kAttr:
        load(t.base);
        emit("LOAD_ATTR", bc.add_name(py::str(t.key).cast<std::string>())
                              << version::kLoadAttrNameShift);
        return true;
      case Tracker::Kind::kItem:
        load(t.base);
        load_const(t.key);
        emit("BINARY_SUBSCR");
        return true;
      case Tracker::Kind::kCreated:
        return false;
    }
    return false;
  }

  // The side effects of the frame, replayed once every value the generated code needs is loaded:
  // assignments to globals (the last one of each name, in order of first assignment), writes to
  // cells whose contents changed, and `del x[:]` of input lists. Every value is loaded before any
  // effect happens (a value may be read through what an effect changes), in reverse order, so
  // that the effects then run in order, each taking its values from the top.
  // `on_stack(v)` is how deep v already lies on the stack (1 = top), or 0: a value made in the
  // frame that is there is copied, not built twice.
  void emit_effects(const SimulationResult& r,
                    const std::function<std::size_t(const Variable*)>& on_stack) {
    struct Effect {
      enum Kind : std::uint8_t {
        kStoreGlobal,
        kDeleteGlobal,
        kStoreDeref,
        kDeleteDeref,
        kCallMethod,  // name(*value): a change to the list or dict received from outside
        kStoreAttr,
        kDeleteAttr,
        kClear
      };
      Kind kind;
      py::object name;
      int slot = -1;
      VarPtr value;   // pushed first
      VarPtr target;  // pushed above it
    };
    std::vector<Effect> effects;
    for (std::size_t k = 0; k < r.global_stores.size(); ++k) {
      const auto& [name, value] = r.global_stores[k];
      bool seen = false;
      for (std::size_t j = 0; j < k && !seen; ++j) {
        seen = PyObject_RichCompareBool(r.global_stores[j].first.ptr(), name.ptr(), Py_EQ) == 1;
      }
      PyErr_Clear();
      if (seen) {
        continue;
      }
      VarPtr last = value;
      VarPtr stored = value;  // the last value the frame assigned to the name, if any
      for (std::size_t j = k + 1; j < r.global_stores.size(); ++j) {
        if (PyObject_RichCompareBool(r.global_stores[j].first.ptr(), name.ptr(), Py_EQ) == 1) {
          last = r.global_stores[j].second;
          stored = last ? last : stored;
        }
      }
      PyErr_Clear();
      if (!last && stored) {
        // Assigned, then deleted: the global may not have existed before the frame, so the
        // assignment is replayed too (a bare delete would raise NameError).
        effects.push_back(Effect{Effect::kStoreGlobal, name, -1, stored, nullptr});
      }
      effects.push_back(
          Effect{last ? Effect::kStoreGlobal : Effect::kDeleteGlobal, name, -1, last, nullptr});
    }
    for (const ModelOp& op : r.model_ops) {
      std::vector<VarPtr> call = {r.modeled};
      call.insert(call.end(), op.args.begin(), op.args.end());
      effects.push_back(
          Effect{Effect::kCallMethod, op.method, -1, Variable::tuple(std::move(call)), nullptr});
    }
    for (const AttrStore& a : r.attr_stores) {
      effects.push_back(Effect{a.value ? Effect::kStoreAttr : Effect::kDeleteAttr, a.name, -1,
                               a.value, a.object});
    }
    for (const VarPtr& cell : r.cells) {
      const VarPtr now = cell->contents();
      if (now == cell->initial_contents()) {
        continue;
      }
      if (cell->slot() >= 0) {
        effects.push_back(Effect{now ? Effect::kStoreDeref : Effect::kDeleteDeref, py::object(),
                                 cell->slot(), now, nullptr});
      } else if (cell->outside()) {
        throw CodegenError("a write to a cell made outside the translation");
      }
      // A cell made by an inlined call is built with its final contents where it is needed.
    }
    for (const VarPtr& list : r.cleared_lists) {
      if (!list->tracker().is_input()) {
        throw CodegenError("cannot load " + list->describe() + " to empty it");
      }
      effects.push_back(Effect{Effect::kClear, py::object(), -1, nullptr, list});
    }
    std::size_t pushed = 0;
    auto push_value = [&](const VarPtr& v) {
      const std::size_t depth = v->is_mutable_created() ? on_stack(v.get()) : 0;
      if (depth > 0) {
        emit("COPY", static_cast<int>(depth + pushed));
      } else {
        load(v);
      }
      ++pushed;
    };
    for (auto it = effects.rbegin(); it != effects.rend(); ++it) {
      if (it->value) {
        push_value(it->value);
      }
      if (it->target) {
        push_value(it->target);
      }
    }
    for (const Effect& ef : effects) {
      switch (ef.kind) {
        case Effect::kStoreGlobal:
          emit("STORE_GLOBAL", bc.add_name(py::str(ef.name).cast<std::string>()));
          break;
        case Effect::kDeleteGlobal:
          emit("DELETE_GLOBAL", bc.add_name(py::str(ef.name).cast<std::string>()));
          break;
        case Effect::kCallMethod:  // [args]: method(*args)
          load_const(ef.name);
          if constexpr (version::kNullBeforeCallable) {
            emit("PUSH_NULL");  // [args, method, NULL] -> [NULL, method, args]
            emit("SWAP", 3);
          } else {
            emit("SWAP", 2);  // [method, args] -> [method, NULL, args]
            emit("PUSH_NULL");
            emit("SWAP", 2);
          }
          emit("CALL_FUNCTION_EX", 0);
          emit("POP_TOP");
          break;
        case Effect::kStoreAttr:  // [value, object]
          emit("STORE_ATTR", bc.add_name(py::str(ef.name).cast<std::string>()));
          break;
        case Effect::kDeleteAttr:  // [object]
          emit("DELETE_ATTR", bc.add_name(py::str(ef.name).cast<std::string>()));
          break;
        case Effect::kStoreDeref:
          emit("STORE_DEREF", ef.slot);
          break;
        case Effect::kDeleteDeref:
          emit("DELETE_DEREF", ef.slot);
          break;
        case Effect::kClear:
          load_const(py::reinterpret_steal<py::object>(PySlice_New(nullptr, nullptr, nullptr)));
          emit("DELETE_SUBSCR");
          break;
      }
    }
  }

  // Calls the constant `callable` with the values `push_args` pushes (`nargs` of them).
  void call_constant(const py::object& callable, const std::function<void()>& push_args,
                     int nargs) {
    if constexpr (version::kNullBeforeCallable) {
      emit("PUSH_NULL");
      load_const(callable);
    } else {
      load_const(callable);
      emit("PUSH_NULL");
    }
    push_args();
    if constexpr (version::kHasPrecall) {
      emit("PRECALL", nargs);
    }
    emit("CALL", nargs);
  }

  // Calls the bound method `name` of the value on top with the constant `arg` (or none), leaving
  // that value (not the result) on top.
  void call_method_keep(const char* name, const py::object& arg) {
    emit("COPY", 1);
    call_attribute(name, arg);
    emit("POP_TOP");
  }

  // Replaces the value on top by the result of calling its attribute `name` with the constant
  // `arg` (or none).
  void call_attribute(const std::string& name, const py::object& arg) {
    emit("LOAD_ATTR", bc.add_name(name) << version::kLoadAttrNameShift);
    if constexpr (version::kNullBeforeCallable) {
      emit("PUSH_NULL");
      emit("SWAP", 2);
    } else {
      emit("PUSH_NULL");
    }
    const int nargs = arg ? 1 : 0;
    if (arg) {
      load_const(arg);
    }
    if constexpr (version::kHasPrecall) {
      emit("PRECALL", nargs);
    }
    emit("CALL", nargs);
  }

  // An iterator made in the frame, at its position: built as the frame built it, then moved on.
  void load_iterator(const VarPtr& v) {
    using IK = Variable::IterKind;
    const Py_ssize_t at = v->position();
    const bool exhausted = at < 0;
    const auto builtin = [](const char* name) {
      return py::reinterpret_borrow<py::object>(PyDict_GetItemString(PyEval_GetBuiltins(), name));
    };
    switch (v->iter_kind()) {
      case IK::kConstSeq: {
        const py::object rest = exhausted ? v->value()[py::slice(0, 0, 1)]
                                          : v->value()[py::slice(at, PY_SSIZE_T_MAX, 1)];
        load_const(rest);
        emit("GET_ITER");
        return;
      }
      case IK::kItems: {
        const std::size_t first = exhausted ? v->snapshot().size() : static_cast<std::size_t>(at);
        for (std::size_t i = first; i < v->snapshot().size(); ++i) {
          load(v->snapshot()[i]);
        }
        emit("BUILD_TUPLE", static_cast<int>(v->snapshot().size() - first));
        emit("GET_ITER");
        return;
      }
      case IK::kList:
        if (exhausted) {
          emit("BUILD_LIST", 0);  // an exhausted list iterator never yields again
        } else {
          load(v->items()[0]);
        }
        emit("GET_ITER");
        if (!exhausted && at > 0) {
          call_method_keep("__setstate__", py::int_(at));
        }
        return;
      case IK::kReversed: {
        const VarPtr& list = v->items()[0];
        const Py_ssize_t index = v->start() - at;
        if (!exhausted && index > static_cast<Py_ssize_t>(list->items().size()) - 1) {
          throw CodegenError("a reversed() iterator past its list's end");
        }
        call_constant(
            builtin("reversed"),
            [&] {
              if (exhausted) {
                emit("BUILD_LIST", 0);
              } else {
                load(list);
              }
            },
            1);
        if (!exhausted && at > 0) {
          call_method_keep("__setstate__", py::int_(index));
        }
        return;
      }
      case IK::kEnumerate:
        call_constant(
            builtin("enumerate"),
            [&] {
              load(v->items()[0]);
              load_const(py::int_(v->start() + std::max<Py_ssize_t>(at, 0)));
            },
            2);
        return;
      case IK::kMap:
      case IK::kFilter:
        call_constant(
            builtin(v->iter_kind() == IK::kMap ? "map" : "filter"),
            [&] {
              for (const VarPtr& part : v->items()) {
                load(part);
              }
            },
            static_cast<int>(v->items().size()));
        return;
      case IK::kZip:
        call_constant(
            builtin("zip"),
            [&] {
              for (const VarPtr& inner : v->items()) {
                load(inner);
              }
            },
            static_cast<int>(v->items().size()));
        return;
      case IK::kDictView: {
        const VarPtr& d = v->items()[0];
        if (v->start() != 1 && d->version() != v->seen_version()) {
          throw CodegenError("an iterator over a dict that changed");
        }
        load(d);
        call_attribute(py::str(v->value()).cast<std::string>(), py::object());
        if (v->start() == 1) {
          return;  // the view itself
        }
        emit("GET_ITER");
        const std::size_t steps = exhausted ? v->snapshot().size() : static_cast<std::size_t>(at);
        for (std::size_t k = 0; k < steps; ++k) {
          call_method_keep("__next__", py::object());
        }
        if (exhausted) {
          throw CodegenError("an exhausted dict iterator");
        }
        return;
      }
    }
  }

  // Values being loaded (a value that contains itself cannot be rebuilt).
  std::set<const Variable*> loading;

  // Shared values made in the frame -> the local that keeps them once built (see assign_homes).
  std::map<const Variable*, int> home;

  void load(const VarPtr& v) {
    // A value made in the frame is built once: later loads read it from its home local, or fail.
    // (A graph output is copied from the graph's result at each load.)
    if (v->kind() == Variable::Kind::kArray && result_on_stack) {
      load_graph_output(v.get());
      return;
    }
    // (A tuple made in the frame is built once when it has a home; else rebuilt at each load.)
    const bool once = v->is_mutable_created() || (made_tuple(v) && home.count(v.get()) != 0);
    if (once) {
      const auto it = built.find(v.get());
      if (it != built.end()) {
        if (it->second < 0) {
          throw CodegenError("a value made in the frame is referenced twice");
        }
        emit("LOAD_FAST", it->second);
        return;
      }
      built[v.get()] = -1;
    }
    if (!loading.insert(v.get()).second) {
      throw CodegenError("a value made in the frame contains itself");
    }
    load_value(v);
    loading.erase(v.get());
    if (const auto h = home.find(v.get()); once && h != home.end()) {
      emit("COPY", 1);
      emit("STORE_FAST", h->second);
      built[v.get()] = h->second;
      overwritten[static_cast<std::size_t>(h->second)] = true;
      current[static_cast<std::size_t>(h->second)] = v;
    }
  }

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
                                const std::vector<int>& scratch) {
    Refs refs;
    for (const VarPtr& v : roots) {
      count_refs(v, &refs);
    }
    if (graph_lazy) {
      for (const VarPtr& in : graph_inputs) {
        count_refs(in, &refs);  // (their locals' entry values are read on the way)
      }
    }
    // A local whose entry value is still to be read, or that is some value's home, is no scratch.
    std::set<int> taken(refs.entry_locals.begin(), refs.entry_locals.end());
    for (const auto& [v, i] : preferred) {
      if (refs.count[v] >= 2) {
        taken.insert(i);
      }
    }
    std::vector<int> usable;
    for (const int i : scratch) {
      if (taken.insert(i).second) {
        usable.push_back(i);
      }
    }
    std::vector<int> used;
    for (const Variable* v : refs.order) {
      // (Graph outputs are copied from the graph's result: no home.)
      if (refs.count[v] < 2 || (v->kind() == Variable::Kind::kArray && !graph_lazy)) {
        continue;
      }
      if (const auto p = preferred.find(v); p != preferred.end()) {
        home[v] = p->second;
      } else if (used.size() < usable.size()) {
        home[v] = usable[used.size()];
        used.push_back(home[v]);
      }
    }
    return used;
  }

  static bool made_tuple(const VarPtr& v) {
    return v->kind() == Variable::Kind::kTuple && !v->tracker().is_input();
  }

  static void count_refs(const VarPtr& v, Refs* refs) {
    if (!v) {
      return;
    }
    for (const Tracker* t = &v->tracker(); t->is_input(); t = &t->base->tracker()) {
      if (t->kind == Tracker::Kind::kLocal && !t->deref) {
        refs->entry_locals.insert(t->index);
      }
      if (!t->base) {
        break;
      }
    }
    // Objects made in the frame keep their identity (`x is x`, `[x, x]`): tuples too.
    if (v->is_mutable_created() || made_tuple(v)) {
      if (refs->count[v.get()]++ > 0) {
        return;
      }
      refs->order.push_back(v.get());
    }
    switch (v->kind()) {
      case Variable::Kind::kTuple:
      case Variable::Kind::kList:
      case Variable::Kind::kMethod:
      case Variable::Kind::kIter:
      case Variable::Kind::kFunction:
      case Variable::Kind::kDict:
        for (const VarPtr& item : v->items()) {
          count_refs(item, refs);
        }
        if (v->kind() == Variable::Kind::kIter) {
          for (const VarPtr& item : v->snapshot()) {
            count_refs(item, refs);
          }
        }
        if (v->kind() == Variable::Kind::kFunction) {
          for (const Variable::Part p :
               {Variable::kDefaults, Variable::kKwDefaults, Variable::kAnnotations}) {
            count_refs(v->part(p), refs);
          }
        }
        return;
      case Variable::Kind::kCell:
        if (v->is_mutable_created()) {
          count_refs(v->contents(), refs);
        }
        return;
      default:
        return;
    }
  }

  void load_value(const VarPtr& v) {
    switch (v->kind()) {
      case Variable::Kind::kNull:
        emit("PUSH_NULL");
        return;
      case Variable::Kind::kConst:
        if (v->tracker().is_input() && load_tracked(v)) {
          return;
        }
        guards->value(v);  // the generated code now relies on the value
        load_constant_keeping_identity(v->value());
        return;
      case Variable::Kind::kObject:
        if (v->tracker().is_input()) {
          if (load_tracked(v)) {
            return;
          }
          throw CodegenError("cannot load " + v->describe() + " again");
        }
        load_const(v->value());
        return;
      case Variable::Kind::kTuple:
        for (const VarPtr& item : v->items()) {
          load(item);
        }
        emit("BUILD_TUPLE", static_cast<int>(v->items().size()));
        return;
      case Variable::Kind::kList: {
        for (const VarPtr& item : v->items()) {
          load(item);
        }
        emit("BUILD_LIST", static_cast<int>(v->items().size()));
        return;
      }
      case Variable::Kind::kCell: {
        if (v->slot() >= 0) {
          emit(version::kMakeFunctionHasFlags ? "LOAD_CLOSURE" : "LOAD_FAST", v->slot());
          return;
        }
        if (v->tracker().is_input()) {
          if (!load_tracked(v)) {
            throw CodegenError("cannot load " + v->describe() + " again");
          }
          return;
        }
        // A cell an inlined call made: types.CellType(contents) (or an empty one).
        const VarPtr contents = v->contents();
        call_constant(
            py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(&PyCell_Type)),
            [&] {
              if (contents) {
                load(contents);
              }
            },
            contents ? 1 : 0);
        return;
      }
      case Variable::Kind::kFunction: {
        if (v->globals()) {
          throw CodegenError("a function made by an inlined function of another module");
        }
        const std::array<const VarPtr*, 3> parts = {&v->part(Variable::kDefaults),
                                                    &v->part(Variable::kKwDefaults),
                                                    &v->part(Variable::kAnnotations)};
        constexpr int kClosure = 8;
        auto load_closure = [&] {
          for (const VarPtr& cell : v->items()) {
            load(cell);
          }
          emit("BUILD_TUPLE", static_cast<int>(v->items().size()));
        };
        const bool has_closure = v->value().attr("co_freevars").cast<py::tuple>().size() > 0;
        if constexpr (version::kMakeFunctionHasFlags) {
          int flags = 0;
          for (int bit = 0; bit < 3; ++bit) {
            if (*parts[static_cast<std::size_t>(bit)]) {
              load(*parts[static_cast<std::size_t>(bit)]);
              flags |= 1 << bit;
            }
          }
          if (has_closure) {
            load_closure();
            flags |= kClosure;
          }
          load_const(v->value());
          emit("MAKE_FUNCTION", flags);
        } else {
          load_const(v->value());
          emit("MAKE_FUNCTION");
          for (int bit = 0; bit < 3; ++bit) {
            if (*parts[static_cast<std::size_t>(bit)]) {
              load(*parts[static_cast<std::size_t>(bit)]);
              emit("SWAP", 2);
              emit("SET_FUNCTION_ATTRIBUTE", 1 << bit);
            }
          }
          if (has_closure) {
            load_closure();
            emit("SWAP", 2);
            emit("SET_FUNCTION_ATTRIBUTE", kClosure);
          }
        }
        return;
      }
      case Variable::Kind::kMethod:
        load(v->items()[0]);
        emit("LOAD_ATTR", bc.add_name(py::str(v->value()).cast<std::string>())
                              << version::kLoadAttrNameShift);
        return;
      case Variable::Kind::kIter:
        load_iterator(v);
        return;
      case Variable::Kind::kDict:
        for (std::size_t i = 0; i < v->keys().size(); ++i) {
          load_constant_keeping_identity(v->keys()[i]);
          load(v->items()[i]);
        }
        emit("BUILD_MAP", static_cast<int>(v->keys().size()));
        return;
      case Variable::Kind::kSuper: {
        const py::object super_type =
            py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(&PySuper_Type));
        call_constant(
            super_type,
            [&] {
              load(v->items()[0]);
              load(v->items()[1]);
            },
            2);
        return;
      }
      case Variable::Kind::kArray:
        if (graph_lazy && !graph_done && graph_outputs.size() == 1 && graph_outputs[0] == v.get()) {
          emit_graph_call();
          return;
        }
        throw CodegenError("a NumPy value the graph does not output");
      case Variable::Kind::kSet:
        // The same updates as the frame's (the set's table, so its order, comes out the same).
        emit("BUILD_SET", 0);
        for (const VarPtr& segment : v->snapshot()) {
          load_const(segment->value());
          emit("SET_UPDATE", 1);
        }
        return;
    }
  }
};

py::object resume_info(PyObject* code) {
  capture::CodeCache* cache = capture::existing_cache(code);
  if (cache == nullptr || !cache->translator_data.contains("resume_of")) {
    return py::none();
  }
  return cache->translator_data["resume_of"];
}

void register_resume(const py::object& resume, const py::object& of, int offset) {
  // A resume function of a resume function belongs to the same user function.
  const py::object outer = resume_info(of.ptr());
  const py::object user = outer.is_none() ? of : py::object(py::tuple(outer)[0]);
  capture::CodeCache* cache = capture::cache_for(resume.ptr());
  if (cache == nullptr) {
    throw py::error_already_set();
  }
  cache->translator_data["resume_of"] = py::make_tuple(user, offset);
}

CodeGen::CodeGen(const bytecode::Bytecode& original, py::dict resume_cache, GuardSet* guards)
    : original_(original), resume_cache_(std::move(resume_cache)), guards_(guards) {}

namespace {

// The values the replayed side effects load (see Emitter::emit_effects), added to `roots`.
void add_effect_values(const SimulationResult& r, std::vector<VarPtr>* roots) {
  for (const auto& store : r.global_stores) {
    roots->push_back(store.second);
  }
  for (const ModelOp& op : r.model_ops) {
    roots->insert(roots->end(), op.args.begin(), op.args.end());
  }
  for (const AttrStore& a : r.attr_stores) {
    roots->push_back(a.value);
  }
  for (const VarPtr& cell : r.cells) {
    if (cell->slot() >= 0) {  // the writes replayed (other cells are built where referenced)
      roots->push_back(cell->contents());
    }
  }
}

std::vector<Instruction> prefix_of(const bytecode::Bytecode& bc) {
  const std::size_t end = prefix_end(bc);
  return {bc.instructions().begin(), bc.instructions().begin() + static_cast<long>(end)};
}

}  // namespace

std::vector<int> CodeGen::homes_and_graph(Emitter& e, const SimulationResult& r,
                                          std::vector<VarPtr>* roots,
                                          const std::map<const Variable*, int>& preferred,
                                          const std::vector<int>& scratch) {
  prepare_graph(e, r, roots);
  std::vector<int> used = e.assign_homes(*roots, preferred, scratch);
  e.emit_graph_prologue();
  return used;
}

void CodeGen::prepare_graph(Emitter& e, const SimulationResult& r, std::vector<VarPtr>* roots) {
  graphs_.clear();
  if (!r.arrays || r.arrays->graph.ops().empty()) {
    return;
  }
  // The arrays the generated code needs: the graph's outputs, in first-reference order.
  Emitter::Refs refs;
  for (const VarPtr& v : *roots) {
    Emitter::count_refs(v, &refs);
  }
  std::vector<const Variable*> outputs;
  std::vector<int> ids;
  for (const Variable* v : refs.order) {
    if (v->kind() == Variable::Kind::kArray) {
      outputs.push_back(v);
      ids.push_back(v->graph_id());
    }
  }
  if (outputs.empty() && !r.arrays->graph.runs_for_effect()) {
    return;  // nothing needs the graph and it has no effect: it does not run
  }
  graph::Backend* backend = graph::find_backend(graph_options_.backend);
  if (backend == nullptr) {
    throw CodegenError("no graph backend called '" + graph_options_.backend + "'");
  }
  // The graph as the translation left it: symbols specialized on the way are static sizes.
  graph::Graph captured = r.arrays->graph;
  for (std::size_t i = 0; i < captured.values().size(); ++i) {
    captured.info(static_cast<int>(i)) = r.arrays->current(captured.values()[i].info);
  }
  auto compile = [&](std::vector<int> outs) {
    const graph::Graph g = captured.optimized(&outs);
    GraphRecord record;
    record.compiled = backend->compile(g, outs, graph_options_.check);
    record.text = g.text(outs);
    record.json = g.json(outs);
    record.op_counts = g.op_counts();
    record.ops = g.ops().size();
    record.inputs = g.inputs().size();
    record.outputs = outs.size();
    graphs_.push_back(record);
    return record.compiled;
  };
  e.graph_inputs = r.arrays->inputs;
  e.graph_fn = compile(ids);
  e.graph_outputs = outputs;
  e.graph_lazy = outputs.size() == 1 && refs.count[outputs[0]] == 1;
}

py::object CodeGen::for_return(const SimulationResult& r) {
  bytecode::Bytecode bc =
      bytecode::Bytecode::from_instructions(prefix_of(original_), original_.template_code().ptr());
  Emitter e(bc, original_.localsplus_kinds(), guards_, r.entry_locals);
  e.pos = original_.at(r.last).position;
  {
    // Values made in the frame referred to more than once are built once into a local (the frame
    // returns: any plain local serves, best one that was unbound at entry).
    std::vector<VarPtr> roots = {r.value};
    add_effect_values(r, &roots);
    std::vector<int> scratch;
    const std::string& kinds = original_.localsplus_kinds();
    for (const bool unbound_first : {true, false}) {
      for (std::size_t i = 0; i < kinds.size(); ++i) {
        if (is_plain_local(static_cast<unsigned char>(kinds[i])) &&
            (!r.entry_locals[i]) == unbound_first) {
          scratch.push_back(static_cast<int>(i));
        }
      }
    }
    homes_and_graph(e, r, &roots, {}, scratch);
  }
  e.load(r.value);
  e.emit_effects(r, [&r](const Variable* v) -> std::size_t {
    return v == r.value.get() ? 1 : 0;  // the returned value is on top
  });
  e.remove_graph_result();
  e.emit("RETURN_VALUE");
  e.finish_into(bc);
  return bc.assemble();
}

// Rebuilds the frame's state at a break: the value stack (loaded first: reads of the locals' entry
// values happen before any store), then the locals the simulation changed, then the side effects.
// NULLs below `keep` are left out (a resume function's prologue pushes them; returned as true).
std::vector<bool> CodeGen::emit_state(Emitter& e, const SimulationResult& r, std::size_t keep) {
  const std::string& kinds = original_.localsplus_kinds();
  const std::size_t n = kinds.size();
  const std::size_t depth_before = r.state.stack.size();
  std::vector<bool> kept_null(keep, false);
  std::map<const Variable*, std::size_t> on_stack;  // lists built for the stack -> position
  std::size_t pushed = 0;

  // Values made in the frame that the state holds in more than one place: built once, into the
  // local that ends up holding them, or into a local unbound at the break (deleted again below).
  std::vector<VarPtr> roots = r.state.stack;
  std::map<const Variable*, int> preferred;
  std::vector<int> scratch;
  for (std::size_t i = 0; i < n; ++i) {
    const auto kind = static_cast<unsigned char>(kinds[i]);
    if (!is_plain_local(kind)) {
      continue;
    }
    const VarPtr& v = r.state.locals[i];
    if (!v) {
      scratch.push_back(static_cast<int>(i));
    } else if (v != r.entry_locals[i]) {
      roots.push_back(v);
      preferred.emplace(v.get(), static_cast<int>(i));
    }
  }
  // A local that gets a new value at the end can hold another value until then.
  for (std::size_t i = 0; i < n; ++i) {
    const VarPtr& v = r.state.locals[i];
    if (is_plain_local(static_cast<unsigned char>(kinds[i])) && v && v != r.entry_locals[i]) {
      scratch.push_back(static_cast<int>(i));
    }
  }
  add_effect_values(r, &roots);
  const std::vector<int> scratch_used = homes_and_graph(e, r, &roots, preferred, scratch);

  for (std::size_t k = 0; k < depth_before; ++k) {
    const VarPtr& v = r.state.stack[k];
    if (k < keep && v->kind() == Variable::Kind::kNull) {
      kept_null[k] = true;
      continue;
    }
    if (v->is_mutable_created() && on_stack.count(v.get()) == 0 && e.built.count(v.get()) == 0) {
      on_stack[v.get()] = pushed;
    }
    e.load(v);
    ++pushed;
  }

  // The locals the simulation changed: their values are pushed, then stored. A list made in the
  // frame that is also on the stack is copied from there (one object, as in the original).
  std::vector<std::size_t> stored;
  std::vector<std::pair<std::size_t, std::size_t>> aliases;  // (local, local already holding it)
  std::vector<std::size_t> deleted;
  std::size_t extra = 0;  // values pushed in this phase
  for (std::size_t i = 0; i < n; ++i) {
    // Plain locals, and cell slots a resume function's prologue filled with its caller's cells.
    const auto kind = static_cast<unsigned char>(kinds[i]);
    const bool cell_slot = (kind & version::kFastCell) != 0;
    if ((!is_plain_local(kind) && !cell_slot) || r.state.locals[i] == r.entry_locals[i]) {
      continue;
    }
    const VarPtr& v = r.state.locals[i];
    if (v && v->kind() == Variable::Kind::kCell && v->slot() == static_cast<int>(i)) {
      continue;  // the cell the prefix made (MAKE_CELL)
    }
    if (cell_slot && !v) {
      throw CodegenError("a cell slot was emptied");
    }
    if (!v) {
      deleted.push_back(i);
      continue;
    }
    bool alias = false;
    if (v->is_mutable_created()) {
      for (const std::size_t j : stored) {
        if (r.state.locals[j] == v) {
          aliases.emplace_back(i, j);
          alias = true;
          break;
        }
      }
    }
    if (alias) {
      continue;
    }
    const auto it = on_stack.find(v.get());
    if (it != on_stack.end()) {
      e.emit("COPY", static_cast<int>(pushed + extra - it->second));
    } else {
      e.load(v);
    }
    ++extra;
    stored.push_back(i);
  }
  for (auto it = stored.rbegin(); it != stored.rend(); ++it) {
    e.emit("STORE_FAST", static_cast<int>(*it));
    e.overwritten[*it] = true;
    e.current[*it] = r.state.locals[*it];
    for (auto& [value, slot] : e.built) {
      if (slot == static_cast<int>(*it) && value != r.state.locals[*it].get()) {
        slot = -1;  // that value's scratch home is overwritten: no more references to it
      }
    }
    if (r.state.locals[*it]->is_mutable_created()) {
      e.built[r.state.locals[*it].get()] = static_cast<int>(*it);  // loaded from there from now on
    }
  }
  for (const auto& [i, j] : aliases) {
    e.emit("LOAD_FAST", static_cast<int>(j));
    e.emit("STORE_FAST", static_cast<int>(i));
    e.overwritten[i] = true;
    e.current[i] = r.state.locals[i];
  }
  e.emit_effects(r, [&](const Variable* v) -> std::size_t {
    const auto it = on_stack.find(v);
    return it == on_stack.end() ? 0 : pushed - it->second;
  });
  for (const std::size_t i : deleted) {
    e.emit("DELETE_FAST", static_cast<int>(i));
    e.overwritten[i] = true;
    e.current[i] = nullptr;
  }
  for (const int i : scratch_used) {
    // A scratch local unbound at the break is unbound again (one that got its value is kept).
    const auto u = static_cast<std::size_t>(i);
    if (!r.state.locals[u] && std::find(deleted.begin(), deleted.end(), u) == deleted.end()) {
      e.emit("DELETE_FAST", i);
      e.current[u] = nullptr;
    }
  }
  e.remove_graph_result();
  return kept_null;
}

py::object CodeGen::for_continuation(const SimulationResult& r) {
  // The whole original, with the state rebuilt between its prefix and its body and a jump to the
  // breaking instruction: the rest of the frame runs as is, in this frame (its handlers and loops
  // included).
  const std::size_t body_start = prefix_end(original_);
  bytecode::Bytecode bc = bytecode::Bytecode::from_instructions(original_.instructions(),
                                                                original_.template_code().ptr());
  const std::string& kinds = original_.localsplus_kinds();
  Emitter e(bc, kinds, guards_, r.entry_locals);
  e.pos = original_.at(r.first).position;
  emit_state(e, r, 0);
  if (!r.state.stack.empty() && needs_exact_bool(original_.at(r.first))) {
    e.emit("TO_BOOL");  // (a NumPy bool from a graph, as in for_break)
  }
  e.emit_jump_to_id("JUMP_FORWARD", original_.at(r.first).id);
  e.finish_into(bc, body_start);
  return bc.assemble();
}

py::object CodeGen::for_break(const SimulationResult& r) {
  bytecode::Bytecode bc =
      bytecode::Bytecode::from_instructions(prefix_of(original_), original_.template_code().ptr());
  const std::string& kinds = original_.localsplus_kinds();
  Emitter e(bc, kinds, guards_, r.entry_locals);
  const Instruction& last = original_.at(r.last);
  e.pos = last.position;
  const std::size_t n = kinds.size();

  // 1. The value stack at the break, loaded first: reads of the locals' entry values happen before
  // any store. NULLs (of calls pending below the breaking instruction's inputs) cannot be passed
  // to a resume function: they are left out here and pushed again by the resume function's
  // prologue.
  // An instruction that reads or writes a cell slot as a plain local (3.12's inlined comprehensions
  // save and restore a cell that way) would leave the frame's cells unfit to pass on.
  {
    const bytecode::ArgKind ak = bytecode::opcode_info(last.opcode).arg_kind;
    auto cell = [&kinds](int i) {
      return i >= 0 && static_cast<std::size_t>(i) < kinds.size() &&
             is_cell_or_free(static_cast<unsigned char>(kinds[static_cast<std::size_t>(i)]));
    };
    if ((ak == bytecode::ArgKind::kLocal && cell(last.arg)) ||
        (ak == bytecode::ArgKind::kLocalPair && (cell(last.arg >> 4) || cell(last.arg & 15)))) {
      throw CodegenError("a graph break at a plain access to a cell slot");
    }
  }
  const int consumed = inputs_of(last);
  const std::size_t depth_before = r.state.stack.size();
  bool any_null = false;
  for (const VarPtr& v : r.state.stack) {
    any_null = any_null || v->kind() == Variable::Kind::kNull;
  }
  if (consumed < 0 && any_null) {
    throw CodegenError(std::string("a graph break at ") + bytecode::opcode_info(last.opcode).name +
                       " while a call is pending");
  }
  if (consumed > static_cast<int>(depth_before)) {
    throw CodegenError("the breaking instruction takes more values than the stack holds");
  }
  // DICT_MERGE names the callable in its TypeError, reading it below its own inputs. The stack
  // emitted here leaves NULLs out, and from 3.13 (NULL above the callable) the call's NULL lies
  // between the callable and the dict: the read would miss, so the original code runs instead.
  if (!version::kNullBeforeCallable && any_null && is_op(last, "DICT_MERGE")) {
    throw CodegenError("a graph break at DICT_MERGE while a call is pending");
  }
  const std::size_t keep =
      consumed < 0 ? depth_before : depth_before - static_cast<std::size_t>(consumed);
  const std::vector<bool> kept_null = emit_state(e, r, keep);

  // 3. The breaking instructions, run for real, then a resume function per successor.
  const bytecode::OpcodeInfo& info = bytecode::opcode_info(last.opcode);
  const bool for_iter = is_op(last, "FOR_ITER");
  for (std::size_t k = r.first; k < r.last; ++k) {
    const Instruction& ins = original_.at(k);
    e.pos = ins.position;
    e.emit(ins.opcode, ins.arg);
  }
  e.pos = last.position;
  // A load that pushes a NULL for a call (LOAD_GLOBAL with its NULL bit, a method load) runs
  // without it: the resume function pushes the NULL (method loads become plain attribute loads:
  // the bound method is called instead, with the same result).
  int pushed_null = -1;  // position of that NULL among the instruction's results
  Instruction emitted = last;
  const bool null_bit = (last.arg & 1) != 0;
  if ((is_op(last, "LOAD_GLOBAL") && null_bit) ||
      (is_op(last, "LOAD_ATTR") && version::kLoadAttrNameShift == 1 && null_bit)) {
    emitted.arg = last.arg & ~1;
    pushed_null = version::kNullBeforeCallable ? 0 : 1;
  } else if (is_op(last, "LOAD_METHOD")) {
    emitted.opcode = opcode("LOAD_ATTR");
    pushed_null = 0;
  } else if (is_op(last, "LOAD_SUPER_ATTR") && (last.arg & 1) != 0) {
    throw CodegenError("a graph break at a method load through super()");
  }
  // A value from a graph (a NumPy bool where the original had made a Python bool) reaches a 3.13
  // consumer of exact bools: coerce it as the original's TO_BOOL would have.
  if (needs_exact_bool(last)) {
    e.emit("TO_BOOL");
  }
  const int jump_label = info.is_jump() ? e.new_label() : -1;
  if (info.is_jump()) {
    e.emit_jump(emitted, jump_label);
  } else {
    e.emit(emitted.opcode, emitted.arg);
  }
  // The locals bound after the instruction: as before it, but for the locals it stores or deletes.
  std::vector<bool> bound(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    bound[i] = static_cast<bool>(e.current[i]);
  }
  auto set_bound = [&](int i, bool value) {
    if (i >= 0 && static_cast<std::size_t>(i) < n) {
      bound[static_cast<std::size_t>(i)] = value;
    }
  };
  if (is_op(last, "STORE_FAST") || is_op(last, "DELETE_FAST")) {
    set_bound(last.arg, is_op(last, "STORE_FAST"));
  } else if (is_op(last, "STORE_FAST_LOAD_FAST") || is_op(last, "STORE_FAST_STORE_FAST")) {
    set_bound(last.arg >> 4, true);
    set_bound(is_op(last, "STORE_FAST_STORE_FAST") ? last.arg & 15 : -1, true);
  }
  std::vector<int> live;
  for (std::size_t i = 0; i < n; ++i) {
    if (is_plain_local(static_cast<unsigned char>(kinds[i])) && bound[i]) {
      live.push_back(static_cast<int>(i));
    }
  }
  // The frame's cells are passed as arguments (cells of the resume function: an unbound one
  // still raises UnboundLocalError); its free variables make the resume function's closure.
  std::vector<int> cells;
  std::vector<int> closure;
  for (std::size_t i = 0; i < n; ++i) {
    const auto kind = static_cast<unsigned char>(kinds[i]);
    if ((kind & version::kFastCell) != 0) {
      cells.push_back(static_cast<int>(i));
    } else if ((kind & version::kFastFree) != 0) {
      closure.push_back(static_cast<int>(i));
    }
  }
  // `after`: values on the original's stack after the instruction on this path.
  auto resume_call = [&](std::size_t index, int after) {
    if (after < static_cast<int>(keep)) {
      throw CodegenError("the stack after the break is shallower than what it kept");
    }
    std::vector<bool> nulls = kept_null;
    nulls.resize(static_cast<std::size_t>(after), false);
    if (pushed_null >= 0) {
      nulls.at(keep + static_cast<std::size_t>(pushed_null)) = true;
    }
    std::size_t values = 0;
    py::list null_slots;
    for (std::size_t k = 0; k < nulls.size(); ++k) {
      if (nulls[k]) {
        null_slots.append(k);
      } else {
        ++values;
      }
    }
    const py::tuple key =
        py::make_tuple(index, nulls.size(), py::tuple(null_slots), py::tuple(py::cast(live)));
    py::object code;
    if (resume_cache_.contains(key)) {
      code = resume_cache_[key];
    } else {
      code = make_resume(original_, index, nulls, live);
      resume_cache_[key] = code;
      register_resume(code, original_.template_code(), original_.at(index).original_offset);
    }
    ResumeFunction rf;
    rf.code = code;
    rf.index = index;
    rf.offset = original_.at(index).original_offset;
    rf.stack = values;
    rf.live = live;
    resumes_.push_back(rf);
    // The arguments travel in one list that the resume function empties first: the values move
    // into its frame, and neither this frame nor its value stack (which CPython keeps until the
    // call returns) holds them while it runs - `del x` there frees x as in the original.
    for (const int i : live) {
      e.emit("LOAD_FAST", i);
      e.emit("DELETE_FAST", i);
    }
    for (const int i : cells) {
      e.emit(version::kMakeFunctionHasFlags ? "LOAD_CLOSURE" : "LOAD_FAST", i);
    }
    e.emit("BUILD_LIST", static_cast<int>(values + live.size() + cells.size()));
    // A second reference to the list stays on this frame's stack during the call: if the call
    // fails before the resume function has emptied the list (a RecursionError at the call), the
    // handler below puts the live locals back, so that this frame - in the traceback - holds them
    // as the user's frame would.
    e.emit("COPY", 1);
    for (const int i : closure) {
      e.emit(version::kMakeFunctionHasFlags ? "LOAD_CLOSURE" : "LOAD_FAST", i);
    }
    if (!closure.empty()) {
      e.emit("BUILD_TUPLE", static_cast<int>(closure.size()));
    }
    e.load_const(code);
    if constexpr (version::kMakeFunctionHasFlags) {
      e.emit("MAKE_FUNCTION", closure.empty() ? 0 : version::kMakeFunctionClosure);
    } else {
      e.emit("MAKE_FUNCTION");
      if (!closure.empty()) {
        e.emit("SET_FUNCTION_ATTRIBUTE", version::kMakeFunctionClosure);
      }
    }
    // [list, list, fn] -> [list, NULL, fn, list] (3.11, 3.12) or [list, fn, NULL, list] (3.13).
    if constexpr (version::kNullBeforeCallable) {
      e.emit("PUSH_NULL");
      e.emit("SWAP", 3);
    } else {
      e.emit("SWAP", 2);
      e.emit("PUSH_NULL");
      e.emit("SWAP", 2);
    }
    // The call is covered by a handler that drops this frame's traceback entry before the
    // exception leaves: the resume function's frame stands for the user's frame in tracebacks,
    // which then read as if the function had run in one piece.
    const int strip = e.new_label();
    const int cleanup = e.new_label();
    const int reraise = e.new_label();
    const int keep_tb = e.new_label();
    const int emptied = e.new_label();
    const std::size_t call_first = e.out.size();
    if constexpr (version::kHasPrecall) {
      e.emit("PRECALL", 1);
    }
    e.emit("CALL", 1);
    e.cover(call_first, strip, 1, false);
    e.emit("SWAP", 2);  // result, list
    e.emit("POP_TOP");
    e.emit("RETURN_VALUE");
    e.place(strip);
    const std::size_t handler_first = e.out.size();
    e.emit("PUSH_EXC_INFO");  // list, prev, exc
    e.emit("COPY", 3);        // list, prev, exc, list
    if (bytecode::opcode_by_name("TO_BOOL") >= 0) {
      e.emit("TO_BOOL");
    }
    e.emit_jump_op("POP_JUMP_IF_FALSE", emptied);  // the resume function ran: nothing to restore
    e.emit("COPY", 3);
    e.emit("UNPACK_SEQUENCE", static_cast<int>(values + live.size() + cells.size()));
    for (std::size_t k = 0; k < values; ++k) {
      e.emit("POP_TOP");
    }
    for (const int i : live) {
      e.emit("STORE_FAST", i);
    }
    for (std::size_t k = 0; k < cells.size(); ++k) {
      e.emit("POP_TOP");
    }
    e.place(emptied);
    e.emit("COPY", 1);  // list, prev, exc, exc
    e.emit("LOAD_ATTR", e.bc.add_name("__traceback__") << version::kLoadAttrNameShift);
    e.emit("LOAD_ATTR", e.bc.add_name("tb_next") << version::kLoadAttrNameShift);
    e.emit("COPY", 1);                                     // list, prev, exc, next, next
    e.emit_jump_op("POP_JUMP_IF_NONE", keep_tb);           // list, prev, exc, next
    e.emit("COPY", 2);                                     // list, prev, exc, next, exc
    e.emit("STORE_ATTR", e.bc.add_name("__traceback__"));  // list, prev, exc
    e.emit_jump_op("JUMP_FORWARD", reraise);
    e.place(keep_tb);
    e.emit("POP_TOP");  // list, prev, exc
    e.place(reraise);
    e.emit("RERAISE", 0);
    e.cover(handler_first, cleanup, 2, true);
    e.place(cleanup);  // list, prev, lasti, exc
    e.emit("COPY", 3);
    e.emit("POP_EXCEPT");
    e.emit("RERAISE", 1);
  };
  // The original's stack depth after the group on each path (NULLs included).
  int effect_before = 0;
  for (std::size_t k = r.first; k < r.last; ++k) {
    int eff = 0;
    if (!bytecode::stack_effect(original_.at(k).opcode, original_.at(k).arg, false, &eff)) {
      throw CodegenError("no stack effect for an instruction of the break");
    }
    effect_before += eff;
  }
  const int depth = static_cast<int>(depth_before) + effect_before;
  if (info.falls_through()) {
    int eff = 0;
    if (!bytecode::stack_effect(last.opcode, last.arg, false, &eff)) {
      throw CodegenError("no stack effect for the breaking instruction");
    }
    resume_call(r.last + 1, depth + eff);
  }
  if (info.is_jump()) {
    e.place(jump_label);
    std::size_t target = original_.index_of(last.target);
    int stack = 0;
    if (for_iter) {
      // Exhausted: the iterator is popped, and 3.12+ skip the END_FOR (and 3.13 the POP_TOP) the
      // jump targets; the same instructions stand at the label for the runtime to skip.
      if constexpr (kForIterExhaustSkip >= 1) {
        e.emit("END_FOR");
      }
      if constexpr (kForIterExhaustSkip >= 2) {
        e.emit("POP_TOP");
      }
      target += kForIterExhaustSkip;
      stack = depth - 1;
    } else {
      int eff = 0;
      if (!bytecode::stack_effect(last.opcode, last.arg, true, &eff)) {
        throw CodegenError("no stack effect for the breaking jump");
      }
      stack = depth + eff;
    }
    resume_call(target, stack);
  }
  e.finish_into(bc);
  return bc.assemble();
}

py::object CodeGen::make_resume(const bytecode::Bytecode& original, std::size_t index,
                                const std::vector<bool>& nulls, const std::vector<int>& live) {
  std::size_t stack = 0;  // values passed as arguments (the NULL slots are pushed by the prologue)
  for (const bool null : nulls) {
    stack += null ? 0 : 1;
  }
  const std::string& kinds = original.localsplus_kinds();
  const py::list& names = original.localsplus_names();
  const std::size_t n = kinds.size();
  // New layout: one argument (the list of values the caller passes), the stack values, the live
  // locals, the other plain locals; then the original's cells as cells of the resume function
  // (the caller passes its cell objects, stored into them: an unbound one still raises
  // UnboundLocalError); then the original's free variables (the closure).
  py::list new_names;
  std::string new_kinds;
  std::vector<int> map(n, -1);
  new_names.append(py::str("__sot_args"));
  new_kinds.push_back(static_cast<char>(version::kFastLocal));
  std::vector<int> targets;  // new localsplus index of each list item, in list order
  for (std::size_t s = 0; s < stack; ++s) {
    targets.push_back(static_cast<int>(new_names.size()));
    new_names.append(py::str("__sot_stack_" + std::to_string(s)));
    new_kinds.push_back(static_cast<char>(version::kFastLocal));
  }
  std::vector<bool> is_live(n, false);
  for (const int i : live) {
    is_live[static_cast<std::size_t>(i)] = true;
    map[static_cast<std::size_t>(i)] = static_cast<int>(new_names.size());
    targets.push_back(map[static_cast<std::size_t>(i)]);
    new_names.append(names[static_cast<std::size_t>(i)]);
    new_kinds.push_back(kinds[static_cast<std::size_t>(i)]);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const auto kind = static_cast<unsigned char>(kinds[i]);
    if (is_plain_local(kind) && !is_live[i]) {
      map[i] = static_cast<int>(new_names.size());
      new_names.append(names[i]);
      new_kinds.push_back(kinds[i]);
    } else if (!is_plain_local(kind) && !is_cell_or_free(kind)) {
      throw CodegenError("a local of an unknown kind");
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    const auto kind = static_cast<unsigned char>(kinds[i]);
    if ((kind & version::kFastCell) != 0) {
      map[i] = static_cast<int>(new_names.size());
      targets.push_back(map[i]);
      new_names.append(names[i]);
      new_kinds.push_back(static_cast<char>(version::kFastCell | (kind & version::kFastHidden)));
    }
  }
  int nfree = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto kind = static_cast<unsigned char>(kinds[i]);
    if ((kind & version::kFastFree) != 0 && (kind & version::kFastCell) == 0) {
      map[i] = static_cast<int>(new_names.size());
      new_names.append(names[i]);
      new_kinds.push_back(static_cast<char>(version::kFastFree));
      ++nfree;
    }
  }

  const std::size_t body_start = prefix_end(original);
  const Instruction& target = original.at(index);
  int next_id = 0;
  for (const Instruction& ins : original.instructions()) {
    next_id = std::max(next_id, ins.id + 1);
  }
  std::vector<Instruction> out;
  auto add = [&](const char* name, int arg, int jump_target = -1) {
    Instruction ins;
    ins.id = next_id++;
    ins.opcode = opcode(name);
    ins.arg = arg;
    ins.target = jump_target;
    ins.position = target.position;
    out.push_back(ins);
  };
  if (nfree > 0) {
    add("COPY_FREE_VARS", nfree);
  }
  add("RESUME", 0);
  add("LOAD_FAST", 0);
  add("UNPACK_SEQUENCE", static_cast<int>(targets.size()));
  for (const int t : targets) {
    add("STORE_FAST", t);
  }
  // del __sot_args[:]; del __sot_args (the caller's stack keeps the list until the call returns).
  add("LOAD_FAST", 0);
  // slice(None, None) built (a slice constant would leave the code object unhashable before 3.12):
  // two LOAD_CONST None, completed once the Bytecode can add constants.
  out.emplace_back();
  const std::size_t clear_at = out.size() - 1;
  out.emplace_back();
  add("BUILD_SLICE", 2);
  add("DELETE_SUBSCR", 0);
  add("DELETE_FAST", 0);
  int next_stack = 1;
  for (const bool null : nulls) {
    if (null) {
      add("PUSH_NULL", 0);
    } else {
      add("LOAD_FAST", next_stack++);
    }
  }
  // The stack temporaries are unbound again: locals() and debuggers see the user's variables only.
  for (int k = 1; k < next_stack; ++k) {
    add("DELETE_FAST", k);
  }
  add("JUMP_FORWARD", 0, target.id);
  for (std::size_t k = body_start; k < original.size(); ++k) {
    Instruction ins = original.at(k);
    const bytecode::ArgKind ak = bytecode::opcode_info(ins.opcode).arg_kind;
    if (ak == bytecode::ArgKind::kLocal || ak == bytecode::ArgKind::kFree) {
      ins.arg = map.at(static_cast<std::size_t>(ins.arg));
    } else if (ak == bytecode::ArgKind::kLocalPair) {
      const int a = map.at(static_cast<std::size_t>(ins.arg >> 4));
      const int b = map.at(static_cast<std::size_t>(ins.arg & 15));
      if (a > 15 || b > 15) {
        // Split the packed pair into its two halves.
        const bool load_first = is_op(ins, "LOAD_FAST_LOAD_FAST");
        const bool both_store = is_op(ins, "STORE_FAST_STORE_FAST");
        Instruction first = ins;
        first.opcode = opcode(load_first ? "LOAD_FAST" : "STORE_FAST");
        first.arg = a;
        Instruction second = ins;
        second.id = next_id++;
        second.opcode = opcode(both_store ? "STORE_FAST" : "LOAD_FAST");
        second.arg = b;
        second.is_new = true;
        out.push_back(first);
        out.push_back(second);
        continue;
      }
      ins.arg = (a << 4) | b;
    }
    out.push_back(ins);
  }
  for (const std::size_t at : {clear_at, clear_at + 1}) {
    Instruction& ins = out[at];  // LOAD_CONST None: its index is set below
    ins.id = next_id++;
    ins.opcode = opcode("LOAD_CONST");
    ins.position = target.position;
  }
  bytecode::Bytecode bc =
      bytecode::Bytecode::from_instructions(std::move(out), original.template_code().ptr());
  bc.set_localsplus(new_names, new_kinds);
  {
    const int k = bc.add_const(py::none());
    for (const std::size_t at : {clear_at, clear_at + 1}) {
      Instruction ins = bc.at(at);
      ins.arg = k;
      bc.replace(at, ins);
    }
  }
  auto* co = reinterpret_cast<PyCodeObject*>(original.template_code().ptr());
  bytecode::Bytecode::CodeOverrides o;
  // The user's names (tracebacks and frame introspection see them); resume_info() tells a resume
  // function apart.
  o.name = py::str(co->co_name).cast<std::string>();
  o.qualname = py::str(co->co_qualname).cast<std::string>();
  o.argcount = 1;
  o.posonlyargcount = 0;
  o.kwonlyargcount = 0;
  o.flags = co->co_flags & ~(CO_VARARGS | CO_VARKEYWORDS);
  return bc.assemble(o);
}

}  // namespace sot::translator
