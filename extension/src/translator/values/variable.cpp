#include "translator/values/variable.hpp"

#include <utility>

#include "capture/describe.hpp"

namespace py = pybind11;

namespace sot::translator {

namespace {
std::string short_repr(const py::handle& value) {
  constexpr std::size_t kMax = 60;
  return capture::describe_value(value.ptr(), kMax);
}
}  // namespace

bool Variable::is_constant_value(py::handle value) {
  PyObject* v = value.ptr();
  if (v == Py_None || v == Py_Ellipsis || PyBool_Check(v) || PyLong_CheckExact(v) ||
      PyFloat_CheckExact(v) || PyComplex_CheckExact(v) || PyUnicode_CheckExact(v) ||
      PyBytes_CheckExact(v) || PyRange_Check(v)) {
    return true;
  }
  if (PySlice_Check(v)) {
    auto* s = reinterpret_cast<PySliceObject*>(v);
    return is_constant_value(s->start) && is_constant_value(s->stop) && is_constant_value(s->step);
  }
  if (PyTuple_CheckExact(v) || PyFrozenSet_CheckExact(v)) {
    // A frozenset of constants, or a tuple of constants (shallow recursion is bounded by nesting
    // depth, which the compiler bounds too).
    const py::object items = py::reinterpret_borrow<py::object>(value);
    for (const py::handle item : items) {
      if (!is_constant_value(item)) {
        return false;
      }
    }
    return true;
  }
  return false;
}

VarPtr Variable::constant(py::object value, Tracker tracker) {
  return std::make_shared<Variable>(Kind::kConst, std::move(value), std::move(tracker));
}

VarPtr Variable::object(py::object value, Tracker tracker) {
  return std::make_shared<Variable>(Kind::kObject, std::move(value), std::move(tracker));
}

VarPtr Variable::null() {
  return std::make_shared<Variable>(Kind::kNull, py::none(), Tracker{});
}

VarPtr Variable::tuple(std::vector<VarPtr> items) {
  auto v = std::make_shared<Variable>(Kind::kTuple, py::none(), Tracker{});
  v->items_ = std::move(items);
  return v;
}

VarPtr Variable::slice(std::vector<VarPtr> parts) {
  auto v = std::make_shared<Variable>(Kind::kSlice, py::none(), Tracker{});
  v->items_ = std::move(parts);
  return v;
}

VarPtr Variable::list(std::vector<VarPtr> items) {
  auto v = std::make_shared<Variable>(Kind::kList, py::none(), Tracker{});
  v->items_ = std::move(items);
  return v;
}

VarPtr Variable::iter(py::object sequence, Py_ssize_t position) {
  auto v = std::make_shared<Variable>(Kind::kIter, std::move(sequence), Tracker{});
  v->position_ = position;
  return v;
}

VarPtr Variable::iterator(IterKind kind, std::vector<VarPtr> parts, py::object value) {
  auto v =
      std::make_shared<Variable>(Kind::kIter, value ? std::move(value) : py::none(), Tracker{});
  v->iter_kind_ = kind;
  if (kind == IterKind::kItems) {
    v->snapshot_ = std::move(parts);
  } else {
    v->items_ = std::move(parts);
  }
  return v;
}

VarPtr Variable::dict(std::vector<py::object> keys, std::vector<VarPtr> values) {
  auto v = std::make_shared<Variable>(Kind::kDict, py::none(), Tracker{});
  v->keys_ = std::move(keys);
  v->items_ = std::move(values);
  return v;
}

VarPtr Variable::set(std::vector<py::object> keys) {
  auto v = std::make_shared<Variable>(Kind::kSet, py::none(), Tracker{});
  v->keys_ = std::move(keys);
  return v;
}

VarPtr Variable::instance(VarPtr cls) {
  auto v = std::make_shared<Variable>(Kind::kInstance, py::none(), Tracker{});
  v->initial_ = std::move(cls);
  return v;
}

Py_ssize_t Variable::find_key(const py::handle& key) const {
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    const int eq = PyObject_RichCompareBool(keys_[i].ptr(), key.ptr(), Py_EQ);
    if (eq < 0) {
      PyErr_Clear();
      return -2;
    }
    if (eq == 1) {
      return static_cast<Py_ssize_t>(i);
    }
  }
  return -1;
}

