#include "graph/backends/cuda/step_replay.hpp"

#include <Python.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/backends/cuda/cuda_kernel.hpp"
#include "graph/backends/cuda/device_array.hpp"
#include "graph/backends/cuda/residency.hpp"

namespace sot::graph {

namespace {

bool same_counts(const TransferCounts& a, const TransferCounts& b) {
  return a.arrays_in == b.arrays_in && a.arrays_out == b.arrays_out;
}

class DeviceSteps final : public StepRecord {
 public:
  explicit DeviceSteps(Residency& r) : r_(r) {}

  void begin() override {
    log_.open();
    work_ = r_.host_work();
    moved_ = transfer_counts();
  }

  bool end(bool same_values) override {
    log_.close();
    const bool device_only = same_values && r_.optimistic() && r_.host_work() == work_ &&
                             same_counts(transfer_counts(), moved_) && !log_.launches.empty();
    std::vector<LoggedLaunch> now =
        device_only ? std::move(log_.launches) : std::vector<LoggedLaunch>{};
    bool repeats = false;
    if (!now.empty() && now == last_) {
      cycle_ = {now};
      repeats = true;
    } else if (!now.empty() && !last_.empty() && now == before_last_) {
      // (two temporaries' blocks swapped from step to step, as the pool hands them back)
      cycle_ = {last_, now};
      repeats = true;
    }
    next_ = 0;
    before_last_ = std::move(last_);
    last_ = std::move(now);
    return repeats;
  }

  bool replay() override {
    const std::vector<LoggedLaunch>& step = cycle_[next_];
    next_ = (next_ + 1) % cycle_.size();
    for (const LoggedLaunch& l : step) {
      std::string why;
      if (!queue_launch(l, &why)) {
        PyErr_Format(PyExc_RuntimeError, "sot: the device failed replaying a loop step: %s",
                     why.c_str());
        return false;
      }
    }
    r_.replayed();
    return true;
  }

 private:
  Residency& r_;
  LaunchLog log_;
  // the last two steps' launches, each where the step was device work only (else empty)
  std::vector<LoggedLaunch> last_;
  std::vector<LoggedLaunch> before_last_;
  std::vector<std::vector<LoggedLaunch>> cycle_;  // the steps replayed in turn
  std::size_t next_ = 0;
  std::uint64_t work_ = 0;
  TransferCounts moved_;
};

}  // namespace

std::unique_ptr<StepRecord> record_device_steps(Residency& r) {
  if (!cuda_replay().load()) {
    return nullptr;
  }
  return std::make_unique<DeviceSteps>(r);
}

std::atomic<bool>& cuda_replay() {
  static std::atomic<bool> on{true};
  return on;
}

}  // namespace sot::graph
