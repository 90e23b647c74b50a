#include "graph/runtime/cuda/cuda_driver.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "graph/runtime/cuda/cuda_device.hpp"
#include "graph/runtime/cuda/pinned_copies.hpp"

namespace sot::graph {

namespace {

// CUresult is an int (0: success); CUdevice an int ordinal.
struct DriverApi {
  int (*init)(unsigned) = nullptr;
  int (*driver_version)(int*) = nullptr;
  int (*device_count)(int*) = nullptr;
  int (*device_get)(int*, int) = nullptr;
  int (*device_name)(char*, int, int) = nullptr;
  int (*device_attribute)(int*, int, int) = nullptr;
  int (*device_memory)(std::size_t*, int) = nullptr;
  int (*error_string)(int, const char**) = nullptr;
  // (what launching needs; handles are pointers, device addresses 64-bit integers)
  int (*primary_ctx_retain)(void**, int) = nullptr;
  int (*ctx_set_current)(void*) = nullptr;
  int (*module_load_data)(void**, const void*) = nullptr;
  int (*module_get_function)(void**, void*, const char*) = nullptr;
  int (*module_unload)(void*) = nullptr;
  int (*mem_alloc)(std::uint64_t*, std::size_t) = nullptr;
  int (*mem_free)(std::uint64_t) = nullptr;
  int (*memcpy_htod)(std::uint64_t, const void*, std::size_t) = nullptr;
  int (*memcpy_dtoh)(void*, std::uint64_t, std::size_t) = nullptr;
  int (*memset_d8)(std::uint64_t, unsigned char, std::size_t) = nullptr;
  int (*launch_kernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                       void*, void**, void**) = nullptr;
  int (*ctx_synchronize)() = nullptr;
  int (*event_create)(void**, unsigned) = nullptr;
  int (*event_record)(void*, void*) = nullptr;
  int (*event_elapsed)(float*, void*, void*) = nullptr;
  int (*event_destroy)(void*) = nullptr;
  // CUDA graphs (optional: without them a device replays launches one by one)
  int (*graph_create)(void**, unsigned) = nullptr;
  int (*graph_add_kernel_node)(void**, void*, void* const*, std::size_t, const void*) = nullptr;
  int (*graph_instantiate)(void**, void*, unsigned long long) = nullptr;
  int (*graph_launch)(void*, void*) = nullptr;
  int (*graph_exec_destroy)(void*) = nullptr;
  int (*graph_destroy)(void*) = nullptr;
  // Queued copies through page-locked memory (optional: without them copies wait for the device)
  int (*event_synchronize)(void*) = nullptr;
  int (*mem_alloc_host)(void**, std::size_t) = nullptr;
  int (*mem_free_host)(void*) = nullptr;
  int (*memcpy_htod_async)(std::uint64_t, const void*, std::size_t, void*) = nullptr;
  int (*memcpy_dtoh_async)(void*, std::uint64_t, std::size_t, void*) = nullptr;
  // Stream-ordered allocation from the device's pool (optional, CUDA 11.2 on)
  int (*mem_alloc_async)(std::uint64_t*, std::size_t, void*) = nullptr;
  int (*mem_free_async)(std::uint64_t, void*) = nullptr;
  int (*default_mem_pool)(void**, int) = nullptr;
  int (*mem_pool_set_attribute)(void*, int, void*) = nullptr;
  // A second stream for copies (optional: without it copies queue on the default stream)
  int (*stream_create)(void**, unsigned) = nullptr;
  int (*stream_wait_event)(void*, void*, unsigned) = nullptr;
};

// The driver API's CUDA_KERNEL_NODE_PARAMS (v2, cuGraphAddKernelNode_v2's; cuda.h of CUDA 12-13).
struct KernelNodeParams {
  void* func = nullptr;
  unsigned grid_x = 1, grid_y = 1, grid_z = 1;
  unsigned block_x = 1, block_y = 1, block_z = 1;
  unsigned shared_bytes = 0;
  void** kernel_params = nullptr;
  void** extra = nullptr;
  void* kern = nullptr;  // (unused: `func` is set)
  void* ctx = nullptr;
};

// CU_STREAM_NON_BLOCKING: a stream that does not wait for the legacy default stream (nor it for
// it), so that its copies run beside the kernels.
constexpr unsigned kStreamNonBlocking = 1;

// CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: the bytes a pool keeps at a synchronisation.
constexpr int kPoolReleaseThreshold = 4;

// CU_DEVICE_ATTRIBUTE_* values of the driver API.
constexpr int kMultiprocessorCount = 16;
constexpr int kComputeCapabilityMajor = 75;
constexpr int kComputeCapabilityMinor = 76;

template <typename F>
bool bind(void* lib, const char* name, F* fn) {
  *fn = reinterpret_cast<F>(dlsym(lib, name));  // NOLINT(*-reinterpret-cast): dlsym's result
  return *fn != nullptr;
}

std::string error_text(const DriverApi& api, int code) {
  const char* text = nullptr;
  if (api.error_string != nullptr && api.error_string(code, &text) == 0 && text != nullptr) {
    return text;
  }
  return "CUDA error " + std::to_string(code);
}

void* open_library(std::string* tried) {
  const char* override_path = std::getenv("SOT_LIBCUDA");
  const std::string name =
      override_path != nullptr && *override_path != '\0' ? override_path : "libcuda.so.1";
  *tried = name;
  return dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
}

bool bind_all(void* lib, DriverApi* api) {
  return bind(lib, "cuInit", &api->init) && bind(lib, "cuDriverGetVersion", &api->driver_version) &&
         bind(lib, "cuDeviceGetCount", &api->device_count) &&
         bind(lib, "cuDeviceGet", &api->device_get) &&
         bind(lib, "cuDeviceGetName", &api->device_name) &&
         bind(lib, "cuDeviceGetAttribute", &api->device_attribute) &&
         bind(lib, "cuDeviceTotalMem_v2", &api->device_memory) &&
         bind(lib, "cuGetErrorString", &api->error_string) &&
         bind(lib, "cuDevicePrimaryCtxRetain", &api->primary_ctx_retain) &&
         bind(lib, "cuCtxSetCurrent", &api->ctx_set_current) &&
         bind(lib, "cuModuleLoadData", &api->module_load_data) &&
         bind(lib, "cuModuleGetFunction", &api->module_get_function) &&
         bind(lib, "cuModuleUnload", &api->module_unload) &&
         bind(lib, "cuMemAlloc_v2", &api->mem_alloc) && bind(lib, "cuMemFree_v2", &api->mem_free) &&
         bind(lib, "cuMemcpyHtoD_v2", &api->memcpy_htod) &&
         bind(lib, "cuMemcpyDtoH_v2", &api->memcpy_dtoh) &&
         bind(lib, "cuMemsetD8_v2", &api->memset_d8) &&
         bind(lib, "cuLaunchKernel", &api->launch_kernel) &&
         bind(lib, "cuCtxSynchronize", &api->ctx_synchronize) &&
         bind(lib, "cuEventCreate", &api->event_create) &&
         bind(lib, "cuEventRecord", &api->event_record) &&
         bind(lib, "cuEventElapsedTime", &api->event_elapsed) &&
         bind(lib, "cuEventDestroy_v2", &api->event_destroy);
}

// The graph entry points, all or none (graph_launch null: none).
void bind_graphs(void* lib, DriverApi* api) {
  if (!(bind(lib, "cuGraphCreate", &api->graph_create) &&
        bind(lib, "cuGraphAddKernelNode_v2", &api->graph_add_kernel_node) &&
        bind(lib, "cuGraphInstantiateWithFlags", &api->graph_instantiate) &&
        bind(lib, "cuGraphExecDestroy", &api->graph_exec_destroy) &&
        bind(lib, "cuGraphDestroy", &api->graph_destroy) &&
        bind(lib, "cuGraphLaunch", &api->graph_launch))) {
    api->graph_launch = nullptr;
  }
}

// The queued-copy entry points, all or none (memcpy_htod_async null: none); the same for the
// stream-ordered allocation (mem_alloc_async null: none).
void bind_queued(void* lib, DriverApi* api) {
  if (!(bind(lib, "cuEventSynchronize", &api->event_synchronize) &&
        bind(lib, "cuMemAllocHost_v2", &api->mem_alloc_host) &&
        bind(lib, "cuMemFreeHost", &api->mem_free_host) &&
        bind(lib, "cuMemcpyDtoHAsync_v2", &api->memcpy_dtoh_async) &&
        bind(lib, "cuMemcpyHtoDAsync_v2", &api->memcpy_htod_async))) {
    api->memcpy_htod_async = nullptr;
  }
  if (!(bind(lib, "cuMemFreeAsync", &api->mem_free_async) &&
        bind(lib, "cuDeviceGetDefaultMemPool", &api->default_mem_pool) &&
        bind(lib, "cuMemPoolSetAttribute", &api->mem_pool_set_attribute) &&
        bind(lib, "cuMemAllocAsync", &api->mem_alloc_async))) {
    api->mem_alloc_async = nullptr;
  }
  if (!(bind(lib, "cuStreamCreate", &api->stream_create) &&
        bind(lib, "cuStreamWaitEvent", &api->stream_wait_event))) {
    api->stream_create = nullptr;
  }
}

CudaDevice describe(const DriverApi& api, int ordinal) {
  CudaDevice d;
  d.ordinal = ordinal;
  int device = 0;
  if (api.device_get(&device, ordinal) != 0) {
    return d;
  }
  char name[256] = {};
  if (api.device_name(name, static_cast<int>(sizeof name), device) == 0) {
    d.name = name;
  }
  api.device_attribute(&d.major, kComputeCapabilityMajor, device);
  api.device_attribute(&d.minor, kComputeCapabilityMinor, device);
  api.device_attribute(&d.multiprocessors, kMultiprocessorCount, device);
  std::size_t bytes = 0;
  if (api.device_memory(&bytes, device) == 0) {
    d.memory_bytes = static_cast<long long>(bytes);
  }
  return d;
}

struct Driver {
  CudaStatus status;
  DriverApi api;
  pid_t pid = 0;  // the process that started the driver
};

Driver probe_driver() {
  Driver driver;
  CudaStatus& s = driver.status;
  DriverApi& api = driver.api;
  driver.pid = getpid();
  std::string tried;
  void* lib = open_library(&tried);
  if (lib == nullptr) {
    s.reason = "no CUDA device: the NVIDIA driver library (" + tried +
               ") cannot be loaded (no driver on this machine; SOT_LIBCUDA names another path)";
    return driver;
  }
  if (!bind_all(lib, &api)) {
    s.reason = "no CUDA device: " + tried + " lacks a driver API entry point";
    return driver;
  }
  bind_graphs(lib, &api);
  bind_queued(lib, &api);
  api.driver_version(&s.driver_version);
  if (const int rc = api.init(0); rc != 0) {
    s.reason = "no CUDA device: cuInit failed (" + error_text(api, rc) + ")";
    return driver;
  }
  int count = 0;
  if (const int rc = api.device_count(&count); rc != 0 || count == 0) {
    s.reason = "no CUDA device: " + (rc != 0 ? error_text(api, rc) : std::string("none found"));
    return driver;
  }
  for (int i = 0; i < count; ++i) {
    s.devices.push_back(describe(api, i));
  }
  s.available = true;
  return driver;  // (the library stays loaded: the backend launches through it)
}

const Driver& driver() {
  static const Driver d = probe_driver();
  return d;
}

// Device 0 through the driver API, in its primary context (made current on the calling thread
// before each call: any thread may run a graph). Everything is queued on the legacy default
// stream, in order, as CuPy's and PyTorch's default streams queue theirs; memory comes from the
// device's stream-ordered pool where the driver has one (`pooled`), and host memory is copied
// through page-locked buffers (pinned_copies.hpp) where it has queued copies.
class DriverDevice final : public DeviceApi {
 public:
  DriverDevice(const DriverApi& api, const CudaDevice& info, void* context, bool pooled)
      : api_(api), info_(info), context_(context), pooled_(pooled) {}

