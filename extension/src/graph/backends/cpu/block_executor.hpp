// Tier A of the CPU backend: a kernel run block by block, each expression a call of its NumPy
// ufunc on cache-sized blocks (`out=` block temporaries or the output's block), so the values a
// kernel does not store stay in cache and results are those of eager NumPy's own inner loops.
// Floating-point errors are collected from the hardware flags with NumPy's reporting off; when the
// user's error state reports one, the caller runs the group op by op instead, so that the warning
// (or log) is eager NumPy's, once per op, in order - or, after a run that wrote an output into a
// dying input (whose data is then gone), NumPy reports each op's flags as after its own loop.
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/backends/cpu/block_native.hpp"
#include "graph/backends/cpu/block_parts.hpp"
#include "graph/backends/cpu/block_reductions.hpp"
#include "graph/backends/cpu/block_reuse.hpp"
#include "graph/backends/cpu/cpu_options.hpp"
#include "graph/backends/cpu/native_cache.hpp"
#include "graph/exec/program.hpp"
#include "graph/lower/kernel_ir.hpp"

namespace sot::graph {

// The block runner: prepares a run (its arrays, its domain, its outputs), runs its blocks on the
// pool's threads - tier A's NumPy calls, or tier B's compiled code (NativeTier) - and decides when
// the group runs op by op instead. Outputs are OutputReuse's, a final reduction BlockReduction's.
class BlockKernel {
 public:
  enum class Outcome : std::uint8_t {
    kDone,    // the outputs are in the frame
    kReplay,  // nothing changed: run the group's ops one by one (the reason in last_replay())
    kError,   // a Python error is set
  };

  explicit BlockKernel(kir::Kernel kernel);

  Outcome run(Frame& frame);
  // A one-op kernel on a library call's result: when that result dies at the op and kernels cannot
  // write in place (NumPy 1.x), the op runs in place as the reference program runs it (see run()).
  void set_in_place_after_library(bool on) { in_place_after_library_ = on; }
  // The graph values among the kernel's inputs that no op after the group reads (and the graph
  // does not return): an output may be written into one of them (see allocate()).
  void set_dying_inputs(const std::vector<int>& values) { reuse_.set_dying_inputs(plan_, values); }
  // True when the last run wrote an output into a dying input's array.
  bool last_in_place() const { return last_in_place_; }
  const kir::Kernel& kernel() const { return plan_.k; }
  // Why the last run was replayed ("floating-point error reported", "an input whose strides are not
  // in C order").
  const std::string& last_replay() const { return last_replay_; }
  // Set when the first run found a result dtype other than the graph's: every run replays.
  const std::string& disabled() const { return disabled_; }
  // The tier of the last run that finished: 'A' (NumPy's loops) or 'B' (the compiled kernel).
  char last_tier() const { return last_tier_; }
  // Tier B: the compiled kernel (null when not emitted, with the reason in native_why()).
  const std::shared_ptr<NativeKernel>& native() const { return native_.kernel(); }
  const std::string& native_why() const { return native_.why(); }

 private:
  bool prepare(Frame& frame, BlockRun& r);
  void allocate(BlockRun& r);
  std::int64_t block_elements(const std::vector<std::int64_t>& domain) const;
  bool native_ready(const BlockRun& r) const {
    return native_.ready(r, reduction_.active(), verified_);
  }
  bool run_blocks(BlockRun& r);
  bool work(const BlockRun& r, const Geometry& g, BlockWorker& w, std::atomic<std::int64_t>& next,
            std::atomic<bool>& failed);
  bool native_rows(const BlockRun& r, const Geometry& g, const std::vector<std::int64_t>& prefix,
                   std::int64_t start, std::int64_t stop, BlockWorker& w,
                   const std::vector<PyObject*>& views, const std::vector<PyObject*>& temps);
  bool run_calls(const BlockRun& r, BlockWorker& w, const std::vector<PyObject*>& views,
                 const std::vector<PyObject*>& temps);
  bool copy_into(PyObject* target, const std::vector<PyObject*>& args) const;
  bool verify_call(const kir::Expr& e, std::vector<PyObject*>& args, PyObject* target);
  Outcome replay(std::string why);
  bool runs_op_by_op_at_once(const Frame& frame);
  // Whether the compiled kernel is worth its run's preparation on `total` elements: always from
  // kMinBlock on; below, where it replaces two NumPy calls or more and reduces nothing (a 3-element
  // 11-op chain: 1.7 us a call against 5.2 us op by op, docs/executor.md).
  bool native_pays(std::int64_t total) const { return total >= block::kMinBlock || native_small_; }

  BlockPlan plan_;
  NativeTier native_;
  OutputReuse reuse_;
  BlockReduction reduction_;
  bool verified_ = false;
  bool native_small_ = false;  // native_pays below kMinBlock
  bool in_place_after_library_ = false;
  bool last_in_place_ = false;
  char last_tier_ = 'A';
  std::string last_replay_;
  std::string disabled_;
};

}  // namespace sot::graph
