// What the CUDA backend needs from a GPU, as an interface: the driver API implements it
// (cuda_driver.cpp), and tests give a fake, so that the backend's own logic (allocation, copies,
// launch order, error handling) is tested without a GPU. Addresses and handles are 64-bit values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/runtime/cuda/cublas.hpp"

namespace sot::graph {

// A compiled module: its cubin (else its PTX, JIT-compiled by the driver) and the CUDA C++ it was
// compiled from (what a simulated device runs: it needs no binary).
struct ModuleImage {
  std::string cubin;
  std::string ptx;
  std::string source;
};

class DeviceApi {
 public:
  DeviceApi() = default;
  virtual ~DeviceApi() = default;
  DeviceApi(const DeviceApi&) = delete;
  DeviceApi& operator=(const DeviceApi&) = delete;
  DeviceApi(DeviceApi&&) = delete;
  DeviceApi& operator=(DeviceApi&&) = delete;

  virtual std::string arch() const = 0;  // "sm_90"
  virtual int multiprocessors() const = 0;
  // Whether modules must be compiled for the device (NVRTC) before load_module.
  virtual bool needs_binary() const { return true; }
  // A module, and its entry points; 0 with `why` on failure.
  virtual std::uint64_t load_module(const ModuleImage& image, std::string* why) = 0;
  virtual std::uint64_t function(std::uint64_t module, const std::string& name,
                                 std::string* why) = 0;
  virtual void unload_module(std::uint64_t module) = 0;
  virtual std::uint64_t alloc(std::size_t bytes, std::string* why) = 0;
  virtual void free(std::uint64_t address) = 0;
  virtual bool copy_to_device(std::uint64_t dst, const void* src, std::size_t bytes,
                              std::string* why) = 0;
  virtual bool copy_to_host(void* dst, std::uint64_t src, std::size_t bytes, std::string* why) = 0;
  virtual bool zero(std::uint64_t dst, std::size_t bytes, std::string* why) = 0;
  // Launches `function` with one by-value parameter: the CudaArgs block `args`.
  virtual bool launch(std::uint64_t function, unsigned grid, unsigned block,
                      const std::vector<std::uint64_t>& args, std::string* why) = 0;
  virtual bool synchronize(std::string* why) = 0;
  // A timing mark queued after the work before it (0 with `why` where the device keeps none), the
  // milliseconds between two marks once both are reached (after a synchronisation; -1 on failure),
  // and a mark given back.
  virtual std::uint64_t mark(std::string* why) {
    *why = "no timing marks on this device";
    return 0;
  }
  virtual double between(std::uint64_t start, std::uint64_t end) {
    (void)start, (void)end;
    return -1;
  }
  virtual void drop_mark(std::uint64_t mark) { (void)mark; }
  // Blocks the host until `mark` is reached (false with `why` where the device keeps no marks).
  virtual bool wait_mark(std::uint64_t mark, std::string* why) {
    (void)mark;
    *why = "no timing marks on this device";
    return false;
  }
  // Page-locked host memory (nullptr with `why` where the device has none), and copies between it
  // and the device queued after the work before them, the host going on at once: the memory is
  // not written (after a copy to the device) or read (after a copy to the host) before a mark
  // queued after the copy is reached. pinned_copies.hpp copies any host memory through them.
  virtual void* pinned_alloc(std::size_t bytes, std::string* why) {
    (void)bytes;
    *why = "no page-locked memory on this device";
    return nullptr;
  }
  virtual void pinned_free(void* memory) { (void)memory; }
  virtual bool queue_to_device(std::uint64_t dst, const void* pinned, std::size_t bytes,
                               std::string* why) {
    (void)dst, (void)pinned, (void)bytes;
    *why = "no queued copies on this device";
    return false;
  }
  virtual bool queue_to_host(void* pinned, std::uint64_t src, std::size_t bytes, std::string* why) {
    (void)pinned, (void)src, (void)bytes;
    *why = "no queued copies on this device";
    return false;
  }
  // A second stream for copies from the host ("aside"), so that a copy runs while the kernels
  // queued before it run (false where the device has none). Memory copied into there is taken
  // with alloc_aside (ordered for that stream), or is a block no queued work may still use
  // (work_done()); each copy is queued with queue_to_device_aside, and the kernels' stream made to
  // wait, before the kernels after it, for a mark queued behind the copy (mark_aside, then
  // wait_aside). Marks of either stream are waited for and dropped as any mark.
  virtual bool copies_aside() const { return false; }
  virtual std::uint64_t alloc_aside(std::size_t bytes, std::string* why) {
    (void)bytes;
    *why = "no copy stream on this device";
    return 0;
  }
  // Copies `bytes` of any host memory to `dst` on the copy stream through page-locked buffers
  // (pinned_copies.hpp), the kernels' stream then made to wait for it.
  virtual bool copy_to_device_aside(std::uint64_t dst, const void* src, std::size_t bytes,
                                    std::string* why) {
    (void)dst, (void)src, (void)bytes;
    *why = "no copy stream on this device";
    return false;
  }
  virtual bool queue_to_device_aside(std::uint64_t dst, const void* pinned, std::size_t bytes,
                                     std::string* why) {
    (void)dst, (void)pinned, (void)bytes;
    *why = "no copy stream on this device";
    return false;
  }
  virtual std::uint64_t mark_aside(std::string* why) {
    *why = "no copy stream on this device";
    return 0;
  }
  virtual bool wait_aside(std::uint64_t mark, std::string* why) {
    (void)mark;
    *why = "no copy stream on this device";
    return false;
  }
  // The work the kernels' stream was given (kernels, products, copies: a count), and how much of it
  // the host has seen done (by a synchronisation, a copy out that waited for it, a mark reached).
  // (by default no work is ever seen done: a copy aside then takes only new memory)
  virtual std::uint64_t work_queued() const { return ~std::uint64_t{0}; }
  virtual std::uint64_t work_done() const { return 0; }
  // A launch sequence made once into a device graph (CUDA graphs), run whole by run_graph: the
  // same kernels on the same argument blocks, each after the one before, queued after the work
  // before it. 0 with `why` where the device has none.
  struct GraphLaunch {
    std::uint64_t function = 0;
    unsigned grid = 1;
    unsigned block = 1;
    std::vector<std::uint64_t> args;  // the CudaArgs block (copied into the graph)
  };
  virtual std::uint64_t make_graph(const std::vector<GraphLaunch>& launches, std::string* why) {
    (void)launches;
    *why = "no graphs on this device";
    return 0;
  }
  virtual bool run_graph(std::uint64_t graph, std::string* why) {
    (void)graph;
    *why = "no graphs on this device";
    return false;
  }
  virtual void drop_graph(std::uint64_t graph) { (void)graph; }
  // C = A @ B of row-major matrices (cublas.hpp's GemmMatrix), float64 ('d') or float32 ('f'),
  // queued after the launches before it; false with `why` where the device has no BLAS.
  virtual bool gemm(char kind, std::int64_t m, std::int64_t n, std::int64_t k, const GemmMatrix& a,
                    const GemmMatrix& b, const GemmMatrix& c, std::string* why) {
    (void)kind, (void)m, (void)n, (void)k, (void)a, (void)b, (void)c;
    *why = "no BLAS on this device";
    return false;
  }
};

// The first device the driver found, or nullptr with `why` ("no CUDA device: ...").
DeviceApi* cuda_device(std::string* why);

// Device memory kept for reuse: blocks freed by one run are taken by the next that needs the same
// (rounded) size, so repeated calls allocate nothing; at most `limit` bytes are kept.
class DevicePool {
 public:
  explicit DevicePool(DeviceApi& device, std::size_t limit = std::size_t{1} << 30)
      : device_(device), limit_(limit) {}
  ~DevicePool();
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;
  DevicePool(DevicePool&&) = delete;
  DevicePool& operator=(DevicePool&&) = delete;