  std::string arch() const override { return info_.arch(); }
  int multiprocessors() const override { return info_.multiprocessors; }

  std::uint64_t load_module(const ModuleImage& image, std::string* why) override {
    void* module = nullptr;
    if (current(why) && ok(api_.module_load_data(&module, image.cubin.data()), why)) {
      return reinterpret_cast<std::uint64_t>(module);  // NOLINT(*-reinterpret-cast): a handle
    }
    // The cubin is for another architecture: the driver JIT-compiles the PTX.
    if (current(why) && ok(api_.module_load_data(&module, image.ptx.c_str()), why)) {
      return reinterpret_cast<std::uint64_t>(module);  // NOLINT(*-reinterpret-cast): a handle
    }
    return 0;
  }

  std::uint64_t function(std::uint64_t module, const std::string& name, std::string* why) override {
    void* fn = nullptr;
    void* m = reinterpret_cast<void*>(module);  // NOLINT(*-reinterpret-cast,*-int-to-ptr): handle
    if (current(why) && ok(api_.module_get_function(&fn, m, name.c_str()), why)) {
      return reinterpret_cast<std::uint64_t>(fn);  // NOLINT(*-reinterpret-cast): a handle
    }
    return 0;
  }

  void unload_module(std::uint64_t module) override {
    std::string ignored;
    if (current(&ignored)) {
      api_.module_unload(
          reinterpret_cast<void*>(module));  // NOLINT(*-reinterpret-cast,*-int-to-ptr)
    }
  }

