// The graph a translation captures NumPy operations into, shared by the frame and every call it
// inlines: the graph itself, the Variables of its inputs (arrays and NumPy scalars received from
// outside, loaded again by the generated code to call the compiled graph), and the NumPy facts the
// rules need (the promotion rules of the NumPy in use).
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "graph/graph.hpp"
#include "translator/variable.hpp"

namespace sot::translator {

struct ArrayState {
  graph::Graph graph;
  std::vector<VarPtr> inputs;             // graph input k's Variable (received from outside)
  std::map<const Variable*, int> ids;     // input Variable -> its graph value
  graph::ScalarPromotion promotion = graph::ScalarPromotion::kValueBased;
  pybind11::object numpy;  // the numpy module

  // Where the graph stands, to undo an inlined call that cannot finish.
  struct Mark {
    std::size_t values = 0, ops = 0, inputs = 0;
  };
  Mark mark() const {
    return {graph.values().size(), graph.ops().size(), graph.inputs().size()};
  }
  void rollback(const Mark& m);
};

// numpy, when the process has imported it (the translator never imports it), else None.
pybind11::object numpy_module();

}  // namespace sot::translator
