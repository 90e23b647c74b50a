#include "graph/runtime/cuda/cuda_device.hpp"

#include <iterator>
#include <utility>

namespace sot::graph {

namespace {

constexpr std::size_t kGranule = 256;  // allocation sizes are multiples of this

}  // namespace

DevicePool::~DevicePool() {
  free_kept();
}

void DevicePool::free_kept() {
  for (auto& [size, blocks] : kept_) {
    for (const auto& [address, given_at] : blocks) {
      device_.free(address);
    }
    blocks.clear();
  }
  kept_bytes_ = 0;
}

std::size_t DevicePool::rounded(std::size_t bytes) {
  return bytes == 0 ? kGranule : (bytes + kGranule - 1) / kGranule * kGranule;
}

std::uint64_t DevicePool::take(std::size_t bytes, std::string* why) {
  const std::size_t size = rounded(bytes);
  auto found = kept_.find(size);
  if (found != kept_.end() && !found->second.empty()) {
    const std::uint64_t address = found->second.back().first;
    found->second.pop_back();
    kept_bytes_ -= size;
    return address;
  }
  std::uint64_t address = device_.alloc(size, why);
  if (address == 0 && kept_bytes_ > 0) {
    free_kept();  // (out of memory: what is kept goes, and the allocation is tried once more)
    address = device_.alloc(size, why);
  }
  return address;
}

std::uint64_t DevicePool::take_for_copy(std::size_t bytes, std::string* why) {
  const std::size_t size = rounded(bytes);
  auto found = kept_.find(size);
  if (found != kept_.end()) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>>& blocks = found->second;
    const std::uint64_t done = device_.work_done();
    // (the last given back first, as take() does: a call's blocks are the call before's, so that
    // launch arguments, and the device graphs replayed with them, stay the same)
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
      if (it->second <= done) {  // (no queued kernel may still use it)
        const std::uint64_t address = it->first;
        blocks.erase(std::next(it).base());
        kept_bytes_ -= size;
        return address;
      }
    }
  }
  std::uint64_t address = device_.alloc_aside(size, why);
  if (address == 0 && kept_bytes_ > 0) {
    free_kept();
    address = device_.alloc_aside(size, why);
  }
  return address;
}

void DevicePool::restamp() {
  const std::uint64_t now = device_.work_queued();
  for (auto& [size, blocks] : kept_) {
    for (auto& block : blocks) {
      block.second = now;
    }
  }
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
  kept_[size].emplace_back(address, device_.work_queued());
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