  std::uint64_t alloc(std::size_t bytes, std::string* why) override {
    std::uint64_t address = 0;
    if (!current(why)) {
      return 0;
    }
    if (pooled_) {
      queued();  // (stream-ordered: the copy stream may use it once this is seen done)
    }
    const int rc =
        pooled_ ? api_.mem_alloc_async(&address, bytes, nullptr) : api_.mem_alloc(&address, bytes);
    return ok(rc, why) ? address : 0;
  }

  // (a pooled block is given back after the work queued before, without waiting for it)
  void free(std::uint64_t address) override {
    std::string ignored;
    if (current(&ignored)) {
      pooled_ ? api_.mem_free_async(address, nullptr) : api_.mem_free(address);
    }
  }

  bool copy_to_device(std::uint64_t dst, const void* src, std::size_t bytes,
                      std::string* why) override {
    if (!current(why)) {
      return false;
    }
    const PinnedCopies::Outcome staged = copies_->to_device(dst, src, bytes, why);
    if (staged != PinnedCopies::Outcome::kStraight) {
      return staged == PinnedCopies::Outcome::kQueued;
    }
    queued();
    return ok(api_.memcpy_htod(dst, src, bytes), why);
  }

  bool copy_to_host(void* dst, std::uint64_t src, std::size_t bytes, std::string* why) override {
    if (!current(why)) {
      return false;
    }
    const PinnedCopies::Outcome staged = copies_->to_host(dst, src, bytes, why);
    if (staged != PinnedCopies::Outcome::kStraight) {
      return staged == PinnedCopies::Outcome::kQueued;
    }
    const std::uint64_t before = queued();
    if (!ok(api_.memcpy_dtoh(dst, src, bytes), why)) {
      return false;
    }
    seen_done(before);  // (a copy to the host returns once the work before it is done)
    return true;
  }

