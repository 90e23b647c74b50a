// Residency: where the cuda backend's values live during one run. The arrays its kernels make stay
// on the device (DeviceArray values in the frames), between groups, across a loop op's steps and a
// cond op's ways (their graphs run in the same residency); the host arrays the run was given are
// mirrored on the device when a kernel first reads them, copied in once per run; a value is copied
// out only when a step on the host reads it, or when the run returns it.
//
// The two copies of a block are kept coherent as a cache would keep them:
// - before a step runs on the host, every block the device wrote since is copied out into its
//   origin (a host view made earlier may alias it);
// - after a host step that may change arrays in place, every mirror's device copy is stale (read
//   again when a kernel next needs it);
// - a kernel writing a block (the setitem of a device array, on the device) makes its origin stale;
// - when the run ends, however it ends, every origin is made current (the caller's arrays show
//   every change), and the run's results come back as NumPy arrays.
//
// Floating-point errors: while no step has run on the host and nothing has been copied out (the run
// is optimistic), kernels or their flags into one word of the run's and nothing waits for them; the
// word is read once, when the run ends or before its first step on the host or copy out. Where it
// says an error the error state reports, the run has changed nothing the caller can see: it is
// abandoned (rerun_on_host) and the whole graph runs again on the host, which warns or raises as
// NumPy. After the first host step each group reads its own word after its run (and runs again on
// the host when it flags one).
//
// Runs nest: a loop op's body (and each way of a cond op) runs in the residency of the run around
// it; any other run (a compiled graph called from the Python code a host step runs) has its own.
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/kept_error.hpp"
#include "graph/backends/cuda/device_array.hpp"
#include "graph/exec/program.hpp"
#include "graph/exec/value_home.hpp"
#include "graph/runtime/cuda/cuda_device.hpp"

namespace sot::graph {

class Staging;
struct LateScalar;

class Residency final : public ValueHome {
 public:
  Residency(DeviceApi& device, std::shared_ptr<DevicePool> pool);
  ~Residency() override;  // every origin made current (the error indicator kept)
  Residency(const Residency&) = delete;
  Residency& operator=(const Residency&) = delete;
  Residency(Residency&&) = delete;
  Residency& operator=(Residency&&) = delete;

  bool takes_as_is(PyObject* fn, PyObject* first) override;
  bool holds(PyObject* v) override { return device_value_of(v) != nullptr; }
  PyObject* host_form(PyObject* v) override;
  PyObject* try_run(PyObject* fn, PyObject* const* args, std::size_t nargs,
                    PyObject* kwnames) override;
  bool before_host_step() override {
    ++host_work_;
    return settle_late(nullptr) && leave_optimism() && flush();
  }
  void after_host_step(bool mutates, PyObject* written = nullptr) override;
  std::unique_ptr<StepRecord> record_steps() override;

  // Late scalars (late_scalars.hpp; defined there).
  PyObject* settled(PyObject* v) override;
  void late_reads(int delta) override;  // (none where SOT_CUDA_RUN_AHEAD=0)
  PyObject* defer(PyObject* fn, PyObject* const* args, std::size_t nargs) override;
  bool ahead_begin(const std::vector<PyObject*>& tests,
                   const std::function<int()>& decide) override;
  int ahead_end() override;
  // Whether a full reduction gives its float result late now (a while loop's body that may run
  // ahead is running, and the run is optimistic).
  bool reads_late() const { return late_depth_ > 0 && optimistic_ && !abandoned_; }
  // A late scalar made (`step`: a scalar step, to run in the order made).
  void made_late(const std::shared_ptr<LateScalar>& s, bool step);
  // The late steps made up to `through` (every one: nullptr) run, in the order made; false with
  // an error set. (Inside such a run, nothing more: the steps run in order already.)
  bool settle_late(const LateScalar* through);

  // What the run did beyond queuing launches (host forms, host steps, flag reads, library
  // steps), counted: a loop step that did none of it may be replayed (step_replay.hpp).
  std::uint64_t host_work() const { return host_work_; }
  void did_host_work() { ++host_work_; }
  void loop_steps(int delta) override { loop_depth_ += delta; }
  // Whether a loop op's steps are running (their work repeats).
  bool in_loop() const { return loop_depth_ > 0; }
  // Loop steps' launches queued again (their flags are the run's word, read at its end).
  void replayed(std::uint64_t steps) {
    replayed_steps_ += steps;
    pending_ = true;
  }
  std::uint64_t replayed_steps() const { return replayed_steps_; }