  // A block of at least `bytes` (0 with `why` when the device has no memory left).
  std::uint64_t take(std::size_t bytes, std::string* why);
  // A block of at least `bytes` for a copy on the device's copy stream (DeviceApi::copies_aside):
  // one given back before all the work that used it was seen done, else a new one allocated for
  // that stream.
  std::uint64_t take_for_copy(std::size_t bytes, std::string* why);
  // Every kept block may be used by the work queued until now: replayed steps launch again on
  // blocks given back when their step was recorded.
  void restamp();
  // Gives back a block take() returned for `bytes`.
  void give(std::uint64_t address, std::size_t bytes);
  std::size_t kept_bytes() const { return kept_bytes_; }
  static std::size_t rounded(std::size_t bytes);

 private:
  DeviceApi& device_;
  std::size_t limit_;
  std::size_t kept_bytes_ = 0;
  // size -> the blocks kept, each with the device's work_queued() when it was given back
  std::map<std::size_t, std::vector<std::pair<std::uint64_t, std::uint64_t>>> kept_;
  // Frees every kept block (out of memory).
  void free_kept();
};

// The pool of `device` shared by everything that runs there (kept for the process's life).
std::shared_ptr<DevicePool> device_pool(DeviceApi& device);

}  // namespace sot::graph
