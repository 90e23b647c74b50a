// Tier C's runner: a loop op's emitted function (whole_emitter.hpp), compiled in the background as
// tier B's kernels are (native_cache.hpp: the same disk cache, the same flags), run on the op's
// arguments. Each run reads the arguments into the function's slots (an argument of another kind
// than the translation saw gives up), keeps a copy of every array the function writes, clears the
// floating-point flags, calls it, and then either makes the op's outputs (Python ints and floats,
// NumPy scalars of their dtypes) or - when the function gave up, or raised a flag NumPy would warn
// of - copies the arrays back and says so: the loop op then runs its own path. After
// `kGiveUpLimit` give-ups the function is not run again (the loop op's own path from then on).
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "graph/backends/cpu/native_cache.hpp"
#include "graph/backends/cpu/whole/whole_emitter.hpp"
#include "graph/exec/loop_code.hpp"

namespace sot::graph::whole {

struct WholeOptions {
  std::atomic<bool> enabled{true};  // SOT_CPU_TIER_C=0: off
  std::atomic<bool> sync{false};    // SOT_CPU_TIER_C=sync: compiled before the first run
  // SOT_CPU_TIER_C_HOT: a graph with no loop op is made native after this many calls on small
  // arrays (whole_graph.hpp); 0: from the first, and run natively without timing the other path
  std::atomic<long> hot_calls{64};
};
WholeOptions& whole_options();

struct SlotArray;  // (the generated code's SotArr)

class WholeLoop final : public LoopCode {
 public:
  static constexpr long kGiveUpLimit = 4;

  explicit WholeLoop(WholeSource source);

  bool ready() const override;
  bool retired() const override;
  Outcome run(PyObject* const* args, std::size_t nargs, PyObject** result) override;
  std::string status() const override;
  long runs() const override { return runs_; }
  long gave_up() const override { return gave_up_; }
  const WholeSource& source() const { return source_; }

 private:
  // The arguments in `in` (arrays' views in `arrays`); false when one is of another kind.
  bool read_args(PyObject* const* args, std::size_t nargs, std::vector<unsigned long long>* in,
                 std::vector<SlotArray>* arrays) const;
  // (`made`: the arrays made for a whole graph's results, taken)
  PyObject* outputs(PyObject* const* args, const std::vector<unsigned long long>& out,
                    std::vector<pybind11::object>& made) const;
  PyObject* carried_array(PyObject* const* args, std::size_t k, unsigned long long data) const;
  void note_give_up(const std::string& why);

  WholeSource source_;
  std::shared_ptr<NativeKernel> kernel_;
  std::vector<pybind11::object> types_;       // per argument and output: a NumPy scalar's type
  std::vector<pybind11::object> descrs_;      // per argument: an array's dtype
  std::vector<pybind11::object> out_dtypes_;  // per output: its dtype where it is handed out
  pybind11::object ndarray_;
  pybind11::object empty_;  // numpy.empty
  long runs_ = 0;
  long gave_up_ = 0;
  std::string last_give_up_;
};

// A loop tier C does not emit: why, for the report.
class UnemittedLoop final : public LoopCode {
 public:
  explicit UnemittedLoop(std::string why) : why_(std::move(why)) {}
  bool ready() const override { return false; }
  bool emitted() const override { return false; }
  bool retired() const override { return true; }
  Outcome run(PyObject* const* args, std::size_t nargs, PyObject** result) override {
    (void)args;
    (void)nargs;
    (void)result;
    return Outcome::kGaveUp;
  }
  std::string status() const override { return "not emitted: " + why_; }
  long runs() const override { return 0; }
  long gave_up() const override { return 0; }

 private:
  std::string why_;
};

// Tier C's native code for loop op `spec`, or why not (an UnemittedLoop); nullptr when tier C is
// off.
std::shared_ptr<LoopCode> native_loop(const LoopSpec& spec);

}  // namespace sot::graph::whole
