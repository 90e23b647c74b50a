// Attributes: LOAD_ATTR, LOAD_METHOD, STORE_ATTR, DELETE_ATTR, LOAD_SUPER_ATTR; modules, methods of
// built values and constants, instances of user classes, super().
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

namespace {

// np.fft, np.linalg, np.polynomial and np.random not loaded yet: NumPy 2 imports them at their
// first use (the module's __getattr__, code the translator does not run). Imported now, as that
// first use would; true when the numpy module then has it.
bool lazy_numpy_submodule(const py::object& module, const py::object& name) {
  static const char* const kLazy[] = {"fft", "linalg", "polynomial", "random"};
  const std::string n = str_of(name);
  if (!module.is(numpy_module()) ||
      std::none_of(std::begin(kLazy), std::end(kLazy), [&n](const char* m) { return n == m; })) {
    return false;
  }
  PyObject* sub = PyImport_ImportModule(("numpy." + n).c_str());
  if (sub == nullptr) {
    PyErr_Clear();
    return false;
  }
  Py_DECREF(sub);
  return true;
}

}  // namespace

void OpcodeExecutor::attribute_load(const bytecode::Instruction& ins, bool load_method) {
  const bool method = load_method || bytecode::operand::attr_loads_method(ins.arg);
  const py::object name = code_.names()[static_cast<std::size_t>(
      load_method ? ins.arg : bytecode::operand::attr_name(ins.arg))];
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
    graph_break("attribute '" + str_of(name) + "' of " + base->describe());
  }
  pop();
  push_callable(std::move(v), method);
}

void OpcodeExecutor::op_load_attr(const bytecode::Instruction& ins) {
  drop_values(1);  // (a temporary's attribute: `Dtor(log).name` frees the Dtor)
  attribute_load(ins, false);
}

void OpcodeExecutor::op_load_method(const bytecode::Instruction& ins) {
  attribute_load(ins, true);
}

void OpcodeExecutor::op_store_attr(const bytecode::Instruction& ins) {
  store_attr(ins, false);
}

void OpcodeExecutor::op_delete_attr(const bytecode::Instruction& ins) {
  store_attr(ins, true);
}

void OpcodeExecutor::op_load_super_attr(const bytecode::Instruction& ins) {
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
  super_attr(cls, self,
             code_.names()[static_cast<std::size_t>(bytecode::operand::super_attr_name(ins.arg))],
             bytecode::operand::super_attr_loads_method(ins.arg));
  break_stack_ = nullptr;
}

