// Side effects (side_effects.hpp), and the executor's use of them: the one list or dict received
// from outside that the frame changes (its model, made on the first change), marks to roll back to.
#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "translator/executor_support.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

void SideEffects::wrote_cell(const VarPtr& cell) {
  if (std::find(cells.begin(), cells.end(), cell) == cells.end()) {
    cells.push_back(cell);
  }
}

SideEffects::Mark SideEffects::mark() const {
  Mark m;
  m.undo = undo_.size();
  m.stores = global_stores.size();
  m.cells = cells.size();
  m.attrs = attr_stores.size();
  m.ops = model_ops.size();
  m.modeled = modeled != nullptr;
  return m;
}

void SideEffects::rollback(const Mark& m) {
  while (undo_.size() > m.undo) {
    undo_.back().first->restore(std::move(undo_.back().second));
    undo_.pop_back();
  }
  global_stores.resize(m.stores);
  cells.resize(m.cells);
  attr_stores.resize(m.attrs);
  model_ops.resize(m.ops);
  if (!m.modeled) {
    modeled = nullptr;
    model = nullptr;
  }
}

bool SideEffects::changed_since(const Mark& m, std::uint64_t serial) const {
  if (global_stores.size() != m.stores || cells.size() != m.cells ||
      attr_stores.size() != m.attrs || model_ops.size() != m.ops ||
      (modeled != nullptr) != m.modeled) {
    return true;
  }
  for (std::size_t k = m.undo; k < undo_.size(); ++k) {
    if (undo_[k].first->serial() <= serial) {
      return true;
    }
  }
  return false;
}

void OpcodeExecutor::remember(const VarPtr& list) {
  if (depth_ > 0 || shared_->loop_depth > 0 || shared_->cond_depth > 0) {
    effects().log(list);
  }
}

OpcodeExecutor::Mark OpcodeExecutor::mark() const {
  Mark m;
  m.effects = shared_->effects.mark();
  m.cleared = cleared_.size();
  if (shared_->arrays) {
    m.graph = shared_->arrays->mark();
  }
  return m;
}

void OpcodeExecutor::rollback(const Mark& m) {
  shared_->effects.rollback(m.effects);
  cleared_.resize(m.cleared);
  if (shared_->arrays) {
    shared_->arrays->rollback(m.graph);
  }
}

void OpcodeExecutor::mutate(const VarPtr& v) {
  remember(v);
  v->bump();
}

VarPtr OpcodeExecutor::model_of(const VarPtr& v) const {
  return v && v == effects().modeled ? effects().model : nullptr;
}

void OpcodeExecutor::record_model_op(const char* name, std::vector<VarPtr> args) {
  PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(effects().modeled->value().ptr()));
  ModelOp op;
  op.method = py::reinterpret_borrow<py::object>(type).attr(name);
  op.args = std::move(args);
  effects().model_ops.push_back(std::move(op));
}

void OpcodeExecutor::read_input(const VarPtr& v) {
  const VarPtr& m = effects().modeled;
  if (!m || v == m || v->kind() != Variable::Kind::kObject || !v->tracker().is_input()) {
    return;
  }
  // The generated code reads `v` through its place before it replays the frame's changes to `m`.
  // That sees what the frame sees now unless the place goes through `m` under another name: `v`
  // or a container it is an item of is `m` (they are other objects now, and guards keep them so),
  // or an attribute read on the way could find `m` as an object's __dict__ (that breaks). A place
  // inside `m` itself holds what `m` held at entry (read before the change, or its model's item).
  for (VarPtr p = v; p && p != m && p->tracker().is_input(); p = p->tracker().base) {
    if (p->value().ptr() == m->value().ptr() || p->tracker().kind == Tracker::Kind::kAttr ||
        !guards_->distinct(p, m)) {
      graph_break("a read of " + v->describe() +
                  " after a change to another object received from outside (they may be one)");
    }
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
  if (effects().modeled) {
    graph_break("a change to a second object received from outside (they may be one)");
  }
  if (PyDict_CheckExact(o) && !effects().attr_stores.empty()) {
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
  effects().modeled = v;
  effects().model = model;
  return model;
}

}  // namespace sot::translator
