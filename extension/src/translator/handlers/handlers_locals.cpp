// Locals, constants and globals: LOAD_FAST and its forms, STORE_FAST, DELETE_FAST, LOAD_CONST,
// the returns, LOAD_GLOBAL, STORE_GLOBAL, DELETE_GLOBAL; and what dropping a local may run.
#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "bytecode/localsplus.hpp"
#include "bytecode/operands.hpp"
#include "translator/executor_support.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

VarPtr OpcodeExecutor::local_or_break(int index) {
  if (index < 0 || static_cast<std::size_t>(index) >= locals_.size()) {
    fail("a local index out of range (malformed bytecode)");
  }
  VarPtr v = locals_[static_cast<std::size_t>(index)];
  if (!v) {
    graph_break("a read of an unbound local (raises UnboundLocalError)");
  }
  return v;
}

void OpcodeExecutor::store_local(int index, VarPtr v) {
  if (index < 0 || static_cast<std::size_t>(index) >= locals_.size()) {
    fail("a local index out of range (malformed bytecode)");
  }
  locals_[static_cast<std::size_t>(index)] = std::move(v);
}

// Cell and free slots hold cells: the fast-local opcodes touch them only in 3.12's inlined
// comprehensions (saving and restoring a cell around MAKE_CELL) and in a resume function's
// prologue (storing the caller's cells); anything else with them runs for real.
bool OpcodeExecutor::cell_slot(int index) const {
  const std::string& kinds = code_.localsplus_kinds();
  return index >= 0 && static_cast<std::size_t>(index) < kinds.size() &&
         bytecode::localsplus::is_cell_or_free(kinds[static_cast<std::size_t>(index)]);
}

void OpcodeExecutor::no_cell_slot(int index) {
  if (cell_slot(index)) {
    graph_break("a fast-local access to a cell");
  }
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

// Why dropping the last reference to `o` (whose freeing runs code) breaks the graph.
std::string finalizer_reason(const PyObject* o) {
  return "the last reference to an object with a finalizer (" + std::string(Py_TYPE(o)->tp_name) +
         ") is dropped here: its __del__ or finally runs now";
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
    graph_break(finalizer_reason(o));
  }
}