VarPtr OpcodeExecutor::load_attr(const VarPtr& base, const py::object& name) {
  if (VarPtr v = array_attr(base, name)) {
    return v;
  }
  // Attributes are read without running user code: a module's own dict, or a method of a constant
  // (whose type is a builtin immutable type).
  if (base->kind() == Variable::Kind::kObject && PyModule_CheckExact(base->value().ptr())) {
    PyObject* dict = PyModule_GetDict(base->value().ptr());  // borrowed
    if (effects().modeled && effects().modeled->value().ptr() == dict) {
      graph_break("a module attribute read after a change to the module's namespace");
    }
    const std::string cache_key = "attr " + str_of(name);
    if (const auto it = shared_->loaded.find({base.get(), cache_key});
        it != shared_->loaded.end()) {
      return it->second;  // one Variable per place (a change through one is seen by the other)
    }
    PyObject* value = dict != nullptr ? PyDict_GetItemWithError(dict, name.ptr()) : nullptr;
    if (value == nullptr && dict != nullptr && lazy_numpy_submodule(base->value(), name)) {
      value = PyDict_GetItemWithError(dict, name.ptr());  // (imported just now)
    }
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
    const std::string n = str_of(name);
    auto known = [&n](const auto& names) {
      return std::any_of(std::begin(names), std::end(names),
                         [&n](const char* m) { return n == m; });
    };
    if ((base->kind() == Variable::Kind::kList && known(kListMethods)) ||
        (base->kind() == Variable::Kind::kListBuffer && str_of(name) == "append") ||
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
    const std::string n = str_of(name);
    const bool list = PyList_CheckExact(base->value().ptr());
    if (!list && (n == "keys" || n == "values" || n == "items") && is_input_dict(base)) {
      guards_->type(base);
      return Variable::method(base, name);  // (a view, read: input_dicts.cpp)
    }
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

void OpcodeExecutor::store_attr(const bytecode::Instruction& ins, bool del) {
  // obj.name = value (or del obj.name) on a plain instance received from outside: generic
  // attribute setting (no __setattr__, no data descriptor of that name in its class), replayed in
  // order once every value is loaded. Reads of attributes stay real (they break).
  const py::object name = code_.names()[static_cast<std::size_t>(ins.arg)];
  const VarPtr obj = peek(1);
  if (obj->kind() == Variable::Kind::kInstance) {
    store_made_instance_attr(obj, name, del ? nullptr : peek(2));
    pop();
    if (!del) {
      pop();
    }
    return;
  }
  PyObject* o = obj->value().ptr();
  PyTypeObject* type = Py_TYPE(o);
  const bool plain = obj->kind() == Variable::Kind::kObject && obj->tracker().is_input() &&
                     !PyModule_Check(o) && !PyType_Check(o) &&
                     type->tp_setattro == PyObject_GenericSetAttr && type->tp_dictoffset != 0;
  PyObject* descr = plain ? _PyType_Lookup(type, name.ptr()) : nullptr;  // borrowed
  if (!plain || (descr != nullptr && Py_TYPE(descr)->tp_descr_set != nullptr)) {
    graph_break(std::string(del ? "del of" : "a store to") + " attribute '" + str_of(name) +
                "' of " + obj->describe());
  }
  if (effects().model && effects().model->kind() == Variable::Kind::kDict) {
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
    for (const AttrStore& a : effects().attr_stores) {
      if (a.object == obj && PyObject_RichCompareBool(a.name.ptr(), name.ptr(), Py_EQ) == 1) {
        touched = true;
        stored = a.value != nullptr;
      }
    }
    PyErr_Clear();
    if (touched ? !stored : !has) {
      graph_break("del of a missing attribute '" + str_of(name) + "' (raises AttributeError)");
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
    effects().attr_stores.push_back(AttrStore{obj, name, nullptr});
    pop();
    return;
  }
  effects().attr_stores.push_back(AttrStore{obj, name, peek(2)});
  pop();
  pop();
}

void OpcodeExecutor::super_attr(const VarPtr& cls, const VarPtr& self, const py::object& name,
                                bool method) {
  PyObject* c = cls->value().ptr();
  PyObject* o = self->value().ptr();
  const bool made = self->kind() == Variable::Kind::kInstance;  // (made in the frame)
  if (cls->kind() != Variable::Kind::kObject || !PyType_Check(c) ||
      (!made && (self->kind() != Variable::Kind::kObject || !self->tracker().is_input() ||
                 PyType_Check(o))) ||
      !cls->tracker().is_input()) {
    graph_break("super() of " + cls->describe() + " and " + self->describe());
  }
  PyTypeObject* type =
      made ? reinterpret_cast<PyTypeObject*>(self->cls()->value().ptr()) : Py_TYPE(o);
  PyObject* mro = type->tp_mro;  // borrowed
  Py_ssize_t start = -1;
  for (Py_ssize_t i = 0; mro != nullptr && i < PyTuple_GET_SIZE(mro); ++i) {
    if (PyTuple_GET_ITEM(mro, i) == c) {
      start = i + 1;
    }
  }
  if (start < 0 || !(made ? guards_->class_version(self->cls()) : guards_->type_version(self))) {
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
        made ? self->cls()
             : Variable::object(
                   py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(type)),
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
    graph_break("super()." + str_of(name) + " is a descriptor the translator does not model");
  }
  graph_break("super()." + str_of(name) + " is not found (raises AttributeError)");
}

VarPtr OpcodeExecutor::property_value(const VarPtr& cls, PyObject* descr, const py::object& name,
                                      const VarPtr& self) {
  // A property: its getter, inlined with the instance (type(obj).name.fget(obj)).
  const py::object fget = py::reinterpret_borrow<py::object>(descr).attr("fget");
  if (!PyFunction_Check(fget.ptr())) {
    graph_break("a property whose getter is not a Python function");
  }
  const VarPtr prop =
      Variable::object(py::reinterpret_borrow<py::object>(descr), Tracker::attr(cls, name));
  const VarPtr getter = Variable::from_input(fget, Tracker::attr(prop, py::str("fget")));
  std::string why;
  VarPtr value = inline_call(getter, {self}, py::object(), &why);
  if (!value) {
    graph_break("the property '" + str_of(name) + "' (" + why + ")");
  }
  return value;
}

bool OpcodeExecutor::load_instance_attr(const VarPtr& base, const py::object& name, bool method) {
  // obj.name on an instance whose type uses the generic attribute lookup (no __getattribute__ or
  // __getattr__), decided the way CPython decides it, without running user code; the type's
  // version is guarded (a change to the class or a base retranslates).
  if (base->kind() == Variable::Kind::kInstance) {
    return made_instance_attr(base, name, method);
  }
  PyObject* o = base->value().ptr();
  PyTypeObject* type = Py_TYPE(o);
  if (base->kind() == Variable::Kind::kObject && PyType_Check(o) &&
      class_attr(base, name, method)) {
    return true;
  }
  if (base->kind() != Variable::Kind::kObject || !base->tracker().is_input() || PyModule_Check(o) ||
      PyType_Check(o) || type->tp_getattro != PyObject_GenericGetAttr ||
      (type->tp_flags & Py_TPFLAGS_HEAPTYPE) == 0) {
    return false;
  }
  if (effects().model && effects().model->kind() == Variable::Kind::kDict) {
    graph_break(
        "an attribute read after a change to a dict received from outside (it may be "
        "the object's __dict__)");
  }
  // Attributes this frame set: the value it set (on the same Variable; another could alias).
  for (auto it = effects().attr_stores.rbegin(); it != effects().attr_stores.rend(); ++it) {
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
  const std::string cache_key = "attr " + str_of(name);
  if (data_descr) {
    if (PyObject_TypeCheck(descr, &PyProperty_Type)) {
      push_callable(property_value(cls(), descr, name, base), method);
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
    const bool shadowed = type->tp_dictoffset != 0 && instance_dict_has(o, name);
    VarPtr v = shadowed ? nullptr : class_descriptor_value(cls(), descr, name);
    if (!v) {
      return false;  // other descriptors: run for real
    }
    if (type->tp_dictoffset != 0) {
      guard_not_in_dict();
    }
    push_callable(std::move(v), method);  // a staticmethod or classmethod
    return true;
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
    graph_break("a missing attribute '" + str_of(name) + "' (raises AttributeError)");
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

}  // namespace sot::translator
