// Building containers: tuples, lists, slices, dicts and sets (BUILD_*, LIST_APPEND/EXTEND,
// LIST_TO_TUPLE, MAP_ADD, DICT_UPDATE/MERGE, SET_ADD/UPDATE). Containers built inside are modelled
// item by item.
#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "translator/executor_support.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

void dict_update_items(const VarPtr& d, const VarPtr& other) {
  for (std::size_t j = 0; j < other->keys().size(); ++j) {
    const Py_ssize_t i = d->find_key(other->keys()[j]);
    if (i >= 0) {
      d->items()[static_cast<std::size_t>(i)] = other->items()[j];
    } else {
      d->keys().push_back(other->keys()[j]);
      d->items().push_back(other->items()[j]);
    }
  }
}

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

void OpcodeExecutor::list_to_tuple() {
  VarPtr list = peek(1);
  if (list->kind() != Variable::Kind::kList || list->tracker().is_input()) {
    graph_break("tuple() of " + list->describe());
  }
  pop();
  push(Variable::tuple(list->items()));
}

void OpcodeExecutor::build_sequence(const bytecode::Instruction& ins, bool tuple) {
  std::vector<VarPtr> items(static_cast<std::size_t>(ins.arg));
  for (std::size_t i = items.size(); i > 0; --i) {
    items[i - 1] = pop();
  }
  push(tuple ? Variable::tuple(std::move(items)) : Variable::list(std::move(items)));
}

void OpcodeExecutor::op_build_tuple(const bytecode::Instruction& ins) {
  build_sequence(ins, true);
}

void OpcodeExecutor::op_build_list(const bytecode::Instruction& ins) {
  build_sequence(ins, false);
}

void OpcodeExecutor::op_list_append(const bytecode::Instruction& ins) {
  VarPtr& list = peek(static_cast<std::size_t>(ins.arg) + 1);
  if (list->kind() != Variable::Kind::kList || list->tracker().is_input()) {
    graph_break("append to " + list->describe());
  }
  mutate(list);
  list->items().push_back(pop());
}

void OpcodeExecutor::op_list_extend(const bytecode::Instruction& ins) {
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

void OpcodeExecutor::op_list_to_tuple(const bytecode::Instruction& /*ins*/) {
  list_to_tuple();
}

void OpcodeExecutor::op_build_slice(const bytecode::Instruction& ins) {
  std::vector<VarPtr> vars;
  vars.reserve(static_cast<std::size_t>(ins.arg));
  for (int i = 0; i < ins.arg; ++i) {
    vars.push_back(peek(static_cast<std::size_t>(ins.arg - i)));
  }
  if (VarPtr s = ranged_slice(vars)) {  // L[i, :i] in a loop body (loop_keys.cpp)
    for (int i = 0; i < ins.arg; ++i) {
      pop();
    }
    push(std::move(s));
    return;
  }
  std::vector<py::object> parts;
  for (const VarPtr& v : vars) {
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
}

void OpcodeExecutor::build_map(const bytecode::Instruction& ins, bool const_keys) {
  const auto n = static_cast<std::size_t>(ins.arg);
  std::vector<py::object> keys;
  std::vector<VarPtr> values;
  const VarPtr key_tuple = const_keys ? peek(1) : nullptr;
  if (key_tuple && (!key_tuple->is_const() || !PyTuple_CheckExact(key_tuple->value().ptr()) ||
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
}

void OpcodeExecutor::op_build_map(const bytecode::Instruction& ins) {
  build_map(ins, false);
}

void OpcodeExecutor::op_build_const_key_map(const bytecode::Instruction& ins) {
  build_map(ins, true);
}

void OpcodeExecutor::op_map_add(const bytecode::Instruction& ins) {
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
}

void OpcodeExecutor::dict_update(const bytecode::Instruction& ins, bool merge) {
  const VarPtr d = peek(static_cast<std::size_t>(ins.arg) + 1);
  const VarPtr other = peek(1);
  if (d->kind() != Variable::Kind::kDict || other->kind() != Variable::Kind::kDict) {
    graph_break("a dict update of " + d->describe() + " with " + other->describe());
  }
  for (const py::object& k : other->keys()) {
    if (merge && (d->find_key(k) != -1 || !PyUnicode_CheckExact(k.ptr()))) {
      graph_break("keyword arguments repeated or not str (raises TypeError)");
    }
  }
  mutate(d);
  dict_update_items(d, other);
  pop();
}

void OpcodeExecutor::op_dict_update(const bytecode::Instruction& ins) {
  dict_update(ins, false);
}

void OpcodeExecutor::op_dict_merge(const bytecode::Instruction& ins) {
  dict_update(ins, true);
}

void OpcodeExecutor::op_build_set(const bytecode::Instruction& ins) {
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
}

void OpcodeExecutor::set_add(const bytecode::Instruction& ins, bool add) {
  const VarPtr set = peek(static_cast<std::size_t>(ins.arg) + 1);
  const VarPtr value = peek(1);
  if (set->kind() != Variable::Kind::kSet) {
    graph_break("a set update of " + set->describe());
  }
  std::vector<VarPtr> values;
  if (add) {
    values.push_back(value);
  } else if (value->kind() == Variable::Kind::kTuple || value->kind() == Variable::Kind::kList) {
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
}

void OpcodeExecutor::op_set_add(const bytecode::Instruction& ins) {
  set_add(ins, true);
}

void OpcodeExecutor::op_set_update(const bytecode::Instruction& ins) {
  set_add(ins, false);
}

}  // namespace sot::translator