  void* pinned_alloc(std::size_t bytes, std::string* why) override {
    if (api_.memcpy_htod_async == nullptr) {
      *why = "the driver has no queued copies";
      return nullptr;
    }
    void* memory = nullptr;
    return current(why) && ok(api_.mem_alloc_host(&memory, bytes), why) ? memory : nullptr;
  }

  void pinned_free(void* memory) override {
    std::string ignored;
    if (current(&ignored)) {
      api_.mem_free_host(memory);
    }
  }

  bool queue_to_device(std::uint64_t dst, const void* pinned, std::size_t bytes,
                       std::string* why) override {
    queued();
    return current(why) && ok(api_.memcpy_htod_async(dst, pinned, bytes, nullptr), why);
  }

  bool queue_to_host(void* pinned, std::uint64_t src, std::size_t bytes,
                     std::string* why) override {
    queued();
    return current(why) && ok(api_.memcpy_dtoh_async(pinned, src, bytes, nullptr), why);
  }

  bool wait_mark(std::uint64_t mark, std::string* why) override {
    if (!current(why) ||
        !ok(api_.event_synchronize(reinterpret_cast<void*>(mark)),  // NOLINT(*-int-to-ptr)
            why)) {
      return false;
    }
    const std::lock_guard<std::mutex> lock(work_mutex_);
    if (const auto found = mark_work_.find(mark); found != mark_work_.end()) {
      done_ = std::max(done_, found->second);
    }
    return true;
  }

