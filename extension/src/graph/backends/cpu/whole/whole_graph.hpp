// Tier C for a graph with no loop op: the whole graph as one native function where that measures
// faster than tier B's groups. Its source is emitted (graph_as_step) only once the graph has run
// `hot_calls` times on small arrays (at most kMostItems items each; larger calls stay on tier B,
// whose fused kernels and threads pay there), and compiled as a loop op's is. Then, per size
// class (the most items of an array argument, in powers of two), a few calls of each path are
// timed and the faster is kept; the choice is timed again after 256, 1,024, 4,096... calls (tier
// B's kernels may have become ready since: PathChoice). hot_calls 0: native on every small call,
// untimed.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "graph/backends/cpu/whole/path_choice.hpp"
#include "graph/exec/loop_code.hpp"
#include "graph/ir/graph.hpp"

namespace sot::graph::whole {

class WholeGraph final : public LoopCode {
 public:
  WholeGraph(Graph graph, std::vector<int> outputs);

  bool ready() const override { return code_ && code_->ready(); }
  bool retired() const override { return code_ && code_->retired(); }
  Route route(PyObject* const* args, std::size_t nargs) override;
  void timed(bool native, long long ns) override;
  Outcome run(PyObject* const* args, std::size_t nargs, PyObject** result) override;
  std::string status() const override;
  long runs() const override { return code_ ? code_->runs() : 0; }
  long gave_up() const override { return code_ ? code_->gave_up() : 0; }

 private:
  void make_code();

  Graph graph_;
  std::vector<int> outputs_;
  std::shared_ptr<LoopCode> code_;  // null until hot
  long long small_calls_ = 0;
  PathChoice choice_;
};

// Tier C's native code for a whole graph (graph_as_step), or why not; nullptr when tier C is off. A
// graph with a loop op is emitted and compiled at once (as a whole in place of once per loop); one
// with none is a WholeGraph.
std::shared_ptr<LoopCode> native_graph(const Graph& graph, const std::vector<int>& outputs);

}  // namespace sot::graph::whole