  DeviceApi& device() { return device_; }
  const std::shared_ptr<DevicePool>& pool() const { return pool_; }
  // The mirror of host array `a` (made once per run, its device copy not yet current), or nullptr
  // when `a` is not an array whose bytes a block can mirror (an exact, aligned, C-contiguous
  // ndarray of a dtype the kernels know, whose memory overlaps no other block's origin: a view of
  // an array already mirrored is copied in for each use instead, after a flush).
  std::shared_ptr<DeviceValue> mirror(PyObject* a);
  // A block the device wrote: its origin is stale.
  void wrote(DeviceBlock& block);
  // A block that has an origin from now on (made by host_array): kept coherent.
  void track(const std::shared_ptr<DeviceBlock>& block);
  // Every origin made current (the run's optimism over first, where one is stale); false with a
  // Python error set.
  bool flush();

  // Whether groups may run with the run's flag word, unread (nothing has run on the host yet).
  bool optimistic() const { return optimistic_; }
  // The run's flag word (taken and zeroed once; 0 with `why`).
  std::uint64_t flag_word(std::string* why);
  // A kernel ran with the run's flag word.
  void queued() { pending_ = true; }
  // The flag word read where kernels ran with it since it was last read: false with the rerun
  // error set (rerun_on_host) when it says an error the error state reports.
  bool check_flags();
  // Before a value the device made is copied out for Python code to read (a full reduction's
  // scalar): while the run is optimistic, the flags are read at every kFlagBatch-th such read
  // only (batched checks: a while loop's test read each step waits once, not twice). A value read
  // before an error is seen is one NumPy computes too (the kernels follow IEEE arithmetic as its
  // loops do); only steps that change nothing read it, and anything the caller could see reads
  // the flags first (leave_optimism), as the run's end does. Else as check_flags().
  bool check_flags_before_read();
  static constexpr std::uint64_t kFlagBatch = 32;
  // Something the caller could see is about to happen (a step on the host, a copy out): the flags
  // checked, and no more optimism; false with an error set.
  bool leave_optimism();
  // A launch timed between two marks (DeviceApi::mark): its milliseconds added to `*seconds` (as
  // seconds) once both are reached.
  void time(std::uint64_t start, std::uint64_t end, double* seconds);
  // The marks reached (the device synchronised) added to their totals and given back.
  void settle_times();
  // After a run failed: whether it failed because its flags said so (the error cleared then; the
  // run changed nothing the caller sees, and nothing of it is copied out). First its late steps
  // not yet run run (each came before the failure: an error of theirs replaces the run's).
  bool rerun_on_host();
  // The run's inputs that can be mirrored replaced in `frame` by their mirrors (so that slices of
  // them are slices on the device), and the caller's device arrays (anything with
  // __cuda_array_interface__) by DeviceArrays over their memory (in the outermost run's frame; a
  // loop body's or cond way's device arrays are the run's own).
  void mirror_inputs(Frame& frame, bool outermost);
  // Before a kernel writes `block`: a block the caller holds is copied on the device first while
  // the run is optimistic (a run abandoned to the host puts it back: the caller sees no change),
  // or, where no copy can be made, written only once the flags were read. False with an error set.
  bool before_write(const std::shared_ptr<DeviceBlock>& block);
  // The run's outputs (a new reference, stolen: one value, or the tuple of `count` values the
  // frame made), every origin made current first: device arrays stay on the device where the run
  // was given device arrays or the caller asked for them (device_results; as CuPy arrays where a
  // CuPy array came in, the caller's own array where it comes back whole), else each is replaced
  // by its host form; nullptr with an error set.
  PyObject* finish(PyObject* outputs, std::size_t count);
  // The caller's device arrays the run took in place, and the results it handed back on the device.
  std::uint64_t inputs_on_device() const { return inputs_on_device_; }
  std::uint64_t results_on_device() const { return results_on_device_; }
  // The steps run on the device by try_run (products, reductions along an axis).
  std::uint64_t library_steps() const { return library_steps_; }

