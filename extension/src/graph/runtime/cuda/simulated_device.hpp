// A CUDA device simulated on the CPU, for every machine without a GPU: device memory is host
// memory (an address is the host pointer, each copy checked to fall inside a live allocation),
// each module's CUDA C++ is compiled for the host by the system compiler against a small shim of
// CUDA's built-ins (simulated_shim.hpp: a block's threads as fibers on the launching thread where
// the code has __syncthreads (simulated_fibers.hpp), else run one after another; blocks one after
// another), launches run in order, and everything that moves is counted: allocations, copies each
// way and their bytes, launches, synchronisations. It needs no NVRTC: modules are loaded from their
// source. Copies queued from or to page-locked memory (pinned_copies.hpp) run only when something
// waits for them (a launch, a copy, a wait for a mark, a synchronisation), as late as a GPU may run
// them: a copy from a buffer the host wrote again before that is counted as a bad access, and a
// buffer a copy to the host is queued into holds garbage until then, so that staging done out of
// order fails tests.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "graph/runtime/cuda/cuda_device.hpp"
#include "graph/runtime/cuda/pinned_copies.hpp"
#include "graph/runtime/cuda/simulated_fibers.hpp"

namespace sot::graph {

struct SimulatedCounts {
  std::uint64_t allocs = 0;
  std::uint64_t frees = 0;
  std::uint64_t to_device = 0;  // copies from the host, and their bytes
  std::uint64_t to_device_bytes = 0;
  std::uint64_t to_host = 0;  // copies to the host, and their bytes
  std::uint64_t to_host_bytes = 0;
  std::uint64_t zeroed = 0;
  std::uint64_t launches = 0;
  std::uint64_t gemms = 0;
  std::uint64_t graphs_made = 0;  // device graphs made, and runs of them (their kernels counted
  std::uint64_t graph_runs = 0;   // as launches too)
  std::uint64_t synchronizations = 0;
  std::uint64_t staged_to_device = 0;  // chunks queued from and to page-locked memory
  std::uint64_t staged_to_host = 0;
  std::uint64_t mark_waits = 0;    // the host waiting for a mark
  std::uint64_t staged_aside = 0;  // of those to the device, on the copy stream; and of these,
  std::uint64_t overlapped = 0;    // those queued while kernels before them were not known done
  // The host waiting for all the work queued (a synchronisation, a plain copy out, a mark with no
  // kernel queued after it), where kernels were queued since the last such wait: on a device the
  // device then idles until the host queues more (a while loop reading its test each step).
  std::uint64_t stalls = 0;
  std::uint64_t modules = 0;       // loaded (each compiled for the host, or found in the cache)
  std::uint64_t bad_accesses = 0;  // copies or frees outside any live allocation, page-locked
                                   // memory written before its queued copy ran (a bug)
};

class SimulatedDevice final : public DeviceApi {
 public:
  SimulatedDevice() = default;
  ~SimulatedDevice() override;
  SimulatedDevice(const SimulatedDevice&) = delete;
  SimulatedDevice& operator=(const SimulatedDevice&) = delete;
  SimulatedDevice(SimulatedDevice&&) = delete;
  SimulatedDevice& operator=(SimulatedDevice&&) = delete;

  std::string arch() const override { return "sm_90"; }
  int multiprocessors() const override { return 2; }
  bool needs_binary() const override { return false; }
  std::uint64_t load_module(const ModuleImage& image, std::string* why) override;
  std::uint64_t function(std::uint64_t module, const std::string& name, std::string* why) override;
  void unload_module(std::uint64_t module) override;
  std::uint64_t alloc(std::size_t bytes, std::string* why) override;
  void free(std::uint64_t address) override;
  bool copy_to_device(std::uint64_t dst, const void* src, std::size_t bytes,
                      std::string* why) override;
  bool copy_to_host(void* dst, std::uint64_t src, std::size_t bytes, std::string* why) override;
  bool zero(std::uint64_t dst, std::size_t bytes, std::string* why) override;
  bool launch(std::uint64_t function, unsigned grid, unsigned block,
              const std::vector<std::uint64_t>& args, std::string* why) override;
  bool synchronize(std::string* why) override;
  // Marks are the host's clock: launches run when queued.
  std::uint64_t mark(std::string* why) override;
  double between(std::uint64_t start, std::uint64_t end) override;
  void drop_mark(std::uint64_t mark) override;
  bool wait_mark(std::uint64_t mark, std::string* why) override;
  void* pinned_alloc(std::size_t bytes, std::string* why) override;
  void pinned_free(void* memory) override;
  bool queue_to_device(std::uint64_t dst, const void* pinned, std::size_t bytes,
                       std::string* why) override;
  bool queue_to_host(void* pinned, std::uint64_t src, std::size_t bytes, std::string* why) override;
  // NumPy's matmul on the memory (the GIL held): the products NumPy computes, bit for bit.
  bool gemm(char kind, std::int64_t m, std::int64_t n, std::int64_t k, const GemmMatrix& a,
            const GemmMatrix& b, const GemmMatrix& c, std::string* why) override;

