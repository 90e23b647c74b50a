// Methods of the lists, dicts and sets the frame built or models (append, pop, get, update, add,
// ...).
#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "translator/executor_support.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

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
  const std::string called = str_of(method->value());
  if (list->kind() == Variable::Kind::kListBuffer) {  // (loop_lists.cpp: append alone)
    if (called != "append" || args.size() != 1) {
      graph_break("list." + called + " of a list appended to in a loop body");
    }
    buffered_append(list, args[0]);
    for (std::size_t i = 0; i < nargs + 2; ++i) {
      pop();
    }
    push(Variable::constant(py::none()));
    return;
  }
  if (called == "append" && args.size() == 1) {
    note_append(list, args[0]);  // (in a loop body being captured: a buffer next time)
  }
  mutate(list);
  const std::string name = str_of(method->value());
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

void OpcodeExecutor::call_dict_method(const VarPtr& method, const std::vector<VarPtr>& args,
                                      std::size_t nargs) {
  const VarPtr d = method->items()[0];
  const std::string name = str_of(method->value());
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
    dict_update_items(d, other);
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
  const std::string name = str_of(method->value());
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

}  // namespace sot::translator
