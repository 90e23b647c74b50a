// Iteration: GET_ITER, FOR_ITER, END_FOR, UNPACK_SEQUENCE, and the iterators the translator models
// (over built containers, constants, ranges, enumerate/zip/map/filter/reversed).
#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "bytecode/operands.hpp"
#include "translator/executor_support.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

void OpcodeExecutor::op_get_iter(const bytecode::Instruction& /*ins*/) {
  VarPtr it = make_iterator(peek(1));
  if (!it) {
    graph_break("iteration over " + peek(1)->describe());
  }
  pop();
  push(std::move(it));
}

void OpcodeExecutor::op_for_iter(const bytecode::Instruction& ins) {
  const VarPtr it = peek(1);
  if (it->kind() != Variable::Kind::kIter) {
    graph_break("next() of " + it->describe());
  }
  if (capture_loop(ins, it)) {  // the whole loop is one op of the graph (loop_capture.cpp)
    remember(it);
    it->set_position(-1);
    pop();
    next_ = code_.index_of(ins.target) + bytecode::operand::for_iter_exit_skip();
    if (exit_return_) {
      return_at_exit();  // (the body may return from the loop: loop_exits.cpp)
    }
    return;
  }
  if (it->iter_kind() == Variable::IterKind::kConstSeq && it->position() >= 0 &&
      PyRange_Check(it->value().ptr())) {
    const Py_ssize_t n = PyObject_Length(it->value().ptr());
    if (n - it->position() > static_cast<Py_ssize_t>(kMaxSteps)) {
      graph_break("iteration over " + it->describe() + " (too long to unroll)");
    }
  }
  std::vector<VarPtr> one = take(it, false);
  VarPtr item = one.empty() ? nullptr : one[0];
  if (!item) {
    pop();
    next_ = code_.index_of(ins.target) + bytecode::operand::for_iter_exit_skip();
    return;
  }
  push(std::move(item));
}

void OpcodeExecutor::op_end_for(const bytecode::Instruction& /*ins*/) {
  for (int i = 0; i < bytecode::operand::end_for_pops(); ++i) {
    pop();
  }
}

void OpcodeExecutor::op_unpack_sequence(const bytecode::Instruction& ins) {
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
}

VarPtr OpcodeExecutor::make_iterator(const VarPtr& v) {
  using IK = Variable::IterKind;
  if (is_array_like(v)) {
    return array_iterator(v);  // its rows (array_iteration.cpp)
  }
  switch (v->kind()) {
    case Variable::Kind::kIter: {
      if (v->iter_kind() != IK::kDictView || v->start() != 1) {
        return v;  // iter(it) is it
      }
      // A dict view: a new iterator over the dict as it is now.
      const VarPtr& d = v->items()[0];
      const std::string name = str_of(v->value());
      if (d->kind() == Variable::Kind::kObject) {
        return input_dict_iterator(d, name);  // (input_dicts.cpp)
      }
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
      // (a long range may still be one loop op: FOR_ITER breaks where it is not)
      if (n < 0 || (static_cast<std::size_t>(n) > kMaxSteps && !PyRange_Check(o))) {
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
      if (is_input_dict(v)) {
        return input_dict_iterator(v, "keys");  // (input_dicts.cpp)
      }
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
      if (is_array_like(list)) {
        check_unrolled_row(list, pos);
        item = array_row(list, pos);  // made as it is taken
        break;
      }
      const VarPtr model = model_of(list);
      if (list->kind() == Variable::Kind::kObject && !model && effects().modeled) {
        // Another object from outside changed: it may be this list under another name, whose
        // iterator would see the change. The loop goes on for real from here.
        graph_break(
            "iterating a list received from outside after a change to another object "
            "received from outside (they may be one)");
      }
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
      // (start + pos as Python adds them: a start near 2**63 goes past 64-bit ints)
      const py::object count = py::int_(it->start()).attr("__add__")(py::int_(pos));
      item = Variable::tuple({Variable::constant(count), inner});
      break;
    }
    case IK::kMap:
    case IK::kFilter:
      if (!next_of_map(it, &item)) {
        return nullptr;
      }
      break;
    case IK::kZip:
      if (!next_of_zip(it, &item)) {
        return nullptr;
      }
      break;
    case IK::kDictView:
      if (it->start() == 1) {
        graph_break("next() of a dict view");
      }
      if (it->items()[0]->kind() == Variable::Kind::kObject) {
        check_input_dict_step(it);
      } else if (it->items()[0]->version() != it->seen_version()) {
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

bool OpcodeExecutor::next_of_map(const VarPtr& it, VarPtr* item) {
  using IK = Variable::IterKind;
  // The step runs the function: when it cannot be simulated the graph breaks here, and take()
  // puts the iterators and the calls' side effects back so that the step runs for real.
  for (;;) {
    std::vector<VarPtr> parts;
    for (std::size_t k = 1; k < it->items().size(); ++k) {
      VarPtr next = iter_next(it->items()[k]);
      if (!next) {
        return false;
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
        *item = parts[0];
        return true;
      }
      continue;
    }
    std::string why;
    VarPtr r = call_value(fn, parts, &why);
    if (!r) {
      graph_break("a call of " + fn->describe() + " in a map or filter (" + why + ")");
    }
    if (it->iter_kind() == IK::kMap) {
      *item = std::move(r);
      return true;
    }
    bool keep = false;
    if (!truth(r, &keep)) {
      graph_break("the truth of " + r->describe() + " in a filter");
    }
    if (keep) {
      *item = parts[0];
      return true;
    }
  }
}

bool OpcodeExecutor::next_of_zip(const VarPtr& it, VarPtr* item) {
  std::vector<VarPtr> parts;
  for (const VarPtr& inner : it->items()) {
    VarPtr next = iter_next(inner);
    if (!next) {
      return false;  // the iterators before it have advanced, as in CPython
    }
    parts.push_back(std::move(next));
  }
  if (parts.empty()) {
    return false;
  }
  *item = Variable::tuple(std::move(parts));
  return true;
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
  if (is_array_like(v)) {
    return array_rows(v, items);  // every row, now (array_iteration.cpp)
  }
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

}  // namespace sot::translator
