// Builtins that work on the structure of modelled values (len, enumerate, zip, reversed, list,
// tuple, ...).
#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "translator/executor_support.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

VarPtr OpcodeExecutor::structural_call(const py::object& fn, const std::vector<VarPtr>& args,
                                       const py::object& kwnames) {
  const std::size_t nkw = kwnames ? static_cast<std::size_t>(PyTuple_GET_SIZE(kwnames.ptr())) : 0;
  // The builtins modelled, by name; one is called only when `fn` is the frame's builtin of that
  // name. A new builtin: a handler below, declared in opcode_executor.hpp, and a row here.
  using E = OpcodeExecutor;
  static const std::pair<const char*, VarPtr (E::*)(const std::vector<VarPtr>&)> kBuiltins[] = {
      {"len", &E::builtin_len},
      {"enumerate", &E::builtin_enumerate},
      {"zip", &E::builtin_zip},
      {"type", &E::builtin_type},
      {"isinstance", &E::builtin_isinstance},
      {"map", &E::builtin_map},
      {"filter", &E::builtin_filter},
      {"reversed", &E::builtin_reversed},
      {"tuple", &E::builtin_tuple},
      {"list", &E::builtin_list},
      {"sorted", &E::builtin_sorted},
      {"sum", &E::builtin_sum},
      {"max", &E::builtin_max},
      {"min", &E::builtin_min},
      {"abs", &E::builtin_abs},
  };
  PyObject* builtins = inputs_.builtins;
  if (builtins == nullptr || !PyDict_Check(builtins)) {
    return nullptr;
  }
  if (nkw > 0) {
    // enumerate(it, start=n) and min/max(d, key=d.get): the keywords modelled (each binds as the
    // second argument).
    const bool one = nkw == 1 && args.size() == 2 && kwnames;
    auto named = [&](const char* builtin, const char* keyword) {
      return one && PyDict_GetItemString(builtins, builtin) == fn.ptr() &&
             py::str(PyTuple_GET_ITEM(kwnames.ptr(), 0)).equal(py::str(keyword));
    };
    if (named("min", "key") || named("max", "key")) {
      return extreme_by_key(named("min", "key") ? "min" : "max", args);
    }
    return named("enumerate", "start") ? builtin_enumerate(args) : nullptr;
  }
  for (const auto& [name, handler] : kBuiltins) {
    if (PyDict_GetItemString(builtins, name) == fn.ptr()) {  // borrowed
      return (this->*handler)(args);
    }
  }
  return nullptr;
}