  bool zero(std::uint64_t dst, std::size_t bytes, std::string* why) override {
    queued();
    return current(why) && ok(api_.memset_d8(dst, 0, bytes), why);
  }

  // (on a GPU only where asked, SOT_CUDA_COPY_STREAM=1, until a GPU has run the suites with it)
  bool copies_aside() const override {
    static const bool asked = [] {
      const char* v = std::getenv("SOT_CUDA_COPY_STREAM");
      return v != nullptr && std::string(v) == "1";
    }();
    return asked && cuda_copy_stream().load() && pooled_ && api_.stream_create != nullptr &&
           api_.memcpy_htod_async != nullptr && copy_stream() != nullptr && copies_->staging();
  }

  std::uint64_t alloc_aside(std::size_t bytes, std::string* why) override {
    std::uint64_t address = 0;
    void* stream = copy_stream();
    if (stream == nullptr) {
      *why = "no copy stream";
      return 0;
    }
    return current(why) && ok(api_.mem_alloc_async(&address, bytes, stream), why) ? address : 0;
  }

  bool copy_to_device_aside(std::uint64_t dst, const void* src, std::size_t bytes,
                            std::string* why) override {
    return current(why) && copies_->to_device_aside(dst, src, bytes, why);
  }

  bool queue_to_device_aside(std::uint64_t dst, const void* pinned, std::size_t bytes,
                             std::string* why) override {
    return current(why) && ok(api_.memcpy_htod_async(dst, pinned, bytes, copy_stream()), why);
  }

  std::uint64_t mark_aside(std::string* why) override { return record(copy_stream(), why); }

  // The kernels' stream (the legacy default one) waits for the mark.
  bool wait_aside(std::uint64_t mark, std::string* why) override {
    return current(why) && ok(api_.stream_wait_event(
                                  nullptr, reinterpret_cast<void*>(mark),  // NOLINT(*-int-to-ptr)
                                  0),
                              why);
  }

  std::uint64_t work_queued() const override {
    const std::lock_guard<std::mutex> lock(work_mutex_);
    return work_;
  }

  std::uint64_t work_done() const override {
    const std::lock_guard<std::mutex> lock(work_mutex_);
    return done_;
  }

  bool launch(std::uint64_t function, unsigned grid, unsigned block,
              const std::vector<std::uint64_t>& args, std::string* why) override {
    void* fn = reinterpret_cast<void*>(function);  // NOLINT(*-reinterpret-cast,*-int-to-ptr)
    // One by-value parameter: the argument block's bytes.
    void* block_bytes = const_cast<std::uint64_t*>(args.data());  // NOLINT(*-const-cast)
    void* params[] = {block_bytes};
    queued();
    return current(why) &&
           ok(api_.launch_kernel(fn, grid, 1, 1, block, 1, 1, 0, nullptr, params, nullptr), why);
  }

