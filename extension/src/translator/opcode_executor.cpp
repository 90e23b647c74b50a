#include "translator/opcode_executor.hpp"

#include <algorithm>
#include <array>
#include <string_view>
#include <utility>

#include "bytecode/opcode_table.hpp"
#include "bytecode/version.hpp"
#include "capture/skip_rules.hpp"
#include "translator/pure_functions.hpp"

namespace py = pybind11;

namespace sot::translator {

namespace {

// The opcodes the executor knows, by name (numbers differ between versions).
#define SOT_SIMULATED_OPS(X)       \
  X(NOP)                           \
  X(RESUME)                        \
  X(MAKE_CELL)                     \
  X(COPY_FREE_VARS)                \
  X(LOAD_FAST)                     \
  X(LOAD_FAST_CHECK)               \
  X(LOAD_FAST_AND_CLEAR)           \
  X(LOAD_FAST_LOAD_FAST)           \
  X(STORE_FAST)                    \
  X(STORE_FAST_LOAD_FAST)          \
  X(STORE_FAST_STORE_FAST)         \
  X(DELETE_FAST)                   \
  X(LOAD_CONST)                    \
  X(RETURN_VALUE)                  \
  X(RETURN_CONST)                  \
  X(POP_TOP)                       \
  X(PUSH_NULL)                     \
  X(COPY)                          \
  X(SWAP)                          \
  X(LOAD_GLOBAL)                   \
  X(LOAD_ATTR)                     \
  X(LOAD_METHOD)                   \
  X(BINARY_OP)                     \
  X(COMPARE_OP)                    \
  X(IS_OP)                         \
  X(CONTAINS_OP)                   \
  X(UNARY_NEGATIVE)                \
  X(UNARY_POSITIVE)                \
  X(UNARY_NOT)                     \
  X(UNARY_INVERT)                  \
  X(TO_BOOL)                       \
  X(BUILD_TUPLE)                   \
  X(BUILD_LIST)                    \
  X(LIST_APPEND)                   \
  X(LIST_EXTEND)                   \
  X(LIST_TO_TUPLE)                 \
  X(BUILD_SLICE)                   \
  X(BINARY_SUBSCR)                 \
  X(BINARY_SLICE)                  \
  X(FORMAT_VALUE)                  \
  X(FORMAT_SIMPLE)                 \
  X(FORMAT_WITH_SPEC)              \
  X(CONVERT_VALUE)                 \
  X(BUILD_STRING)                  \
  X(POP_JUMP_IF_TRUE)              \
  X(POP_JUMP_IF_FALSE)             \
  X(POP_JUMP_IF_NONE)              \
  X(POP_JUMP_IF_NOT_NONE)          \
  X(POP_JUMP_FORWARD_IF_TRUE)      \
  X(POP_JUMP_FORWARD_IF_FALSE)     \
  X(POP_JUMP_FORWARD_IF_NONE)      \
  X(POP_JUMP_FORWARD_IF_NOT_NONE)  \
  X(POP_JUMP_BACKWARD_IF_TRUE)     \
  X(POP_JUMP_BACKWARD_IF_FALSE)    \
  X(POP_JUMP_BACKWARD_IF_NONE)     \
  X(POP_JUMP_BACKWARD_IF_NOT_NONE) \
  X(JUMP_IF_TRUE_OR_POP)           \
  X(JUMP_IF_FALSE_OR_POP)          \
  X(JUMP_FORWARD)                  \
  X(JUMP_BACKWARD)                 \
  X(JUMP_BACKWARD_NO_INTERRUPT)    \
  X(GET_ITER)                      \
  X(FOR_ITER)                      \
  X(END_FOR)                       \
  X(UNPACK_SEQUENCE)               \
  X(DELETE_SUBSCR)                 \
  X(STORE_SUBSCR)                  \
  X(BUILD_MAP)                     \
  X(BUILD_CONST_KEY_MAP)           \
  X(MAP_ADD)                       \
  X(DICT_UPDATE)                   \
  X(DICT_MERGE)                    \
  X(BUILD_SET)                     \
  X(SET_ADD)                       \
  X(SET_UPDATE)                    \
  X(CALL_FUNCTION_EX)              \
  X(STORE_ATTR)                    \
  X(DELETE_ATTR)                   \
  X(DELETE_GLOBAL)                 \
  X(LOAD_SUPER_ATTR)               \
  X(STORE_GLOBAL)                  \
  X(LOAD_DEREF)                    \
  X(STORE_DEREF)                   \
  X(DELETE_DEREF)                  \
  X(LOAD_CLOSURE)                  \
  X(MAKE_FUNCTION)                 \
  X(SET_FUNCTION_ATTRIBUTE)        \
  X(CALL_INTRINSIC_1)              \
  X(KW_NAMES)                      \
  X(PRECALL)                       \
  X(CALL)                          \
  X(CALL_KW)

enum class Op : std::uint8_t {
  kUnknown,
#define SOT_ENUM(name) name,
  SOT_SIMULATED_OPS(SOT_ENUM)
#undef SOT_ENUM
};

const std::array<Op, 256>& op_table() {
  static const std::array<Op, 256> table = [] {
    std::array<Op, 256> t{};
    t.fill(Op::kUnknown);
#define SOT_FILL(name)                                               \
  if (const int code = bytecode::opcode_by_name(#name); code >= 0) { \
    t[static_cast<std::size_t>(code)] = Op::name;                    \
  }
    SOT_SIMULATED_OPS(SOT_FILL)
#undef SOT_FILL
    return t;
  }();
  return table;
}

const char* const kSimulatedNames[] = {
#define SOT_NAME(name) #name,
    SOT_SIMULATED_OPS(SOT_NAME)
#undef SOT_NAME
};

Op op_of(int opcode) {
  return (opcode < 0 || opcode > 255) ? Op::kUnknown : op_table()[static_cast<std::size_t>(opcode)];
}

// FOR_ITER at exhaustion continues this many instructions past its target (END_FOR, and POP_TOP
// on 3.13).
constexpr std::size_t kForIterExhaustSkip =
    PY_VERSION_HEX >= 0x030D0000 ? 2 : (PY_VERSION_HEX >= 0x030C0000 ? 1 : 0);

constexpr std::size_t kMaxFoldedLength = 10000;  // longest str/bytes/tuple a fold may make
constexpr long kMaxFoldedBits = 100000;          // largest int a fold may make

// Whether folding `op` on a and b could make a huge value (then it runs for real instead).
bool too_big(int op, const py::object& a, const py::object& b) {
  const int base = op % 13;  // the in-place forms repeat the binary ones
  constexpr int kLshift = 3;
  constexpr int kMultiply = 5;
  constexpr int kPower = 8;
  auto as_long = [](const py::object& o, long* out) {
    if (!PyLong_CheckExact(o.ptr())) {
      return false;
    }
    int overflow = 0;
    *out = PyLong_AsLongAndOverflow(o.ptr(), &overflow);
    return overflow == 0;
  };
  long n = 0;
  if (base == kLshift && PyLong_CheckExact(a.ptr())) {
    return !as_long(b, &n) || n > kMaxFoldedBits;
  }
  if (base == kPower && PyLong_CheckExact(a.ptr()) && PyLong_CheckExact(b.ptr())) {
    const auto bits = static_cast<long>(_PyLong_NumBits(a.ptr()));
    return !as_long(b, &n) || (n > 0 && bits > 1 && bits * n > kMaxFoldedBits);
  }
  if (base == kMultiply) {
    const py::object& seq = PyLong_CheckExact(a.ptr()) ? b : a;
    const py::object& count = PyLong_CheckExact(a.ptr()) ? a : b;
    if (PySequence_Check(seq.ptr()) != 0 && PyLong_CheckExact(count.ptr())) {
      const Py_ssize_t len = PyObject_Length(seq.ptr());
      PyErr_Clear();
      return !as_long(count, &n) ||
             (n > 0 && len > 0 &&
              static_cast<std::size_t>(n) > kMaxFoldedLength / static_cast<std::size_t>(len));
    }
  }
  return false;
}

PyObject* binary_number_op(int op, PyObject* a, PyObject* b) {
  switch (op % 13) {
    case 0:
      return PyNumber_Add(a, b);
    case 1:
      return PyNumber_And(a, b);
    case 2:
      return PyNumber_FloorDivide(a, b);
    case 3:
      return PyNumber_Lshift(a, b);
    case 4:
      return PyNumber_MatrixMultiply(a, b);
    case 5:
      return PyNumber_Multiply(a, b);
    case 6:
      return PyNumber_Remainder(a, b);
    case 7:
      return PyNumber_Or(a, b);
    case 8:
      return PyNumber_Power(a, b, Py_None);
    case 9:
      return PyNumber_Rshift(a, b);
    case 10:
      return PyNumber_Subtract(a, b);
    case 11:
      return PyNumber_TrueDivide(a, b);
    case 12:
      return PyNumber_Xor(a, b);
    default:
      return nullptr;
  }
}

const char* binary_op_symbol(int op) {
  static const std::array<const char*, 13> symbols = {"+", "&",  "//", "<<", "@", "*", "%",
                                                      "|", "**", ">>", "-",  "/", "^"};
  return op >= 0 && op < 26 ? symbols[static_cast<std::size_t>(op % 13)] : "?";
}

std::string name_of(const py::handle& o) {
  return py::str(o).cast<std::string>();
}

// Whether the instance `o` has `name` in its own __dict__ (without running user code).
bool instance_dict_has(PyObject* o, const py::object& name) {
  PyObject* dict = PyObject_GenericGetDict(o, nullptr);
  const bool has = dict != nullptr && PyDict_Contains(dict, name.ptr()) == 1;
  Py_XDECREF(dict);
  PyErr_Clear();
  return has;
}

}  // namespace

std::string frame_introspection(PyCodeObject* co, bool allow_super) {
  static const char* const kNames[] = {"locals",       "vars",   "dir",       "eval",
                                       "exec",         "super",  "_getframe", "currentframe",
                                       "getframeinfo", "f_back", "f_locals",  "settrace"};
  for (const py::handle name : py::reinterpret_borrow<py::tuple>(co->co_names)) {
    std::string n = name_of(name);
    for (const char* frame_name : kNames) {
      if (n == frame_name && !(allow_super && n == "super")) {
        return n;
      }
    }
  }
  return {};
}

std::vector<std::string> simulated_opcode_names() {
  std::vector<std::string> out;
  for (const char* name : kSimulatedNames) {
    if (bytecode::opcode_by_name(name) >= 0) {
      out.emplace_back(name);
    }
  }
  return out;
}

OpcodeExecutor::OpcodeExecutor(const bytecode::Bytecode& code, const FrameInputs& inputs,
                               GuardSet* guards)
    : code_(code), inputs_(inputs), guards_(guards) {
  own_shared_.shape_history = inputs.shape_history;
  own_shared_.dynamic_shapes = inputs.dynamic_shapes;
  const auto names = py::reinterpret_borrow<py::tuple>(inputs.code->co_localsplusnames);
  const auto n = static_cast<std::size_t>(inputs.code->co_nlocalsplus);
  locals_.resize(n);
  for (std::size_t i = 0; i < n && i < inputs.locals.size(); ++i) {
    if (!inputs.locals[i]) {
      continue;
    }
    Tracker t;
    t.kind = Tracker::Kind::kLocal;
    t.index = static_cast<int>(i);
    t.key = names[i];
    // A free variable's slot holds the closure's cell: its contents are what the frame received
    // (read by guards and generated code through the cell, LOAD_DEREF).
    const auto kind = static_cast<unsigned char>(code.localsplus_kinds()[i]);
    t.deref =
        (kind & bytecode::version::kFastFree) != 0 && (kind & bytecode::version::kFastCell) == 0;
    const bool free = t.deref;
    locals_[i] = Variable::from_input(inputs.locals[i], std::move(t));
    if (free) {
      locals_[i] = Variable::cell(locals_[i], static_cast<int>(i), /*outside=*/true);
    }
  }
  // A free slot whose cell is empty is still the closure's cell.
  for (std::size_t i = 0; i < n; ++i) {
    const auto kind = static_cast<unsigned char>(code.localsplus_kinds()[i]);
    if (!locals_[i] && (kind & bytecode::version::kFastFree) != 0 &&
        (kind & bytecode::version::kFastCell) == 0) {
      locals_[i] = Variable::cell(nullptr, static_cast<int>(i), /*outside=*/true);
    }
  }
  entry_locals_ = locals_;
}

OpcodeExecutor::OpcodeExecutor(const bytecode::Bytecode& code, const FrameInputs& inputs,
                               GuardSet* guards, std::vector<VarPtr> locals, int depth,
                               Shared* shared, std::size_t simulated)
    : code_(code),
      inputs_(inputs),
      guards_(guards),
      locals_(std::move(locals)),
      depth_(depth),
      shared_(shared) {
  entry_locals_ = locals_;
  result_.simulated = simulated;
}

void OpcodeExecutor::remember(const VarPtr& list) {
  if (depth_ > 0) {
    shared_->undo.emplace_back(list, list->save());
  }
}

OpcodeExecutor::Mark OpcodeExecutor::mark() const {
  Mark m;
  m.undo = shared_->undo.size();
  m.stores = shared_->global_stores.size();
  m.cells = shared_->cells.size();
  m.attrs = shared_->attr_stores.size();
  m.ops = shared_->model_ops.size();
  m.cleared = cleared_.size();
  m.modeled = shared_->modeled != nullptr;
  if (shared_->arrays) {
    m.graph = shared_->arrays->mark();
  }
  return m;
}

void OpcodeExecutor::rollback(const Mark& m) {
  while (shared_->undo.size() > m.undo) {
    shared_->undo.back().first->restore(std::move(shared_->undo.back().second));
    shared_->undo.pop_back();
  }
  shared_->global_stores.resize(m.stores);
  shared_->cells.resize(m.cells);
  shared_->attr_stores.resize(m.attrs);
  shared_->model_ops.resize(m.ops);
  cleared_.resize(m.cleared);
  if (!m.modeled) {
    shared_->modeled = nullptr;
    shared_->model = nullptr;
  }
  if (shared_->arrays) {
    shared_->arrays->rollback(m.graph);
  }
}

void OpcodeExecutor::mutate(const VarPtr& v) {
  remember(v);
  v->bump();
}

VarPtr OpcodeExecutor::model_of(const VarPtr& v) const {
  return v && v == shared_->modeled ? shared_->model : nullptr;
}

void OpcodeExecutor::record_model_op(const char* name, std::vector<VarPtr> args) {
  PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(shared_->modeled->value().ptr()));
  ModelOp op;
  op.method = py::reinterpret_borrow<py::object>(type).attr(name);
  op.args = std::move(args);
  shared_->model_ops.push_back(std::move(op));
}

void OpcodeExecutor::read_input(const VarPtr& v) {
  if (shared_->modeled && v != shared_->modeled && v->kind() == Variable::Kind::kObject &&
      v->tracker().is_input()) {
    graph_break("a read of " + v->describe() +
                " after a change to another object received from outside (they may be one)");
  }
}

VarPtr OpcodeExecutor::model_for_write(const VarPtr& v) {
  if (VarPtr m = model_of(v)) {
    return m;
  }
  PyObject* o = v->value().ptr();
  if (v->kind() != Variable::Kind::kObject || !v->tracker().is_input() ||
      !(PyList_CheckExact(o) || PyDict_CheckExact(o)) || o == inputs_.globals ||
      o == inputs_.builtins || std::find(cleared_.begin(), cleared_.end(), v) != cleared_.end()) {
    return nullptr;  // (a namespace: LOAD_GLOBAL reads it directly)
  }
  if (shared_->modeled) {
    graph_break("a change to a second object received from outside (they may be one)");
  }
  if (PyDict_CheckExact(o) && !shared_->attr_stores.empty()) {
    graph_break(
        "a change to a dict received from outside after attribute stores (it may be an "
        "object's __dict__)");
  }
  // The contents, read through it (x[i], d[k]) by the generated code before it replays the
  // change, under guards on its type and length (or keys).
  auto item = [&v](const py::handle& key, PyObject* value) {
    Tracker t = Tracker::item(v, py::reinterpret_borrow<py::object>(key));
    return Variable::from_input(value, std::move(t));
  };
  VarPtr model;
  if (PyList_CheckExact(o)) {
    std::vector<VarPtr> items;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(o); ++i) {
      items.push_back(item(py::int_(i), PyList_GET_ITEM(o, i)));
    }
    guards_->type(v);
    guards_->length(v, PyList_GET_SIZE(o));
    model = Variable::list(std::move(items));
  } else {
    std::vector<py::object> keys;
    std::vector<VarPtr> values;
    PyObject* key = nullptr;
    PyObject* value = nullptr;
    Py_ssize_t pos = 0;
    while (PyDict_Next(o, &pos, &key, &value) != 0) {  // borrowed
      if (!(PyUnicode_CheckExact(key) || PyLong_CheckExact(key))) {
        graph_break("a change to a dict with keys that are not str or int");
      }
      keys.push_back(py::reinterpret_borrow<py::object>(key));
      values.push_back(item(key, value));
    }
    guards_->type(v);
    py::tuple key_tuple(keys.size());
    for (std::size_t j = 0; j < keys.size(); ++j) {
      key_tuple[j] = keys[j];
    }
    guards_->dict_keys(v, key_tuple);
    model = Variable::dict(std::move(keys), std::move(values));
  }
  shared_->modeled = v;
  shared_->model = model;
  return model;
}

