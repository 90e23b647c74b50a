// A kernel of the kernel IR made ready on a device: emitted as CUDA C++ (cuda_emitter.hpp),
// compiled by NVRTC where the device needs a binary, its module loaded and its entry points found;
// and its launch over one run's arrays (cuda_launch.hpp). The fused groups and the residency's copy
// kernels both run through it. Device memory a run needs for itself (the partials' scratch) comes
// from a Staging, given back when the run ends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/backends/cuda/cuda_emitter.hpp"
#include "graph/backends/cuda/cuda_launch.hpp"
#include "graph/lower/kernel_ir.hpp"
#include "graph/runtime/cuda/cuda_device.hpp"

namespace sot::graph {

// Device memory of one run, given back to the pool however the run ends.
class Staging {
 public:
  explicit Staging(DevicePool& pool) : pool_(pool) {}
  ~Staging();
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  Staging(Staging&&) = delete;
  Staging& operator=(Staging&&) = delete;

  // A block of at least `bytes` (0 with `why` when the device has none left).
  std::uint64_t take(std::size_t bytes, std::string* why);

 private:
  DevicePool& pool_;
  std::vector<std::pair<std::uint64_t, std::size_t>> blocks_;
};

// NumPy's floating-point flags (FE_*) from a kernel's flag word.
int fe_flags_of(unsigned word);

class CudaKernel {
 public:
  // Emits, compiles and loads `k` for `device`; usable() false (why() says) when any step failed.
  CudaKernel(const kir::Kernel& k, DeviceApi& device);
  ~CudaKernel();
  CudaKernel(const CudaKernel&) = delete;
  CudaKernel& operator=(const CudaKernel&) = delete;
  CudaKernel(CudaKernel&&) = delete;
  CudaKernel& operator=(CudaKernel&&) = delete;

  bool usable() const { return why_.empty(); }
  const std::string& why() const { return why_; }
  const CudaSource& source() const { return source_; }
  double compile_seconds() const { return compile_seconds_; }

  enum class Launched : std::uint8_t {
    kQueued,     // on the device's stream
    kElsewhere,  // nothing launched: the run goes elsewhere (`why`: a layout the launch refuses,
                 // no device memory)
    kFailed,     // the device failed (`why`)
  };
  // Queues a run of `k` (the kernel it was made from) over `domain` with `arrays` (one per
  // buffer), the scalars' bits and the flag word at `flags`; `launches` counts the entry points
  // launched.
  Launched launch(const kir::Kernel& k, const std::vector<std::int64_t>& domain,
                  const std::vector<DeviceArray>& arrays, const std::vector<std::uint64_t>& bits,
                  std::uint64_t flags, Staging& staging, std::uint64_t* launches, std::string* why);

 private:
  std::uint64_t function(const std::string& entry) const;

  DeviceApi& device_;
  CudaSource source_;
  std::uint64_t module_ = 0;
  std::vector<std::pair<std::string, std::uint64_t>> functions_;
  std::string why_;
  double compile_seconds_ = 0;
};

// A launch as queued: what a replay queues again (LaunchLog).
struct LoggedLaunch {
  DeviceApi* device = nullptr;
  std::uint64_t function = 0;
  unsigned grid = 1;
  unsigned block = 1;
  std::vector<std::uint64_t> args;
  bool operator==(const LoggedLaunch& o) const {
    return device == o.device && function == o.function && grid == o.grid && block == o.block &&
           args == o.args;
  }
};

// The launches the calling thread queues while the log is open (every open log gets each one: a
// loop's step log holds the steps of the loops inside it), for the replay of a loop's steps
// (step_replay.hpp). Closed when destroyed.
class LaunchLog {
 public:
  LaunchLog() = default;
  ~LaunchLog() { close(); }
  LaunchLog(const LaunchLog&) = delete;
  LaunchLog& operator=(const LaunchLog&) = delete;
  LaunchLog(LaunchLog&&) = delete;
  LaunchLog& operator=(LaunchLog&&) = delete;

  void open();  // (emptied first)
  void close();
  std::vector<LoggedLaunch> launches;

 private:
  bool open_ = false;
};

// Whether a log is open on the calling thread.
bool launch_logs_open();

// Queues `l` (on its device) and logs it in every open log; false with `why` when the device
// failed.
bool queue_launch(const LoggedLaunch& l, std::string* why);

// How many kernels' modules were unloaded so far (their function handles may be a later module's:
// what keeps launches, the device graphs of replays, drops them when this changes).
std::uint64_t modules_unloaded();

// A kernel of the backend's own (not a fused group's): its kernel IR and that kernel made ready.
struct OwnKernel {
  kir::Kernel k;
  std::unique_ptr<CudaKernel> cuda;
};

// The skeleton of an own kernel: a domain of `rank` runtime sizes, buffer 0 read and buffer 1
// written, both of `dtype`, and expression 0 the load of buffer 0 (the caller adds the rest and
// the store).
kir::Kernel load_store_kernel(std::string name, DType dtype, std::size_t rank);

// The own kernel called `k.name` on `device`, made from `make()` the first time and kept for the
// process (its module loaded once).
OwnKernel& own_kernel(DeviceApi& device, const std::string& name,
                      const std::function<kir::Kernel()>& make);

// The CUDA C++ of every own kernel made so far, by name (empty where it was not emitted), for the
// compile check of the kernels no fused group lowers.
std::vector<std::pair<std::string, std::string>> own_kernel_sources();

}  // namespace sot::graph