VarPtr Variable::method(VarPtr self, py::object name) {
  auto v = std::make_shared<Variable>(Kind::kMethod, std::move(name), Tracker{});
  v->items_.push_back(std::move(self));
  return v;
}

VarPtr Variable::cell(VarPtr contents, int slot, bool outside, Tracker tracker) {
  auto v = std::make_shared<Variable>(Kind::kCell, py::none(), std::move(tracker));
  v->slot_ = slot;
  v->outside_ = outside;
  v->initial_ = contents;
  v->set_contents(std::move(contents));
  return v;
}

VarPtr Variable::function(py::object code, std::vector<VarPtr> closure) {
  auto v = std::make_shared<Variable>(Kind::kFunction, std::move(code), Tracker{});
  v->items_ = std::move(closure);
  return v;
}

VarPtr Variable::from_input(py::handle value, Tracker tracker) {
  const auto object = py::reinterpret_borrow<py::object>(value);
  return is_constant_value(value) ? constant(object, std::move(tracker))
                                  : Variable::object(object, std::move(tracker));
}

VarPtr Variable::array(int id, std::string text) {
  auto v = std::make_shared<Variable>(Kind::kArray, py::none(), Tracker{});
  v->slot_ = id;
  v->text_ = std::move(text);
  return v;
}

std::string Variable::describe() const {
  switch (kind_) {
    case Kind::kArray:
      // (int() or float() of a NumPy value, made where the graph runs: its value is not known here)
      return text_.rfind("Python ", 0) == 0 ? text_ + " made in the graph (its value is not known)"
                                            : "NumPy value " + text_;
    case Kind::kConst:
      return std::string(Py_TYPE(value_.ptr())->tp_name) + " " + short_repr(value_);
    case Kind::kObject:
      return short_repr(value_);
    case Kind::kTuple:
      return "tuple of " + std::to_string(items_.size());
    case Kind::kList:
      return "list of " + std::to_string(items_.size());
    case Kind::kNull:
      return "NULL";
    case Kind::kIter:
      return "iterator at " + std::to_string(position_);
    case Kind::kDict:
      return "dict of " + std::to_string(keys_.size());
    case Kind::kSet:
      return "set of " + std::to_string(keys_.size());
    case Kind::kSuper:
      return "super()";
    case Kind::kSlice:
      return "slice of values of the graph";
    case Kind::kListBuffer:
      return "list appended to in a loop body";
    case Kind::kInstance:
      return std::string(reinterpret_cast<PyTypeObject*>(initial_->value().ptr())->tp_name) +
             " instance made in the frame";
    case Kind::kMethod:
      return "method " + py::str(value_).cast<std::string>() + " of a " + items_[0]->describe();
    case Kind::kCell:
      return items_.empty() ? "an empty cell" : "a cell of " + items_[0]->describe();
    case Kind::kFunction:
      return "function " +
             py::str(reinterpret_cast<PyCodeObject*>(value_.ptr())->co_qualname)
                 .cast<std::string>() +
             " (made in the frame)";
  }
  return "?";
}

std::string tracker_path(const Tracker& tracker, const py::tuple& localsplus_names) {
  switch (tracker.kind) {
    case Tracker::Kind::kLocal:
      if (tracker.key) {
        return py::str(tracker.key).cast<std::string>();
      }
      return py::str(localsplus_names[static_cast<std::size_t>(tracker.index)]).cast<std::string>();
    case Tracker::Kind::kGlobal:
      return py::str(tracker.key).cast<std::string>();
    case Tracker::Kind::kAttr:
      return tracker_path(tracker.base->tracker(), localsplus_names) + "." +
             py::str(tracker.key).cast<std::string>();
    case Tracker::Kind::kItem:
      return tracker_path(tracker.base->tracker(), localsplus_names) + "[" +
             short_repr(tracker.key) + "]";
    case Tracker::Kind::kCreated:
      return "<made in the frame>";
    case Tracker::Kind::kModule:
      return "sys.modules[" + short_repr(tracker.key) + "]";
  }
  return "?";
}

}  // namespace sot::translator
