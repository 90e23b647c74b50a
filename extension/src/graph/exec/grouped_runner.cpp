// The grouped runner (grouped_runner.hpp): partition, lower, run the segments, switch on the
// outcome, plan().
#include "graph/exec/grouped_runner.hpp"

#include <pybind11/stl.h>

#include <chrono>
#include <utility>

#include "graph/exec/group_steps.hpp"
#include "graph/exec/loop_op.hpp"
#include "graph/exec/value_home.hpp"
#include "graph/ir/subgraph.hpp"

namespace py = pybind11;

namespace sot::graph {

GroupedRunner::GroupedRunner(std::unique_ptr<Program> program, const Graph& graph,
                             const std::vector<int>& outputs, std::unique_ptr<GroupBackend> backend)
    : p_(std::move(program)), backend_(std::move(backend)) {
  int kernels = 0;
  const std::size_t npaths = backend_->names().paths.size();
  for (Group& g : partition(graph, outputs)) {
    Segment s;
    s.op_names = op_names(graph, g);
    if (g.kind == Group::Kind::kFused) {
      s.kernel = backend_->make_kernel(graph, g,
                                       kir::lower(graph, g, "k" + std::to_string(kernels++)), *p_);
      s.counts.path_runs.assign(npaths, 0);
    }
    s.group = std::move(g);
    segments_.push_back(std::move(s));
  }
}

namespace {

thread_local int t_host_only = 0;

// Every group on the host while it lives.
class HostOnly {
 public:
  HostOnly() { ++t_host_only; }
  ~HostOnly() { --t_host_only; }
  HostOnly(const HostOnly&) = delete;
  HostOnly& operator=(const HostOnly&) = delete;
  HostOnly(HostOnly&&) = delete;
  HostOnly& operator=(HostOnly&&) = delete;
};

}  // namespace

bool host_only_runs() {
  return t_host_only > 0;
}

PyObject* GroupedRunner::run(PyObject* const* argv, std::size_t nargs) {
  if (!check_input_count(*p_, nargs)) {
    return nullptr;
  }
  {
    const std::unique_ptr<GroupBackend::RunScope> scope =
        host_only_runs() ? backend_->open_host_run(argv, nargs) : backend_->open_run();
    PyObject* out = run_segments(argv, scope.get());
    if (out != nullptr || !scope || host_only_runs() || !scope->rerun_on_host()) {
      return out;
    }
  }  // (the abandoned run's values and device memory gone)
  const HostOnly host;
  const std::unique_ptr<GroupBackend::RunScope> scope = backend_->open_host_run(argv, nargs);
  return run_segments(argv, scope.get());
}

PyObject* GroupedRunner::run_segments(PyObject* const* argv, GroupBackend::RunScope* scope) {
  Frame frame(*p_, argv);
  if (current_value_home() != nullptr) {  // (where each value lives, for the plan: this run's)
    lived_.assign(p_->nvalues, 0);
    frame.note_homes(&lived_);
  }
  if (scope != nullptr) {
    scope->start(frame);
  }
  backend_->begin_run(frame);
  const bool profile = backend_->profile();
  for (Segment& s : segments_) {
    const auto start =
        profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    if (!run_with_hoisted(s.group, frame, [&] { return run_group(s, frame); })) {
      return nullptr;
    }
    ++s.counts.runs;
    if (profile) {
      s.counts.seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
  }
  return scope != nullptr ? scope->finish(frame.outputs(), p_->outputs.size()) : frame.outputs();
}

bool GroupedRunner::run_group(Segment& s, Frame& frame) {
  if (!s.kernel) {
    return run_group_steps(s.group, frame);
  }
  if (host_only_runs()) {
    ++s.counts.fallback_runs;
    return run_group_steps(s.group, frame);
  }
  if (s.kernel->wants_host_run()) {
    ++s.counts.fallback_runs;
    if (!run_group_steps(s.group, frame, false)) {
      return false;
    }
    s.kernel->check_host_run(frame);
    release_group(s.group, frame);
    return true;
  }
  switch (s.kernel->run(frame)) {
    case GroupKernel::Outcome::kDone:
      ++s.counts.path_runs[s.kernel->last_path()];
      release_group(s.group, frame);
      return true;
    case GroupKernel::Outcome::kReplay:
      ++s.counts.fallback_runs;
      return run_group_steps(s.group, frame);
    case GroupKernel::Outcome::kError:
      break;
  }
  return false;
}

std::string GroupedRunner::repr() const {
  std::size_t usable = 0;
  for (const Segment& s : segments_) {
    usable += s.kernel && s.kernel->usable() ? 1 : 0;
  }
  const GroupBackend::Names& n = backend_->names();
  return runner_repr(*p_, n.backend + ": " + std::to_string(segments_.size()) + " groups, " +
                              std::to_string(usable) + " " + n.kernel_label);
}

py::dict GroupedRunner::plan() const {
  py::list groups;
  for (const Segment& s : segments_) {
    py::dict g = group_plan(s.group, s.op_names, s.counts.runs);
    g["seconds"] = s.counts.seconds;
    py::list loops;   // (the loop ops' native code, where the backend gave them one)
    py::list bodies;  // (the plans of the loop and cond ops' graphs)
    for (const int k : s.group.ops) {
      const py::handle fn = p_->steps[static_cast<std::size_t>(k)].fn;
      if (const SubgraphOp* sub = subgraph_of(fn)) {
        for (const auto& [label, compiled] : sub->compiled_graphs()) {
          if (py::hasattr(compiled, "plan")) {
            py::dict b;
            b["label"] = label;
            b["plan"] = compiled.attr("plan")();
            bodies.append(b);
          }
        }
      }
      const LoopBody* body = loop_body_of(fn);
      if (body != nullptr && body->native()) {
        py::dict l;
        l["status"] = body->native()->status();
        l["runs"] = body->native()->runs();
        l["gave_up"] = body->native()->gave_up();
        loops.append(l);
      }
    }
    if (!loops.empty()) {
      g["loops"] = loops;
    }
    if (!bodies.empty()) {
      g["bodies"] = bodies;
    }
    if (s.kernel) {
      g["kernel"] = s.kernel->kernel().text();
      g["path_runs"] = s.counts.path_runs;
      g["fallback_runs"] = s.counts.fallback_runs;
      g["usable"] = s.kernel->usable();
      g["status"] = s.kernel->status();
      g["last_fallback"] = s.kernel->last_fallback();
      s.kernel->describe(g, s.counts);
    }
    groups.append(g);
  }
  const GroupBackend::Names& n = backend_->names();
  py::dict d;
  d["backend"] = n.backend;
  d["kernel_label"] = n.kernel_label;
  d["paths"] = n.paths;
  d["fallback"] = n.fallback;
  d["status_name"] = n.status_name;
  backend_->describe(d);
  d["groups"] = groups;
  py::list on_device;
  py::list on_host;
  for (std::size_t i = 0; i < lived_.size(); ++i) {
    if (lived_[i] != 0) {
      (lived_[i] == 1 ? on_device : on_host).append(i);
    }
  }
  if (!lived_.empty()) {
    py::dict lived;  // (the last run's values, where it had a home: the graph's value ids)
    lived["device"] = on_device;
    lived["host"] = on_host;
    d["lived"] = lived;
  }
  return d;
}

}  // namespace sot::graph
