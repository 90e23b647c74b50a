// What the backends that run fusion groups (cpu, cuda) share: a group's ops run as the program's
// own steps (the fallback of any kernel), the slices moved ahead of a group, and a group as plan()
// shows it.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "graph/exec/program.hpp"
#include "graph/ir/graph.hpp"
#include "graph/lower/fusion.hpp"

namespace sot::graph {

// The names of the group's ops, in order.
std::vector<std::string> op_names(const Graph& graph, const Group& g);

// Runs the group's ops one by one as eager NumPy would; with `release` false the results they are
// the last to read stay (release_group frees them). False with a Python error set.
bool run_group_steps(const Group& g, Frame& frame, bool release = true);

// Frees what the group's ops are the last to read (after a kernel made their outputs).
void release_group(const Group& g, Frame& frame);

// The slices moved ahead of the group run first, then `run_group()`; what the slices are the last
// to read is freed after the group (its members may read it too).
template <typename RunGroup>
bool run_with_hoisted(const Group& g, Frame& frame, RunGroup&& run_group) {
  for (const int k : g.hoisted) {
    if (!frame.run_step(static_cast<std::size_t>(k), false)) {
      return false;
    }
  }
  const bool ok = run_group();
  for (const int k : g.hoisted) {
    frame.release_after(static_cast<std::size_t>(k));
  }
  return ok;
}

// The group's entry in plan(): kind, ops, op names, hoisted slices, inputs, outputs, why, runs.
pybind11::dict group_plan(const Group& g, const std::vector<std::string>& names, long runs);

// "<sot compiled graph 3-op: 3 ops, 2 inputs, 1 outputs (<detail>)>"
std::string runner_repr(const Program& p, const std::string& detail);

}  // namespace sot::graph
