// Tier C for a graph with no loop op, where it measures faster (whole_graph.hpp).
#include "graph/backends/cpu/whole/whole_graph.hpp"

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include "graph/backends/cpu/whole/whole_arrays.hpp"
#include "graph/backends/cpu/whole/whole_runner.hpp"
#include "graph/exec/loop_op.hpp"

namespace sot::graph::whole {

WholeGraph::WholeGraph(Graph graph, std::vector<int> outputs)
    : graph_(std::move(graph)), outputs_(std::move(outputs)) {}

void WholeGraph::make_code() {
  // (during a call of the graph: nothing may escape into the caller's C API frame)
  try {
    code_ = native_loop(graph_as_step(graph_, outputs_));
  } catch (pybind11::error_already_set& e) {
    code_ = std::make_shared<UnemittedLoop>(std::string("its emission raised: ") + e.what());
  } catch (const std::exception& e) {
    code_ = std::make_shared<UnemittedLoop>(std::string("its emission failed: ") + e.what());
  }
  if (!code_) {
    code_ = std::make_shared<UnemittedLoop>("tier C is off (SOT_CPU_TIER_C=0)");
  }
}

LoopCode::Route WholeGraph::route(PyObject* const* args, std::size_t nargs) {
  if (code_ && code_->retired()) {
    return Route::kOther;  // (not emitted, its compile failed, or it gave up too often)
  }
  const int size = choice_.size_class(args, nargs, kMostItems);
  if (size < 0) {
    return Route::kOther;  // (too large: tier B's fused kernels and threads pay there)
  }
  const long hot = whole_options().hot_calls.load();
  if (!code_) {
    if (++small_calls_ < std::max(hot, 1L)) {
      return Route::kOther;
    }
    make_code();
  }
  if (!code_->ready()) {
    return Route::kOther;
  }
  if (hot == 0) {
    return Route::kNative;
  }
  return choice_.route(size);
}

void WholeGraph::timed(bool native, long long ns) {
  choice_.timed(native, ns);
}

LoopCode::Outcome WholeGraph::run(PyObject* const* args, std::size_t nargs, PyObject** result) {
  return code_ ? code_->run(args, nargs, result) : Outcome::kGaveUp;
}

std::string WholeGraph::status() const {
  const long hot = whole_options().hot_calls.load();
  if (!code_) {
    return "waiting: made native after " + std::to_string(std::max(hot, 1L)) +
           " calls on arrays of at most " + std::to_string(kMostItems) + " items (" +
           std::to_string(small_calls_) + " so far)";
  }
  return code_->status() + choice_.describe();
}

std::shared_ptr<LoopCode> native_graph(const Graph& graph, const std::vector<int>& outputs) {
  // (a graph with no loop op: tier B's groups, each compiled only where it pays, run it until it
  // is hot; one with a loop op is compiled at once, as a whole in place of once per loop)
  const auto& ops = graph.ops();
  if (std::none_of(ops.begin(), ops.end(), [](const Op& op) { return op.name == "loop"; })) {
    if (!whole_options().enabled.load()) {
      return nullptr;
    }
    return std::make_shared<WholeGraph>(graph, outputs);
  }
  return native_loop(graph_as_step(graph, outputs));
}

}  // namespace sot::graph::whole
