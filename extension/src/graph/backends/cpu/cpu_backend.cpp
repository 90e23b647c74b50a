// The CPU backend: the graph's fusion groups in program order; a fused group runs as its kernel
// (tier A, block by block), every other group as the NumPy calls the user made. A fused group
// falls back to its ops one by one where eager NumPy's behaviour needs it (a floating-point error
// the error state reports, an input layout the block executor does not take).
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "graph/backends/cpu/block_executor.hpp"
#include "graph/exec/backend.hpp"
#include "graph/exec/group_steps.hpp"
#include "graph/exec/program.hpp"
#include "graph/lower/fusion.hpp"
#include "graph/lower/kernel_ir.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

struct Segment {
  Group group;
  std::unique_ptr<BlockKernel> kernel;  // fused groups
  std::vector<std::string> op_names;
  // Counters of this compiled graph's runs.
  long runs = 0;
  long blocked = 0;   // tier A runs
  long native = 0;    // tier B runs
  long replayed = 0;  // fused group run op by op
  long in_place = 0;  // runs that wrote an output into a dying input
  double seconds = 0;
};

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

class FusedRunner final : public Runner {
 public:
  FusedRunner(std::unique_ptr<Program> program, const Graph& graph, const std::vector<int>& outputs)
      : p_(std::move(program)) {
    int kernels = 0;
    for (Group& g : partition(graph, outputs)) {
      Segment s;
      s.op_names = op_names(graph, g);
      if (g.kind == Group::Kind::kFused) {
        s.kernel =
            std::make_unique<BlockKernel>(kir::lower(graph, g, "k" + std::to_string(kernels++)));
        s.kernel->set_in_place_after_library(g.single_after_library);
        s.kernel->set_dying_inputs(dying_inputs(graph, g));
        if (const kir::Observer watch = kir::observer()) {
          watch(s.kernel->kernel());
        }
      }
      s.group = std::move(g);
      segments_.push_back(std::move(s));
    }
  }

  // The group's inputs made by an op of the graph (not a view, not an in-place change of another
  // array) that no later op reads (nor a slice moved ahead of the group) and the graph does not
  // return.
  std::vector<int> dying_inputs(const Graph& graph, const Group& g) const {
    std::vector<int> sliced;
    for (const int k : g.hoisted) {
      sliced.push_back(graph.ops()[static_cast<std::size_t>(k)].args[0].value);
    }
    std::vector<int> dying;
    for (const int v : g.inputs) {
      const Value& value = graph.value(v);
      const int last = p_->last_use[static_cast<std::size_t>(v)];
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

  PyObject* run(PyObject* const* argv, std::size_t nargs) override {
    if (!check_input_count(*p_, nargs)) {
      return nullptr;
    }
    Frame frame(*p_, argv);
    frame.set_pool(&pool_);
    const bool profile = cpu_options().profile.load();
    for (Segment& s : segments_) {
      const auto start =
          profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
      if (!run_segment(s, frame)) {
        return nullptr;
      }
      ++s.runs;
      if (profile) {
        s.seconds +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      }
    }
    return frame.outputs();
  }

  std::string repr() const override {
    std::size_t fused = 0;
    for (const Segment& s : segments_) {
      fused += s.kernel ? 1 : 0;
    }
    return runner_repr(*p_, "cpu: " + std::to_string(segments_.size()) + " groups, " +
                                std::to_string(fused) + " fused");
  }

  py::dict plan() const override {
    py::list groups;
    for (const Segment& s : segments_) {
      py::dict g = group_plan(s.group, s.op_names, s.runs);
      g["seconds"] = s.seconds;
      if (s.kernel) {
        g["kernel"] = s.kernel->kernel().text();
        g["tier_a_runs"] = s.blocked;
        g["tier_b_runs"] = s.native;
        g["tier_b"] = tier_b_status(*s.kernel);
        g["op_by_op_runs"] = s.replayed;
        g["in_place_runs"] = s.in_place;
        g["last_fallback"] = s.kernel->last_replay();
        g["disabled"] = s.kernel->disabled();
      }
      groups.append(g);
    }
    py::dict d;
    d["backend"] = "cpu";
    d["pooled_arrays"] = pool_.size();
    d["groups"] = groups;
    return d;
  }

 private:
  bool run_segment(Segment& s, Frame& frame) {
    return run_with_hoisted(s.group, frame, [&] { return run_group(s, frame); });
  }

  bool run_group(Segment& s, Frame& frame) {
    if (!s.kernel) {
      return run_group_steps(s.group, frame);
    }
    switch (s.kernel->run(frame)) {
      case BlockKernel::Outcome::kDone:
        ++(s.kernel->last_tier() == 'B' ? s.native : s.blocked);
        s.in_place += s.kernel->last_in_place() ? 1 : 0;
        release_group(s.group, frame);
        return true;
      case BlockKernel::Outcome::kReplay:
        ++s.replayed;
        return run_group_steps(s.group, frame);
      case BlockKernel::Outcome::kError:
        break;
    }
    return false;
  }

  std::unique_ptr<Program> p_;
  std::vector<Segment> segments_;
  BufferPool pool_;
};

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }

  py::object compile(const Graph& graph, const std::vector<int>& outputs, bool check) override {
    return make_compiled(
        std::make_unique<FusedRunner>(build_program(graph, outputs, check), graph, outputs));
  }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() {
  return std::make_unique<CpuBackend>();
}

}  // namespace sot::graph