void OpcodeExecutor::drop_values(std::size_t n) {
  if (depth_ > 0 || pc_ < inputs_.resume_prologue_end || n > stack_.size()) {
    return;
  }
  for (std::size_t k = 1; k <= n; ++k) {
    const VarPtr& v = peek(k);
    if (!v) {
      continue;
    }
    // (a value the frame received on its stack: a resume function's, an item of its argument
    // list; values read from attributes and items of others stay held by those)
    const Tracker& t = v->tracker();
    if (t.kind != Tracker::Kind::kItem || !t.base ||
        t.base->tracker().kind != Tracker::Kind::kLocal) {
      continue;
    }
    const auto taken = std::count(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end(), v);
    if (std::find(locals_.begin(), locals_.end(), v) != locals_.end() ||
        std::count(stack_.begin(), stack_.end(), v) > taken) {
      continue;  // another local or stack slot still holds it
    }
    if (const PyObject* o = finalized_by_dropping(v, 0); o != nullptr) {
      graph_break(finalizer_reason(o));
    }
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

VarPtr OpcodeExecutor::load_global(const py::object& name) {
  if (inputs_.globals_var) {
    // A function of another module: fn.__globals__[name], or fn.__builtins__[name] when its
    // globals have no such name (guarded absent).
    if (effects().modeled && effects().modeled->value().ptr() == inputs_.globals) {
      graph_break("a global read after a change to that module's namespace");
    }
    const std::string key = "global " + str_of(name);
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
  for (auto it = effects().global_stores.rbegin(); it != effects().global_stores.rend(); ++it) {
    if (PyObject_RichCompareBool(it->first.ptr(), name.ptr(), Py_EQ) == 1) {
      return it->second;  // nullptr: deleted
    }
    PyErr_Clear();
  }
  const std::string cache_key = "global " + str_of(name);
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

void OpcodeExecutor::op_nop(const bytecode::Instruction& /*ins*/) {}

void OpcodeExecutor::op_resume(const bytecode::Instruction& /*ins*/) {
  started_ = true;
}

void OpcodeExecutor::op_load_fast(const bytecode::Instruction& ins) {
  // LOAD_FAST of a cell slot pushes the cell itself (3.13 builds closures so).
  const auto i = static_cast<std::size_t>(ins.arg);
  if (!(i < locals_.size() && locals_[i] && locals_[i]->kind() == Variable::Kind::kCell)) {
    no_cell_slot(ins.arg);
  }
  push(local_or_break(ins.arg));
}

void OpcodeExecutor::op_load_fast_and_clear(const bytecode::Instruction& ins) {
  no_cell_slot(ins.arg);
  VarPtr v = locals_.at(static_cast<std::size_t>(ins.arg));
  push(v ? v : Variable::null());
  locals_[static_cast<std::size_t>(ins.arg)] = nullptr;
}

void OpcodeExecutor::op_load_fast_load_fast(const bytecode::Instruction& ins) {
  no_cell_slot(ins.arg >> 4);
  no_cell_slot(ins.arg & 15);
  push(local_or_break(ins.arg >> 4));
  push(local_or_break(ins.arg & 15));
}

void OpcodeExecutor::op_store_fast(const bytecode::Instruction& ins) {
  if (pc_ >= inputs_.resume_prologue_end) {
    no_cell_slot(ins.arg);
  }
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
}

void OpcodeExecutor::op_store_fast_load_fast(const bytecode::Instruction& ins) {
  no_cell_slot(ins.arg >> 4);
  no_cell_slot(ins.arg & 15);
  drop_local(ins.arg >> 4);
  store_local(ins.arg >> 4, pop());
  push(local_or_break(ins.arg & 15));
}

void OpcodeExecutor::op_store_fast_store_fast(const bytecode::Instruction& ins) {
  no_cell_slot(ins.arg >> 4);
  no_cell_slot(ins.arg & 15);
  drop_local(ins.arg >> 4);
  drop_local(ins.arg & 15);
  store_local(ins.arg >> 4, pop());
  store_local(ins.arg & 15, pop());
}

void OpcodeExecutor::op_delete_fast(const bytecode::Instruction& ins) {
  no_cell_slot(ins.arg);
  local_or_break(ins.arg);
  drop_local(ins.arg);
  locals_[static_cast<std::size_t>(ins.arg)] = nullptr;
}

void OpcodeExecutor::op_load_const(const bytecode::Instruction& ins) {
  push(Variable::from_input(code_.consts()[static_cast<std::size_t>(ins.arg)], Tracker{}));
}

void OpcodeExecutor::op_return_value(const bytecode::Instruction& /*ins*/) {
  finish(pop());
}

void OpcodeExecutor::op_return_const(const bytecode::Instruction& ins) {
  finish(Variable::from_input(code_.consts()[static_cast<std::size_t>(ins.arg)], Tracker{}));
}

void OpcodeExecutor::op_load_global(const bytecode::Instruction& ins) {
  const py::object name =
      code_.names()[static_cast<std::size_t>(bytecode::operand::global_name(ins.arg))];
  VarPtr v = load_global(name);
  if (!v) {
    graph_break("global name '" + str_of(name) + "' is not defined (raises NameError)");
  }
  push_callable(std::move(v), bytecode::operand::global_pushes_null(ins.arg));
}

void OpcodeExecutor::op_store_global(const bytecode::Instruction& ins) {
  if (inputs_.globals_var) {
    graph_break("an assignment to a global of another module");
  }
  // Recorded, and replayed by the generated code once it has loaded every value it needs.
  effects().global_stores.emplace_back(code_.names()[static_cast<std::size_t>(ins.arg)], pop());
}

void OpcodeExecutor::op_delete_global(const bytecode::Instruction& ins) {
  // The global must exist (the frame assigned it, or a guard checks it is there).
  const py::object name = code_.names()[static_cast<std::size_t>(ins.arg)];
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
  effects().global_stores.emplace_back(name, nullptr);
}

}  // namespace sot::translator
