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

#include "graph/backends/cpu/native_cache.hpp"
#include "graph/exec/program.hpp"
#include "graph/lower/kernel_ir.hpp"

namespace sot {
struct ArrayFields;
}  // namespace sot

namespace sot::graph {

struct CpuOptions {
  // Elements per block (0: chosen so that a block's buffers fill about 1 MiB).
  std::atomic<std::int64_t> block_elements{0};
  // Time each group (plan()["groups"][i]["seconds"]).
  std::atomic<bool> profile{false};
  // Threads running a kernel's blocks (0: one per core).
  std::atomic<std::int64_t> threads{0};
};
CpuOptions& cpu_options();

struct Geometry;

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
  void set_dying_inputs(const std::vector<int>& values);
  // True when the last run wrote an output into a dying input's array.
  bool last_in_place() const { return last_in_place_; }
  const kir::Kernel& kernel() const { return k_; }
  // Why the last run was replayed ("floating-point error reported", "an input whose strides are not
  // in C order").
  const std::string& last_replay() const { return last_replay_; }
  // Set when the first run found a result dtype other than the graph's: every run replays.
  const std::string& disabled() const { return disabled_; }
  // The tier of the last run that finished: 'A' (NumPy's loops) or 'B' (the compiled kernel).
  char last_tier() const { return last_tier_; }
  // Tier B: the compiled kernel (null when not emitted, with the reason in native_why()).
  const std::shared_ptr<NativeKernel>& native() const { return native_; }
  const std::string& native_why() const { return native_why_; }

  struct Worker;  // one thread's temporaries and flags (block_executor.cpp)

 private:
  struct Run;
  struct Target {  // where a call expression's result goes in a block
    bool store = false;
    int index = -1;  // a buffer (store) or a temporary
  };

  bool prepare(Frame& frame, Run& r);
  pybind11::object take_spare(std::size_t b, const std::vector<std::int64_t>& domain);
  void keep_spare(std::size_t b, const pybind11::object& made);
  bool writable_alone(PyObject* a, std::size_t b, const std::vector<std::int64_t>& domain) const;
  void allocate(Run& r);
  std::int64_t block_elements(const std::vector<std::int64_t>& domain) const;
  bool run_blocks(Run& r);
  // Tier B: compiled, loaded and verified (native_ready: and the run's arrays are flat).
  bool native_loaded() const;
  bool native_layout(const Run& r) const;
  bool contiguous_rows(std::size_t b, const ArrayFields* f, std::int64_t length) const;
  bool native_ready(const Run& r) const;
  bool find_loops(const NativeSource& source);
  bool run_native(Run& r);
  bool native_scalars(Run& r) const;
  bool native_block(const Run& r, const Geometry& g, const std::vector<std::int64_t>& prefix,
                    std::int64_t start, std::int64_t stop, Worker& w,
                    const std::vector<PyObject*>& views, const std::vector<PyObject*>& temps);
  bool work(const Run& r, const Geometry& g, Worker& w, std::atomic<std::int64_t>& next,
            std::atomic<bool>& failed);
  bool run_calls(const Run& r, Worker& w, const std::vector<PyObject*>& views,
                 const std::vector<PyObject*>& temps);
  // The reduction of a block (graph/rules/reductions.hpp): a block of whole rows into the output's
  // rows, or a flat range into its leaves' sums.
  bool plan_reduction(Run& r);
  void allocate_reduction(Run& r);
  void plan_leaves(Run& r, Geometry& g) const;
  bool reduce_block(const Run& r, const Geometry& g, std::int64_t block, Worker& w,
                    const std::vector<PyObject*>& views, const std::vector<PyObject*>& temps);
  bool finish_reduction(Run& r);
  bool copy_into(PyObject* target, const std::vector<PyObject*>& args) const;
  bool can_donate() const;
  void donate(Run& r);
  bool report_flags_per_op(const Run& r) const;
  bool verify_call(const kir::Expr& e, std::vector<PyObject*>& args, PyObject* target);
  Outcome replay(std::string why);
  bool runs_op_by_op_at_once(const Frame& frame);

  kir::Kernel k_;
  std::vector<Target> targets_;           // per expression (calls, casts, selects)
  std::vector<DType> temp_dtypes_;        // per temporary
  std::vector<pybind11::object> dtypes_;  // numpy dtype per buffer
  std::vector<pybind11::object> temp_np_dtypes_;
  pybind11::object ndarray_;                // numpy.ndarray
  pybind11::object empty_;                  // numpy.empty
  pybind11::object copyto_;                 // numpy.copyto (casts, selects)
  pybind11::object out_kwnames_;            // ("out",)
  pybind11::object casting_kwnames_;        // ("casting",)
  pybind11::object casting_where_kwnames_;  // ("casting", "where")
  pybind11::object unsafe_;                 // "unsafe"
  std::int64_t bytes_per_element_ = 0;
  // Per output buffer: the array the last run returned, reused when nobody holds it any more.
  std::vector<pybind11::object> spares_;
  bool verified_ = false;
  bool in_place_after_library_ = false;
  bool last_in_place_ = false;
  // Per buffer: the input buffers its output may be written into (see set_dying_inputs), and
  // whether the kernel may write in place at all (some output has a donor, every expression's
  // flags are reported as NumPy reports them).
  std::vector<std::vector<int>> donors_;
  bool donatable_ = false;
  std::vector<int> last_reader_;     // per expression: the last expression reading it (-1: none)
  int reduce_ = -1;                  // the reduction's expression (-1: none)
  int reduce_buffer_ = -1;           // the buffer it is stored in
  pybind11::object reduce_fn_;       // ufunc.reduce
  pybind11::object reduce_kwnames_;  // ("axis", "keepdims", "out")
  char last_tier_ = 'A';
  std::shared_ptr<NativeKernel> native_;
  std::vector<NativeLoop> loops_;              // the NumPy loops the compiled kernel calls
  std::vector<pybind11::object> loop_owners_;  // what keeps them alive
  std::string native_why_;
  std::string last_replay_;
  std::string disabled_;
};

}  // namespace sot::graph