void OpcodeExecutor::store_attr(const bytecode::Instruction& ins, bool del) {
  // obj.name = value (or del obj.name) on a plain instance received from outside: generic
  // attribute setting (no __setattr__, no data descriptor of that name in its class), replayed in
  // order once every value is loaded. Reads of attributes stay real (they break).
  const py::object name = code_.names()[static_cast<std::size_t>(ins.arg)];
  const VarPtr obj = peek(1);
  PyObject* o = obj->value().ptr();
  PyTypeObject* type = Py_TYPE(o);
  const bool plain = obj->kind() == Variable::Kind::kObject && obj->tracker().is_input() &&
                     !PyModule_Check(o) && !PyType_Check(o) &&
                     type->tp_setattro == PyObject_GenericSetAttr && type->tp_dictoffset != 0;
  PyObject* descr = plain ? _PyType_Lookup(type, name.ptr()) : nullptr;  // borrowed
  if (!plain || (descr != nullptr && Py_TYPE(descr)->tp_descr_set != nullptr)) {
    graph_break(std::string(del ? "del of" : "a store to") + " attribute '" + name_of(name) +
                "' of " + obj->describe());
  }
  if (shared_->model && shared_->model->kind() == Variable::Kind::kDict) {
    graph_break(
        "an attribute store after a change to a dict received from outside (it may be "
        "the object's __dict__)");
  }
  guards_->type(obj);
  if (del) {
    // The attribute must be in the instance's dict (a guard reads it: missing fails).
    // It is there after the frame's last store or delete of it, else if the object has it.
    const bool has = instance_dict_has(o, name);
    bool touched = false;
    bool stored = false;
    for (const AttrStore& a : shared_->attr_stores) {
      if (a.object == obj && PyObject_RichCompareBool(a.name.ptr(), name.ptr(), Py_EQ) == 1) {
        touched = true;
        stored = a.value != nullptr;
      }
    }
    PyErr_Clear();
    if (touched ? !stored : !has) {
      graph_break("del of a missing attribute '" + name_of(name) + "' (raises AttributeError)");
    }
    if (!touched) {
      Tracker t = Tracker::attr(obj, name);
      const auto current =
          py::reinterpret_steal<py::object>(PyObject_GenericGetAttr(o, name.ptr()));
      PyErr_Clear();
      if (!current) {
        graph_break("del of an attribute that cannot be read");
      }
      guards_->type(Variable::from_input(current, std::move(t)));
    }
    shared_->attr_stores.push_back(AttrStore{obj, name, nullptr});
    pop();
    return;
  }
  shared_->attr_stores.push_back(AttrStore{obj, name, peek(2)});
  pop();
  pop();
}

namespace {

// Records an update of the set built inside `set` with `keys` (in that order), or with the
// frozenset constant `frozen`: generated code rebuilds the set by the same updates, so that its
// table, and so its iteration order, is the one the frame's set has.
void set_update(const VarPtr& set, const std::vector<py::object>& keys, const py::object& frozen) {
  for (const py::object& k : keys) {
    if (set->find_key(k) == -1) {
      set->keys().push_back(k);
    }
  }
  std::vector<VarPtr>& history = set->snapshot();
  if (frozen) {
    history.push_back(Variable::constant(frozen));
    return;
  }
  py::list merged;
  if (!history.empty() && PyTuple_CheckExact(history.back()->value().ptr())) {
    for (const py::handle k : history.back()->value()) {
      merged.append(k);
    }
    history.pop_back();
  }
  for (const py::object& k : keys) {
    merged.append(k);
  }
  history.push_back(Variable::constant(py::tuple(merged)));
}

}  // namespace

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
  if (std::find(shared_->cells.begin(), shared_->cells.end(), cell) == shared_->cells.end()) {
    shared_->cells.push_back(cell);
  }
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
  constexpr int kClosure = 8;
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
  if (bytecode::version::kMakeFunctionHasFlags &&
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

SimulationResult OpcodeExecutor::run() {
  const auto& instructions = code_.instructions();
  try {
    for (;;) {
      if (pc_ >= instructions.size()) {
        fail("ran past the end of the code");
      }
      if (++result_.simulated > kMaxSteps) {
        fail("more than " + std::to_string(kMaxSteps) +
             " instructions simulated (a long loop is unrolled)");
      }
      next_ = pc_ + 1;
      step(instructions[pc_]);
      pc_ = next_;
    }
  } catch (const Stop&) {
  }
  result_.entry_locals = entry_locals_;
  result_.cleared_lists = cleared_;
  result_.global_stores = shared_->global_stores;
  result_.cells = shared_->cells;
  result_.modeled = shared_->modeled;
  result_.model = shared_->model;
  result_.model_ops = shared_->model_ops;
  result_.attr_stores = shared_->attr_stores;
  result_.arrays = shared_->arrays;
  return std::move(result_);
}

void OpcodeExecutor::graph_break(const std::string& reason) {
  const auto& ins = code_.instructions()[pc_];
  result_.kind = SimulationResult::Kind::kBreak;
  result_.first = in_group_ ? group_first_ : pc_;
  result_.last = pc_;
  result_.reason = reason;
  result_.lineno = ins.position.line;
  result_.state.locals = locals_;
  result_.state.stack = break_stack_ != nullptr ? *break_stack_ : stack_;
  throw Stop{};
}

void OpcodeExecutor::fail(const std::string& reason) {
  result_.kind = SimulationResult::Kind::kFail;
  result_.reason = reason;
  if (pc_ < code_.size()) {
    result_.lineno = code_.instructions()[pc_].position.line;
  }
  throw Stop{};
}

void OpcodeExecutor::finish(VarPtr value) {
  result_.kind = SimulationResult::Kind::kReturn;
  result_.value = std::move(value);
  result_.last = pc_;
  result_.lineno = code_.instructions()[pc_].position.line;
  throw Stop{};
}

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
  if (with_null && bytecode::version::kNullBeforeCallable) {
    push(Variable::null());
  }
  push(std::move(v));
  if (with_null && !bytecode::version::kNullBeforeCallable) {
    push(Variable::null());
  }
}

void OpcodeExecutor::jump_to(int target_id) {
  next_ = code_.index_of(target_id);
}

VarPtr OpcodeExecutor::make_result(py::object value) {
  ++result_.folded;
  if (Variable::is_constant_value(value)) {
    return Variable::constant(std::move(value));
  }
  if (PyList_CheckExact(value.ptr())) {
    std::vector<VarPtr> items;
    for (const py::handle item : value) {
      if (!Variable::is_constant_value(item)) {
        return nullptr;
      }
      items.push_back(Variable::constant(py::reinterpret_borrow<py::object>(item)));
    }
    return Variable::list(std::move(items));
  }
  return nullptr;
}

namespace {

// True when freeing `o` may run Python code: its type has a finalizer (a __del__, a generator's or
// coroutine's), or it is a builtin container holding such an object (a long or deep one counts as
// such: not looked through).
bool may_finalize(PyObject* o, int depth) {
  constexpr int kMaxDepth = 2;
  constexpr Py_ssize_t kMaxItems = 32;
  PyTypeObject* type = Py_TYPE(o);
  if (type->tp_finalize != nullptr || type->tp_del != nullptr) {
    return true;
  }
  if (!PyList_CheckExact(o) && !PyTuple_CheckExact(o) && !PyDict_CheckExact(o)) {
    return false;
  }
  const py::handle h(o);
  if (depth >= kMaxDepth || py::len(h) > static_cast<std::size_t>(kMaxItems)) {
    return true;
  }
  const py::object items = PyDict_CheckExact(o) ? py::object(h.attr("values")())
                                                : py::object(py::reinterpret_borrow<py::object>(h));
  for (const py::handle item : items) {
    if (may_finalize(item.ptr(), depth + 1)) {
      return true;
    }
  }
  return false;
}

}  // namespace

void OpcodeExecutor::drop_local(int local) {
  if (local < 0 || static_cast<std::size_t>(local) >= locals_.size()) {
    return;  // (the store reports it)
  }
  const auto index = static_cast<std::size_t>(local);
  const VarPtr& old = locals_[index];
  // (An inlined call's caller still holds its arguments; a resume function's prologue drops only
  // its emptied argument list.)
  if (depth_ > 0 || pc_ < inputs_.resume_prologue_end || !old) {
    return;
  }
  for (std::size_t k = 0; k < locals_.size(); ++k) {
    if (k != index && locals_[k] == old) {
      return;  // another local still holds it
    }
  }
  if (std::find(stack_.begin(), stack_.end(), old) != stack_.end()) {
    return;
  }
  if (const PyObject* o = finalized_by_dropping(old, 0); o != nullptr) {
    graph_break("the last reference to an object with a finalizer (" +
                std::string(Py_TYPE(o)->tp_name) +
                ") is dropped here: its __del__ or finally runs now");
  }
}

PyObject* OpcodeExecutor::finalized_by_dropping(const VarPtr& v, int depth) {
  constexpr int kMaxDepth = 3;
  if (depth > kMaxDepth || v->kind() == Variable::Kind::kConst) {
    return nullptr;
  }
  if (!v->tracker().is_input()) {  // made in the frame: what it holds
    if (v->kind() != Variable::Kind::kList && v->kind() != Variable::Kind::kTuple &&
        v->kind() != Variable::Kind::kDict && v->kind() != Variable::Kind::kSet) {
      return nullptr;
    }
    for (const VarPtr& item : v->items()) {
      if (PyObject* o = item ? finalized_by_dropping(item, depth + 1) : nullptr; o != nullptr) {
        return o;
      }
    }
    return nullptr;
  }
  // From a local, directly or as an item of one (a resume function's arguments come as items of
  // its emptied argument list): the frame may hold the last reference.
  const Tracker* root = &v->tracker();
  while (root->base && (root->kind == Tracker::Kind::kItem || root->kind == Tracker::Kind::kAttr)) {
    root = &root->base->tracker();
  }
  if (root->kind != Tracker::Kind::kLocal || !v->value()) {
    return nullptr;
  }
  PyObject* o = v->value().ptr();
  if (may_finalize(o, 0)) {
    return o;
  }
  if (!PyList_CheckExact(o) && !PyTuple_CheckExact(o) && !PyDict_CheckExact(o)) {
    guards_->type(v);  // (another type might have a finalizer)
  }
  return nullptr;
}

py::object OpcodeExecutor::constant_value(const VarPtr& v) {
  std::vector<const Variable*> open;
  return constant_value(v, &open);
}

py::object OpcodeExecutor::constant_value(const VarPtr& v, std::vector<const Variable*>* open) {
  // Containers holding themselves (a.append(a)) or nested past any real program have none: a copy
  // would lose the cycle, and the recursion must stay bounded.
  constexpr std::size_t kMaxNesting = 64;
  switch (v->kind()) {
    case Variable::Kind::kConst:
      guards_->value(v);
      return v->value();
    case Variable::Kind::kTuple:
    case Variable::Kind::kList: {
      if (open->size() >= kMaxNesting ||
          std::find(open->begin(), open->end(), v.get()) != open->end()) {
        return {};
      }
      open->push_back(v.get());
      py::list items;
      for (const VarPtr& item : v->items()) {
        py::object value = constant_value(item, open);
        if (!value) {
          open->pop_back();
          return {};
        }
        items.append(value);
      }
      open->pop_back();
      return v->kind() == Variable::Kind::kTuple ? py::object(py::tuple(items)) : py::object(items);
    }
    default:
      return {};
  }
}

VarPtr OpcodeExecutor::load_global(const py::object& name) {
  if (inputs_.globals_var) {
    // A function of another module: fn.__globals__[name], or fn.__builtins__[name] when its
    // globals have no such name (guarded absent).
    if (shared_->modeled && shared_->modeled->value().ptr() == inputs_.globals) {
      graph_break("a global read after a change to that module's namespace");
    }
    const std::string key = "global " + name_of(name);
    if (const auto it = shared_->loaded.find({inputs_.globals_var.get(), key});
        it != shared_->loaded.end()) {
      return it->second;
    }
    Tracker t = Tracker::item(inputs_.globals_var, name);
    PyObject* value = PyDict_GetItemWithError(inputs_.globals, name.ptr());  // borrowed
    if (value == nullptr && PyErr_Occurred() == nullptr) {
      guards_->absent(t);
      t.base = inputs_.builtins_var;
      value = PyDict_GetItemWithError(inputs_.builtins, name.ptr());
    }
    if (value == nullptr) {
      PyErr_Clear();
      return nullptr;
    }
    VarPtr v = Variable::from_input(value, std::move(t));
    shared_->loaded[{inputs_.globals_var.get(), key}] = v;
    return v;
  }
  // A global this frame (or an inlined callee) assigned: that value.
  for (auto it = shared_->global_stores.rbegin(); it != shared_->global_stores.rend(); ++it) {
    if (PyObject_RichCompareBool(it->first.ptr(), name.ptr(), Py_EQ) == 1) {
      return it->second;  // nullptr: deleted
    }
    PyErr_Clear();
  }
  const std::string cache_key = "global " + name_of(name);
  if (const auto it = shared_->loaded.find({nullptr, cache_key}); it != shared_->loaded.end()) {
    return it->second;  // one Variable per global (a change through one is seen by the other)
  }
  Tracker t;
  t.kind = Tracker::Kind::kGlobal;
  t.key = name;
  PyObject* value = PyDict_GetItemWithError(inputs_.globals, name.ptr());  // borrowed
  if (value == nullptr && PyErr_Occurred() == nullptr && inputs_.builtins != nullptr &&
      PyDict_Check(inputs_.builtins)) {
    value = PyDict_GetItemWithError(inputs_.builtins, name.ptr());
    t.index = 1;
  }
  if (value == nullptr) {
    PyErr_Clear();
    return nullptr;
  }
  VarPtr v = Variable::from_input(value, std::move(t));
  shared_->loaded[{nullptr, cache_key}] = v;
  return v;
}

VarPtr OpcodeExecutor::load_attr(const VarPtr& base, const py::object& name) {
  if (VarPtr v = array_attr(base, name)) {
    return v;
  }
  // Attributes are read without running user code: a module's own dict, or a method of a constant
  // (whose type is a builtin immutable type).
  if (base->kind() == Variable::Kind::kObject && PyModule_CheckExact(base->value().ptr())) {
    PyObject* dict = PyModule_GetDict(base->value().ptr());  // borrowed
    if (shared_->modeled && shared_->modeled->value().ptr() == dict) {
      graph_break("a module attribute read after a change to the module's namespace");
    }
    const std::string cache_key = "attr " + name_of(name);
    if (const auto it = shared_->loaded.find({base.get(), cache_key});
        it != shared_->loaded.end()) {
      return it->second;  // one Variable per place (a change through one is seen by the other)
    }
    PyObject* value = dict != nullptr ? PyDict_GetItemWithError(dict, name.ptr()) : nullptr;
    if (value == nullptr) {
      PyErr_Clear();
      return nullptr;
    }
    guards_->identity(base);
    Tracker t = Tracker::attr(base, name);
    VarPtr v = Variable::from_input(value, std::move(t));
    shared_->loaded[{base.get(), cache_key}] = v;
    return v;
  }
  if (base->is_mutable_created()) {
    static const char* const kListMethods[] = {"append", "extend", "pop",  "insert", "reverse",
                                               "index",  "count",  "copy", "clear"};
    static const char* const kDictMethods[] = {"get",   "setdefault", "pop",    "update", "copy",
                                               "clear", "keys",       "values", "items"};
    static const char* const kSetMethods[] = {"add"};
    const std::string n = name_of(name);
    auto known = [&n](const auto& names) {
      return std::any_of(std::begin(names), std::end(names),
                         [&n](const char* m) { return n == m; });
    };
    if ((base->kind() == Variable::Kind::kList && known(kListMethods)) ||
        (base->kind() == Variable::Kind::kDict && known(kDictMethods)) ||
        (base->kind() == Variable::Kind::kSet && known(kSetMethods))) {
      return Variable::method(base, name);
    }
    return nullptr;
  }
  if (base->kind() == Variable::Kind::kObject && base->tracker().is_input() &&
      (PyList_CheckExact(base->value().ptr()) || PyDict_CheckExact(base->value().ptr()))) {
    // A method of a list or dict received from outside: called on its model (see call()).
    static const char* const kMethods[] = {"append", "extend", "pop",        "insert", "reverse",
                                           "clear",  "get",    "setdefault", "update"};
    const std::string n = name_of(name);
    const bool list = PyList_CheckExact(base->value().ptr());
    for (const char* m : kMethods) {
      if (n == m && (list ? n != "get" && n != "setdefault" && n != "update"
                          : n != "append" && n != "extend" && n != "insert" && n != "reverse")) {
        guards_->type(base);
        return Variable::method(base, name);
      }
    }
    return nullptr;
  }
  if (base->kind() == Variable::Kind::kConst) {
    PyObject* v = base->value().ptr();
    if (!(PyUnicode_CheckExact(v) || PyBytes_CheckExact(v) || PyLong_CheckExact(v) ||
          PyFloat_CheckExact(v) || PyTuple_CheckExact(v) || PyComplex_CheckExact(v))) {
      return nullptr;
    }
    PyObject* attr = PyObject_GetAttr(v, name.ptr());
    if (attr == nullptr) {
      PyErr_Clear();
      return nullptr;
    }
    guards_->value(base);
    // (rebuilt from the constant, not re-read)
    return Variable::from_input(attr, Tracker::attr(Variable::constant(base->value()), name));
  }
  return nullptr;
}

