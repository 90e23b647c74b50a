// Instances made in the frame: calling a plain class (`Particles(pos, vel, m)`, a dataclass) makes
// a kInstance Variable, its __init__ inlined with it as self. Its attributes live in the Variable
// (names in the order first set, values), so `self.pos += ...`, `ps.energy()` and the arrays they
// hold are simulated like locals; generated code builds the object only where it escapes (returned,
// kept, alive at a break): object.__new__(C), then each attribute stored in order, as __init__
// left the instance's __dict__.
//
// A class qualifies when nothing in making or using an instance runs code the translator does not
// see: `type` is its metaclass, object.__new__ makes it, it has a __dict__ and the generic
// attribute lookup and setting (no __getattribute__, __getattr__, __setattr__, __delattr__, no
// __slots__), no __del__, and its __init__ is a Python function (or object's, called without
// arguments). The class is guarded by identity and version tag: a change to it or to a base
// translates again.
#include <string>
#include <utility>
#include <vector>

#include "translator/executor_support.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

namespace {

// Why instances of `type` are not made in the frame, or "" when they are.
std::string class_refusal(PyTypeObject* type) {
  if (Py_TYPE(type) != &PyType_Type || (type->tp_flags & Py_TPFLAGS_HEAPTYPE) == 0) {
    return "not a plain class";
  }
  if (type->tp_new != PyBaseObject_Type.tp_new || type->tp_dictoffset == 0 ||
      type->tp_itemsize != 0) {
    return "its instances are not made by object.__new__ with a __dict__";
  }
  if (type->tp_getattro != PyObject_GenericGetAttr ||
      type->tp_setattro != PyObject_GenericSetAttr) {
    return "it customizes attribute access";
  }
  if (_PyType_Lookup(type, py::str("__del__").ptr()) != nullptr) {
    return "it defines __del__";
  }
  // (__slots__ anywhere but object: a class of the MRO with one in its own dict)
  PyObject* mro = type->tp_mro;
  for (Py_ssize_t i = 0; mro != nullptr && i < PyTuple_GET_SIZE(mro); ++i) {
    auto* base = reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(mro, i));
    if (base->tp_dict != nullptr && PyDict_GetItemString(base->tp_dict, "__slots__") != nullptr) {
      return "a class with __slots__";
    }
  }
  return "";
}

bool is_data_descriptor(PyObject* descr) {
  return descr != nullptr && Py_TYPE(descr)->tp_descr_set != nullptr;
}

}  // namespace

VarPtr class_descriptor_value(const VarPtr& cls, PyObject* descr, const py::object& name) {
  // C.name (or obj.name) of a staticmethod: its function; of a classmethod: a method bound to C,
  // as getattr(C, name) makes it (called, it is inlined with C first). Read again as C.name.
  const bool is_static = Py_TYPE(descr) == &PyStaticMethod_Type;
  if (!is_static && Py_TYPE(descr) != &PyClassMethod_Type) {
    return nullptr;
  }
  auto fn = py::reinterpret_steal<py::object>(PyObject_GetAttrString(descr, "__func__"));
  if (!fn || !PyFunction_Check(fn.ptr())) {
    PyErr_Clear();
    return nullptr;
  }
  if (is_static) {
    return Variable::from_input(fn, Tracker::attr(cls, name));
  }
  auto bound = py::reinterpret_steal<py::object>(PyMethod_New(fn.ptr(), cls->value().ptr()));
  if (!bound) {
    PyErr_Clear();
    return nullptr;
  }
  return Variable::object(bound, Tracker::attr(cls, name));
}

bool OpcodeExecutor::class_attr(const VarPtr& cls, const py::object& name, bool method) {
  // C.name on a plain class received from outside: what type's generic lookup finds without
  // running user code (a staticmethod's function, a classmethod bound to C, a function, a plain
  // value); the class's version is guarded. False: run for real.
  auto* type = reinterpret_cast<PyTypeObject*>(cls->value().ptr());
  if (Py_TYPE(type) != &PyType_Type || (type->tp_flags & Py_TPFLAGS_HEAPTYPE) == 0 ||
      !cls->tracker().is_input() ||
      _PyType_Lookup(&PyType_Type, name.ptr()) != nullptr) {  // (type's own: __name__, mro, ...)
    return false;
  }
  PyObject* descr = _PyType_Lookup(type, name.ptr());  // borrowed
  if (descr == nullptr || !guards_->class_version(cls)) {
    return false;
  }
  VarPtr v = class_descriptor_value(cls, descr, name);
  if (!v && (PyFunction_Check(descr) || Py_TYPE(descr)->tp_descr_get == nullptr)) {
    v = Variable::from_input(py::reinterpret_borrow<py::object>(descr), Tracker::attr(cls, name));
  }
  if (!v) {
    return false;
  }
  push_callable(std::move(v), method);
  return true;
}