  bool gemm(char kind, std::int64_t m, std::int64_t n, std::int64_t k, const GemmMatrix& a,
            const GemmMatrix& b, const GemmMatrix& c, std::string* why) override {
    queued();
    return current(why) && cublas_gemm(kind, m, n, k, a, b, c, why);
  }
  std::uint64_t mark(std::string* why) override {
    const std::uint64_t event = record(nullptr, why);
    if (event != 0) {
      const std::lock_guard<std::mutex> lock(work_mutex_);
      mark_work_[event] = work_;
    }
    return event;
  }
  double between(std::uint64_t start, std::uint64_t end) override {
    float ms = 0;
    std::string why;
    return current(&why) &&
                   ok(api_.event_elapsed(&ms,
                                         reinterpret_cast<void*>(start),  // NOLINT(*-int-to-ptr)
                                         reinterpret_cast<void*>(end)),   // NOLINT(*-int-to-ptr)
                      &why)
               ? ms
               : -1.0;
  }
  void drop_mark(std::uint64_t mark) override {
    api_.event_destroy(reinterpret_cast<void*>(mark));  // NOLINT(*-int-to-ptr): a handle
    const std::lock_guard<std::mutex> lock(work_mutex_);
    mark_work_.erase(mark);
  }
  bool synchronize(std::string* why) override {
    const std::uint64_t before = work_queued();
    if (!current(why) || !ok(api_.ctx_synchronize(), why)) {
      return false;
    }
    seen_done(before);
    return true;
  }
  // One kernel node after another; the graph instantiated, then dropped (the executable graph
  // stands alone, each node's argument block copied into it).
  std::uint64_t make_graph(const std::vector<GraphLaunch>& launches, std::string* why) override {
    if (api_.graph_launch == nullptr) {
      *why = "the driver has no CUDA graphs";
      return 0;
    }
    void* graph = nullptr;
    if (!current(why) || !ok(api_.graph_create(&graph, 0), why)) {
      return 0;
    }
    void* previous = nullptr;
    bool made = true;
    for (const GraphLaunch& l : launches) {
      KernelNodeParams p;
      p.func = reinterpret_cast<void*>(l.function);  // NOLINT(*-reinterpret-cast,*-int-to-ptr)
      p.grid_x = l.grid;
      p.block_x = l.block;
      void* block_bytes = const_cast<std::uint64_t*>(l.args.data());  // NOLINT(*-const-cast)
      void* params[] = {block_bytes};
      p.kernel_params = params;
      void* node = nullptr;
      made = ok(api_.graph_add_kernel_node(&node, graph, previous != nullptr ? &previous : nullptr,
                                           previous != nullptr ? 1 : 0, &p),
                why);
      if (!made) {
        break;
      }
      previous = node;
    }
    void* exec = nullptr;
    made = made && ok(api_.graph_instantiate(&exec, graph, 0), why);
    api_.graph_destroy(graph);
    return made ? reinterpret_cast<std::uint64_t>(exec) : 0;  // NOLINT(*-reinterpret-cast)
  }
  bool run_graph(std::uint64_t graph, std::string* why) override {
    queued();
    return current(why) &&
           ok(api_.graph_launch(reinterpret_cast<void*>(graph), nullptr),  // NOLINT(*-int-to-ptr)
              why);
  }
  void drop_graph(std::uint64_t graph) override {
    api_.graph_exec_destroy(reinterpret_cast<void*>(graph));  // NOLINT(*-int-to-ptr): a handle
  }

 private:
  bool ok(int rc, std::string* why) const {
    if (rc == 0) {
      return true;
    }
    *why = "CUDA: " + error_text(api_, rc);
    return false;
  }
  bool current(std::string* why) const { return ok(api_.ctx_set_current(context_), why); }

