#include "graph/runtime/cuda/cuda_device.hpp"

#include <utility>

namespace sot::graph {

namespace {

constexpr std::size_t kGranule = 256;  // allocation sizes are multiples of this

}  // namespace

DevicePool::~DevicePool() {
  for (auto& [bytes, blocks] : kept_) {
    for (const std::uint64_t address : blocks) {
      device_.free(address);
    }
  }
}

std::size_t DevicePool::rounded(std::size_t bytes) {
  return bytes == 0 ? kGranule : (bytes + kGranule - 1) / kGranule * kGranule;
}

std::uint64_t DevicePool::take(std::size_t bytes, std::string* why) {
  const std::size_t size = rounded(bytes);
  auto found = kept_.find(size);
  if (found != kept_.end() && !found->second.empty()) {
    const std::uint64_t address = found->second.back();
    found->second.pop_back();
    kept_bytes_ -= size;
    return address;
  }
  std::uint64_t address = device_.alloc(size, why);
  if (address == 0 && kept_bytes_ > 0) {
    // Out of memory: free what is kept and try once more.
    for (auto& [kept_size, blocks] : kept_) {
      for (const std::uint64_t a : blocks) {
        device_.free(a);
      }
      blocks.clear();
    }
    kept_bytes_ = 0;
    address = device_.alloc(size, why);
  }
  return address;
}

void DevicePool::give(std::uint64_t address, std::size_t bytes) {
  if (address == 0) {
    return;
  }
  const std::size_t size = rounded(bytes);
  if (kept_bytes_ + size > limit_) {
    device_.free(address);
    return;
  }
  kept_[size].push_back(address);
  kept_bytes_ += size;
}

std::shared_ptr<DevicePool> device_pool(DeviceApi& device) {
  // (never destroyed: freeing at exit could outlive the driver)
  static auto* pools = new std::map<DeviceApi*, std::shared_ptr<DevicePool>>();
  std::shared_ptr<DevicePool>& pool = (*pools)[&device];
  if (!pool) {
    pool = std::make_shared<DevicePool>(device);
  }
  return pool;
}

}  // namespace sot::graph
