// Side effects of a simulated frame and of the calls inlined into it, kept as one part: what the
// generated code replays (global stores, cell writes, the operations on the one list or dict
// received from outside that the frame changes, attribute stores), and the undo log that puts
// values built inside back when an inlined call cannot finish. mark() and rollback() bound a
// call: everything after a mark is undone, newest first.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "translator/values/variable.hpp"

namespace sot::translator {

// A change to the list or dict received from outside: type(x).<method>(x, *args), replayed as
// such (the same operations in the same order, so that anything watching the object - a sort in
// progress - sees what it would have seen).
struct ModelOp {
  pybind11::object method;  // the method descriptor, e.g. list.append
  std::vector<VarPtr> args;
};

struct AttrStore {
  VarPtr object;
  pybind11::object name;
  VarPtr value;  // nullptr: deleted
};

class SideEffects {
 public:
  // Globals assigned (STORE_GLOBAL; nullptr: DELETE_GLOBAL), in order.
  std::vector<std::pair<pybind11::object, VarPtr>> global_stores;
  // Cells written (STORE_DEREF, DELETE_DEREF), first write first.
  std::vector<VarPtr> cells;
  // The one list or dict received from outside whose contents the frame changes, and its
  // contents as the frame changes them (a list or dict Variable, never loaded itself); the
  // operations that changed it, to replay.
  VarPtr modeled;
  VarPtr model;
  std::vector<ModelOp> model_ops;
  // Attributes set (value) or deleted (nullptr) on objects received from outside, in order.
  std::vector<AttrStore> attr_stores;

  // True when the generated code has something to replay (an error before that would lose it).
  bool pending() const {
    return !global_stores.empty() || !cells.empty() || !model_ops.empty() || !attr_stores.empty();
  }

  // Logs the state of `v` (a container or cell built inside) before a change, to undo it.
  void log(const VarPtr& v) { undo_.emplace_back(v, v->save()); }
  // The cell `cell` is written (recorded once, at its first write).
  void wrote_cell(const VarPtr& cell);

  struct Mark {
    std::size_t undo = 0, stores = 0, cells = 0, attrs = 0, ops = 0;
    bool modeled = false;
  };
  Mark mark() const;
  // Undoes everything after `m`: values restored newest first, records cut back.
  void rollback(const Mark& m);
  // Whether anything was recorded to replay after `m`, or a Variable made before the one numbered
  // `serial` was changed (logged) after it: what a loop body may not do once per step.
  bool changed_since(const Mark& m, std::uint64_t serial) const;

 private:
  std::vector<std::pair<VarPtr, Variable::State>> undo_;
};

}  // namespace sot::translator
