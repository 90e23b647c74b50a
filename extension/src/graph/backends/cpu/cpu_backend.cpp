// The CPU backend: the graph's fusion groups in program order; a fused group runs as its kernel
// (tier A, block by block), every other group as the NumPy calls the user made. A fused group
// falls back to its ops one by one where eager NumPy's behaviour needs it (a floating-point error
// the error state reports, an input layout the block executor does not take).
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "graph/backends/cpu/block_executor.hpp"
#include "graph/backends/cpu/whole/whole_emitter.hpp"
#include "graph/backends/cpu/whole/whole_graph.hpp"
#include "graph/backends/cpu/whole/whole_runner.hpp"
#include "graph/exec/backend.hpp"
#include "graph/exec/grouped_runner.hpp"
#include "graph/exec/program.hpp"
#include "graph/lower/fusion.hpp"
#include "graph/lower/kernel_ir.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

// "ready (compiled in 0.31 s)", "ready (loaded from the disk cache in 0.40 ms)", "compiling",
// "failed: ...", "not
// emitted: exp (not an IEEE-exact op tier B emits)".
std::string tier_b_status(const BlockKernel& k) {
  const auto& n = k.native();
  if (!n) {
    return "not emitted: " + k.native_why();
  }
  switch (n->state()) {
    case NativeKernel::State::kCompiling:
      return "compiling";
    case NativeKernel::State::kFailed:
      return "failed: " + n->error();
    case NativeKernel::State::kReady:
      break;
  }
  char seconds[32];
  if (n->from_disk()) {
    std::snprintf(seconds, sizeof seconds, "%.2f", n->compile_seconds() * 1e3);
    return std::string("ready (loaded from the disk cache in ") + seconds + " ms)";
  }
  std::snprintf(seconds, sizeof seconds, "%.2f", n->compile_seconds());
  return std::string("ready (compiled in ") + seconds + " s)";
}

// A fused group's kernel on the CPU: the block runner, tier A or tier B.
class CpuGroupKernel final : public GroupKernel {
 public:
  explicit CpuGroupKernel(kir::Kernel k) : kernel_(std::move(k)) {}
  BlockKernel& block() { return kernel_; }

  Outcome run(Frame& frame) override {
    switch (kernel_.run(frame)) {
      case BlockKernel::Outcome::kDone:
        in_place_ += kernel_.last_in_place() ? 1 : 0;
        return Outcome::kDone;
      case BlockKernel::Outcome::kReplay:
        return Outcome::kReplay;
      case BlockKernel::Outcome::kError:
        break;
    }
    return Outcome::kError;
  }
  std::size_t last_path() const override { return kernel_.last_tier() == 'B' ? 1 : 0; }
  std::string status() const override { return tier_b_status(kernel_); }
  std::string last_fallback() const override { return kernel_.last_replay(); }
  const kir::Kernel& kernel() const override { return kernel_.kernel(); }

  void describe(py::dict& entry, const Counts& counts) const override {
    entry["tier_a_runs"] = counts.path_runs[0];
    entry["tier_b_runs"] = counts.path_runs[1];
    entry["tier_b"] = status();
    entry["op_by_op_runs"] = counts.fallback_runs;
    entry["in_place_runs"] = in_place_;
    entry["disabled"] = kernel_.disabled();
  }

 private:
  BlockKernel kernel_;
  long in_place_ = 0;  // runs that wrote an output into a dying input
};

// The group's inputs made by an op of the graph (not a view, not an in-place change of another
// array) that no later op reads (nor a slice moved ahead of the group) and the graph does not
// return.
std::vector<int> dying_inputs(const Graph& graph, const Group& g, const Program& p) {
  std::vector<int> sliced;
  for (const int k : g.hoisted) {
    sliced.push_back(graph.ops()[static_cast<std::size_t>(k)].args[0].value);
  }
  std::vector<int> dying;
  for (const int v : g.inputs) {
    const Value& value = graph.value(v);
    const int last = p.last_use[static_cast<std::size_t>(v)];
    if (value.source != Value::Source::kOp || last < 0 || last > g.ops.back() ||
        std::find(sliced.begin(), sliced.end(), v) != sliced.end()) {
      continue;
    }
    const Op& made_by = graph.ops()[static_cast<std::size_t>(value.op)];
    if (!made_by.view && !made_by.mutates) {
      dying.push_back(v);
    }
  }
  return dying;
}

class CpuGroups final : public GroupBackend {
 public:
  const Names& names() const override {
    static const Names n{"cpu", "fused", {"tier A", "tier B"}, "op by op", "tier B"};
    return n;
  }

  std::unique_ptr<GroupKernel> make_kernel(const Graph& graph, const Group& g, kir::Kernel kernel,
                                           const Program& program) override {
    auto k = std::make_unique<CpuGroupKernel>(std::move(kernel));
    k->block().set_in_place_after_library(g.single_after_library);
    k->block().set_dying_inputs(dying_inputs(graph, g, program));
    if (const kir::Observer watch = kir::observer()) {
      watch(k->kernel());
    }
    return k;
  }

  void begin_run(Frame& frame) override { frame.set_pool(&pool_); }
  bool profile() const override { return cpu_options().profile.load(); }
  void describe(py::dict& plan) const override { plan["pooled_arrays"] = pool_.size(); }

 private:
  BufferPool pool_;
};

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }

  py::object compile(const Graph& graph, const std::vector<int>& outputs, bool check) override {
    return make_compiled(std::make_unique<GroupedRunner>(
        build_program(graph, outputs, check), graph, outputs, std::make_unique<CpuGroups>()));
  }

  // Tier C: the whole loop as one native function (graph/backends/cpu/whole/).
  std::shared_ptr<LoopCode> compile_loop(const LoopSpec& spec) override {
    return whole::native_loop(spec);
  }

  // Tier C of a graph with loop ops: the whole graph as one native function.
  std::shared_ptr<LoopCode> compile_graph(const Graph& graph,
                                          const std::vector<int>& outputs) override {
    return whole::native_graph(graph, outputs);
  }

  bool compiles_loops() const override { return whole::whole_options().enabled.load(); }

  bool native_loop(const LoopSpec& spec, std::string* why) override {
    if (!whole::whole_options().enabled.load()) {
      *why = "tier C is off (SOT_CPU_TIER_C=0)";
      return false;
    }
    return whole::emit_loop(spec, why).has_value();
  }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() {
  return std::make_unique<CpuBackend>();
}

}  // namespace sot::graph
