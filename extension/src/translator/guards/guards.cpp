#include "translator/guards/guards.hpp"

#include <cstdint>
#include <map>
#include <string>

#include "core/loaded_module.hpp"
#include "core/type_version.hpp"

namespace py = pybind11;

namespace sot::translator {

GuardSet::GuardSet() : tree_(std::make_shared<capture::GuardTree>()) {}

namespace {

// functools.partial(operator.getitem, sys.modules, name): one object per name, so that the guard
// tree keeps one root per module (its roots are found by key).
py::object module_lookup(const py::object& name) {
  static auto* const made = new std::map<std::string, py::object>();
  const std::string key = py::str(name).cast<std::string>();
  auto found = made->find(key);
  if (found == made->end()) {
    found = made->emplace(key, loaded_module("functools")
                                   .attr("partial")(loaded_module("operator").attr("getitem"),
                                                    loaded_module("sys").attr("modules"), name))
                .first;
  }
  return found->second;
}

}  // namespace

capture::GuardNode* GuardSet::node(const Tracker& t) {
  using Access = capture::GuardNode::Access;
  switch (t.kind) {
    case Tracker::Kind::kLocal:
      return tree_->local(t.index, t.key);
    case Tracker::Kind::kGlobal:
      if (t.index == 1) {  // found in the builtins
        global_absent(t.key);
        return tree_->builtin(t.key);
      }
      return tree_->global(t.key);
    case Tracker::Kind::kAttr: {
      capture::GuardNode* base = node(t.base->tracker());
      return base == nullptr ? nullptr
                             : base->child(Access::kAttr, -1, t.key,
                                           base->path + "." + py::str(t.key).cast<std::string>());
    }
    case Tracker::Kind::kItem: {
      capture::GuardNode* base = node(t.base->tracker());
      return base == nullptr
                 ? nullptr
                 : base->child(Access::kItem, -1, t.key,
                               base->path + "[" + py::repr(t.key).cast<std::string>() + "]");
    }
    case Tracker::Kind::kModule:
      return tree_->call(module_lookup(t.key),
                         "sys.modules[" + py::repr(t.key).cast<std::string>() + "]");
    case Tracker::Kind::kCreated:
      return nullptr;
  }
  return nullptr;
}

void GuardSet::add(const VarPtr& v, capture::GuardCheck check, const std::string& what) {
  if (!v->tracker().is_input()) {
    return;
  }
  capture::GuardNode* n = node(v->tracker());
  if (n == nullptr) {
    return;
  }
  const std::string line = n->path + ": " + what;
  if (!seen_.insert(line).second) {
    return;
  }
  n->checks.push_back(std::move(check));
  lines_.push_back(line);
}

void GuardSet::value(const VarPtr& v) {
  if (!v->is_const()) {
    identity(v);
    return;
  }
  capture::GuardCheck c;
  c.kind = capture::GuardCheck::Kind::kEquals;
  c.expected = v->value();
  const std::string what = c.describe();
  add(v, std::move(c), what);
}

void GuardSet::identity(const VarPtr& v) {
  capture::GuardCheck c;
  c.kind = capture::GuardCheck::Kind::kId;
  c.expected = v->value();
  c.make_weak();  // a cache entry must not keep what it guards alive
  const std::string what = c.describe();
  add(v, std::move(c), what);
}

void GuardSet::type(const VarPtr& v) {
  capture::GuardCheck c;
  c.kind = capture::GuardCheck::Kind::kType;
  c.expected =
      py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(Py_TYPE(v->value().ptr())));
  const std::string what = c.describe();
  add(v, std::move(c), what);
}

void GuardSet::array(const VarPtr& v, const std::string& format,
                     const std::vector<Py_ssize_t>& shape, bool device, bool writeable) {
  capture::GuardCheck c;
  c.kind = capture::GuardCheck::Kind::kArray;
  c.device = device;
  c.writeable = writeable;
  c.format = format;
  c.length = static_cast<Py_ssize_t>(shape.size());
  c.shape = shape;
  const std::string what = c.describe();
  add(v, std::move(c), what);
}