 private:
  bool overlaps_an_origin(const char* data, std::size_t bytes) const;
  // Where a step run ahead (ahead_begin) is about to do what the caller could see (`block`: write
  // that block; nullptr: anything else): the loop's tests read first. False with an error set
  // (the step goes no further: the loop ended there, or the tests raised).
  bool decide_ahead(const DeviceBlock* block);
  // The rerun error set (the run was abandoned: it goes to the host whole); -1.
  int rerun_now();
  // Where many late steps wait (nothing reads them), all of them run; false with an error set.
  bool settle_some_late();
  // A copy of the error set when a step run ahead was stopped, set again wherever it goes on.
  KeptError ahead_failure_;
  // The late scalars made (their run cleared when it ends), and the late steps not yet run.
  std::vector<std::weak_ptr<LateScalar>> lates_;
  std::deque<std::shared_ptr<LateScalar>> late_steps_;
  std::uint64_t lates_made_ = 0;
  int late_depth_ = 0;
  bool settling_ = false;
  // A step run ahead: its loop's `decide`, the answer (kUndecided until called; kDeciding while
  // it runs), and where the step began (the late scalars and device blocks made after are its).
  static constexpr int kUndecided = -2;
  static constexpr int kDeciding = -3;
  bool ahead_ = false;
  int ahead_answer_ = kUndecided;
  std::function<int()> decide_;
  std::uint64_t ahead_lates_ = 0;
  std::uint64_t ahead_blocks_ = 0;
  // The caller's device array `v` as a DeviceArray of this run's (the same one for the same
  // object), or nullptr (no error set) when it cannot be taken.
  PyObject* take_external(PyObject* v);
  // Output `v` as the caller gets it (a new reference; nullptr with an error set).
  PyObject* output(PyObject* v);
  // Host array `a` copied to the device, as the caller's kind of device array.
  PyObject* device_copy(PyObject* a);
  // Device array `d` (stolen) as the caller's kind: a CuPy array where a CuPy array came in.
  PyObject* as_callers_kind(PyObject* d);
  // Whether the run hands back device arrays (it was given one, or the caller asked for them).
  bool device_results() const;
  // The caller's device arrays whose host copies a step changed: copied back to the device now.
  void write_back_externals();
  // The blocks the caller holds that an abandoned run wrote: their contents before it put back.
  void put_back();
  struct Backup {
    std::shared_ptr<DeviceBlock> block;
    std::shared_ptr<DeviceValue> copy;
  };
  std::unordered_map<const DeviceBlock*, Backup> backups_;

  DeviceApi& device_;
  std::shared_ptr<DevicePool> pool_;
  std::unordered_map<PyObject*, std::shared_ptr<DeviceValue>> mirrors_;  // by host array
  std::vector<std::weak_ptr<DeviceBlock>> tracked_;                      // blocks with an origin
  // the origins made for blocks the device made, by host array (a kernel reading one reads the
  // block)
  std::unordered_map<PyObject*, std::weak_ptr<DeviceBlock>> origins_;
  // the caller's device arrays taken (mirror_inputs), by the DeviceArray standing for each
  std::unordered_map<PyObject*, pybind11::object> externals_;
  bool device_inputs_ = false;  // the run was given a device array
  std::uint64_t inputs_on_device_ = 0;
  std::uint64_t results_on_device_ = 0;
  std::uint64_t library_steps_ = 0;
  std::uint64_t host_work_ = 0;
  int loop_depth_ = 0;
  std::uint64_t replayed_steps_ = 0;
  std::unordered_set<PyObject*> given_;  // the outermost run's inputs (alive as long as it runs)
  pybind11::object as_cupy_;             // cupy.asarray where a CuPy array came in
  bool dirty_ = false;                   // a tracked block's origin may be stale
  bool optimistic_ = true;
  bool pending_ = false;               // kernels ran with the flag word since it was last read
  std::uint64_t unchecked_reads_ = 0;  // values read while the flags were left unread
  bool abandoned_ = false;             // the flags said so: nothing is copied out
  std::uint64_t flags_ = 0;            // the flag word (the pool's; given back at the end)
  struct Timing {
    std::uint64_t start = 0;
    std::uint64_t end = 0;
    double* seconds = nullptr;
  };
  std::vector<Timing> timings_;
};

// The error-flag word a launch ors its flags into: the run's while the run is optimistic (read when
// the run ends or leaves the device), else (or where `own`) a zeroed word of `staging`'s, read by
// settle() once the launch is queued. One way for every launch of the backend.
class LaunchFlags {
 public:
  LaunchFlags(Residency& r, Staging& staging, bool own, std::string* why);
  // The word's device address: 0 where none could be had (`why` says why).
  std::uint64_t address() const { return address_; }
  // Whether the word is the launch's own (read by settle), not the run's.
  bool own() const { return own_; }
  // After the launch was queued: the run's word marks the run as having queued kernels and reads
  // nothing (0); an own word is read now, the device synchronised (nullopt with `why`).
  std::optional<unsigned> settle(std::string* why);

 private:
  Residency& r_;
  bool own_;
  std::uint64_t address_ = 0;
};

// Whether the cuda backend times each group's device runs (SOT_PROFILE; the plan's
// "device_seconds").
std::atomic<bool>& cuda_profile();

// The residency of the calling thread's run, or nullptr.
Residency* current_residency();

}  // namespace sot::graph
