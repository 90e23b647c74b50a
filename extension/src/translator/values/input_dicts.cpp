// Dicts received from outside, iterated: `for k in d`, `for k, v in d.items()`, `d.keys()`,
// `d.values()`; and read by `d.get(k)`, `d.get(k, default)` (the item tracked as d[k], or the
// default under a guard that d has no k). The dict is read, not modelled: its keys are guarded in
// order (list(d.keys())), its values are tracked items d[k], and the iterator holds what a real one
// would give. Where the dict is changed while it is iterated (a store through the frame makes it
// modelled), a keys view goes on only while its keys stay the same; any other change gives up on
// the frame, whose plain run raises or sees the new values as CPython does.
#include <string>
#include <vector>

#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

bool OpcodeExecutor::is_input_dict(const VarPtr& v) const {
  return v->kind() == Variable::Kind::kObject && v->tracker().is_input() &&
         PyDict_CheckExact(v->value().ptr()) && v->value().ptr() != inputs_.globals &&
         v->value().ptr() != inputs_.builtins;
}

VarPtr OpcodeExecutor::input_dict_view(const VarPtr& d, const std::string& name) {
  guards_->type(d);
  VarPtr view = Variable::iterator(Variable::IterKind::kDictView, {d}, py::str(name));
  view->set_start(1);  // (a view, not an iterator: see make_iterator)
  return view;
}

VarPtr OpcodeExecutor::input_dict_iterator(const VarPtr& d, const std::string& name) {
  if (model_of(d)) {
    return nullptr;  // (changed by the frame already: not modelled here)
  }
  read_input(d);
  PyObject* dict = d->value().ptr();
  if (static_cast<std::size_t>(PyDict_Size(dict)) > kMaxSteps) {
    return nullptr;
  }
  guards_->type(d);
  py::tuple keys = py::reinterpret_steal<py::tuple>(PySequence_Tuple(dict));
  if (!keys) {
    PyErr_Clear();
    return nullptr;
  }
  guards_->dict_keys(d, keys);
  std::vector<VarPtr> snapshot;
  for (const py::handle k : keys) {
    const py::object key = py::reinterpret_borrow<py::object>(k);
    VarPtr kv = Variable::constant(key);
    VarPtr value;
    if (name != "keys") {
      PyObject* item = PyDict_GetItemWithError(dict, key.ptr());  // borrowed
      if (item == nullptr) {
        PyErr_Clear();
        return nullptr;
      }
      value = Variable::from_input(item, Tracker::item(d, key));
    }
    snapshot.push_back(name == "keys"     ? kv
                       : name == "values" ? value
                                          : Variable::tuple({kv, value}));
  }
  VarPtr it = Variable::iterator(Variable::IterKind::kDictView, {d}, py::str(name));
  it->snapshot() = std::move(snapshot);
  it->set_seen_version(d->version());
  return it;
}

VarPtr OpcodeExecutor::input_dict_get(const VarPtr& d, const std::vector<VarPtr>& args) {
  const py::object key = hashable_key(args[0]);
  if (!key) {
    return nullptr;
  }
  read_input(d);
  guards_->type(d);
  PyObject* item = PyDict_GetItemWithError(d->value().ptr(), key.ptr());  // borrowed
  if (item != nullptr) {
    // (guarded there: present, of its type; generated code that only passes it on loads d[k])
    VarPtr v = Variable::from_input(item, Tracker::item(d, key));
    guards_->type(v);
    return v;
  }
  if (PyErr_Occurred() != nullptr) {
    PyErr_Clear();
    return nullptr;
  }
  guards_->absent(Tracker::item(d, key));
  return args.size() == 2 ? args[1] : Variable::constant(py::none());
}

void OpcodeExecutor::check_input_dict_step(const VarPtr& it) {
  const VarPtr& modeled = effects().modeled;
  if (modeled && modeled != it->items()[0]) {
    // Another object from outside changed: it may be this dict under another name.
    fail(
        "an object received from outside changed while a dict received from outside was iterated "
        "(they may be one)");
  }
  const VarPtr m = model_of(it->items()[0]);
  if (!m) {
    return;  // unchanged
  }
  // Changed by the frame: a keys iterator whose keys are the same goes on (values replaced under
  // existing keys are allowed while iterating); else CPython raises or sees the new values.
  bool same = str_of(it->value()) == "keys" && m->kind() == Variable::Kind::kDict &&
              m->keys().size() == it->snapshot().size();
  for (std::size_t j = 0; same && j < m->keys().size(); ++j) {
    const int eq =
        PyObject_RichCompareBool(m->keys()[j].ptr(), it->snapshot()[j]->value().ptr(), Py_EQ);
    PyErr_Clear();
    same = eq == 1;
  }
  if (!same) {
    fail("a dict received from outside changed while it was iterated");
  }
}

}  // namespace sot::translator