void OpcodeExecutor::binary_op(int op) {
  if (array_binary_op(op)) {
    return;
  }
  const VarPtr b = peek(1);
  const VarPtr a = peek(2);
  constexpr int kAdd = 0;
  constexpr int kInplaceAdd = 13;
  const bool tuples = a->kind() == Variable::Kind::kTuple && b->kind() == Variable::Kind::kTuple;
  const bool new_lists =
      a->kind() == Variable::Kind::kList && b->kind() == Variable::Kind::kList && op == kAdd;
  if ((tuples && (op == kAdd || op == kInplaceAdd)) || new_lists) {
    // Concatenation makes a new container of the same item Variables.
    std::vector<VarPtr> items = a->items();
    items.insert(items.end(), b->items().begin(), b->items().end());
    pop();
    pop();
    push(tuples ? Variable::tuple(std::move(items)) : Variable::list(std::move(items)));
    return;
  }
  if (!(a->is_const() && b->is_const())) {
    // Containers built inside of constants fold like constants (a % (x, y), (1, 2) + t).
    const py::object av =
        (a->is_const() || a->kind() == Variable::Kind::kTuple) ? constant_value(a) : py::object();
    const py::object bv = (av && (b->is_const() || b->kind() == Variable::Kind::kTuple))
                              ? constant_value(b)
                              : py::object();
    if (av && bv) {
      if (too_big(op, av, bv)) {
        graph_break(std::string("the result of ") + binary_op_symbol(op) +
                    " would be too large to fold");
      }
      PyObject* r = binary_number_op(op, av.ptr(), bv.ptr());
      if (r == nullptr) {
        PyErr_Clear();
        graph_break(std::string("operator ") + binary_op_symbol(op) + " raises on " +
                    a->describe() + " and " + b->describe());
      }
      VarPtr v = make_result(py::reinterpret_steal<py::object>(r));
      if (!v) {
        graph_break(std::string("operator ") + binary_op_symbol(op) +
                    " made a value it does not model");
      }
      pop();
      pop();
      push(std::move(v));
      return;
    }
  }
  if (a->is_const() && b->is_const()) {
    if (too_big(op, a->value(), b->value())) {
      graph_break(std::string("the result of ") + binary_op_symbol(op) +
                  " would be too large to fold");
    }
    PyObject* r = binary_number_op(op, a->value().ptr(), b->value().ptr());
    if (r == nullptr) {
      PyErr_Clear();
      graph_break(std::string("operator ") + binary_op_symbol(op) + " raises on " + a->describe() +
                  " and " + b->describe());
    }
    const auto result = py::reinterpret_steal<py::object>(r);
    VarPtr v = make_result(result);
    if (!v) {
      graph_break(std::string("operator ") + binary_op_symbol(op) +
                  " made a value it does not model");
    }
    guards_->value(a);
    guards_->value(b);
    pop();
    pop();
    push(std::move(v));
    return;
  }
  // Tuples and lists built inside, with + and *: new containers of the same items.
  graph_break(std::string("operator ") + binary_op_symbol(op) + " on " + a->describe() + " and " +
              b->describe());
}

void OpcodeExecutor::list_to_tuple() {
  VarPtr list = peek(1);
  if (list->kind() != Variable::Kind::kList || list->tracker().is_input()) {
    graph_break("tuple() of " + list->describe());
  }
  pop();
  push(Variable::tuple(list->items()));
}

void OpcodeExecutor::unary(PyObject* (*operation)(PyObject*)) {
  const VarPtr& a = peek(1);
  if (!a->is_const()) {
    graph_break("a unary operator on " + a->describe());
  }
  PyObject* r = operation(a->value().ptr());
  if (r == nullptr) {
    PyErr_Clear();
    graph_break("a unary operator raises on " + a->describe());
  }
  VarPtr v = make_result(py::reinterpret_steal<py::object>(r));
  if (!v) {
    graph_break("a unary operator made a value it does not model");
  }
  guards_->value(a);
  pop();
  push(std::move(v));
}

void OpcodeExecutor::compare_op(int op) {
  const VarPtr& b = peek(1);
  const VarPtr& a = peek(2);
  if (op < Py_LT || op > Py_GE) {
    fail("unknown comparison " + std::to_string(op));
  }
  static const std::array<const char*, 6> symbols = {"<", "<=", "==", "!=", ">", ">="};
  if (array_compare_op(op)) {
    return;
  }
  const py::object av = constant_value(a);
  const py::object bv = (av ? constant_value(b) : py::object());
  if (!av || !bv) {
    graph_break(std::string("comparison ") + symbols[static_cast<std::size_t>(op)] + " of " +
                a->describe() + " and " + b->describe());
  }
  PyObject* r = PyObject_RichCompare(av.ptr(), bv.ptr(), op);
  if (r == nullptr) {
    PyErr_Clear();
    graph_break(std::string("comparison ") + symbols[static_cast<std::size_t>(op)] + " raises");
  }
  const auto result = py::reinterpret_steal<py::object>(r);
  VarPtr v = make_result(result);
  if (!v) {
    graph_break("a comparison returned a value it does not model");
  }
  pop();
  pop();
  push(std::move(v));
}

bool OpcodeExecutor::truth(const VarPtr& v, bool* value) {
  switch (v->kind()) {
    case Variable::Kind::kConst: {
      const int t = PyObject_IsTrue(v->value().ptr());
      if (t < 0) {
        PyErr_Clear();
        return false;
      }
      guards_->value(v);
      *value = t == 1;
      return true;
    }
    case Variable::Kind::kTuple:
    case Variable::Kind::kList:
      *value = !v->items().empty();
      return true;
    case Variable::Kind::kDict:
    case Variable::Kind::kSet:
      *value = !v->keys().empty();
      return true;
    default:
      return false;
  }
}

void OpcodeExecutor::branch(const bytecode::Instruction& ins, bool jump_if) {
  bool value = false;
  if (peek(1)->kind() == Variable::Kind::kArray) {
    graph_break("data-dependent branch: a jump on the truth of a " + peek(1)->describe());
  }
  if (!truth(peek(1), &value)) {
    graph_break("a jump on the truth of " + peek(1)->describe());
  }
  pop();
  if (value == jump_if) {
    jump_to(ins.target);
  }
}

void OpcodeExecutor::call(int argc, const py::object& kwnames, std::size_t extra) {
  const auto nargs = static_cast<std::size_t>(argc);
  // `extra` values sit above the arguments (3.13's CALL_KW: the tuple of keyword names).
  if (stack_.size() < nargs + 2 + extra) {
    fail("the value stack is too shallow for CALL (malformed bytecode)");
  }
  // [NULL, callable, args] or [callable, self, args] (3.11/3.12); [callable, NULL/self, args]
  // (3.13).
  VarPtr& lower = peek(nargs + 2 + extra);
  VarPtr& upper = peek(nargs + 1 + extra);
  VarPtr callable;
  std::vector<VarPtr> args;
  if constexpr (bytecode::version::kNullBeforeCallable) {
    if (lower->kind() == Variable::Kind::kNull) {
      callable = upper;
    } else {
      callable = lower;
      args.push_back(upper);
    }
  } else {
    callable = lower;
    if (upper->kind() != Variable::Kind::kNull) {
      args.push_back(upper);
    }
  }
  for (std::size_t i = nargs; i > 0; --i) {
    args.push_back(peek(i + extra));
  }
  const std::size_t nkw = kwnames ? static_cast<std::size_t>(PyTuple_GET_SIZE(kwnames.ptr())) : 0;
  // NumPy functions and array methods: captured into the graph (or a break with the reason).
  if (VarPtr r = array_call(callable, args, kwnames)) {
    for (std::size_t i = 0; i < nargs + 2 + extra; ++i) {
      pop();
    }
    push(std::move(r));
    return;
  }
  if (callable->kind() == Variable::Kind::kObject && args.size() == 1 &&
      args[0]->kind() == Variable::Kind::kArray &&
      (callable->value().ptr() == reinterpret_cast<PyObject*>(&PyFloat_Type) ||
       callable->value().ptr() == reinterpret_cast<PyObject*>(&PyLong_Type) ||
       callable->value().ptr() == reinterpret_cast<PyObject*>(&PyBool_Type) ||
       callable->value().ptr() == reinterpret_cast<PyObject*>(&PyComplex_Type))) {
    graph_break(py::str(callable->value().attr("__name__")).cast<std::string>() + "() of a " +
                args[0]->describe() + " needs its data");
  }
  if (callable->kind() == Variable::Kind::kMethod && nkw == 0 &&
      callable->items()[0]->kind() == Variable::Kind::kObject) {
    // A method of a list or dict received from outside: run on its model, replayed later.
    const VarPtr model = model_for_write(callable->items()[0]);
    if (!model) {
      graph_break("a call of " + callable->describe());
    }
    const VarPtr on_model = Variable::method(model, callable->value());
    if (model->kind() == Variable::Kind::kDict) {
      call_dict_method(on_model, args, nargs + extra);
    } else {
      call_list_method(on_model, args, nargs + extra);
    }
    if (name_of(callable->value()) != "get") {
      record_model_op(name_of(callable->value()).c_str(), args);
    }
    return;
  }
  if (callable->kind() == Variable::Kind::kMethod && nkw == 0) {
    switch (callable->items()[0]->kind()) {
      case Variable::Kind::kDict:
        call_dict_method(callable, args, nargs + extra);
        return;
      case Variable::Kind::kSet:
        call_set_method(callable, args, nargs + extra);
        return;
      default:
        call_list_method(callable, args, nargs + extra);
        return;
    }
  }
  // The call's values (callable, self or NULL, arguments) give way to its result.
  const auto replace_call = [&](VarPtr result) {
    for (std::size_t i = 0; i < nargs + 2 + extra; ++i) {
      pop();
    }
    push(std::move(result));
  };
  // Builtin functions and types (len, zip, list, type, ...) on the structure of modelled values.
  if (callable->kind() == Variable::Kind::kObject &&
      (PyCFunction_Check(callable->value().ptr()) || PyType_Check(callable->value().ptr()))) {
    if (VarPtr r = structural_call(callable->value(), args, nkw)) {
      guards_->identity(callable);
      replace_call(std::move(r));
      return;
    }
  }
  const bool made_function = callable->kind() == Variable::Kind::kFunction;
  if (callable->kind() != Variable::Kind::kObject && callable->kind() != Variable::Kind::kConst &&
      !made_function) {
    graph_break("a call of " + callable->describe());
  }
  if (callable->kind() == Variable::Kind::kObject &&
      callable->value().ptr() == reinterpret_cast<PyObject*>(&PySuper_Type) && args.empty() &&
      nkw == 0 && depth_ > 0) {
    // super() in an inlined method: super(__class__, <first argument>).
    const auto names = py::reinterpret_borrow<py::tuple>(inputs_.code->co_localsplusnames);
    VarPtr cls;
    for (std::size_t i = 0; i < locals_.size(); ++i) {
      if (name_of(names[i]) == "__class__" && locals_[i] &&
          locals_[i]->kind() == Variable::Kind::kCell) {
        cls = locals_[i]->contents();
      }
    }
    VarPtr self = inputs_.code->co_argcount > 0 ? locals_[0] : nullptr;
    if (self && self->kind() == Variable::Kind::kCell) {
      self = self->contents();
    }
    if (!cls || !self) {
      graph_break("super() without __class__ or a first argument (raises RuntimeError)");
    }
    guards_->identity(callable);
    VarPtr sup = std::make_shared<Variable>(Variable::Kind::kSuper, py::none(), Tracker{});
    sup->items() = {cls, self};
    replace_call(std::move(sup));
    return;
  }
  if (callable->kind() == Variable::Kind::kObject && PyMethod_Check(callable->value().ptr()) &&
      PyFunction_Check(PyMethod_Function(callable->value().ptr())) &&
      callable->tracker().is_input()) {
    // A bound method of a Python function: the function, inlined with its instance first.
    Tracker ft = Tracker::attr(callable, py::str("__func__"));
    const VarPtr fn = Variable::from_input(PyMethod_Function(callable->value().ptr()), ft);
    Tracker st = Tracker::attr(callable, py::str("__self__"));
    std::vector<VarPtr> with_self = {
        Variable::from_input(PyMethod_Self(callable->value().ptr()), st)};
    with_self.insert(with_self.end(), args.begin(), args.end());
    std::string why;
    VarPtr result = inline_call(fn, with_self, kwnames, &why);
    if (!result) {
      graph_break("a call of " + callable->describe() + " (" + why + ")");
    }
    replace_call(std::move(result));
    return;
  }
  const PureFunction* pure = made_function ? nullptr : find_pure_function(callable->value());
  const bool const_method = !made_function && is_constant_method(callable->value());
  if (pure == nullptr && !const_method) {
    std::string why = "not a pure builtin or a function of this module";
    if (made_function || PyFunction_Check(callable->value().ptr())) {
      VarPtr result = inline_call(callable, args, kwnames, &why);
      if (result) {
        replace_call(std::move(result));
        return;
      }
    }
    graph_break("a call of " + callable->describe() + " (" + why + ")");
  }
  py::list values;
  for (const VarPtr& a : args) {
    py::object v = constant_value(a);
    if (!v) {
      graph_break("a call of " + callable->describe() + " with " + a->describe());
    }
    values.append(v);
  }
  // A pure function's first argument may be large; a constant's method has its receiver for that,
  // so every argument it gets is bounded.
  if (pure != nullptr ? !pure->accepts(values, nkw)
                      : (nkw > 0 || !arguments_bounded(values, /*leading_unbounded=*/0))) {
    graph_break("a call of " + callable->describe() + " with arguments it does not fold");
  }
  py::tuple positional(values.size() - nkw);
  py::dict keywords;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i < values.size() - nkw) {
      positional[i] = values[i];
    } else {
      keywords[py::reinterpret_borrow<py::object>(PyTuple_GET_ITEM(
          kwnames.ptr(), static_cast<Py_ssize_t>(i - (values.size() - nkw))))] = values[i];
    }
  }
  PyObject* r =
      PyObject_Call(callable->value().ptr(), positional.ptr(), nkw > 0 ? keywords.ptr() : nullptr);
  if (r == nullptr) {
    PyErr_Clear();
    graph_break("a call of " + callable->describe() + " raises");
  }
  const auto result = py::reinterpret_steal<py::object>(r);
  VarPtr v = make_result(result);
  if (!v) {
    graph_break("a call of " + callable->describe() + " made a value it does not model");
  }
  guards_->identity(callable);
  replace_call(std::move(v));
}

