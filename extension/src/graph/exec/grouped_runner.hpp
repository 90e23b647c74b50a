// The one runner of the backends that run fusion groups (cpu, cuda). It partitions the graph into
// groups (graph/lower/fusion.hpp), lowers each fused group (kir::lower) and hands the kernel to the
// backend's GroupKernel, runs the groups in program order (the slices moved ahead of a group
// first), switches on a kernel's outcome (done; its ops one by one instead; an error), counts, and
// gives plan() in one schema for every backend. A backend supplies only its GroupBackend: the
// kernel of a fused group (run, describe), its names for the ways a kernel runs, and its pools.
//
// plan(): {"backend", "kernel_label" ("fused", "on the device"), "paths" (the ways a kernel runs:
// ["tier A", "tier B"], ["device"]), "fallback" ("op by op", "host"), "status_name" ("tier B",
// "cuda"), "groups": [group_plan() entries; a group with a kernel adds "kernel" (its text),
// "path_runs" (per path), "fallback_runs", "usable", "status", "last_fallback", "seconds" and the
// backend's own entries]} and the backend's plan-level entries.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/exec/program.hpp"
#include "graph/ir/graph.hpp"
#include "graph/lower/fusion.hpp"
#include "graph/lower/kernel_ir.hpp"

namespace sot::graph {

// A fused group's kernel as a backend runs it.
class GroupKernel {
 public:
  enum class Outcome : std::uint8_t {
    kDone,    // the group's outputs are in the frame
    kReplay,  // nothing changed: the group's ops run one by one instead
    kError,   // a Python error is set
  };

  GroupKernel() = default;
  GroupKernel(const GroupKernel&) = delete;
  GroupKernel& operator=(const GroupKernel&) = delete;
  GroupKernel(GroupKernel&&) = delete;
  GroupKernel& operator=(GroupKernel&&) = delete;
  virtual ~GroupKernel() = default;

  // True when the next run must be the group's ops on the host, their results then shown to
  // check_host_run() (the cuda backend's first run checks the kernel's dtypes against them).
  virtual bool wants_host_run() const { return false; }
  virtual void check_host_run(const Frame& frame) { (void)frame; }
  virtual Outcome run(Frame& frame) = 0;
  // Which of the backend's paths the last kDone took (an index into GroupBackend::Names::paths).
  virtual std::size_t last_path() const { return 0; }
  // False when the kernel never runs (it could not be made): every run is the fallback.
  virtual bool usable() const { return true; }
  // The kernel's state in words ("ready (compiled in 0.31 s)", "compiled", "no CUDA device: ...").
  virtual std::string status() const = 0;
  // Why the last fallback run happened ("" when none has).
  virtual std::string last_fallback() const = 0;
  virtual const kir::Kernel& kernel() const = 0;

  // A group's counts, as the runner keeps them.
  struct Counts {
    long runs = 0;
    std::vector<long> path_runs;  // per path
    long fallback_runs = 0;
    double seconds = 0;
  };
  // The backend's own entries of the group's plan.
  virtual void describe(pybind11::dict& entry, const Counts& counts) const {
    (void)entry;
    (void)counts;
  }
};

// What a backend gives the grouped runner, one per compiled graph.
class GroupBackend {
 public:
  struct Names {
    std::string backend;       // "cpu"
    std::string kernel_label;  // "fused": what plan_summary calls the groups with a usable kernel
    std::vector<std::string> paths;
    std::string fallback;     // "op by op"
    std::string status_name;  // "tier B"
  };

  GroupBackend() = default;
  GroupBackend(const GroupBackend&) = delete;
  GroupBackend& operator=(const GroupBackend&) = delete;
  GroupBackend(GroupBackend&&) = delete;
  GroupBackend& operator=(GroupBackend&&) = delete;
  virtual ~GroupBackend() = default;

  // What a backend keeps for the length of one run: opened before the run's frame is made, asked
  // for the run's outputs after, closed after the frame is gone (the cuda backend's residency).
  class RunScope {
   public:
    RunScope() = default;
    RunScope(const RunScope&) = delete;
    RunScope& operator=(const RunScope&) = delete;
    RunScope(RunScope&&) = delete;
    RunScope& operator=(RunScope&&) = delete;
    virtual ~RunScope() = default;
    // Once the frame is made.
    virtual void start(Frame& frame) { (void)frame; }
    // The run's outputs as the caller gets them (takes and returns a new reference: one value, or
    // the tuple of `count`; nullptr with an error set).
    virtual PyObject* finish(PyObject* outputs, std::size_t count) {
      (void)count;
      return outputs;
    }
    // After the run failed: true (the error cleared) when it is to run again with every group on
    // the host, having changed nothing the caller sees (the cuda backend's flags said so).
    virtual bool rerun_on_host() { return false; }
  };

  virtual const Names& names() const = 0;
  // The scope of a run starting now (nullptr: none).
  virtual std::unique_ptr<RunScope> open_run() { return nullptr; }
  // The scope of a run with every group on the host (host_only_runs) given `argv`: where values
  // of the backend's came in (the caller's device arrays), what gives their host forms.
  virtual std::unique_ptr<RunScope> open_host_run(PyObject* const* argv, std::size_t nargs) {
    (void)argv, (void)nargs;
    return nullptr;
  }
  // The kernel of fused group `g` of `graph` (`kernel` its lowering; `program` the graph's).
  virtual std::unique_ptr<GroupKernel> make_kernel(const Graph& graph, const Group& g,
                                                   kir::Kernel kernel, const Program& program) = 0;
  // Called as each run starts (the cpu backend gives the frame its buffer pool).
  virtual void begin_run(Frame& frame) { (void)frame; }
  // True when each group's time is measured (plan()'s "seconds").
  virtual bool profile() const { return false; }
  // The backend's own plan-level entries (its pools).
  virtual void describe(pybind11::dict& plan) const { (void)plan; }
};

// Whether the calling thread is running a graph again on the host (RunScope::rerun_on_host): its
// groups run their ops, and so do the graphs it runs in turn (a loop body's).
bool host_only_runs();

class GroupedRunner final : public Runner {
 public:
  GroupedRunner(std::unique_ptr<Program> program, const Graph& graph,
                const std::vector<int>& outputs, std::unique_ptr<GroupBackend> backend);

  PyObject* run(PyObject* const* argv, std::size_t nargs) override;
  std::string repr() const override;
  pybind11::dict plan() const override;

 private:
  struct Segment {
    Group group;
    std::vector<std::string> op_names;
    std::unique_ptr<GroupKernel> kernel;  // fused groups
    GroupKernel::Counts counts;
  };

  // One run of the segments in `scope` (nullptr: none): the outputs, or nullptr with an error set.
  PyObject* run_segments(PyObject* const* argv, GroupBackend::RunScope* scope);
  bool run_group(Segment& s, Frame& frame);

  std::unique_ptr<Program> p_;
  std::unique_ptr<GroupBackend> backend_;  // (its pools outlive the kernels, made after it)
  std::vector<Segment> segments_;
  // Where each value lived in the last run that had a value home (Frame::note_homes); empty
  // before one.
  std::vector<unsigned char> lived_;
};

}  // namespace sot::graph