void GuardSet::length(const VarPtr& v, Py_ssize_t n) {
  capture::GuardCheck c;
  c.kind = capture::GuardCheck::Kind::kLen;
  c.length = n;
  const std::string what = c.describe();
  add(v, std::move(c), what);
}

namespace {

// The version tag of `type`, assigned now when it has none (0: it cannot have one).
std::uint64_t version_tag(PyTypeObject* type) {
  if (!core::has_valid_version_tag(type)) {
    core::assign_version_tag(type);
  }
  return core::has_valid_version_tag(type) ? type->tp_version_tag : 0;
}

}  // namespace

bool GuardSet::type_version(const VarPtr& v) {
  auto* type = Py_TYPE(v->value().ptr());
  const std::uint64_t version = version_tag(type);
  if (version == 0) {
    return false;
  }
  capture::GuardCheck c;
  c.kind = capture::GuardCheck::Kind::kTypeVersion;
  c.expected = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(type));
  c.version = version;
  const std::string what = c.describe();
  add(v, std::move(c), what);
  return true;
}

bool GuardSet::class_version(const VarPtr& v) {
  if (!PyType_Check(v->value().ptr())) {
    return false;
  }
  const std::uint64_t version = version_tag(reinterpret_cast<PyTypeObject*>(v->value().ptr()));
  if (version == 0) {
    return false;
  }
  capture::GuardCheck c;
  c.kind = capture::GuardCheck::Kind::kClassVersion;
  c.expected = v->value();
  c.version = version;
  const std::string what = c.describe();
  add(v, std::move(c), what);
  return true;
}

void GuardSet::absent(const Tracker& t) {
  capture::GuardNode* n = node(t);
  if (n == nullptr) {
    return;
  }
  const std::string line = n->path + ": no such value";
  if (!seen_.insert(line).second) {
    return;
  }
  capture::GuardCheck c;
  c.kind = capture::GuardCheck::Kind::kAbsent;
  n->checks.insert(n->checks.begin(), std::move(c));
  lines_.push_back(line);
}

void GuardSet::dict_keys(const VarPtr& v, const py::tuple& keys) {
  capture::GuardCheck c;
  c.kind = capture::GuardCheck::Kind::kDictKeys;
  c.expected = keys;
  const std::string what = c.describe();
  add(v, std::move(c), what);
}

bool GuardSet::distinct(const VarPtr& a, const VarPtr& b) {
  if (!a->tracker().is_input() || !b->tracker().is_input()) {
    return false;
  }
  capture::GuardNode* na = node(a->tracker());
  capture::GuardNode* nb = node(b->tracker());
  if (na == nullptr || nb == nullptr || na == nb) {
    return false;
  }
  const std::string line = na->path + ": not the object at " + nb->path;
  if (seen_.count(line) != 0 || seen_.count(nb->path + ": not the object at " + na->path) != 0) {
    return true;
  }
  seen_.insert(line);
  const int group = tree_->distinct_group();
  for (auto [n, other] : {std::pair{na, nb}, std::pair{nb, na}}) {
    capture::GuardCheck c;
    c.kind = capture::GuardCheck::Kind::kDistinct;
    c.group = group;
    c.format = other->path;
    n->checks.push_back(std::move(c));
  }
  lines_.push_back(line);
  return true;
}

void GuardSet::global_absent(const py::object& name) {
  const std::string line = "globals()[" + py::repr(name).cast<std::string>() + "]: no such value";
  if (!seen_.insert(line).second) {
    return;
  }
  capture::GuardCheck c;
  c.kind = capture::GuardCheck::Kind::kAbsent;
  capture::GuardNode* n = tree_->global(name);
  n->checks.insert(n->checks.begin(), std::move(c));
  lines_.push_back(line);
}

void GuardSet::call_equals(const py::object& fn, const std::string& what,
                           const py::object& expected) {
  const std::string line = what + ": == " + py::repr(expected).cast<std::string>();
  if (!seen_.insert(line).second) {
    return;
  }
  capture::GuardCheck c;
  c.kind = capture::GuardCheck::Kind::kEquals;
  c.expected = expected;
  tree_->call(fn, what)->checks.push_back(std::move(c));
  lines_.push_back(line);
}

}  // namespace sot::translator