VarPtr OpcodeExecutor::inline_call(const VarPtr& callable, const std::vector<VarPtr>& args,
                                   const py::object& kwnames, std::string* why) {
  auto no = [why](const std::string& reason) -> VarPtr {
    *why = "not inlined: " + reason;
    return nullptr;
  };
  // A function made in the frame (its parts are Variables) or one received from outside (its
  // parts are read through trackers on it, and guarded where used).
  const bool made = callable->kind() == Variable::Kind::kFunction;
  auto* fn = made ? nullptr : reinterpret_cast<PyFunctionObject*>(callable->value().ptr());
  auto* co = reinterpret_cast<PyCodeObject*>(made ? callable->value().ptr() : fn->func_code);
  // A made function has the globals of the frame that made it (recorded when foreign).
  PyObject* globals =
      made ? (callable->globals() ? callable->globals()->value().ptr() : inputs_.globals)
           : fn->func_globals;
  if (depth_ + 1 > kMaxInlineDepth) {
    return no("calls nested deeper than " + std::to_string(kMaxInlineDepth));
  }
  VarPtr globals_var = inputs_.globals_var;
  VarPtr builtins_var = inputs_.builtins_var;
  if (made && callable->globals()) {
    // Made by an inlined function of another module: that function's globals and builtins.
    globals_var = callable->globals();
    Tracker bt = globals_var->tracker();
    bt.key = py::str("__builtins__");
    builtins_var =
        Variable::object(py::reinterpret_borrow<py::object>(inputs_.builtins), std::move(bt));
  } else if (globals != inputs_.globals) {
    // Another module's function: its globals are read through it (fn.__globals__), so it must be
    // an object the guards can reach, with the same builtins.
    if (made || !callable->tracker().is_input() || fn->func_builtins != inputs_.builtins ||
        !PyDict_CheckExact(globals)) {
      return no("a function of another module that the guards cannot reach");
    }
    Tracker gt = Tracker::attr(callable, py::str("__globals__"));
    globals_var = Variable::object(py::reinterpret_borrow<py::object>(globals), gt);
    Tracker bt = gt;
    bt.key = py::str("__builtins__");
    builtins_var =
        Variable::object(py::reinterpret_borrow<py::object>(fn->func_builtins), std::move(bt));
  }
  if (globals_var && !builtins_var) {
    return no("a function of another module whose builtins are not known");
  }
  if ((co->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)) != 0) {
    return no("a generator or coroutine function");
  }
  if (!capture::skip_rules().reason_to_skip(co, globals).empty()) {
    return no("its module is skipped");
  }
  // (An inlined call has no frame of its own: a zero-argument super() in it is simulated.)
  if (!frame_introspection(co, /*allow_super=*/true).empty()) {
    return no("it looks at its own frame");
  }
  const auto callable_attr = [&callable](const char* attr, PyObject* value) {
    return Variable::from_input(value, Tracker::attr(callable, py::str(attr)));
  };
  // The closure's cells.
  std::vector<VarPtr> closure;
  if (made) {
    closure = callable->items();
  } else if (fn->func_closure != nullptr) {
    if (!callable->tracker().is_input()) {
      return no("a closure the translator cannot read again");
    }
    const VarPtr cells = callable_attr("__closure__", fn->func_closure);
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(fn->func_closure); ++k) {
      PyObject* cell = PyTuple_GET_ITEM(fn->func_closure, k);  // borrowed
      Tracker ct = Tracker::item(cells, py::int_(k));
      const VarPtr cell_object = Variable::object(py::reinterpret_borrow<py::object>(cell), ct);
      VarPtr contents;
      if (PyCell_GET(cell) != nullptr) {
        Tracker t = Tracker::attr(cell_object, py::str("cell_contents"));
        contents = Variable::from_input(PyCell_GET(cell), std::move(t));
      }
      closure.push_back(Variable::cell(std::move(contents), -1, /*outside=*/true, std::move(ct)));
    }
  }
  if (closure.size() != static_cast<std::size_t>(co->co_nfreevars)) {
    return no("a closure of the wrong size");
  }
  // Bind the arguments as CPython would; anything that would raise stays a real call.
  const auto nkw = kwnames ? static_cast<std::size_t>(PyTuple_GET_SIZE(kwnames.ptr())) : 0;
  const std::size_t npos = args.size() - nkw;
  const auto argcount = static_cast<std::size_t>(co->co_argcount);
  const auto kwonly = static_cast<std::size_t>(co->co_kwonlyargcount);
  const auto posonly = static_cast<std::size_t>(co->co_posonlyargcount);
  const bool varargs = (co->co_flags & CO_VARARGS) != 0;
  const bool varkw = (co->co_flags & CO_VARKEYWORDS) != 0;
  const auto names = py::reinterpret_borrow<py::tuple>(co->co_localsplusnames);
  std::vector<VarPtr> locals(static_cast<std::size_t>(co->co_nlocalsplus));
  if (npos > argcount && !varargs) {
    return no("too many positional arguments");
  }
  VarPtr extra_kw = varkw ? Variable::dict({}, {}) : nullptr;
  for (std::size_t i = 0; i < npos && i < argcount; ++i) {
    locals[i] = args[i];
  }
  for (std::size_t k = 0; k < nkw; ++k) {
    const py::handle key = PyTuple_GET_ITEM(kwnames.ptr(), static_cast<Py_ssize_t>(k));
    std::size_t slot = argcount + kwonly;
    for (std::size_t i = posonly; i < argcount + kwonly; ++i) {
      if (PyObject_RichCompareBool(names[i].ptr(), key.ptr(), Py_EQ) == 1) {
        slot = i;
        break;
      }
    }
    PyErr_Clear();
    if (slot == argcount + kwonly && extra_kw && extra_kw->find_key(key) == -1) {
      extra_kw->keys().push_back(py::reinterpret_borrow<py::object>(key));
      extra_kw->items().push_back(args[npos + k]);
      continue;
    }
    if (slot == argcount + kwonly || locals[slot]) {
      return no("an unexpected or repeated keyword argument");
    }
    locals[slot] = args[npos + k];
  }
  // Positional defaults: the made function's tuple (built inside, or a constant), or the
  // function's __defaults__ read through it.
  std::vector<VarPtr> defaults;
  if (made) {
    const VarPtr& d = callable->part(Variable::kDefaults);
    if (d && d->kind() == Variable::Kind::kTuple) {
      defaults = d->items();
    } else if (d && d->is_const() && PyTuple_CheckExact(d->value().ptr())) {
      defaults = const_items(d);
    } else if (d) {
      return no("defaults that are not a tuple");
    }
  }
  const std::size_t ndefaults =
      made ? defaults.size()
           : (fn->func_defaults != nullptr
                  ? static_cast<std::size_t>(PyTuple_GET_SIZE(fn->func_defaults))
                  : 0);
  VarPtr defaults_var;
  for (std::size_t i = 0; i < argcount; ++i) {
    if (locals[i]) {
      continue;
    }
    if (i + ndefaults < argcount) {
      return no("a missing argument");
    }
    const std::size_t j = i - (argcount - ndefaults);
    if (made) {
      locals[i] = defaults[j];
      continue;
    }
    if (!defaults_var) {
      defaults_var = callable_attr("__defaults__", fn->func_defaults);
      guards_->identity(defaults_var);
    }
    Tracker t = Tracker::item(defaults_var, py::int_(j));
    locals[i] = Variable::from_input(
        PyTuple_GET_ITEM(fn->func_defaults, static_cast<Py_ssize_t>(j)), std::move(t));
  }
  // Keyword-only defaults: the made function's dict, or the function's __kwdefaults__.
  VarPtr kwdefaults_var;
  for (std::size_t i = argcount; i < argcount + kwonly; ++i) {
    if (locals[i]) {
      continue;
    }
    if (made) {
      const VarPtr& kd = callable->part(Variable::kKwDefaults);
      const Py_ssize_t j = kd && kd->kind() == Variable::Kind::kDict ? kd->find_key(names[i]) : -1;
      if (j < 0) {
        return no("a keyword-only argument without a value");
      }
      locals[i] = kd->items()[static_cast<std::size_t>(j)];
      continue;
    }
    PyObject* value = fn->func_kwdefaults != nullptr && PyDict_CheckExact(fn->func_kwdefaults)
                          ? PyDict_GetItemWithError(fn->func_kwdefaults, names[i].ptr())
                          : nullptr;  // borrowed
    if (value == nullptr) {
      PyErr_Clear();
      return no("a keyword-only argument without a value");
    }
    if (!kwdefaults_var) {
      kwdefaults_var = callable_attr("__kwdefaults__", fn->func_kwdefaults);
      guards_->identity(kwdefaults_var);
      guards_->length(kwdefaults_var, PyDict_Size(fn->func_kwdefaults));
    }
    Tracker t = Tracker::item(kwdefaults_var, names[i]);
    locals[i] = Variable::from_input(value, std::move(t));
  }
  if (varargs) {
    std::vector<VarPtr> rest;
    for (std::size_t i = argcount; i < npos; ++i) {
      rest.push_back(args[i]);
    }
    locals[argcount + kwonly] = Variable::tuple(std::move(rest));
  }
  if (varkw) {
    locals[argcount + kwonly + (varargs ? 1 : 0)] = extra_kw;
  }
  const std::size_t first_free = locals.size() - closure.size();
  for (std::size_t k = 0; k < closure.size(); ++k) {
    locals[first_free + k] = closure[k];
  }
  if (!made) {
    // The translation relies on this function and its code.
    guards_->identity(callable);
    guards_->identity(callable_attr("__code__", fn->func_code));
  }

  const bytecode::Bytecode code = bytecode::Bytecode::decode(reinterpret_cast<PyObject*>(co));
  FrameInputs inputs;
  inputs.code = co;
  inputs.globals = globals;
  inputs.builtins = inputs_.builtins;
  inputs.globals_var = globals == inputs_.globals ? inputs_.globals_var : globals_var;
  inputs.builtins_var = globals == inputs_.globals ? inputs_.builtins_var : builtins_var;
  const Mark before = mark();
  OpcodeExecutor callee(code, inputs, guards_, std::move(locals), depth_ + 1, shared_,
                        result_.simulated);
  struct HandlerScope {  // counts this call while the callee runs, however it ends
    int* count;
    int add;
    ~HandlerScope() { *count -= add; }
  } scope{&shared_->calls_under_handler, code_.instructions()[pc_].handler.has_value() ? 1 : 0};
  shared_->calls_under_handler += scope.add;
  SimulationResult r = callee.run();
  result_.simulated = r.simulated;
  result_.folded += r.folded;
  if (r.kind != SimulationResult::Kind::kReturn) {
    rollback(before);  // everything the callee did, newest first
    const std::string name = py::str(co->co_name).cast<std::string>();
    return no(name + " " + (r.kind == SimulationResult::Kind::kBreak ? "breaks" : "fails") +
              " at line " + std::to_string(r.lineno) + ": " + r.reason);
  }
  cleared_.insert(cleared_.end(), r.cleared_lists.begin(), r.cleared_lists.end());
  return r.value;
}

bool OpcodeExecutor::is_constant_method(const py::object& callable) {
  // A builtin method bound to a constant of an immutable builtin type ("a,b".split, (1, 2).index):
  // pure, and its result depends only on its arguments.
  if (!PyCFunction_Check(callable.ptr())) {
    return false;
  }
  PyObject* self = PyCFunction_GET_SELF(callable.ptr());
  return self != nullptr && !PyModule_Check(self) && Variable::is_constant_value(self) &&
         self != Py_None;
}

void OpcodeExecutor::call_list_method(const VarPtr& method, const std::vector<VarPtr>& args,
                                      std::size_t nargs) {
  VarPtr list = method->items()[0];
  mutate(list);
  const std::string name = name_of(method->value());
  std::vector<VarPtr>& items = list->items();
  auto index_arg = [&](const VarPtr& v, Py_ssize_t* out) {
    if (!v->is_const() || !PyLong_CheckExact(v->value().ptr())) {
      return false;
    }
    *out = PyLong_AsSsize_t(v->value().ptr());
    if (*out == -1 && PyErr_Occurred() != nullptr) {
      PyErr_Clear();
      return false;
    }
    guards_->value(v);
    return true;
  };
  VarPtr result = Variable::constant(py::none());
  // args[0] is the list itself when the call came as [method, self, args] (never here: a kMethod
  // is pushed with NULL), so the arguments are all of `args`.
  const auto size = static_cast<Py_ssize_t>(items.size());
  if (name == "append" && args.size() == 1) {
    items.push_back(args[0]);
  } else if (name == "extend" && args.size() == 1 &&
             (args[0]->kind() == Variable::Kind::kTuple ||
              args[0]->kind() == Variable::Kind::kList)) {
    const std::vector<VarPtr> add = args[0]->items();
    items.insert(items.end(), add.begin(), add.end());
  } else if (name == "pop" && args.size() <= 1 && size > 0) {
    Py_ssize_t i = size - 1;
    if (args.size() == 1 && !index_arg(args[0], &i)) {
      graph_break("list.pop with " + args[0]->describe());
    }
    i = i < 0 ? i + size : i;
    if (i < 0 || i >= size) {
      graph_break("list.pop index out of range (raises IndexError)");
    }
    result = items[static_cast<std::size_t>(i)];
    items.erase(items.begin() + i);
  } else if (name == "insert" && args.size() == 2) {
    Py_ssize_t i = 0;
    if (!index_arg(args[0], &i)) {
      graph_break("list.insert with " + args[0]->describe());
    }
    i = i < 0 ? std::max<Py_ssize_t>(i + size, 0) : std::min(i, size);
    items.insert(items.begin() + i, args[1]);
  } else if (name == "reverse" && args.empty()) {
    std::reverse(items.begin(), items.end());
  } else if (name == "clear" && args.empty()) {
    items.clear();
  } else if (name == "copy" && args.empty()) {
    result = Variable::list(items);
  } else {
    graph_break("list." + name + " with these arguments");
  }
  for (std::size_t i = 0; i < nargs + 2; ++i) {
    pop();
  }
  push(std::move(result));
}

py::object OpcodeExecutor::hashable_key(const VarPtr& v) {
  if (!v->is_const() || PyObject_Hash(v->value().ptr()) == -1) {
    PyErr_Clear();
    return {};
  }
  guards_->value(v);
  return v->value();
}

VarPtr OpcodeExecutor::make_iterator(const VarPtr& v) {
  using IK = Variable::IterKind;
  switch (v->kind()) {
    case Variable::Kind::kIter: {
      if (v->iter_kind() != IK::kDictView || v->start() != 1) {
        return v;  // iter(it) is it
      }
      // A dict view: a new iterator over the dict as it is now.
      const VarPtr& d = v->items()[0];
      const std::string name = name_of(v->value());
      std::vector<VarPtr> snapshot;
      for (std::size_t j = 0; j < d->keys().size(); ++j) {
        VarPtr k = Variable::constant(d->keys()[j]);
        snapshot.push_back(name == "keys"     ? k
                           : name == "values" ? d->items()[j]
                                              : Variable::tuple({k, d->items()[j]}));
      }
      VarPtr it = Variable::iterator(IK::kDictView, {d}, v->value());
      it->snapshot() = std::move(snapshot);
      it->set_seen_version(d->version());
      return it;
    }
    case Variable::Kind::kTuple:
      return Variable::iterator(IK::kItems, v->items());
    case Variable::Kind::kList:
      return Variable::iterator(IK::kList, {v});
    case Variable::Kind::kSet: {
      std::vector<VarPtr> items;
      if (!known_items(v, &items)) {
        return nullptr;
      }
      VarPtr it = Variable::iterator(IK::kDictView, {v}, py::str("__iter__"));
      it->snapshot() = std::move(items);
      it->set_seen_version(v->version());
      return it;
    }
    case Variable::Kind::kDict: {
      std::vector<VarPtr> keys;
      for (const py::object& k : v->keys()) {
        keys.push_back(Variable::constant(k));
      }
      VarPtr it = Variable::iterator(IK::kDictView, {v}, py::str("keys"));
      it->snapshot() = std::move(keys);
      it->set_seen_version(v->version());
      return it;
    }
    case Variable::Kind::kConst: {
      PyObject* o = v->value().ptr();
      if (!(PyTuple_CheckExact(o) || PyRange_Check(o) || PyUnicode_CheckExact(o) ||
            PyBytes_CheckExact(o))) {
        return nullptr;
      }
      const Py_ssize_t n = PyObject_Length(o);
      if (n < 0 || static_cast<std::size_t>(n) > kMaxSteps) {
        PyErr_Clear();
        return nullptr;
      }
      guards_->value(v);
      return Variable::iter(v->value(), 0);
    }
    case Variable::Kind::kObject: {
      // A list or tuple received from outside: its items are read again by generated code as
      // x[i], under guards on its type and length (nothing changes it while the frame is
      // simulated). A list's iterator stays a list iterator over it.
      PyObject* o = v->value().ptr();
      if (!v->tracker().is_input() || !(PyList_CheckExact(o) || PyTuple_CheckExact(o)) ||
          std::find(cleared_.begin(), cleared_.end(), v) != cleared_.end()) {
        return nullptr;
      }
      if (VarPtr m = model_of(v)) {
        return Variable::iterator(IK::kList, {v});  // read live from the model
      }
      read_input(v);
      const Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
      if (static_cast<std::size_t>(n) > kMaxSteps) {
        return nullptr;
      }
      guards_->type(v);
      guards_->length(v, n);
      std::vector<VarPtr> items;
      for (Py_ssize_t i = 0; i < n; ++i) {
        Tracker t = Tracker::item(v, py::int_(i));
        items.push_back(Variable::from_input(PySequence_Fast_GET_ITEM(o, i), std::move(t)));
      }
      if (PyTuple_CheckExact(o)) {
        return Variable::iterator(IK::kItems, std::move(items));
      }
      VarPtr it = Variable::iterator(IK::kList, {v});
      it->snapshot() = std::move(items);
      return it;
    }
    default:
      return nullptr;
  }
}

VarPtr OpcodeExecutor::iter_next(const VarPtr& it) {
  using IK = Variable::IterKind;
  const Py_ssize_t pos = it->position();
  if (pos < 0) {
    return nullptr;  // exhausted for good
  }
  VarPtr item;
  switch (it->iter_kind()) {
    case IK::kConstSeq:
      if (pos < PyObject_Length(it->value().ptr())) {
        PyObject* r = PySequence_GetItem(it->value().ptr(), pos);
        if (r == nullptr) {
          PyErr_Clear();
          fail("a constant sequence could not be indexed");
        }
        item = Variable::constant(py::reinterpret_steal<py::object>(r));
      }
      break;
    case IK::kItems:
      if (static_cast<std::size_t>(pos) < it->snapshot().size()) {
        item = it->snapshot()[static_cast<std::size_t>(pos)];
      }
      break;
    case IK::kList: {
      const VarPtr& list = it->items()[0];
      const VarPtr model = model_of(list);
      const std::vector<VarPtr>& items = list->kind() == Variable::Kind::kList ? list->items()
                                         : model                               ? model->items()
                                                                               : it->snapshot();
      if (static_cast<std::size_t>(pos) < items.size()) {
        item = items[static_cast<std::size_t>(pos)];
      }
      break;
    }
    case IK::kReversed: {
      const std::vector<VarPtr>& items = it->items()[0]->items();
      const Py_ssize_t index = it->start() - pos;
      if (index >= 0 && static_cast<std::size_t>(index) < items.size()) {
        item = items[static_cast<std::size_t>(index)];
      }
      break;
    }
    case IK::kEnumerate: {
      VarPtr inner = iter_next(it->items()[0]);
      if (!inner) {
        return nullptr;
      }
      item = Variable::tuple({Variable::constant(py::int_(it->start() + pos)), inner});
      break;
    }
    case IK::kMap:
    case IK::kFilter: {
      // The step runs the function: when it cannot be simulated the graph breaks here, and take()
      // puts the iterators and the calls' side effects back so that the step runs for real.
      for (;;) {
        std::vector<VarPtr> parts;
        for (std::size_t k = 1; k < it->items().size(); ++k) {
          VarPtr next = iter_next(it->items()[k]);
          if (!next) {
            return nullptr;
          }
          parts.push_back(std::move(next));
        }
        const VarPtr& fn = it->items()[0];
        if (it->iter_kind() == IK::kFilter && fn->is_const() && fn->value().is_none()) {
          bool keep = false;
          if (!truth(parts[0], &keep)) {
            graph_break("filter(None, ...) of " + parts[0]->describe());
          }
          if (keep) {
            item = parts[0];
            break;
          }
          continue;
        }
        std::string why;
        VarPtr r = call_value(fn, parts, &why);
        if (!r) {
          graph_break("a call of " + fn->describe() + " in a map or filter (" + why + ")");
        }
        if (it->iter_kind() == IK::kMap) {
          item = std::move(r);
          break;
        }
        bool keep = false;
        if (!truth(r, &keep)) {
          graph_break("the truth of " + r->describe() + " in a filter");
        }
        if (keep) {
          item = parts[0];
          break;
        }
      }
      break;
    }
    case IK::kZip: {
      std::vector<VarPtr> parts;
      for (const VarPtr& inner : it->items()) {
        VarPtr next = iter_next(inner);
        if (!next) {
          return nullptr;  // the iterators before it have advanced, as in CPython
        }
        parts.push_back(std::move(next));
      }
      if (parts.empty()) {
        return nullptr;
      }
      item = Variable::tuple(std::move(parts));
      break;
    }
    case IK::kDictView:
      if (it->start() == 1) {
        graph_break("next() of a dict view");
      }
      if (it->items()[0]->version() != it->seen_version()) {
        fail("a dict changed while it was iterated (raises RuntimeError)");
      }
      if (static_cast<std::size_t>(pos) < it->snapshot().size()) {
        item = it->snapshot()[static_cast<std::size_t>(pos)];
      }
      break;
  }
  remember(it);
  const bool leaf = it->iter_kind() != IK::kEnumerate && it->iter_kind() != IK::kZip &&
                    it->iter_kind() != IK::kMap && it->iter_kind() != IK::kFilter;
  it->set_position(item ? pos + 1 : (leaf ? -1 : pos));
  return item;
}