  // The copy stream: copies queued there run when the host or the kernels' stream waits for them
  // (as late as a GPU may run them), and one into memory a kernel not known done may still use,
  // or a kernel reading memory whose copy it did not wait for, is a bad access.
  bool copies_aside() const override;
  std::uint64_t alloc_aside(std::size_t bytes, std::string* why) override;
  bool copy_to_device_aside(std::uint64_t dst, const void* src, std::size_t bytes,
                            std::string* why) override;
  bool queue_to_device_aside(std::uint64_t dst, const void* pinned, std::size_t bytes,
                             std::string* why) override;
  std::uint64_t mark_aside(std::string* why) override;
  bool wait_aside(std::uint64_t mark, std::string* why) override;
  std::uint64_t work_queued() const override;
  std::uint64_t work_done() const override;

  // A graph is its launch list, run in order.
  std::uint64_t make_graph(const std::vector<GraphLaunch>& launches, std::string* why) override;
  bool run_graph(std::uint64_t graph, std::string* why) override;
  void drop_graph(std::uint64_t graph) override;

  SimulatedCounts counts() const;
  void reset_counts();
  std::size_t live_bytes() const;

 private:
  using Entry = int (*)(const std::uint64_t* words, std::size_t count, unsigned grid,
                        unsigned block, const SimulatedFibers* fibers);
  // Whether [address, address + bytes) lies inside one live allocation, or one page-locked one.
  bool inside(std::uint64_t address, std::size_t bytes) const;
  bool inside_pinned(const void* memory, std::size_t bytes) const;
  // A copy queued from or to page-locked memory, and the digest of the bytes it copies to the
  // device as they were when it was queued.
  struct Queued {
    bool to_device = true;
    std::uint64_t address = 0;
    void* pinned = nullptr;
    std::size_t bytes = 0;
    std::uint64_t digest = 0;
  };
  // Runs the queued copies, in order, after the copies aside the kernels' stream waits for
  // (mutex_ held).
  void run_queued();
  // Runs the copies aside up to `serial` (mutex_ held).
  void run_aside(std::uint64_t serial);
  // A launch's argument words that point into live allocations: their last use is now, and one
  // with a copy aside the kernels' stream did not wait for is a bad access (mutex_ held).
  void note_uses(const std::vector<std::uint64_t>& words);
  // The live allocation holding `address`, or live_.end() (mutex_ held).
  std::map<std::uint64_t, std::size_t>::const_iterator allocation_of(std::uint64_t address) const;
  // The host waits for the work queued up to `work` (a value of work_; mutex_ held).
  void waited(std::uint64_t work);

  mutable std::mutex mutex_;
  std::map<std::uint64_t, std::size_t> live_;  // address -> bytes
  std::map<std::uint64_t, std::vector<GraphLaunch>> graphs_;
  std::uint64_t next_graph_ = 1;
  std::vector<void*> modules_;  // dlopen handles (null once unloaded)
  std::vector<Entry> functions_;
  SimulatedCounts counts_;
  std::map<std::uint64_t, std::int64_t> marks_;  // mark -> nanoseconds of the host's clock
  std::uint64_t next_mark_ = 1;
  std::map<std::uint64_t, std::uint64_t> mark_work_;  // mark -> work_ when it was queued
  std::uint64_t work_ = 0;                            // kernels, products, graph runs queued
  std::uint64_t idle_at_ = 0;                         // work_ at the last stall
  std::vector<Queued> queued_;
  std::uint64_t done_work_ = 0;                          // work_ the host saw done
  std::map<std::uint64_t, std::uint64_t> last_use_;      // allocation -> work_ of its last launch
  std::vector<std::pair<std::uint64_t, Queued>> aside_;  // copies aside not yet run, and serials
  std::uint64_t aside_queued_ = 0;                       // serial of the last copy queued aside
  std::uint64_t kernels_wait_aside_ = 0;  // copies aside the kernels' stream waits for (serial)
  std::map<std::uint64_t, std::uint64_t> aside_marks_;  // mark -> serial of the copies before it
  std::map<const void*, std::size_t> pinned_;           // page-locked memory -> bytes
  PinnedCopies copies_{*this};  // (last: given back first, while the device is whole)
};

// Whether the cuda backend runs on the simulated device (SOT_CUDA_SIMULATE=1, or set from Python).
std::atomic<bool>& cuda_simulate();
// The process's simulated device.
SimulatedDevice& simulated_device();

}  // namespace sot::graph
