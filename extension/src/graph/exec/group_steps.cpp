#include "graph/exec/group_steps.hpp"

#include <pybind11/stl.h>

namespace py = pybind11;

namespace sot::graph {

std::vector<std::string> op_names(const Graph& graph, const Group& g) {
  std::vector<std::string> names;
  for (const int k : g.ops) {
    names.push_back(graph.ops()[static_cast<std::size_t>(k)].name);
  }
  return names;
}

bool run_group_steps(const Group& g, Frame& frame, bool release) {
  for (const int k : g.ops) {
    if (!frame.run_step(static_cast<std::size_t>(k), release)) {
      return false;
    }
  }
  return true;
}

void release_group(const Group& g, Frame& frame) {
  for (const int k : g.ops) {
    frame.release_after(static_cast<std::size_t>(k));
  }
}

py::dict group_plan(const Group& g, const std::vector<std::string>& names, long runs) {
  py::dict d;
  d["kind"] = std::string(kind_name(g.kind));
  d["ops"] = py::cast(g.ops);
  d["op_names"] = py::cast(names);
  d["hoisted"] = py::cast(g.hoisted);
  d["inputs"] = py::cast(g.inputs);
  d["outputs"] = py::cast(g.outputs);
  d["why"] = g.why;
  d["runs"] = runs;
  return d;
}

std::string runner_repr(const Program& p, const std::string& detail) {
  return "<sot compiled graph " + std::to_string(p.steps.size()) +
         "-op: " + std::to_string(p.steps.size()) + " ops, " + std::to_string(p.inputs.size()) +
         " inputs, " + std::to_string(p.outputs.size()) + " outputs (" + detail + ")>";
}

}  // namespace sot::graph
