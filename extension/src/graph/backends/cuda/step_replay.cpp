#include "graph/backends/cuda/step_replay.hpp"

#include <pybind11/pybind11.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/backends/cuda/cuda_kernel.hpp"
#include "graph/backends/cuda/device_array.hpp"
#include "graph/backends/cuda/residency.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

// Steps a device graph replays at once.
constexpr std::int64_t kGraphSteps = 32;

// The device graphs made, by their launches (a loop's calls make the same one each time: the pool
// hands the same blocks back), at most kMostGraphs (then all dropped). Under the GIL.
constexpr std::size_t kMostGraphs = 32;

struct CachedGraph {
  std::vector<LoggedLaunch> launches;
  std::uint64_t graph = 0;
};

std::vector<CachedGraph>& graph_cache() {
  static auto* cache = new std::vector<CachedGraph>();  // (never destroyed: the driver may be gone)
  return *cache;
}

// The graph of `launches` (all on one device), made the first time; 0 where the device has none.
void drop_graphs(std::vector<CachedGraph>& cache) {
  for (const CachedGraph& c : cache) {
    if (c.graph != 0) {
      c.launches[0].device->drop_graph(c.graph);
    }
  }
  cache.clear();
}

std::uint64_t device_graph(const std::vector<LoggedLaunch>& launches) {
  std::vector<CachedGraph>& cache = graph_cache();
  // (a module unloaded since: a function handle of the graphs may now be another module's)
  static std::uint64_t unloaded = 0;
  if (modules_unloaded() != unloaded) {
    unloaded = modules_unloaded();
    drop_graphs(cache);
  }
  for (const CachedGraph& c : cache) {
    if (c.launches == launches) {
      return c.graph;
    }
  }
  if (cache.size() >= kMostGraphs) {
    drop_graphs(cache);
  }
  std::vector<DeviceApi::GraphLaunch> nodes;
  nodes.reserve(launches.size());
  for (const LoggedLaunch& l : launches) {
    nodes.push_back(DeviceApi::GraphLaunch{l.function, l.grid, l.block, l.args});
  }
  std::string why;
  const std::uint64_t graph = launches[0].device->make_graph(nodes, &why);
  cache.push_back(CachedGraph{launches, graph});  // (0 too: not tried again)
  return graph;
}

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

  bool end(bool same_values, const std::vector<PyObject*>& carried_in,
           const std::vector<PyObject*>& outputs) override {
    log_.close();
    const Form form = same_values ? Form::kSame : form_of(carried_in, outputs);
    const bool device_only = form != Form::kOther && r_.optimistic() && r_.host_work() == work_ &&
                             same_counts(transfer_counts(), moved_) && !log_.launches.empty();
    std::vector<LoggedLaunch> now =
        device_only ? std::move(log_.launches) : std::vector<LoggedLaunch>{};
    bool repeats = false;
    if (!now.empty() && now == last_ && form == Form::kSame && last_form_ == Form::kSame) {
      cycle_ = {now};
      repeats = true;
    } else if (!now.empty() && !last_.empty() && now == before_last_ && form == last_form_ &&
               form == before_last_form_) {
      // (two blocks swapped from step to step, as the pool hands back the one freed last: two
      // temporaries, or a carried array made anew each step)
      cycle_ = {last_, now};
      repeats = true;
    }
    if (repeats && form == Form::kSwapped) {
      for (std::size_t k = 0; k < outputs.size(); ++k) {
        // (a last value is one of the carried ones: the same object after the steps too)
        const std::size_t j = carried_of(carried_in.size(), outputs, k);
        entering_.push_back(py::reinterpret_borrow<py::object>(carried_in[j]));
        left_.push_back(py::reinterpret_borrow<py::object>(outputs[j]));
      }
    }
    next_ = 0;
    replayed_ = 0;
    graph_tried_ = false;
    before_last_ = std::move(last_);
    before_last_form_ = last_form_;
    last_ = std::move(now);
    last_form_ = form;
    return repeats;
  }

  // A carried array made anew each step swaps two blocks: after an odd number of replays the
  // last one wrote the block of the step's input, after an even number that of its output.
  std::vector<py::object> carried_after() override {
    return replayed_ % 2 == 1 ? entering_ : left_;
  }

  std::int64_t replay(std::int64_t left) override {
    if (left >= kGraphSteps && next_ == 0) {
      if (const std::uint64_t graph = cycle_graph(); graph != 0) {
        std::string why;
        if (!device_->run_graph(graph, &why)) {
          return failed(why);
        }
        r_.replayed(kGraphSteps);
        r_.pool()->restamp();  // (its launches use blocks the pool keeps: DevicePool::restamp)
        replayed_ += kGraphSteps;
        return kGraphSteps;
      }
    }
    const std::vector<LoggedLaunch>& step = cycle_[next_];
    next_ = (next_ + 1) % cycle_.size();
    for (const LoggedLaunch& l : step) {
      std::string why;
      if (!queue_launch(l, &why)) {
        return failed(why);
      }
    }
    r_.replayed(1);
    r_.pool()->restamp();
    ++replayed_;
    return 1;
  }

 private:
  // How a step's outputs relate to its inputs: the very objects (kSame: the loop's own check), or
  // each carried output its input or a new whole array of its dtype and shape in another block
  // (kSwapped; no other outputs).
  enum class Form : std::uint8_t { kOther, kSame, kSwapped };

  // The carried output that output `k` is (itself where k < ncarried; a last value that is one
  // of the carried ones, the very object), or ncarried where it is none.
  static std::size_t carried_of(std::size_t ncarried, const std::vector<PyObject*>& outputs,
                                std::size_t k) {
    if (k < ncarried) {
      return k;
    }
    std::size_t j = 0;
    while (j < ncarried && outputs[j] != outputs[k]) {
      ++j;
    }
    return j;
  }

  // How the step's carried values came out: the same objects; new whole arrays in blocks of their
  // own (kSwapped); or another way. Its last values (the outputs after the carried ones) must be
  // carried ones (`new` of `new = u.copy(); ...; u = new`), else the replayed steps could not
  // give them.
  static Form form_of(const std::vector<PyObject*>& carried_in,
                      const std::vector<PyObject*>& outputs) {
    if (outputs.size() < carried_in.size()) {
      return Form::kOther;
    }
    for (std::size_t k = carried_in.size(); k < outputs.size(); ++k) {
      if (carried_of(carried_in.size(), outputs, k) == carried_in.size()) {
        return Form::kOther;
      }
    }
    bool swapped = false;
    for (std::size_t k = 0; k < carried_in.size(); ++k) {
      if (outputs[k] == carried_in[k]) {
        continue;
      }
      const DeviceValue* in = device_value_of(carried_in[k]);
      const DeviceValue* out = device_value_of(outputs[k]);
      if (in == nullptr || out == nullptr || !in->whole || !out->whole || in->block == out->block ||
          in->dtype() != out->dtype() || in->shape != out->shape || in->block->owner != nullptr ||
          in->block->origin != nullptr) {
        return Form::kOther;  // (a caller's block, or one a host form mirrors, is never a scratch)
      }
      swapped = true;
    }
    return swapped ? Form::kSwapped : Form::kSame;
  }

  static std::int64_t failed(const std::string& why) {
    PyErr_Format(PyExc_RuntimeError, "sot: the device failed replaying a loop step: %s",
                 why.c_str());
    return 0;
  }

  // The device graph of kGraphSteps steps of the cycle (from its first), made once (0: none: the
  // device has no graphs, a loop around this one logs each launch, or the launches are on two
  // devices).
  std::uint64_t cycle_graph() {
    if (graph_tried_) {
      return graph_;
    }
    graph_tried_ = true;
    graph_ = 0;
    if (launch_logs_open() || kGraphSteps % static_cast<std::int64_t>(cycle_.size()) != 0) {
      return 0;
    }
    device_ = cycle_[0].empty() ? nullptr : cycle_[0][0].device;
    std::vector<LoggedLaunch> steps;
    for (std::int64_t s = 0; s < kGraphSteps; ++s) {
      const std::vector<LoggedLaunch>& step = cycle_[static_cast<std::size_t>(s) % cycle_.size()];
      for (const LoggedLaunch& l : step) {
        if (l.device != device_) {
          return 0;
        }
        steps.push_back(l);
      }
    }
    graph_ = device_graph(steps);
    return graph_;
  }

  Residency& r_;
  LaunchLog log_;
  // the last two steps' launches, each where the step was device work only (else empty)
  std::vector<LoggedLaunch> last_;
  std::vector<LoggedLaunch> before_last_;
  std::vector<std::vector<LoggedLaunch>> cycle_;  // the steps replayed in turn
  std::size_t next_ = 0;
  Form last_form_ = Form::kOther;
  Form before_last_form_ = Form::kOther;
  // A cycle of swapped carried arrays: the carried values entering and leaving the last step run,
  // and the steps replayed since (their parity says which holds the result).
  std::vector<py::object> entering_;
  std::vector<py::object> left_;
  std::int64_t replayed_ = 0;
  bool graph_tried_ = false;
  std::uint64_t graph_ = 0;  // (the cache's: device_graph)
  DeviceApi* device_ = nullptr;
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