std::vector<VarPtr> OpcodeExecutor::const_items(const VarPtr& v) {
  guards_->value(v);
  std::vector<VarPtr> items;
  for (const py::handle item : v->value()) {
    items.push_back(Variable::constant(py::reinterpret_borrow<py::object>(item)));
  }
  return items;
}

bool OpcodeExecutor::known_items(const VarPtr& v, std::vector<VarPtr>* items) {
  if (const VarPtr m = model_of(v)) {
    // An object from outside this frame changed: its items are its model's (the changes kept in the
    // side-effect log applied), not what a live iterator over it has seen so far.
    return known_items(m, items);
  }
  switch (v->kind()) {
    case Variable::Kind::kList:
    case Variable::Kind::kTuple:
      *items = v->items();
      return true;
    case Variable::Kind::kDict:
      items->clear();
      for (const py::object& k : v->keys()) {
        items->push_back(Variable::constant(k));
      }
      return true;
    case Variable::Kind::kSet: {
      // The set's own order: a real set made by the same updates iterates the same way.
      py::set real;
      const py::object update = real.attr("update");
      for (const VarPtr& segment : v->snapshot()) {
        update(segment->value());
      }
      items->clear();
      for (const py::handle k : real) {
        items->push_back(Variable::constant(py::reinterpret_borrow<py::object>(k)));
      }
      return true;
    }
    case Variable::Kind::kIter: {
      if (v->iter_kind() != Variable::IterKind::kDictView || v->start() != 1) {
        return false;  // an iterator: taking its items would consume it
      }
      const VarPtr it = make_iterator(v);
      *items = it->snapshot();
      return true;
    }
    case Variable::Kind::kConst:
    case Variable::Kind::kObject: {
      const VarPtr it = make_iterator(v);
      if (!it || it->iter_kind() == Variable::IterKind::kConstSeq) {
        if (!it || !PyTuple_CheckExact(v->value().ptr())) {
          return false;
        }
        *items = const_items(v);
        return true;
      }
      *items = it->snapshot();
      return true;
    }
    default:
      return false;
  }
}

std::vector<VarPtr> OpcodeExecutor::take(const VarPtr& it, bool all) {
  std::vector<std::pair<VarPtr, Variable::State>> saved;
  std::vector<VarPtr> todo = {it};
  while (!todo.empty()) {
    VarPtr v = todo.back();
    todo.pop_back();
    if (v->kind() != Variable::Kind::kIter) {
      continue;
    }
    saved.emplace_back(v, v->save());
    for (const VarPtr& part : v->items()) {
      todo.push_back(part);
    }
  }
  const Mark before = mark();
  std::vector<VarPtr> items;
  try {
    for (;;) {
      VarPtr item = iter_next(it);
      if (!item) {
        break;
      }
      items.push_back(std::move(item));
      if (!all) {
        break;
      }
      if (items.size() > kMaxSteps) {
        graph_break("an iterator too long to unroll");
      }
    }
  } catch (const Stop&) {
    if (result_.kind == SimulationResult::Kind::kBreak) {
      // (calls that finished are undone too: the real instruction runs them again)
      rollback(before);
      for (auto& [v, state] : saved) {
        v->restore(std::move(state));
      }
    }
    throw;
  }
  return items;
}

VarPtr OpcodeExecutor::structural_call(const py::object& fn, const std::vector<VarPtr>& args,
                                       std::size_t nkw) {
  using IK = Variable::IterKind;
  PyObject* builtins = inputs_.builtins;
  auto is_builtin = [&](const char* name) {
    PyObject* b = builtins != nullptr && PyDict_Check(builtins)
                      ? PyDict_GetItemString(builtins, name)  // borrowed
                      : nullptr;
    return b != nullptr && b == fn.ptr();
  };
  if (nkw > 0) {
    return nullptr;
  }
  if (is_builtin("len") && args.size() == 1) {
    const VarPtr& v = args[0];
    if (is_array_like(v)) {
      // The first dimension, relied on (static from now on); a 0-d value raises TypeError.
      const ArrayOperand a = array_operand(v);
      if (a.kind != ArrayOperand::Kind::kValue || array_info(a.id).ndim() == 0) {
        return nullptr;
      }
      return Variable::constant(py::int_(static_info(a.id).shape[0]));
    }
    switch (v->kind()) {
      case Variable::Kind::kTuple:
      case Variable::Kind::kList:
        return Variable::constant(py::int_(v->items().size()));
      case Variable::Kind::kDict:
      case Variable::Kind::kSet:
        return Variable::constant(py::int_(v->keys().size()));
      case Variable::Kind::kObject: {
        PyObject* o = v->value().ptr();
        if (VarPtr m = model_of(v)) {
          return Variable::constant(
              py::int_(m->kind() == Variable::Kind::kDict ? m->keys().size() : m->items().size()));
        }
        if (v->tracker().is_input() &&
            (PyList_CheckExact(o) || PyTuple_CheckExact(o) || PyDict_CheckExact(o)) &&
            std::find(cleared_.begin(), cleared_.end(), v) == cleared_.end()) {
          read_input(v);
          const Py_ssize_t n = PyObject_Length(o);
          guards_->type(v);
          guards_->length(v, n);
          return Variable::constant(py::int_(n));
        }
        return nullptr;
      }
      default:
        return nullptr;
    }
  }
  if (is_builtin("enumerate") && (args.size() == 1 || args.size() == 2)) {
    Py_ssize_t start = 0;
    if (args.size() == 2) {
      if (!args[1]->is_const() || !PyLong_CheckExact(args[1]->value().ptr())) {
        return nullptr;
      }
      start = PyLong_AsSsize_t(args[1]->value().ptr());
      if (start == -1 && PyErr_Occurred() != nullptr) {
        PyErr_Clear();
        return nullptr;
      }
      guards_->value(args[1]);
    }
    VarPtr inner = make_iterator(args[0]);
    if (!inner) {
      return nullptr;
    }
    VarPtr it = Variable::iterator(IK::kEnumerate, {inner});
    it->set_start(start);
    return it;
  }
  if (is_builtin("zip") && !args.empty()) {
    std::vector<VarPtr> inners;
    for (const VarPtr& a : args) {
      VarPtr inner = make_iterator(a);
      if (!inner) {
        return nullptr;
      }
      inners.push_back(std::move(inner));
    }
    return Variable::iterator(IK::kZip, std::move(inners));
  }
  if ((is_builtin("type") && args.size() == 1) || (is_builtin("isinstance") && args.size() == 2)) {
    // type(x), isinstance(x, C): decided by x's type (guarded) when the classes have no
    // metaclass of their own (no __instancecheck__ to run).
    const VarPtr& v = args[0];
    py::object type;
    if (v->kind() == Variable::Kind::kObject && v->tracker().is_input()) {
      guards_->type(v);
      type = py::reinterpret_borrow<py::object>(
          reinterpret_cast<PyObject*>(Py_TYPE(v->value().ptr())));
    } else if (v->is_const()) {
      guards_->value(v);
      type = py::reinterpret_borrow<py::object>(
          reinterpret_cast<PyObject*>(Py_TYPE(v->value().ptr())));
    } else if (v->kind() == Variable::Kind::kArray) {
      // An ndarray, or the NumPy scalar type of its dtype.
      const graph::ValueInfo info = array_info(v->graph_id());
      const py::object np = arrays().numpy;
      type = info.scalar ? np.attr("dtype")(std::string(graph::name(info.dtype))).attr("type")
                         : np.attr("ndarray");
    } else {
      static const std::pair<Variable::Kind, PyTypeObject*> kMade[] = {
          {Variable::Kind::kList, &PyList_Type},
          {Variable::Kind::kTuple, &PyTuple_Type},
          {Variable::Kind::kDict, &PyDict_Type},
          {Variable::Kind::kSet, &PySet_Type},
          {Variable::Kind::kFunction, &PyFunction_Type}};
      for (const auto& [kind, t] : kMade) {
        if (v->kind() == kind) {
          type = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(t));
        }
      }
    }
    if (!type) {
      return nullptr;
    }
    if (is_builtin("type")) {
      if (v->kind() == Variable::Kind::kObject) {
        Tracker t = Tracker::attr(v, py::str("__class__"));
        return Variable::object(type, std::move(t));
      }
      return Variable::object(type, Tracker{});  // a builtin type: a constant of the code
    }
    const VarPtr& classes = args[1];
    std::vector<VarPtr> parts;
    if (classes->kind() == Variable::Kind::kTuple) {
      parts = classes->items();
    } else {
      parts.push_back(classes);
    }
    py::tuple checked(parts.size());
    for (std::size_t k = 0; k < parts.size(); ++k) {
      PyObject* c = parts[k]->value().ptr();
      if (parts[k]->kind() != Variable::Kind::kObject || !PyType_Check(c) ||
          reinterpret_cast<PyObject*>(Py_TYPE(c)) != reinterpret_cast<PyObject*>(&PyType_Type)) {
        return nullptr;  // a metaclass could define __instancecheck__: run it for real
      }
      guards_->identity(parts[k]);
      checked[k] = parts[k]->value();
    }
    int found = 0;
    for (const py::handle c : checked) {
      found = found != 0 || PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(type.ptr()),
                                             reinterpret_cast<PyTypeObject*>(c.ptr())) != 0;
    }
    if (found == 0 && v->kind() == Variable::Kind::kObject) {
      // isinstance then asks x.__class__: a class that overrides it (a property, say) may answer
      // otherwise. Folded only for the standard __class__, under a guard that the class is
      // unchanged.
      static PyObject* const kStandard = [] {
        PyObject* name = PyUnicode_InternFromString("__class__");
        PyObject* d = _PyType_Lookup(&PyBaseObject_Type, name);  // borrowed; lives as object does
        Py_XDECREF(name);
        return d;
      }();
      const py::str name("__class__");
      if (_PyType_Lookup(reinterpret_cast<PyTypeObject*>(type.ptr()), name.ptr()) != kStandard ||
          !guards_->type_version(v)) {
        return nullptr;
      }
    }
    return Variable::constant(py::bool_(found != 0));
  }
  if ((is_builtin("map") && args.size() >= 2) || (is_builtin("filter") && args.size() == 2)) {
    std::vector<VarPtr> parts = {args[0]};
    for (std::size_t k = 1; k < args.size(); ++k) {
      VarPtr inner = make_iterator(args[k]);
      if (!inner) {
        return nullptr;
      }
      parts.push_back(std::move(inner));
    }
    return Variable::iterator(is_builtin("map") ? IK::kMap : IK::kFilter, std::move(parts));
  }
  if (is_builtin("reversed") && args.size() == 1 && args[0]->kind() == Variable::Kind::kList) {
    VarPtr it = Variable::iterator(IK::kReversed, {args[0]});
    it->set_start(static_cast<Py_ssize_t>(args[0]->items().size()) - 1);
    return it;
  }
  if (is_builtin("tuple") && args.size() == 1) {
    // tuple(t) of an exact tuple is t itself (identity kept, as copy.copy(t) keeps it).
    const VarPtr& t = args[0];
    if (t->kind() == Variable::Kind::kTuple) {
      return t;
    }
    if ((t->is_const() || t->kind() == Variable::Kind::kObject) && !model_of(t) &&
        PyTuple_CheckExact(t->value().ptr())) {
      guards_->type(t);
      return t;
    }
  }
  if ((is_builtin("list") || is_builtin("tuple") || is_builtin("sorted")) && args.size() == 1) {
    // The items of a value whose items are known (not of an iterator: that would consume it).
    std::vector<VarPtr> items;
    if (args[0]->kind() == Variable::Kind::kIter &&
        !(args[0]->start() == 1 && args[0]->iter_kind() == IK::kDictView)) {
      items = take(args[0], true);  // consumed, as list(it) consumes it
    } else if (!known_items(args[0], &items)) {
      return nullptr;
    }
    if (is_builtin("sorted")) {
      // Sorted at translation time when every item is a constant.
      py::list values;
      for (const VarPtr& item : items) {
        py::object c = constant_value(item);
        if (!c) {
          return nullptr;
        }
        values.append(c);
      }
      if (PyList_Sort(values.ptr()) < 0) {
        PyErr_Clear();
        return nullptr;
      }
      items.clear();
      for (const py::handle c : values) {
        items.push_back(Variable::constant(py::reinterpret_borrow<py::object>(c)));
      }
    }
    return is_builtin("tuple") ? Variable::tuple(std::move(items))
                               : Variable::list(std::move(items));
  }
  return nullptr;
}

VarPtr OpcodeExecutor::call_value(const VarPtr& fn, const std::vector<VarPtr>& args,
                                  std::string* why) {
  if (fn->kind() == Variable::Kind::kFunction ||
      (fn->kind() == Variable::Kind::kObject && PyFunction_Check(fn->value().ptr()))) {
    return inline_call(fn, args, py::object(), why);
  }
  const PureFunction* pure =
      fn->kind() == Variable::Kind::kObject ? find_pure_function(fn->value()) : nullptr;
  if (pure == nullptr) {
    *why = "not a pure builtin or a function the translator inlines";
    return nullptr;
  }
  py::list values;
  for (const VarPtr& a : args) {
    py::object v = constant_value(a);
    if (!v) {
      *why = "an argument that is not a constant";
      return nullptr;
    }
    values.append(v);
  }
  if (!pure->accepts(values, 0)) {
    *why = "arguments it does not fold";
    return nullptr;
  }
  PyObject* r = PyObject_Call(fn->value().ptr(), py::tuple(values).ptr(), nullptr);
  if (r == nullptr) {
    PyErr_Clear();
    *why = "it raises";
    return nullptr;
  }
  VarPtr v = make_result(py::reinterpret_steal<py::object>(r));
  if (!v) {
    *why = "a value it does not model";
    return nullptr;
  }
  guards_->identity(fn);
  return v;
}

void OpcodeExecutor::call_dict_method(const VarPtr& method, const std::vector<VarPtr>& args,
                                      std::size_t nargs) {
  const VarPtr d = method->items()[0];
  const std::string name = name_of(method->value());
  VarPtr result = Variable::constant(py::none());
  auto key_at = [&](std::size_t i) {
    py::object k = hashable_key(args[i]);
    if (!k) {
      graph_break("dict." + name + " with the key " + args[i]->describe());
    }
    return k;
  };
  if ((name == "get" && (args.size() == 1 || args.size() == 2)) ||
      (name == "setdefault" && (args.size() == 1 || args.size() == 2))) {
    const py::object k = key_at(0);
    const Py_ssize_t i = d->find_key(k);
    if (i == -2) {
      graph_break("a dict key comparison raises");
    }
    if (i >= 0) {
      result = d->items()[static_cast<std::size_t>(i)];
    } else {
      result = args.size() == 2 ? args[1] : Variable::constant(py::none());
      if (name == "setdefault") {
        mutate(d);
        d->keys().push_back(k);
        d->items().push_back(result);
      }
    }
  } else if (name == "pop" && (args.size() == 1 || args.size() == 2)) {
    const py::object k = key_at(0);
    const Py_ssize_t i = d->find_key(k);
    if (i == -2 || (i == -1 && args.size() == 1)) {
      graph_break("dict.pop of a missing key (raises KeyError)");
    }
    if (i >= 0) {
      mutate(d);
      result = d->items()[static_cast<std::size_t>(i)];
      d->keys().erase(d->keys().begin() + i);
      d->items().erase(d->items().begin() + i);
    } else {
      result = args[1];
    }
  } else if (name == "update" && args.size() == 1 && args[0]->kind() == Variable::Kind::kDict) {
    const VarPtr& other = args[0];
    mutate(d);
    for (std::size_t j = 0; j < other->keys().size(); ++j) {
      const Py_ssize_t i = d->find_key(other->keys()[j]);
      if (i >= 0) {
        d->items()[static_cast<std::size_t>(i)] = other->items()[j];
      } else {
        d->keys().push_back(other->keys()[j]);
        d->items().push_back(other->items()[j]);
      }
    }
  } else if (name == "copy" && args.empty()) {
    result = Variable::dict(d->keys(), d->items());
  } else if (name == "clear" && args.empty()) {
    mutate(d);
    d->keys().clear();
    d->items().clear();
  } else if ((name == "keys" || name == "values" || name == "items") && args.empty()) {
    // A view (start 1 tells it from its iterators): modelled for iteration only.
    result = Variable::iterator(Variable::IterKind::kDictView, {d}, py::str(name));
    result->set_start(1);
  } else {
    graph_break("dict." + name + " with these arguments");
  }
  for (std::size_t i = 0; i < nargs + 2; ++i) {
    pop();
  }
  push(std::move(result));
}

