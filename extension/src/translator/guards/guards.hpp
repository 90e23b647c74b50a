// What a translation relied on, as guards: collected while simulating (each Variable whose value,
// identity or type decided something), then built into the capture runtime's C++ GuardTree.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "capture/guard_tree.hpp"
#include "translator/values/variable.hpp"

namespace sot::translator {

class GuardSet {
 public:
  GuardSet();

  // The translation relied on the value of `v` (a constant: equals), on its identity (is) or its
  // type. Variables made inside the frame need nothing: their parts were guarded when used.
  void value(const VarPtr& v);
  void identity(const VarPtr& v);
  void type(const VarPtr& v);
  void length(const VarPtr& v, Py_ssize_t n);
  // An array received from outside: its buffer's element `format` (a `device` array's typestr),
  // and `shape` (entries as in capture::GuardCheck: sizes or shape symbols).
  void array(const VarPtr& v, const std::string& format, const std::vector<Py_ssize_t>& shape,
             bool device = false, bool writeable = false);
  // type(v) is its type now, and that type has not changed since (false: it has no version tag,
  // nothing was added).
  bool type_version(const VarPtr& v);
  // v is this class (a type) and its version has not changed (false: it has no version tag).
  bool class_version(const VarPtr& v);
  // The place `t` (an item or attribute chain) holds no value.
  void absent(const Tracker& t);
  // list(v.keys()) == keys, in order.
  void dict_keys(const VarPtr& v, const pybind11::tuple& keys);
  // a is not b (two values received from outside, not one object now): false when either place
  // cannot be guarded.
  bool distinct(const VarPtr& a, const VarPtr& b);
  // LOAD_GLOBAL found `name` in the builtins: no global of that name may appear.
  void global_absent(const pybind11::object& name);
  // fn() == expected, for process state the translation relied on; `what` names fn() in messages.
  void call_equals(const pybind11::object& fn, const std::string& what,
                   const pybind11::object& expected);

  std::shared_ptr<capture::GuardTree> tree() const { return tree_; }
  // One line per check, e.g. "n: == 3" (for explain() and logs).
  std::vector<std::string> lines() const { return lines_; }

 private:
  capture::GuardNode* node(const Tracker& t);
  void add(const VarPtr& v, capture::GuardCheck check, const std::string& what);

  std::shared_ptr<capture::GuardTree> tree_;
  std::set<std::string> seen_;
  std::vector<std::string> lines_;
};

}  // namespace sot::translator