VarPtr OpcodeExecutor::instantiate(const CallSite& site) {
  const VarPtr& callable = site.callable;
  PyObject* c = callable->value().ptr();
  if (callable->kind() != Variable::Kind::kObject || !PyType_Check(c) ||
      !callable->tracker().is_input() ||
      (reinterpret_cast<PyTypeObject*>(c)->tp_flags & Py_TPFLAGS_HEAPTYPE) == 0) {
    return nullptr;
  }
  auto* type = reinterpret_cast<PyTypeObject*>(c);
  if (!class_refusal(type).empty()) {
    return nullptr;  // (the call as any other: it breaks, unless something else models it)
  }
  if (!guards_->class_version(callable)) {
    graph_break("a call of " + callable->describe() + " (a class without a version tag)");
  }
  VarPtr self = Variable::instance(callable);
  PyObject* init = _PyType_Lookup(type, py::str("__init__").ptr());  // borrowed
  if (init == _PyType_Lookup(&PyBaseObject_Type, py::str("__init__").ptr())) {
    if (!site.args.empty()) {
      graph_break("a call of " + callable->describe() + " with arguments and no __init__");
    }
    return self;
  }
  if (init == nullptr || !PyFunction_Check(init)) {
    graph_break("a call of " + callable->describe() + " (its __init__ is not a Python function)");
  }
  const VarPtr fn = Variable::from_input(py::reinterpret_borrow<py::object>(init),
                                         Tracker::attr(callable, py::str("__init__")));
  std::vector<VarPtr> with_self = {self};
  with_self.insert(with_self.end(), site.args.begin(), site.args.end());
  std::string why;
  const VarPtr result = inline_call(fn, with_self, site.kwnames, &why);
  if (!result) {
    graph_break("a call of " + callable->describe() + " (__init__ " + why + ")");
  }
  if (!(result->is_const() && result->value().is_none())) {
    graph_break("__init__ of " + callable->describe() + " returns a value (raises TypeError)");
  }
  return self;
}

bool OpcodeExecutor::made_instance_attr(const VarPtr& base, const py::object& name, bool method) {
  // What CPython's generic lookup finds: a data descriptor of the class, else the instance's own
  // attribute, else the class's (a function: the method, called with the instance first).
  const VarPtr& cls = base->cls();
  auto* type = reinterpret_cast<PyTypeObject*>(cls->value().ptr());
  PyObject* descr = _PyType_Lookup(type, name.ptr());  // borrowed
  const auto class_attr = [&]() {
    return Variable::from_input(py::reinterpret_borrow<py::object>(descr),
                                Tracker::attr(cls, name));
  };
  if (is_data_descriptor(descr)) {
    if (!PyObject_TypeCheck(descr, &PyProperty_Type)) {
      graph_break("attribute '" + str_of(name) + "' of " + base->describe() +
                  " is a data descriptor the translator does not model");
    }
    push_callable(property_value(cls, descr, name, base), method);
    return true;
  }
  const Py_ssize_t i = base->find_key(name);
  if (i >= 0) {
    push_callable(base->items()[static_cast<std::size_t>(i)], method);
    return true;
  }
  if (descr == nullptr) {
    graph_break("a missing attribute '" + str_of(name) + "' of " + base->describe() +
                " (raises AttributeError)");
  }
  if (PyFunction_Check(descr)) {
    if (!method) {
      graph_break("a bound method of " + base->describe() + " taken as a value");
    }
    push(class_attr());  // [function, self]: CALL passes self first
    push(base);
    return true;
  }
  if (VarPtr v = class_descriptor_value(cls, descr, name)) {
    push_callable(std::move(v), method);  // a staticmethod or classmethod
    return true;
  }
  if (Py_TYPE(descr)->tp_descr_get != nullptr) {
    graph_break("attribute '" + str_of(name) + "' of " + base->describe() +
                " is a descriptor the translator does not model");
  }
  push_callable(class_attr(), method);  // a plain class attribute
  return true;
}

void OpcodeExecutor::store_made_instance_attr(const VarPtr& obj, const py::object& name,
                                              const VarPtr& value) {
  // obj.name = value (value nullptr: del obj.name), with the generic setattr: into the instance's
  // own attributes unless the class has a data descriptor of that name.
  auto* type = reinterpret_cast<PyTypeObject*>(obj->cls()->value().ptr());
  if (is_data_descriptor(_PyType_Lookup(type, name.ptr()))) {
    graph_break(std::string(value ? "a store to" : "del of") + " attribute '" + str_of(name) +
                "' of " + obj->describe() + " (a data descriptor of its class)");
  }
  const Py_ssize_t i = obj->find_key(name);
  if (i < -1) {
    graph_break("an attribute name that cannot be compared");
  }
  const auto at = static_cast<std::size_t>(i);
  if (value && i >= 0 && obj->items()[at] == value) {
    return;  // (the same value again: `self.pos += v` on an array changed in place)
  }
  if (!value && i < 0) {
    graph_break("del of a missing attribute '" + str_of(name) + "' (raises AttributeError)");
  }
  mutate(obj);
  if (!value) {
    obj->keys().erase(obj->keys().begin() + i);
    obj->items().erase(obj->items().begin() + i);
  } else if (i >= 0) {
    obj->items()[at] = value;
  } else {
    obj->keys().push_back(name);
    obj->items().push_back(value);
  }
}

}  // namespace sot::translator