void OpcodeExecutor::call_set_method(const VarPtr& method, const std::vector<VarPtr>& args,
                                     std::size_t nargs) {
  const VarPtr set = method->items()[0];
  const std::string name = name_of(method->value());
  VarPtr result = Variable::constant(py::none());
  if (name == "add" && args.size() == 1) {
    const py::object k = hashable_key(args[0]);
    if (!k) {
      graph_break("set.add of " + args[0]->describe());
    }
    const Py_ssize_t i = set->find_key(k);
    if (i == -2) {
      graph_break("a set element comparison raises");
    }
    mutate(set);
    set_update(set, {k}, py::object());
  } else {
    graph_break("set." + name + " with these arguments");
  }
  for (std::size_t i = 0; i < nargs + 2; ++i) {
    pop();
  }
  push(std::move(result));
}

void OpcodeExecutor::store_subscr() {
  // [value, container, key]: container[key] = value (a container received from outside: on its
  // model).
  if (array_store_subscr()) {
    return;
  }
  const VarPtr key = peek(1);
  VarPtr container = peek(2);
  const VarPtr value = peek(3);
  if (container->kind() == Variable::Kind::kObject && (key->is_const())) {
    if (VarPtr m = model_for_write(container)) {
      container = m;
    }
  }
  if (container->kind() == Variable::Kind::kDict && !container->tracker().is_input()) {
    const py::object k = hashable_key(key);
    const Py_ssize_t i = k ? container->find_key(k) : -2;
    if (i == -2) {
      graph_break("a dict store with the key " + key->describe());
    }
    // A new value for a key the dict has does not disturb its iterators.
    if (i >= 0) {
      remember(container);
    } else {
      mutate(container);
    }
    if (i >= 0) {
      container->items()[static_cast<std::size_t>(i)] = value;
    } else {
      container->keys().push_back(k);
      container->items().push_back(value);
    }
  } else if (container->kind() == Variable::Kind::kList && !container->tracker().is_input() &&
             key->is_const() && PyLong_CheckExact(key->value().ptr())) {
    const Py_ssize_t i =
        item_index(container, key->value().ptr(), "a list store out of range (raises IndexError)");
    guards_->value(key);
    mutate(container);
    container->items()[static_cast<std::size_t>(i)] = value;
  } else {
    graph_break("a store into an item of " + container->describe());
  }
  if (container == shared_->model) {
    record_model_op("__setitem__", {key, value});
  }
  pop();
  pop();
  pop();
}

Py_ssize_t OpcodeExecutor::item_index(const VarPtr& container, PyObject* key,
                                      const char* out_of_range) {
  const auto size = static_cast<Py_ssize_t>(container->items().size());
  Py_ssize_t i = PyLong_AsSsize_t(key);
  if (i == -1 && PyErr_Occurred() != nullptr) {
    PyErr_Clear();
    graph_break("an index that does not fit");
  }
  i = i < 0 ? i + size : i;
  if (i < 0 || i >= size) {
    graph_break(out_of_range);
  }
  return i;
}

void OpcodeExecutor::delete_subscr() {
  const VarPtr key = peek(1);
  VarPtr container = peek(2);
  PyObject* k = key->value().ptr();
  const bool whole = key->is_const() && PySlice_Check(k) &&
                     reinterpret_cast<PySliceObject*>(k)->start == Py_None &&
                     reinterpret_cast<PySliceObject*>(k)->stop == Py_None &&
                     reinterpret_cast<PySliceObject*>(k)->step == Py_None;
  if (whole && container->kind() == Variable::Kind::kObject && container->tracker().is_input() &&
      PyList_CheckExact(container->value().ptr()) && !model_of(container) &&
      pc_ < inputs_.resume_prologue_end) {
    // `del x[:]` of a list received from outside (how resume functions empty their argument
    // list): replayed by the generated code after every value is loaded.
    guards_->type(container);
    cleared_.push_back(container);
    pop();
    pop();
    return;
  }
  if (container->kind() == Variable::Kind::kObject && key->is_const()) {
    if (VarPtr m = model_for_write(container)) {
      container = m;  // a container received from outside: changed on its model
    }
  }
  if (container->kind() == Variable::Kind::kDict && !container->tracker().is_input()) {
    const py::object hk = hashable_key(key);
    const Py_ssize_t i = hk ? container->find_key(hk) : -2;
    if (i < 0) {
      graph_break("del of a missing dict key (raises KeyError)");
    }
    mutate(container);
    container->keys().erase(container->keys().begin() + i);
    container->items().erase(container->items().begin() + i);
  } else if (container->kind() == Variable::Kind::kList && !container->tracker().is_input() &&
             key->is_const() && PyLong_CheckExact(k)) {
    const Py_ssize_t i =
        item_index(container, k, "del of a list item out of range (raises IndexError)");
    guards_->value(key);
    mutate(container);
    container->items().erase(container->items().begin() + i);
  } else if (whole && container->kind() == Variable::Kind::kList &&
             !container->tracker().is_input()) {
    mutate(container);
    container->items().clear();
  } else {
    graph_break("del of an item of " + peek(2)->describe());
  }
  if (container == shared_->model) {
    record_model_op("__delitem__", {key});
  }
  pop();
  pop();
}

void OpcodeExecutor::call_function_ex(int flags) {
  // [NULL, callable, args, kwargs?] (3.11/3.12); [callable, NULL, args, kwargs?] (3.13): a call
  // with arguments from a tuple (or list) and a dict built inside becomes a plain call.
  const bool has_kwargs = (flags & 1) != 0;
  const VarPtr kwargs = has_kwargs ? peek(1) : nullptr;
  const VarPtr args = peek(has_kwargs ? 2 : 1);
  std::vector<VarPtr> positional;
  if (args->kind() == Variable::Kind::kTuple || args->kind() == Variable::Kind::kList) {
    positional = args->items();
  } else if (args->is_const() && PyTuple_CheckExact(args->value().ptr())) {
    positional = const_items(args);
  } else {
    graph_break("a call with *args from " + args->describe());
  }
  py::tuple names(0);
  if (kwargs) {
    if (kwargs->kind() != Variable::Kind::kDict) {
      graph_break("a call with **kwargs from " + kwargs->describe());
    }
    names = py::tuple(kwargs->keys().size());
    for (std::size_t i = 0; i < kwargs->keys().size(); ++i) {
      if (!PyUnicode_CheckExact(kwargs->keys()[i].ptr())) {
        graph_break("a call with a keyword that is not a str (raises TypeError)");
      }
      names[i] = kwargs->keys()[i];
      positional.push_back(kwargs->items()[i]);
    }
  }
  // Rewrite the stack as a CALL would see it: [.., NULL/callable, callable/NULL, args...] with
  // the keyword names passed aside; a break in the call breaks at CALL_FUNCTION_EX, with its stack.
  const std::vector<VarPtr> saved = stack_;
  break_stack_ = &saved;
  pop();
  if (has_kwargs) {
    pop();
  }
  const std::size_t npos = positional.size() - static_cast<std::size_t>(names.size());
  for (VarPtr& v : positional) {
    push(std::move(v));
  }
  call(static_cast<int>(npos + static_cast<std::size_t>(names.size())),
       names.empty() ? py::object() : py::object(names));
  break_stack_ = nullptr;
}

void OpcodeExecutor::super_attr(const VarPtr& cls, const VarPtr& self, const py::object& name,
                                bool method) {
  PyObject* c = cls->value().ptr();
  PyObject* o = self->value().ptr();
  if (cls->kind() != Variable::Kind::kObject || !PyType_Check(c) ||
      self->kind() != Variable::Kind::kObject || !self->tracker().is_input() || PyType_Check(o) ||
      !cls->tracker().is_input()) {
    graph_break("super() of " + cls->describe() + " and " + self->describe());
  }
  PyTypeObject* type = Py_TYPE(o);
  PyObject* mro = type->tp_mro;  // borrowed
  Py_ssize_t start = -1;
  for (Py_ssize_t i = 0; mro != nullptr && i < PyTuple_GET_SIZE(mro); ++i) {
    if (PyTuple_GET_ITEM(mro, i) == c) {
      start = i + 1;
    }
  }
  if (start < 0 || !guards_->type_version(self)) {
    graph_break("super() whose class is not in the instance's MRO");
  }
  guards_->identity(cls);
  for (Py_ssize_t i = start; i < PyTuple_GET_SIZE(mro); ++i) {
    auto* base = reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(mro, i));
    // The class's own namespace through its __dict__ proxy: tp_dict is NULL for the static builtin
    // types (list, dict, ...) from 3.12 on.
    const py::object base_dict =
        py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(base)).attr("__dict__");
    const py::object found_ref =
        py::reinterpret_steal<py::object>(PyObject_GetItem(base_dict.ptr(), name.ptr()));
    if (!found_ref) {
      PyErr_Clear();
      continue;
    }
    PyObject* found = found_ref.ptr();  // borrowed from found_ref
    // self.__class__.__mro__[i].name: the class's function, or a plain class attribute.
    const VarPtr cls_of_self =
        Variable::object(py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(type)),
                         Tracker::attr(self, py::str("__class__")));
    const VarPtr mro_var = Variable::object(py::reinterpret_borrow<py::object>(mro),
                                            Tracker::attr(cls_of_self, py::str("__mro__")));
    const VarPtr base_var =
        Variable::object(py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(base)),
                         Tracker::item(mro_var, py::int_(i)));
    VarPtr v = Variable::from_input(found, Tracker::attr(base_var, name));
    if (PyFunction_Check(found) && method) {
      push(std::move(v));  // [function, self]
      push(self);
      return;
    }
    if (!PyFunction_Check(found) && Py_TYPE(found)->tp_descr_get == nullptr) {
      push_callable(std::move(v), method);
      return;
    }
    graph_break("super()." + name_of(name) + " is a descriptor the translator does not model");
  }
  graph_break("super()." + name_of(name) + " is not found (raises AttributeError)");
}

bool OpcodeExecutor::load_instance_attr(const VarPtr& base, const py::object& name, bool method) {
  // obj.name on an instance whose type uses the generic attribute lookup (no __getattribute__ or
  // __getattr__), decided the way CPython decides it, without running user code; the type's
  // version is guarded (a change to the class or a base retranslates).
  PyObject* o = base->value().ptr();
  PyTypeObject* type = Py_TYPE(o);
  if (base->kind() != Variable::Kind::kObject || !base->tracker().is_input() || PyModule_Check(o) ||
      PyType_Check(o) || type->tp_getattro != PyObject_GenericGetAttr ||
      (type->tp_flags & Py_TPFLAGS_HEAPTYPE) == 0) {
    return false;
  }
  if (shared_->model && shared_->model->kind() == Variable::Kind::kDict) {
    graph_break(
        "an attribute read after a change to a dict received from outside (it may be "
        "the object's __dict__)");
  }
  // Attributes this frame set: the value it set (on the same Variable; another could alias).
  for (auto it = shared_->attr_stores.rbegin(); it != shared_->attr_stores.rend(); ++it) {
    if (it->object != base) {
      graph_break(
          "an attribute read after an attribute store to another object (they may be "
          "one)");
    }
    if (PyObject_RichCompareBool(it->name.ptr(), name.ptr(), Py_EQ) == 1) {
      if (!it->value) {
        graph_break("a read of a deleted attribute (raises AttributeError)");
      }
      push_callable(it->value, method);
      return true;
    }
    PyErr_Clear();
  }
  PyObject* descr = _PyType_Lookup(type, name.ptr());  // borrowed
  const bool data_descr = descr != nullptr && Py_TYPE(descr)->tp_descr_set != nullptr;
  // The instance's dict holds no `name` (a guard on obj.__dict__[name] being absent).
  const auto guard_not_in_dict = [&]() {
    guards_->absent(Tracker::item(
        Variable::object(py::none(), Tracker::attr(base, py::str("__dict__"))), name));
  };
  const auto cls = [&]() {
    return Variable::object(py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(type)),
                            Tracker::attr(base, py::str("__class__")));
  };
  if (!guards_->type_version(base)) {
    graph_break("an attribute of an instance whose type has no version tag");
  }
  const std::string cache_key = "attr " + name_of(name);
  if (data_descr) {
    if (PyObject_TypeCheck(descr, &PyProperty_Type)) {
      // A property: its getter, inlined with the instance (type(obj).name.fget(obj)).
      const py::object fget = py::reinterpret_borrow<py::object>(descr).attr("fget");
      if (!PyFunction_Check(fget.ptr())) {
        graph_break("a property whose getter is not a Python function");
      }
      const VarPtr prop =
          Variable::object(py::reinterpret_borrow<py::object>(descr), Tracker::attr(cls(), name));
      const VarPtr getter = Variable::from_input(fget, Tracker::attr(prop, py::str("fget")));
      std::string why;
      VarPtr value = inline_call(getter, {base}, py::object(), &why);
      if (!value) {
        graph_break("the property '" + name_of(name) + "' (" + why + ")");
      }
      push_callable(std::move(value), method);
      return true;
    }
    if (Py_TYPE(descr) != &PyMemberDescr_Type) {
      return false;  // another data descriptor: run for real
    }
    // A slot: read at translation time (a member descriptor runs no user code).
  } else if (descr != nullptr && PyFunction_Check(descr)) {
    // A method: the class's function, not shadowed by the instance's dict.
    if (type->tp_dictoffset != 0 && !instance_dict_has(o, name)) {
      guard_not_in_dict();
      const VarPtr fn =
          Variable::object(py::reinterpret_borrow<py::object>(descr), Tracker::attr(cls(), name));
      if (method) {
        push(fn);  // [function, self]: CALL passes self first
        push(base);
      } else {
        // A bound method (a new one at each read, as in CPython); called, it is inlined.
        push_callable(Variable::object(py::reinterpret_steal<py::object>(PyMethod_New(descr, o)),
                                       Tracker::attr(base, name)),
                      false);
      }
      return true;
    }
  } else if (descr != nullptr && Py_TYPE(descr)->tp_descr_get != nullptr) {
    return false;  // classmethod, staticmethod, other descriptors: run for real
  }
  // The instance's dict, a slot, or a plain class attribute: getattr(obj, name), read again by
  // the generated code (guards check what the translation relies on).
  if (const auto it = shared_->loaded.find({base.get(), cache_key}); it != shared_->loaded.end()) {
    push_callable(it->second, method);
    return true;
  }
  PyObject* value = PyObject_GenericGetAttr(o, name.ptr());
  if (value == nullptr) {
    PyErr_Clear();
    graph_break("a missing attribute '" + name_of(name) + "' (raises AttributeError)");
  }
  VarPtr v =
      Variable::from_input(py::reinterpret_steal<py::object>(value), Tracker::attr(base, name));
  if (descr != nullptr && !data_descr && type->tp_dictoffset != 0 && !instance_dict_has(o, name)) {
    guard_not_in_dict();  // a class attribute: the instance's dict must not get one of that name
  }
  shared_->loaded[{base.get(), cache_key}] = v;
  push_callable(std::move(v), method);
  return true;
}