  // An event recorded on `stream` (nullptr: the legacy default one), as a mark; 0 with `why`.
  std::uint64_t record(void* stream, std::string* why) {
    void* event = nullptr;
    if (!current(why) || !ok(api_.event_create(&event, 0), why)) {
      return 0;
    }
    if (!ok(api_.event_record(event, stream), why)) {
      api_.event_destroy(event);
      return 0;
    }
    return reinterpret_cast<std::uint64_t>(event);  // NOLINT(*-reinterpret-cast): a handle
  }

  // The copy stream, made at its first use (nullptr where the driver has none or it failed).
  void* copy_stream() const {
    const std::lock_guard<std::mutex> lock(work_mutex_);
    if (!stream_tried_) {
      stream_tried_ = true;
      std::string why;
      if (api_.stream_create != nullptr && current(&why) &&
          api_.stream_create(&copy_stream_, kStreamNonBlocking) != 0) {
        copy_stream_ = nullptr;
      }
    }
    return copy_stream_;
  }

  // One more piece of work queued on the kernels' stream; the count before it.
  std::uint64_t queued() {
    const std::lock_guard<std::mutex> lock(work_mutex_);
    return work_++;
  }
  // The host saw the work up to `work` done.
  void seen_done(std::uint64_t work) {
    const std::lock_guard<std::mutex> lock(work_mutex_);
    done_ = std::max(done_, work);
  }

  const DriverApi& api_;
  CudaDevice info_;
  void* context_;
  bool pooled_;
  // (kept for the process's life: giving its buffers back at exit could outlive the driver)
  PinnedCopies* copies_ = new PinnedCopies(*this);  // NOLINT(*-owning-memory)
  // The copy stream (kept for the process's life), and the kernels' stream's work: queued, seen
  // done by the host, and at each mark of that stream.
  mutable std::mutex work_mutex_;
  mutable void* copy_stream_ = nullptr;
  mutable bool stream_tried_ = false;
  std::uint64_t work_ = 0;
  std::uint64_t done_ = 0;
  std::map<std::uint64_t, std::uint64_t> mark_work_;
};

// Whether the device's memory comes from its stream-ordered pool: the driver has one, and
// SOT_CUDA_POOL is not 0. The pool keeps what is given back (no release at synchronisations).
bool use_pool(const DriverApi& api, int device) {
  const char* v = std::getenv("SOT_CUDA_POOL");
  void* pool = nullptr;
  if (api.mem_alloc_async == nullptr || (v != nullptr && std::string(v) == "0") ||
      api.default_mem_pool(&pool, device) != 0) {
    return false;
  }
  std::uint64_t keep = ~std::uint64_t{0};
  api.mem_pool_set_attribute(pool, kPoolReleaseThreshold, &keep);
  return true;
}

}  // namespace

const CudaStatus& cuda_status() {
  return driver().status;
}

DeviceApi* cuda_device(std::string* why) {
  static std::unique_ptr<DeviceApi> device;
  static std::string failure;
  static bool tried = false;
  if (driver().status.available && driver().pid != getpid()) {
    // CUDA does not survive fork(): a child cannot use what its parent started.
    *why = "no CUDA device: CUDA was started in the parent process (pid " +
           std::to_string(driver().pid) +
           ") before this one forked, and a forked child cannot use it (start workers with spawn)";
    return nullptr;
  }
  if (!tried) {
    tried = true;
    const Driver& d = driver();
    if (!d.status.available) {
      failure = d.status.reason;
    } else {
      void* context = nullptr;
      int handle = 0;
      int rc = d.api.device_get(&handle, 0);
      rc = rc == 0 ? d.api.primary_ctx_retain(&context, handle) : rc;
      if (rc != 0) {
        failure = "no CUDA device: the primary context of device 0 (" + error_text(d.api, rc) + ")";
      } else {
        rc = d.api.ctx_set_current(context);
        device = std::make_unique<DriverDevice>(d.api, d.status.devices.front(), context,
                                                rc == 0 && use_pool(d.api, handle));
      }
    }
  }
  if (!device) {
    *why = failure;
  }
  return device.get();
}

}  // namespace sot::graph
