#include "graph/backends/cuda/cuda_kernel.hpp"

#include <algorithm>
#include <atomic>
#include <cfenv>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/runtime/cuda/nvrtc.hpp"

namespace sot::graph {

int fe_flags_of(unsigned word) {
  return ((word & kCudaDivide) != 0U ? FE_DIVBYZERO : 0) |
         ((word & kCudaOverflow) != 0U ? FE_OVERFLOW : 0) |
         ((word & kCudaInvalid) != 0U ? FE_INVALID : 0);
}

Staging::~Staging() {
  for (const auto& [address, bytes] : blocks_) {
    pool_.give(address, bytes);
  }
}

std::uint64_t Staging::take(std::size_t bytes, std::string* why) {
  const std::uint64_t address = pool_.take(bytes, why);
  if (address != 0) {
    blocks_.emplace_back(address, bytes);
  }
  return address;
}

CudaKernel::CudaKernel(const kir::Kernel& k, DeviceApi& device) : device_(device) {
  const auto src = emit_cuda(k, &why_);
  if (!src) {
    return;
  }
  source_ = *src;
  ModuleImage image;
  image.source = source_.code;
  if (device_.needs_binary()) {
    CudaBinary binary = compile_cuda(source_.code, device_.arch());
    compile_seconds_ = binary.seconds;
    if (!binary.ok) {
      why_ = "NVRTC: " + binary.error;
      return;
    }
    image.cubin = std::move(binary.cubin);
    image.ptx = std::move(binary.ptx);
  }
  module_ = device_.load_module(image, &why_);
  if (module_ == 0) {
    return;
  }
  std::vector<std::string> entries;
  if (!source_.reduces) {
    entries = {"_flat", "_strided"};
  } else if (source_.all_axes) {
    entries = {"_partial", "_total"};
  } else {
    entries = {"_rows"};
  }
  for (const std::string& e : entries) {
    const std::uint64_t fn = device_.function(module_, source_.name + e, &why_);
    if (fn == 0) {
      return;
    }
    functions_.emplace_back(source_.name + e, fn);
  }
}

namespace {

std::atomic<std::uint64_t>& unloads() {
  static std::atomic<std::uint64_t> n{0};
  return n;
}

}  // namespace

CudaKernel::~CudaKernel() {
  if (module_ != 0) {
    device_.unload_module(module_);
    ++unloads();
  }
}

std::uint64_t modules_unloaded() {
  return unloads().load();
}

std::uint64_t CudaKernel::function(const std::string& entry) const {
  for (const auto& [name, fn] : functions_) {
    if (name == entry) {
      return fn;
    }
  }
  return 0;
}

CudaKernel::Launched CudaKernel::launch(const kir::Kernel& k,
                                        const std::vector<std::int64_t>& domain,
                                        const std::vector<DeviceArray>& arrays,
                                        const std::vector<std::uint64_t>& bits, std::uint64_t flags,
                                        Staging& staging, std::uint64_t* launches,
                                        std::string* why) {
  auto plan =
      plan_launch(k, source_, domain, arrays, bits, flags, 0, device_.multiprocessors(), why);
  if (!plan) {
    return Launched::kElsewhere;
  }
  if (plan->partial_bytes > 0) {
    const std::uint64_t partial = staging.take(plan->partial_bytes, why);
    if (partial == 0) {
      *why = "device memory: " + *why;
      return Launched::kElsewhere;
    }
    plan->args[CudaArgsLayout{arrays.size(), domain.size(), bits.size()}.partial()] = partial;
  }
  *launches += plan->second.empty() ? 1 : 2;
  if (!queue_launch(
          LoggedLaunch{&device_, function(plan->entry), plan->grid, plan->block, plan->args},
          why) ||
      (!plan->second.empty() &&
       !queue_launch(LoggedLaunch{&device_, function(plan->second), 1, plan->block, plan->args},
                     why))) {
    return Launched::kFailed;
  }
  return Launched::kQueued;
}

namespace {

std::vector<LaunchLog*>& open_logs() {
  thread_local std::vector<LaunchLog*> logs;
  return logs;
}

}  // namespace

void LaunchLog::open() {
  close();
  launches.clear();
  open_logs().push_back(this);
  open_ = true;
}

void LaunchLog::close() {
  if (!open_) {
    return;
  }
  std::vector<LaunchLog*>& logs = open_logs();
  logs.erase(std::remove(logs.begin(), logs.end(), this), logs.end());
  open_ = false;
}

bool launch_logs_open() {
  return !open_logs().empty();
}

bool queue_launch(const LoggedLaunch& l, std::string* why) {
  if (!l.device->launch(l.function, l.grid, l.block, l.args, why)) {
    return false;
  }
  for (LaunchLog* log : open_logs()) {
    log->launches.push_back(l);
  }
  return true;
}

kir::Kernel load_store_kernel(std::string name, DType dtype, std::size_t rank) {
  kir::Kernel k;
  k.name = std::move(name);
  for (std::size_t d = 0; d < rank; ++d) {
    k.domain.push_back(kir::Dim{1, static_cast<int>(d)});
  }
  k.buffers.push_back(kir::Buffer{-1, dtype, k.domain, false, false});
  k.buffers.push_back(kir::Buffer{-1, dtype, k.domain, true, false});
  kir::Expr load;
  load.kind = kir::Expr::Kind::kLoad;
  load.dtype = dtype;
  load.buffer = 0;
  k.exprs.push_back(load);
  return k;
}

namespace {

// Every own kernel made (never destroyed: unloading at exit could outlive the driver).
std::map<std::pair<DeviceApi*, std::string>, std::unique_ptr<OwnKernel>>& own_kernels() {
  static auto* kernels =
      new std::map<std::pair<DeviceApi*, std::string>, std::unique_ptr<OwnKernel>>();
  return *kernels;
}

}  // namespace

OwnKernel& own_kernel(DeviceApi& device, const std::string& name,
                      const std::function<kir::Kernel()>& make) {
  std::unique_ptr<OwnKernel>& slot = own_kernels()[{&device, name}];
  if (!slot) {
    slot = std::make_unique<OwnKernel>();
    slot->k = make();
    slot->cuda = std::make_unique<CudaKernel>(slot->k, device);
  }
  return *slot;
}

std::vector<std::pair<std::string, std::string>> own_kernel_sources() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [key, kernel] : own_kernels()) {
    out.emplace_back(key.second, kernel->cuda->source().code);
  }
  return out;
}

}  // namespace sot::graph
