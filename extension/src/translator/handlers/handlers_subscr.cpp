// Subscripts: BINARY_SUBSCR, BINARY_SLICE, STORE_SUBSCR, DELETE_SUBSCR (arrays first:
// array_ops.cpp).
#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "translator/executor_support.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

void OpcodeExecutor::subscript(bool slice) {
  const std::size_t n = slice ? 3 : 2;
  if (array_subscript(n) || (!slice && list_subscript())) {
    return;
  }
  const VarPtr container = peek(n);
  const py::object key = subscript_key(slice);
  VarPtr item;
  if (!slice) {
    item = item_of_built(container, key);
    if (!item) {
      item = item_of_model(container, key);
    }
    if (!item) {
      item = item_of_input(container, key);
    }
  }
  if (!item) {
    item = item_of_constant(container, key);
  }
  for (std::size_t j = 0; j < n; ++j) {
    pop();
  }
  push(std::move(item));
}

py::object OpcodeExecutor::subscript_key(bool slice) {
  if (slice) {
    const VarPtr& start = peek(2);
    const VarPtr& stop = peek(1);
    if (!start->is_const() || !stop->is_const()) {
      graph_break("a slice of " + start->describe() + " and " + stop->describe());
    }
    guards_->value(start);
    guards_->value(stop);
    return py::reinterpret_steal<py::object>(
        PySlice_New(start->value().ptr(), stop->value().ptr(), nullptr));
  }
  const VarPtr& k = peek(1);
  if (!k->is_const()) {
    graph_break("a subscript with " + k->describe());
  }
  guards_->value(k);
  return k->value();
}

VarPtr OpcodeExecutor::item_of_built(const VarPtr& container, const py::object& key) {
  if (container->kind() == Variable::Kind::kDict) {
    const Py_ssize_t i = container->find_key(key);
    if (i < 0) {
      graph_break("a dict subscript with a missing key (raises KeyError)");
    }
    return container->items()[static_cast<std::size_t>(i)];
  }
  // Items of a tuple or list built inside, by constant index: the item's own Variable.
  if ((container->kind() == Variable::Kind::kTuple || container->kind() == Variable::Kind::kList) &&
      PyLong_CheckExact(key.ptr())) {
    const Py_ssize_t i =
        item_index(container, key.ptr(), "an index out of range (raises IndexError)");
    return container->items()[static_cast<std::size_t>(i)];
  }
  return nullptr;
}

VarPtr OpcodeExecutor::item_of_model(const VarPtr& container, const py::object& key) {
  // An item of a container the frame changed: from its model.
  const VarPtr m = model_of(container);
  if (!m) {
    return nullptr;
  }
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
  return item;
}

VarPtr OpcodeExecutor::item_of_input(const VarPtr& container, const py::object& key) {
  // An item of a list, tuple or dict received from outside (exact types, a constant key it
  // has): read again by generated code as x[key], under guards on its type (and length).
  if (container->kind() != Variable::Kind::kObject || !container->tracker().is_input() ||
      std::find(cleared_.begin(), cleared_.end(), container) != cleared_.end()) {
    return nullptr;
  }
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
  if (item == nullptr) {
    return nullptr;
  }
  guards_->type(container);
  Tracker t = Tracker::item(container, key);
  VarPtr v = Variable::from_input(item, std::move(t));
  if (PyDict_CheckExact(o)) {
    guards_->type(v);  // the key is there (a missing one fails the guard)
  }
  return v;
}

VarPtr OpcodeExecutor::item_of_constant(const VarPtr& container, const py::object& key) {
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
  return v;
}

void OpcodeExecutor::op_binary_subscr(const bytecode::Instruction& /*ins*/) {
  drop_values(2);
  subscript(false);
}

void OpcodeExecutor::op_binary_slice(const bytecode::Instruction& /*ins*/) {
  subscript(true);
}

void OpcodeExecutor::op_store_subscr(const bytecode::Instruction& /*ins*/) {
  store_subscr();
}

void OpcodeExecutor::op_store_slice(const bytecode::Instruction& /*ins*/) {
  // [value, container, start, stop]: container[start:stop] = value, as STORE_SUBSCR with the slice
  // (a break reports the instruction's own stack).
  const std::vector<VarPtr> original = stack_;
  // (x[i:i + 4] = v in a loop body: a slice of values of the graph, as BINARY_SLICE's)
  VarPtr ranged = is_array_like(peek(3)) ? ranged_slice({peek(2), peek(1)}) : nullptr;
  VarPtr key = ranged ? std::move(ranged) : Variable::constant(subscript_key(true));
  break_stack_ = &original;
  pop();
  pop();
  push(std::move(key));
  store_subscr();
  break_stack_ = nullptr;
}

void OpcodeExecutor::op_delete_subscr(const bytecode::Instruction& /*ins*/) {
  delete_subscr();
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
  if (container == effects().model) {
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
  if (container == effects().model) {
    record_model_op("__delitem__", {key});
  }
  pop();
  pop();
}

}  // namespace sot::translator