VarPtr OpcodeExecutor::builtin_len(const std::vector<VarPtr>& args) {
  if (args.size() != 1) {
    return nullptr;
  }
  const VarPtr& v = args[0];
  if (VarPtr n = list_length(v)) {
    return n;  // (a list appended to in a loop: loop_lists.cpp)
  }
  if (is_array_like(v)) {
    // The first dimension, relied on (static from now on); a 0-d value raises TypeError.
    const ArrayOperand a = array_operand(v);
    if (a.kind != ArrayOperand::Kind::kValue || array_info(a.id).ndim() == 0) {
      return nullptr;
    }
    if (VarPtr shape = runtime_shape(a.id)) {
      return shape
          ->items()[0];  // (a size known only where the graph runs: a Python int made there)
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

VarPtr OpcodeExecutor::builtin_enumerate(const std::vector<VarPtr>& args) {
  using IK = Variable::IterKind;
  if (args.size() != 1 && args.size() != 2) {
    return nullptr;
  }
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

VarPtr OpcodeExecutor::builtin_zip(const std::vector<VarPtr>& args) {
  using IK = Variable::IterKind;
  if (args.empty()) {
    return nullptr;
  }
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

VarPtr OpcodeExecutor::builtin_type(const std::vector<VarPtr>& args) {
  return args.size() == 1 ? type_test(args, false) : nullptr;
}

VarPtr OpcodeExecutor::builtin_isinstance(const std::vector<VarPtr>& args) {
  return args.size() == 2 ? type_test(args, true) : nullptr;
}

VarPtr OpcodeExecutor::type_test(const std::vector<VarPtr>& args, bool isinstance) {
  // type(x), isinstance(x, C): decided by x's type (guarded) when the classes have no
  // metaclass of their own (no __instancecheck__ to run).
  const VarPtr& v = args[0];
  py::object type;
  if (v->kind() == Variable::Kind::kArray && !is_array_like(v)) {
    return nullptr;  // a loop variable (an int when the body runs)
  }
  if (v->kind() == Variable::Kind::kObject && v->tracker().is_input()) {
    guards_->type(v);
    type =
        py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(Py_TYPE(v->value().ptr())));
  } else if (v->is_const()) {
    guards_->value(v);
    type =
        py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(Py_TYPE(v->value().ptr())));
  } else if (v->kind() == Variable::Kind::kArray) {
    // An ndarray, or the NumPy scalar type of its dtype.
    const graph::ValueInfo info = array_info(v->graph_id());
    const py::object np = arrays().numpy;
    type = info.scalar ? np.attr("dtype")(std::string(graph::name(info.dtype))).attr("type")
                       : np.attr("ndarray");
  } else if (v->kind() == Variable::Kind::kInstance) {
    type = v->cls()->value();  // (its class, guarded by version when the instance was made)
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
  if (!isinstance) {
    if (v->kind() == Variable::Kind::kObject) {
      Tracker t = Tracker::attr(v, py::str("__class__"));
      return Variable::object(type, std::move(t));
    }
    if (v->kind() == Variable::Kind::kInstance) {
      return v->cls();
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

VarPtr OpcodeExecutor::builtin_map(const std::vector<VarPtr>& args) {
  return args.size() >= 2 ? lazy_iterator(args, true) : nullptr;
}

VarPtr OpcodeExecutor::builtin_filter(const std::vector<VarPtr>& args) {
  return args.size() == 2 ? lazy_iterator(args, false) : nullptr;
}

VarPtr OpcodeExecutor::lazy_iterator(const std::vector<VarPtr>& args, bool map) {
  using IK = Variable::IterKind;
  std::vector<VarPtr> parts = {args[0]};
  for (std::size_t k = 1; k < args.size(); ++k) {
    VarPtr inner = make_iterator(args[k]);
    if (!inner) {
      return nullptr;
    }
    parts.push_back(std::move(inner));
  }
  return Variable::iterator(map ? IK::kMap : IK::kFilter, std::move(parts));
}

VarPtr OpcodeExecutor::builtin_reversed(const std::vector<VarPtr>& args) {
  using IK = Variable::IterKind;
  if (args.size() != 1 || args[0]->kind() != Variable::Kind::kList) {
    return nullptr;
  }
  VarPtr it = Variable::iterator(IK::kReversed, {args[0]});
  it->set_start(static_cast<Py_ssize_t>(args[0]->items().size()) - 1);
  return it;
}

VarPtr OpcodeExecutor::builtin_tuple(const std::vector<VarPtr>& args) {
  if (args.size() != 1) {
    return nullptr;
  }
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
  return items_of(args, Items::kTuple);
}

VarPtr OpcodeExecutor::builtin_list(const std::vector<VarPtr>& args) {
  return args.size() == 1 ? items_of(args, Items::kList) : nullptr;
}

VarPtr OpcodeExecutor::builtin_sorted(const std::vector<VarPtr>& args) {
  return args.size() == 1 ? items_of(args, Items::kSorted) : nullptr;
}

bool OpcodeExecutor::sorted_by_first(std::vector<VarPtr>* items) {
  // Tuples made in the frame whose first items are distinct constants, all strs or all ints
  // (`sorted(groups.items())` of a dict made in the frame): tuples compare by their first items
  // alone then, so they sort by them, whatever the rest holds (arrays, lists).
  std::vector<std::pair<py::object, VarPtr>> keyed;
  PyTypeObject* type = nullptr;
  for (const VarPtr& item : *items) {
    if (item->kind() != Variable::Kind::kTuple || item->items().empty() ||
        !item->items()[0]->is_const()) {
      return false;
    }
    const py::object key = item->items()[0]->value();
    PyTypeObject* t = Py_TYPE(key.ptr());
    if ((t != &PyUnicode_Type && t != &PyLong_Type) || (type != nullptr && t != type)) {
      return false;
    }
    type = t;
    keyed.emplace_back(key, item);
  }
  py::list keys;
  for (const auto& k : keyed) {
    keys.append(k.first);
  }
  if (py::len(py::set(keys)) != keyed.size()) {
    return false;  // (equal first items: the rest would be compared)
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
    return PyObject_RichCompareBool(a.first.ptr(), b.first.ptr(), Py_LT) == 1;
  });
  items->clear();
  for (const auto& k : keyed) {
    items->push_back(k.second);
  }
  return true;
}

VarPtr OpcodeExecutor::items_of(const std::vector<VarPtr>& args, Items kind) {
  using IK = Variable::IterKind;
  // The items of a value whose items are known (not of an iterator: that would consume it).
  std::vector<VarPtr> items;
  if (args[0]->kind() == Variable::Kind::kIter &&
      !(args[0]->start() == 1 && args[0]->iter_kind() == IK::kDictView)) {
    items = take(args[0], true);  // consumed, as list(it) consumes it
  } else if (!known_items(args[0], &items)) {
    return nullptr;
  }
  if (kind == Items::kSorted && !sorted_by_first(&items)) {
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
  return kind == Items::kTuple ? Variable::tuple(std::move(items))
                               : Variable::list(std::move(items));
}

}  // namespace sot::translator
