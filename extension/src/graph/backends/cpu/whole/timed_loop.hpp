// Tier C's code of a loop that makes arrays past kMostItems items (as the translation sized
// them): there one pass per op may cost more than a step of tier B's fused kernels plus its call
// (heat_1d at 65,536 items: 37 ms in tier C, 8.4 ms on the loop's own path), or much less (nbody
// at 128 bodies, (128, 128, 2) arrays: 5.7 ms and 16 ms, eager NumPy 16 ms). So it runs only where
// timing says it pays (PathChoice), except when every run is native (hot calls 0).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "graph/backends/cpu/whole/path_choice.hpp"
#include "graph/exec/loop_code.hpp"

namespace sot::graph::whole {

class TimedLoop final : public LoopCode {
 public:
  TimedLoop(std::shared_ptr<LoopCode> code, long long largest);

  bool ready() const override { return code_->ready(); }
  bool retired() const override { return code_->retired(); }
  Route route(PyObject* const* args, std::size_t nargs) override;
  void timed(bool native, long long ns) override { choice_.timed(native, ns); }
  Outcome run(PyObject* const* args, std::size_t nargs, PyObject** result) override {
    return code_->run(args, nargs, result);
  }
  std::string status() const override;
  long runs() const override { return code_->runs(); }
  long gave_up() const override { return code_->gave_up(); }

 private:
  std::shared_ptr<LoopCode> code_;
  long long largest_;  // the most items of an array the code makes, as the translation sized it
  PathChoice choice_;
};

}  // namespace sot::graph::whole