void OpcodeExecutor::step(const bytecode::Instruction& ins) {
  using bytecode::version::kCompareOpShift;
  using bytecode::version::kLoadAttrNameShift;
  using bytecode::version::kLoadGlobalNameShift;
  const Op op = op_of(ins.opcode);
  const bool grouped = op == Op::CALL || op == Op::PRECALL;
  if (!grouped && op != Op::KW_NAMES) {
    in_group_ = false;
  }
  const auto& consts = code_.consts();
  const auto& names = code_.names();
  auto local_or_break = [&](int index) -> VarPtr {
    if (index < 0 || static_cast<std::size_t>(index) >= locals_.size()) {
      fail("a local index out of range (malformed bytecode)");
    }
    VarPtr v = locals_[static_cast<std::size_t>(index)];
    if (!v) {
      graph_break("a read of an unbound local (raises UnboundLocalError)");
    }
    return v;
  };
  // Cell and free slots hold cells: the fast-local opcodes touch them only in 3.12's inlined
  // comprehensions (saving and restoring a cell around MAKE_CELL) and in a resume function's
  // prologue (storing the caller's cells); anything else with them runs for real.
  const std::string& kinds = code_.localsplus_kinds();
  auto cell_slot = [&](int index) {
    return index >= 0 && static_cast<std::size_t>(index) < kinds.size() &&
           (static_cast<unsigned char>(kinds[static_cast<std::size_t>(index)]) &
            (bytecode::version::kFastCell | bytecode::version::kFastFree)) != 0;
  };
  const bool fast_op = op == Op::LOAD_FAST || op == Op::LOAD_FAST_CHECK ||
                       op == Op::LOAD_FAST_AND_CLEAR || op == Op::STORE_FAST ||
                       op == Op::DELETE_FAST;
  const bool pair_op = op == Op::LOAD_FAST_LOAD_FAST || op == Op::STORE_FAST_LOAD_FAST ||
                       op == Op::STORE_FAST_STORE_FAST;
  // LOAD_FAST of a cell slot pushes the cell itself (3.13 builds closures so).
  const bool load_cell =
      (op == Op::LOAD_FAST || op == Op::LOAD_FAST_CHECK) && cell_slot(ins.arg) &&
      static_cast<std::size_t>(ins.arg) < locals_.size() &&
      locals_[static_cast<std::size_t>(ins.arg)] &&
      locals_[static_cast<std::size_t>(ins.arg)]->kind() == Variable::Kind::kCell;
  if ((fast_op && cell_slot(ins.arg) && !load_cell &&
       !(op == Op::STORE_FAST && pc_ < inputs_.resume_prologue_end)) ||
      (pair_op && (cell_slot(ins.arg >> 4) || cell_slot(ins.arg & 15)))) {
    graph_break("a fast-local access to a cell");
  }
  auto store_local = [&](int index, VarPtr v) {
    if (index < 0 || static_cast<std::size_t>(index) >= locals_.size()) {
      fail("a local index out of range (malformed bytecode)");
    }
    locals_[static_cast<std::size_t>(index)] = std::move(v);
  };
  switch (op) {
    case Op::NOP:
    case Op::COPY_FREE_VARS:
      return;
    case Op::RESUME:
      started_ = true;
      return;
    case Op::MAKE_CELL: {
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
      return;
    }
    case Op::LOAD_FAST:
    case Op::LOAD_FAST_CHECK:
      push(local_or_break(ins.arg));
      return;
    case Op::LOAD_FAST_AND_CLEAR: {
      VarPtr v = locals_.at(static_cast<std::size_t>(ins.arg));
      push(v ? v : Variable::null());
      locals_[static_cast<std::size_t>(ins.arg)] = nullptr;
      return;
    }
    case Op::LOAD_FAST_LOAD_FAST:
      push(local_or_break(ins.arg >> 4));
      push(local_or_break(ins.arg & 15));
      return;
    case Op::STORE_FAST: {
      drop_local(ins.arg);
      VarPtr v = pop();
      if (cell_slot(ins.arg) && v->kind() == Variable::Kind::kObject && v->tracker().is_input() &&
          PyCell_Check(v->value().ptr())) {
        // A resume function's prologue stores its caller's cell: its contents are read through
        // it (cell_contents) and written back through it.
        VarPtr contents;
        if (PyObject* c = PyCell_GET(v->value().ptr()); c != nullptr) {
          Tracker t = Tracker::attr(v, py::str("cell_contents"));
          contents = Variable::from_input(c, std::move(t));
        }
        v = Variable::cell(std::move(contents), -1, /*outside=*/true, v->tracker());
      }
      store_local(ins.arg, v->kind() == Variable::Kind::kNull ? nullptr : v);
      return;
    }
    case Op::STORE_FAST_LOAD_FAST:
      drop_local(ins.arg >> 4);
      store_local(ins.arg >> 4, pop());
      push(local_or_break(ins.arg & 15));
      return;
    case Op::STORE_FAST_STORE_FAST:
      drop_local(ins.arg >> 4);
      drop_local(ins.arg & 15);
      store_local(ins.arg >> 4, pop());
      store_local(ins.arg & 15, pop());
      return;
    case Op::DELETE_FAST:
      local_or_break(ins.arg);
      drop_local(ins.arg);
      locals_[static_cast<std::size_t>(ins.arg)] = nullptr;
      return;
    case Op::LOAD_CONST:
      push(Variable::from_input(consts[static_cast<std::size_t>(ins.arg)], Tracker{}));
      return;
    case Op::RETURN_VALUE:
      finish(pop());
    case Op::RETURN_CONST:
      finish(Variable::from_input(consts[static_cast<std::size_t>(ins.arg)], Tracker{}));
    case Op::POP_TOP:
      pop();
      return;
    case Op::PUSH_NULL:
      push(Variable::null());
      return;
    case Op::COPY:
      push(peek(static_cast<std::size_t>(ins.arg)));
      return;
    case Op::SWAP:
      std::swap(peek(1), peek(static_cast<std::size_t>(ins.arg)));
      return;
    case Op::LOAD_GLOBAL: {
      const py::object name = names[static_cast<std::size_t>(ins.arg >> kLoadGlobalNameShift)];
      VarPtr v = load_global(name);
      if (!v) {
        graph_break("global name '" + name_of(name) + "' is not defined (raises NameError)");
      }
      push_callable(std::move(v), (ins.arg & 1) != 0);
      return;
    }
    case Op::LOAD_ATTR:
    case Op::LOAD_METHOD: {
      const bool method = op == Op::LOAD_METHOD || (kLoadAttrNameShift == 1 && (ins.arg & 1) != 0);
      const py::object name = names[static_cast<std::size_t>(
          ins.arg >> (op == Op::LOAD_METHOD ? 0 : kLoadAttrNameShift))];
      VarPtr base = peek(1);
      if (base->kind() == Variable::Kind::kSuper) {
        const std::vector<VarPtr> before = stack_;
        break_stack_ = &before;
        pop();
        super_attr(base->items()[0], base->items()[1], name, method);
        break_stack_ = nullptr;
        return;
      }
      VarPtr v = load_attr(base, name);
      if (!v) {
        // (pushes the attribute itself, or the function and the instance for a method call)
        const std::vector<VarPtr> before = stack_;
        break_stack_ = &before;
        pop();
        const bool done = load_instance_attr(base, name, method);
        break_stack_ = nullptr;
        if (done) {
          return;
        }
        stack_ = before;
        graph_break("attribute '" + name_of(name) + "' of " + base->describe());
      }
      pop();
      push_callable(std::move(v), method);
      return;
    }
    case Op::BINARY_OP:
      binary_op(ins.arg);
      return;
    case Op::COMPARE_OP:
      compare_op(ins.arg >> kCompareOpShift);
      return;
    case Op::IS_OP: {
      const VarPtr& b = peek(1);
      const VarPtr& a = peek(2);
      // Identity is decided only against singletons (None, True, False, Ellipsis), whose equality
      // guard (same type, equal) implies identity.
      auto singleton = [](const VarPtr& v) {
        const PyObject* o = v->value().ptr();
        return v->is_const() && (o == Py_None || o == Py_True || o == Py_False || o == Py_Ellipsis);
      };
      // A value that is not a constant is no singleton: an object received from outside (its
      // type guarded) or made inside. Two Variables are one object; values made inside are
      // distinct.
      auto not_singleton = [&](const VarPtr& v) {
        if (v->kind() == Variable::Kind::kObject && v->tracker().is_input()) {
          guards_->type(v);
          return true;
        }
        return v->is_mutable_created();
      };
      bool identical = false;
      const bool inputs =
          a->kind() == Variable::Kind::kObject && b->kind() == Variable::Kind::kObject;
      if (a == b && (a->kind() == Variable::Kind::kObject || a->is_mutable_created())) {
        identical = true;
      } else if (inputs && (PyType_Check(a->value().ptr()) || PyType_Check(b->value().ptr()))) {
        // Classes (type(x) is C): decided by identity, both guarded.
        guards_->identity(a);
        guards_->identity(b);
        identical = a->value().ptr() == b->value().ptr();
      } else if (a->is_mutable_created() && b->is_mutable_created()) {
        identical = false;
      } else if ((singleton(a) && !b->is_const() && not_singleton(b)) ||
                 (singleton(b) && !a->is_const() && not_singleton(a))) {
        guards_->value(singleton(a) ? a : b);
        identical = false;
      } else if (a->is_const() && b->is_const() && (singleton(a) || singleton(b))) {
        guards_->value(a);
        guards_->value(b);
        identical = a->value().ptr() == b->value().ptr();
      } else {
        graph_break("an identity test of " + a->describe() + " and " + b->describe());
      }
      const bool same = identical != (ins.arg == 1);
      pop();
      pop();
      push(Variable::constant(py::bool_(same)));
      return;
    }
    case Op::CONTAINS_OP: {
      const VarPtr& container = peek(1);
      const VarPtr& item = peek(2);
      const VarPtr model = model_of(container);
      if (container->kind() == Variable::Kind::kDict || container->kind() == Variable::Kind::kSet ||
          (model && model->kind() == Variable::Kind::kDict)) {
        const py::object k = hashable_key(item);
        const Py_ssize_t i = k ? (model ? model : container)->find_key(k) : -2;
        if (i == -2) {
          graph_break("an 'in' test of " + item->describe() + " in " + container->describe());
        }
        pop();
        pop();
        push(Variable::constant(py::bool_((i >= 0) != (ins.arg == 1))));
        return;
      }
      const py::object c = constant_value(container);
      const py::object i = c ? constant_value(item) : py::object();
      if (!c || !i) {
        graph_break("an 'in' test of " + item->describe() + " in " + container->describe());
      }
      const int found = PySequence_Contains(c.ptr(), i.ptr());
      if (found < 0) {
        PyErr_Clear();
        graph_break("an 'in' test raises");
      }
      pop();
      pop();
      push(Variable::constant(py::bool_((found == 1) != (ins.arg == 1))));
      return;
    }
    case Op::CALL_INTRINSIC_1: {
      // 3.12+: INTRINSIC_UNARY_POSITIVE (5) and INTRINSIC_LIST_TO_TUPLE (6) are the old opcodes.
      constexpr int kUnaryPositive = 5;
      constexpr int kListToTuple = 6;
      if (ins.arg == kListToTuple) {
        list_to_tuple();
        return;
      }
      if (ins.arg != kUnaryPositive) {
        graph_break("intrinsic function " + std::to_string(ins.arg) + " is not simulated");
      }
      if (!array_unary("pos")) {
        unary(PyNumber_Positive);
      }
      return;
    }
    case Op::UNARY_NEGATIVE:
      if (!array_unary("neg")) {
        unary(PyNumber_Negative);
      }
      return;
    case Op::UNARY_POSITIVE:
      if (!array_unary("pos")) {
        unary(PyNumber_Positive);
      }
      return;
    case Op::UNARY_INVERT:
      if (!array_unary("invert")) {
        unary(PyNumber_Invert);
      }
      return;
    case Op::UNARY_NOT:
    case Op::TO_BOOL: {
      bool value = false;
      if (!truth(peek(1), &value)) {
        graph_break("the truth of " + peek(1)->describe());
      }
      pop();
      push(Variable::constant(py::bool_(op == Op::UNARY_NOT ? !value : value)));
      return;
    }
    case Op::BUILD_TUPLE:
    case Op::BUILD_LIST: {
      std::vector<VarPtr> items(static_cast<std::size_t>(ins.arg));
      for (std::size_t i = items.size(); i > 0; --i) {
        items[i - 1] = pop();
      }
      push(op == Op::BUILD_TUPLE ? Variable::tuple(std::move(items))
                                 : Variable::list(std::move(items)));
      return;
    }
    case Op::LIST_APPEND: {
      VarPtr& list = peek(static_cast<std::size_t>(ins.arg) + 1);
      if (list->kind() != Variable::Kind::kList || list->tracker().is_input()) {
        graph_break("append to " + list->describe());
      }
      mutate(list);
      list->items().push_back(pop());
      return;
    }
    case Op::LIST_EXTEND: {
      const VarPtr& list = peek(static_cast<std::size_t>(ins.arg) + 1);
      const VarPtr& values = peek(1);
      if (list->kind() != Variable::Kind::kList || list->tracker().is_input()) {
        graph_break("extend of " + list->describe());
      }
      mutate(list);
      if (values->kind() == Variable::Kind::kTuple || values->kind() == Variable::Kind::kList) {
        std::vector<VarPtr> add = values->items();
        pop();
        list->items().insert(list->items().end(), add.begin(), add.end());
        return;
      }
      if (values->is_const() && PyTuple_CheckExact(values->value().ptr())) {
        std::vector<VarPtr> add = const_items(values);
        pop();
        list->items().insert(list->items().end(), add.begin(), add.end());
        return;
      }
      graph_break("extend with " + values->describe());
    }
    case Op::LIST_TO_TUPLE:
      list_to_tuple();
      return;
    case Op::BUILD_SLICE: {
      std::vector<py::object> parts;
      for (int i = 0; i < ins.arg; ++i) {
        const VarPtr& v = peek(static_cast<std::size_t>(ins.arg - i));
        if (!v->is_const()) {
          graph_break("a slice of " + v->describe());
        }
        parts.push_back(v->value());
      }
      for (std::size_t i = 1; i <= static_cast<std::size_t>(ins.arg); ++i) {
        guards_->value(peek(i));
      }
      PyObject* s =
          PySlice_New(parts[0].ptr(), parts[1].ptr(), parts.size() > 2 ? parts[2].ptr() : nullptr);
      if (s == nullptr) {
        PyErr_Clear();
        graph_break("a slice that cannot be made");
      }
      for (int i = 0; i < ins.arg; ++i) {
        pop();
      }
      push(Variable::constant(py::reinterpret_steal<py::object>(s)));
      return;
    }
    case Op::BINARY_SUBSCR:
    case Op::BINARY_SLICE: {
      const std::size_t n = op == Op::BINARY_SLICE ? 3 : 2;
      if (array_subscript(n)) {
        return;
      }
      VarPtr container = peek(n);
      py::object key;
      if (op == Op::BINARY_SLICE) {
        const VarPtr& start = peek(2);
        const VarPtr& stop = peek(1);
        if (!start->is_const() || !stop->is_const()) {
          graph_break("a slice of " + start->describe() + " and " + stop->describe());
        }
        guards_->value(start);
        guards_->value(stop);
        key = py::reinterpret_steal<py::object>(
            PySlice_New(start->value().ptr(), stop->value().ptr(), nullptr));
      } else {
        const VarPtr& k = peek(1);
        if (!k->is_const()) {
          graph_break("a subscript with " + k->describe());
        }
        guards_->value(k);
        key = k->value();
      }
      if (container->kind() == Variable::Kind::kDict && op == Op::BINARY_SUBSCR) {
        const Py_ssize_t i = container->find_key(key);
        if (i < 0) {
          graph_break("a dict subscript with a missing key (raises KeyError)");
        }
        VarPtr item = container->items()[static_cast<std::size_t>(i)];
        pop();
        pop();
        push(std::move(item));
        return;
      }
      // Items of a tuple or list built inside, by constant index: the item's own Variable.
      if ((container->kind() == Variable::Kind::kTuple ||
           container->kind() == Variable::Kind::kList) &&
          PyLong_CheckExact(key.ptr())) {
        const Py_ssize_t i =
            item_index(container, key.ptr(), "an index out of range (raises IndexError)");
        VarPtr item = container->items()[static_cast<std::size_t>(i)];
        for (std::size_t j = 0; j < n; ++j) {
          pop();
        }
        push(std::move(item));
        return;
      }
      // An item of a list, tuple or dict received from outside (exact types, a constant key it
      // has): read again by generated code as x[key], under guards on its type (and length).
      if (VarPtr m = op == Op::BINARY_SUBSCR ? model_of(container) : nullptr) {
        // An item of a container the frame changed: from its model.
        VarPtr item;
        if (m->kind() == Variable::Kind::kDict) {
          const Py_ssize_t i = m->find_key(key);
          item = i >= 0 ? m->items()[static_cast<std::size_t>(i)] : nullptr;
        } else if (PyLong_CheckExact(key.ptr())) {
          const auto size = static_cast<Py_ssize_t>(m->items().size());
          Py_ssize_t i = PyLong_AsSsize_t(key.ptr());
          PyErr_Clear();
          i = i < 0 ? i + size : i;
          item = i >= 0 && i < size ? m->items()[static_cast<std::size_t>(i)] : nullptr;
        }
        if (!item) {
          graph_break("a subscript of " + container->describe() + " that raises");
        }
        for (std::size_t j = 0; j < n; ++j) {
          pop();
        }
        push(std::move(item));
        return;
      }
      if (container->kind() == Variable::Kind::kObject && container->tracker().is_input() &&
          op == Op::BINARY_SUBSCR &&
          std::find(cleared_.begin(), cleared_.end(), container) == cleared_.end()) {
        read_input(container);
        PyObject* o = container->value().ptr();
        PyObject* item = nullptr;  // borrowed
        if ((PyList_CheckExact(o) || PyTuple_CheckExact(o)) && PyLong_CheckExact(key.ptr())) {
          const Py_ssize_t size = PySequence_Fast_GET_SIZE(o);
          const Py_ssize_t i = PyLong_AsSsize_t(key.ptr());
          const bool overflow = i == -1 && PyErr_Occurred() != nullptr;
          PyErr_Clear();
          if (!overflow && i >= -size && i < size) {
            item = PySequence_Fast_GET_ITEM(o, i < 0 ? i + size : i);
            guards_->length(container, size);
          }
        } else if (PyDict_CheckExact(o) &&
                   (PyUnicode_CheckExact(key.ptr()) || PyLong_CheckExact(key.ptr()))) {
          item = PyDict_GetItemWithError(o, key.ptr());
          PyErr_Clear();
        }
        if (item != nullptr) {
          guards_->type(container);
          Tracker t = Tracker::item(container, key);
          VarPtr v = Variable::from_input(item, std::move(t));
          if (PyDict_CheckExact(o)) {
            guards_->type(v);  // the key is there (a missing one fails the guard)
          }
          for (std::size_t j = 0; j < n; ++j) {
            pop();
          }
          push(std::move(v));
          return;
        }
      }
      const py::object c = constant_value(container);
      if (!c) {
        graph_break("a subscript of " + container->describe());
      }
      PyObject* r = PyObject_GetItem(c.ptr(), key.ptr());
      if (r == nullptr) {
        PyErr_Clear();
        graph_break("a subscript raises");
      }
      VarPtr v = make_result(py::reinterpret_steal<py::object>(r));
      if (!v) {
        graph_break("a subscript made a value it does not model");
      }
      for (std::size_t j = 0; j < n; ++j) {
        pop();
      }
      push(std::move(v));
      return;
    }
    case Op::FORMAT_VALUE:
    case Op::FORMAT_SIMPLE:
    case Op::FORMAT_WITH_SPEC:
    case Op::CONVERT_VALUE: {
      // FORMAT_VALUE: arg & 3 = conversion (none, str, repr, ascii), arg & 4 = a spec on the
      // stack. 3.13 splits it into CONVERT_VALUE (1 str, 2 repr, 3 ascii), FORMAT_SIMPLE and
      // FORMAT_WITH_SPEC.
      const bool has_spec =
          (op == Op::FORMAT_VALUE && (ins.arg & 4) != 0) || op == Op::FORMAT_WITH_SPEC;
      const int conversion = op == Op::FORMAT_VALUE    ? (ins.arg & 3)
                             : op == Op::CONVERT_VALUE ? ins.arg
                                                       : 0;
      const VarPtr spec = has_spec ? peek(1) : nullptr;
      const VarPtr value = peek(has_spec ? 2 : 1);
      if (!value->is_const() || (spec && !spec->is_const())) {
        graph_break("formatting " + value->describe());
      }
      PyObject* v = value->value().ptr();
      py::object converted;
      switch (conversion) {
        case 1:
          converted = py::reinterpret_steal<py::object>(PyObject_Str(v));
          break;
        case 2:
          converted = py::reinterpret_steal<py::object>(PyObject_Repr(v));
          break;
        case 3:
          converted = py::reinterpret_steal<py::object>(PyObject_ASCII(v));
          break;
        default:
          converted = value->value();
          break;
      }
      if (!converted) {
        PyErr_Clear();
        graph_break("a conversion raises");
      }
      py::object out = converted;
      if (op != Op::CONVERT_VALUE) {
        PyObject* f = PyObject_Format(converted.ptr(), spec ? spec->value().ptr() : nullptr);
        if (f == nullptr) {
          PyErr_Clear();
          graph_break("formatting raises");
        }
        out = py::reinterpret_steal<py::object>(f);
      }
      guards_->value(value);
      if (spec) {
        guards_->value(spec);
        pop();
      }
      pop();
      push(make_result(out));
      return;
    }
    case Op::BUILD_STRING: {
      py::list parts;
      for (int i = ins.arg; i > 0; --i) {
        const VarPtr& v = peek(static_cast<std::size_t>(i));
        if (!v->is_const() || !PyUnicode_CheckExact(v->value().ptr())) {
          graph_break("joining " + v->describe());
        }
        parts.append(v->value());
      }
      const py::object joined = py::str("").attr("join")(parts);
      for (int i = 0; i < ins.arg; ++i) {
        guards_->value(peek(1));
        pop();
      }
      push(make_result(joined));
      return;
    }
    case Op::POP_JUMP_IF_TRUE:
    case Op::POP_JUMP_FORWARD_IF_TRUE:
    case Op::POP_JUMP_BACKWARD_IF_TRUE:
      branch(ins, true);
      return;
    case Op::POP_JUMP_IF_FALSE:
    case Op::POP_JUMP_FORWARD_IF_FALSE:
    case Op::POP_JUMP_BACKWARD_IF_FALSE:
      branch(ins, false);
      return;
    case Op::POP_JUMP_IF_NONE:
    case Op::POP_JUMP_FORWARD_IF_NONE:
    case Op::POP_JUMP_BACKWARD_IF_NONE:
    case Op::POP_JUMP_IF_NOT_NONE:
    case Op::POP_JUMP_FORWARD_IF_NOT_NONE:
    case Op::POP_JUMP_BACKWARD_IF_NOT_NONE: {
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
      const bool want_none = op == Op::POP_JUMP_IF_NONE || op == Op::POP_JUMP_FORWARD_IF_NONE ||
                             op == Op::POP_JUMP_BACKWARD_IF_NONE;
      pop();
      if (is_none == want_none) {
        jump_to(ins.target);
      }
      return;
    }
    case Op::JUMP_IF_TRUE_OR_POP:
    case Op::JUMP_IF_FALSE_OR_POP: {
      bool value = false;
      if (!truth(peek(1), &value)) {
        graph_break("a jump on the truth of " + peek(1)->describe());
      }
      if (value == (op == Op::JUMP_IF_TRUE_OR_POP)) {
        jump_to(ins.target);
      } else {
        pop();
      }
      return;
    }
    case Op::JUMP_FORWARD:
    case Op::JUMP_BACKWARD:
    case Op::JUMP_BACKWARD_NO_INTERRUPT:
      jump_to(ins.target);
      return;
    case Op::GET_ITER: {
      VarPtr it = make_iterator(peek(1));
      if (!it) {
        graph_break("iteration over " + peek(1)->describe());
      }
      pop();
      push(std::move(it));
      return;
    }
    case Op::FOR_ITER: {
      const VarPtr it = peek(1);
      if (it->kind() != Variable::Kind::kIter) {
        graph_break("next() of " + it->describe());
      }
      std::vector<VarPtr> one = take(it, false);
      VarPtr item = one.empty() ? nullptr : one[0];
      if (!item) {
        pop();
        next_ = code_.index_of(ins.target) + kForIterExhaustSkip;
        return;
      }
      push(std::move(item));
      return;
    }
    case Op::END_FOR:
      pop();
      if constexpr (PY_VERSION_HEX < 0x030D0000) {
        pop();
      }
      return;
    case Op::UNPACK_SEQUENCE: {
      const VarPtr v = peek(1);
      std::vector<VarPtr> items;
      // Lists, tuples, dicts and sets built inside, constant tuples, lists and tuples received
      // from outside (their items read again as x[i], under guards on type and length; changed
      // ones through their model).
      if (v->kind() == Variable::Kind::kIter || !known_items(v, &items)) {
        graph_break("unpacking " + v->describe());
      }
      if (items.size() != static_cast<std::size_t>(ins.arg)) {
        graph_break("unpacking " + std::to_string(items.size()) + " values into " +
                    std::to_string(ins.arg) + " (raises ValueError)");
      }
      pop();
      for (std::size_t i = items.size(); i > 0; --i) {
        push(items[i - 1]);
      }
      return;
    }
    case Op::LOAD_DEREF: {
      VarPtr v = cell_at(ins.arg)->contents();
      if (!v) {
        graph_break("a read of an empty cell (raises NameError)");
      }
      push(std::move(v));
      return;
    }
    case Op::LOAD_CLOSURE:
      push(cell_at(ins.arg));
      return;
    case Op::STORE_DEREF: {
      const VarPtr cell = cell_at(ins.arg);
      write_cell(cell, peek(1));
      pop();
      return;
    }
    case Op::DELETE_DEREF: {
      const VarPtr cell = cell_at(ins.arg);
      if (!cell->contents()) {
        graph_break("del of an empty cell (raises NameError)");
      }
      write_cell(cell, nullptr);
      return;
    }
    case Op::MAKE_FUNCTION:
      make_function(bytecode::version::kMakeFunctionHasFlags ? ins.arg : 0);
      return;
    case Op::SET_FUNCTION_ATTRIBUTE: {
      // 3.13: [value, function] -> function.
      const VarPtr fn = peek(1);
      const VarPtr value = peek(2);
      constexpr int kClosure = 8;
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
      return;
    }
    case Op::STORE_GLOBAL: {
      if (inputs_.globals_var) {
        graph_break("an assignment to a global of another module");
      }
      // Recorded, and replayed by the generated code once it has loaded every value it needs.
      shared_->global_stores.emplace_back(names[static_cast<std::size_t>(ins.arg)], pop());
      return;
    }
    case Op::DELETE_GLOBAL: {
      // The global must exist (the frame assigned it, or a guard checks it is there).
      const py::object name = names[static_cast<std::size_t>(ins.arg)];
      if (inputs_.globals_var) {
        graph_break("del of a global of another module");
      }
      VarPtr current = load_global(name);
      if (!current ||
          (current->tracker().kind == Tracker::Kind::kGlobal && current->tracker().index == 1)) {
        graph_break("del of a global that does not exist (raises NameError)");
      }
      if (current->tracker().kind == Tracker::Kind::kGlobal) {
        guards_->type(current);
      }
      shared_->global_stores.emplace_back(name, nullptr);
      return;
    }
    case Op::STORE_ATTR:
      store_attr(ins, false);
      return;
    case Op::LOAD_SUPER_ATTR: {
      // 3.12+: [super, class, self] -> the attribute (bit 0: a method load; bit 1: super(C, s)).
      const VarPtr self = peek(1);
      const VarPtr cls = peek(2);
      const VarPtr sup = peek(3);
      if (sup->kind() != Variable::Kind::kObject ||
          sup->value().ptr() != reinterpret_cast<PyObject*>(&PySuper_Type)) {
        graph_break("LOAD_SUPER_ATTR with " + sup->describe());
      }
      guards_->identity(sup);
      const std::vector<VarPtr> before = stack_;
      break_stack_ = &before;
      pop();
      pop();
      pop();
      super_attr(cls, self, names[static_cast<std::size_t>(ins.arg >> 2)], (ins.arg & 1) != 0);
      break_stack_ = nullptr;
      return;
    }
    case Op::DELETE_ATTR:
      store_attr(ins, true);
      return;
    case Op::DELETE_SUBSCR:
      delete_subscr();
      return;
    case Op::STORE_SUBSCR:
      store_subscr();
      return;
    case Op::BUILD_MAP:
    case Op::BUILD_CONST_KEY_MAP: {
      const auto n = static_cast<std::size_t>(ins.arg);
      std::vector<py::object> keys;
      std::vector<VarPtr> values;
      const VarPtr key_tuple = op == Op::BUILD_CONST_KEY_MAP ? peek(1) : nullptr;
      if (key_tuple &&
          (!key_tuple->is_const() || !PyTuple_CheckExact(key_tuple->value().ptr()) ||
           static_cast<std::size_t>(PyTuple_GET_SIZE(key_tuple->value().ptr())) != n)) {
        graph_break("BUILD_CONST_KEY_MAP with keys " + key_tuple->describe());
      }
      const std::size_t below = key_tuple ? 1 : 0;
      const std::size_t per = key_tuple ? 1 : 2;
      VarPtr d = Variable::dict({}, {});
      for (std::size_t j = 0; j < n; ++j) {
        const std::size_t at = below + per * (n - j);  // depth of item j's first value
        VarPtr value = key_tuple ? peek(at) : peek(at - 1);
        py::object k;
        if (key_tuple) {
          k = py::reinterpret_borrow<py::object>(
              PyTuple_GET_ITEM(key_tuple->value().ptr(), static_cast<Py_ssize_t>(j)));
          if (PyObject_Hash(k.ptr()) == -1) {
            PyErr_Clear();
            k = py::object();
          }
        } else {
          k = hashable_key(peek(at));
        }
        const Py_ssize_t i = k ? d->find_key(k) : -2;
        if (i == -2) {
          graph_break("a dict with a key that is not a hashable constant");
        }
        if (i >= 0) {
          d->items()[static_cast<std::size_t>(i)] = std::move(value);
        } else {
          d->keys().push_back(std::move(k));
          d->items().push_back(std::move(value));
        }
      }
      if (key_tuple) {
        guards_->value(key_tuple);
      }
      for (std::size_t j = 0; j < per * n + below; ++j) {
        pop();
      }
      push(std::move(d));
      return;
    }
    case Op::MAP_ADD: {
      // [dict, ..., key, value] with the dict at depth arg + 2.
      const VarPtr d = peek(static_cast<std::size_t>(ins.arg) + 2);
      const VarPtr key = peek(2);
      const VarPtr value = peek(1);
      if (d->kind() != Variable::Kind::kDict) {
        graph_break("MAP_ADD to " + d->describe());
      }
      const py::object k = hashable_key(key);
      const Py_ssize_t i = k ? d->find_key(k) : -2;
      if (i == -2) {
        graph_break("a dict item with the key " + key->describe());
      }
      mutate(d);
      if (i >= 0) {
        d->items()[static_cast<std::size_t>(i)] = value;
      } else {
        d->keys().push_back(k);
        d->items().push_back(value);
      }
      pop();
      pop();
      return;
    }
    case Op::DICT_UPDATE:
    case Op::DICT_MERGE: {
      const VarPtr d = peek(static_cast<std::size_t>(ins.arg) + 1);
      const VarPtr other = peek(1);
      if (d->kind() != Variable::Kind::kDict || other->kind() != Variable::Kind::kDict) {
        graph_break("a dict update of " + d->describe() + " with " + other->describe());
      }
      for (const py::object& k : other->keys()) {
        if (op == Op::DICT_MERGE && (d->find_key(k) != -1 || !PyUnicode_CheckExact(k.ptr()))) {
          graph_break("keyword arguments repeated or not str (raises TypeError)");
        }
      }
      mutate(d);
      for (std::size_t j = 0; j < other->keys().size(); ++j) {
        const Py_ssize_t i = d->find_key(other->keys()[j]);
        if (i >= 0) {
          d->items()[static_cast<std::size_t>(i)] = other->items()[j];
        } else {
          d->keys().push_back(other->keys()[j]);
          d->items().push_back(other->items()[j]);
        }
      }
      pop();
      return;
    }
    case Op::BUILD_SET: {
      const auto n = static_cast<std::size_t>(ins.arg);
      VarPtr set = Variable::set({});
      std::vector<py::object> keys;
      for (std::size_t j = n; j > 0; --j) {
        py::object k = hashable_key(peek(j));
        const Py_ssize_t i = k ? set->find_key(k) : -2;
        if (i == -2) {
          graph_break("a set of " + peek(j)->describe());
        }
        keys.push_back(std::move(k));
      }
      if (!keys.empty()) {
        set_update(set, keys, py::object());
      }
      for (std::size_t j = 0; j < n; ++j) {
        pop();
      }
      push(std::move(set));
      return;
    }
    case Op::SET_ADD:
    case Op::SET_UPDATE: {
      const VarPtr set = peek(static_cast<std::size_t>(ins.arg) + 1);
      const VarPtr value = peek(1);
      if (set->kind() != Variable::Kind::kSet) {
        graph_break("a set update of " + set->describe());
      }
      std::vector<VarPtr> values;
      if (op == Op::SET_ADD) {
        values.push_back(value);
      } else if (value->kind() == Variable::Kind::kTuple ||
                 value->kind() == Variable::Kind::kList) {
        values = value->items();
      } else if (value->is_const() && (PyTuple_CheckExact(value->value().ptr()) ||
                                       PyFrozenSet_CheckExact(value->value().ptr()))) {
        values = const_items(value);
      } else {
        graph_break("a set update with " + value->describe());
      }
      std::vector<py::object> keys;
      for (const VarPtr& v : values) {
        py::object k = hashable_key(v);
        if (!k || set->find_key(k) == -2) {
          graph_break("a set of " + v->describe());
        }
        keys.push_back(std::move(k));
      }
      mutate(set);
      const bool frozen = value->is_const() && PyFrozenSet_CheckExact(value->value().ptr());
      set_update(set, keys, frozen ? value->value() : py::object());
      pop();
      return;
    }
    case Op::CALL_FUNCTION_EX:
      call_function_ex(ins.arg);
      return;
    case Op::KW_NAMES:
      if (!in_group_) {
        in_group_ = true;
        group_first_ = pc_;
      }
      kwnames_ = consts[static_cast<std::size_t>(ins.arg)];
      return;
    case Op::PRECALL:
      if (!in_group_) {
        in_group_ = true;
        group_first_ = pc_;
      }
      return;
    case Op::CALL: {
      if (!in_group_) {
        group_first_ = pc_;
        in_group_ = true;
      }
      const py::object kw = std::move(kwnames_);
      kwnames_ = py::object();
      call(ins.arg, kw);
      in_group_ = false;
      return;
    }
    case Op::CALL_KW: {
      // 3.13: [callable, self or NULL, args..., keyword names].
      const VarPtr& names_var = peek(1);
      if (!names_var->is_const() || !PyTuple_CheckExact(names_var->value().ptr())) {
        graph_break("keyword names that are not a constant tuple");
      }
      call(ins.arg, names_var->value(), 1);
      return;
    }
    case Op::kUnknown:
      break;
  }
  graph_break(std::string("opcode ") + bytecode::opcode_info(ins.opcode).name +
              " is not simulated");
}

}  // namespace sot::translator
