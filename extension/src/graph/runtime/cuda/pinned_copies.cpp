// Copies through page-locked buffers (pinned_copies.hpp).
#include "graph/runtime/cuda/pinned_copies.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "graph/runtime/cuda/cuda_device.hpp"

namespace sot::graph {

namespace {

constexpr std::size_t kDefaultChunk = std::size_t{4} << 20;
constexpr std::size_t kLeastStagedToHost = std::size_t{64} << 10;

const char* bytes_at(const void* p, std::size_t offset) {
  return static_cast<const char*>(p) + offset;
}

char* bytes_at(void* p, std::size_t offset) {
  return static_cast<char*>(p) + offset;
}

}  // namespace

PinnedCopies::~PinnedCopies() {
  std::string ignored;
  for (Buffer& b : buffers_) {
    take(b, &ignored);
  }
  free_buffers();
}

void PinnedCopies::free_buffers() {
  for (Buffer& b : buffers_) {
    if (b.memory != nullptr) {
      device_.pinned_free(b.memory);
      b.memory = nullptr;
    }
  }
  chunk_ = 0;
}

bool PinnedCopies::ready() {
  const std::size_t chunk = cuda_staging_chunk().load();
  if (chunk == chunk_ && chunk != 0) {
    return true;
  }
  // PinnedCopies turned off or its size changed: the old buffers are given back once idle.
  std::string why;
  if (chunk_ != 0 && !drain(&why)) {
    return false;
  }
  free_buffers();
  if (chunk == 0 || chunk == failed_) {
    return false;
  }
  for (Buffer& b : buffers_) {
    b.memory = device_.pinned_alloc(chunk, &why);
    if (b.memory == nullptr) {
      free_buffers();
      failed_ = chunk;
      return false;
    }
  }
  chunk_ = chunk;
  return true;
}

bool PinnedCopies::take(Buffer& b, std::string* why) {
  if (b.mark == 0) {
    return true;
  }
  const bool reached = device_.wait_mark(b.mark, why);
  device_.drop_mark(b.mark);
  b.mark = 0;
  return reached;
}

bool PinnedCopies::release(Buffer& b, bool aside, std::string* why) {
  b.mark = aside ? device_.mark_aside(why) : device_.mark(why);
  return b.mark != 0;
}

bool PinnedCopies::drain(std::string* why) {
  bool ok = true;
  for (Buffer& b : buffers_) {
    ok = take(b, why) && ok;
  }
  return ok;
}

PinnedCopies::Outcome PinnedCopies::to_device(std::uint64_t dst, const void* src, std::size_t bytes,
                                              std::string* why) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (!ready()) {
    return Outcome::kStraight;
  }
  return stage_to_device(dst, src, bytes, false, why) ? Outcome::kQueued : Outcome::kFailed;
}

bool PinnedCopies::to_device_aside(std::uint64_t dst, const void* src, std::size_t bytes,
                                   std::string* why) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (!ready()) {
    *why = "no page-locked buffers for a copy aside";
    return false;
  }
  // The kernels after it wait for the whole copy (a mark behind its last chunk).
  bool waits = stage_to_device(dst, src, bytes, true, why);
  const std::uint64_t done = waits ? device_.mark_aside(why) : 0;
  waits = done != 0 && device_.wait_aside(done, why);
  if (done != 0) {
    device_.drop_mark(done);  // (a dropped mark stays queued where waited for)
  }
  if (!waits) {
    // (chunks may be queued that nothing waits for: every stream is waited for, so that the
    // block may be written or given back)
    std::string ignored;
    device_.synchronize(&ignored);
  }
  return waits;
}

bool PinnedCopies::staging() {
  const std::lock_guard<std::mutex> lock(mutex_);
  return ready();
}

PinnedCopies::Outcome PinnedCopies::to_host(void* dst, std::uint64_t src, std::size_t bytes,
                                            std::string* why) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (bytes < kLeastStagedToHost || !ready()) {
    return Outcome::kStraight;
  }
  return stage_to_host(dst, src, bytes, why) ? Outcome::kQueued : Outcome::kFailed;
}

bool PinnedCopies::stage_to_device(std::uint64_t dst, const void* src, std::size_t bytes,
                                   bool aside, std::string* why) {
  for (std::size_t offset = 0; offset < bytes; offset += chunk_) {
    const std::size_t n = std::min(chunk_, bytes - offset);
    Buffer& b = buffers_[next_];
    next_ ^= 1U;
    if (!take(b, why)) {
      return false;
    }
    std::memcpy(b.memory, bytes_at(src, offset), n);
    const bool queued = aside ? device_.queue_to_device_aside(dst + offset, b.memory, n, why)
                              : device_.queue_to_device(dst + offset, b.memory, n, why);
    if (!queued || !release(b, aside, why)) {
      return false;
    }
  }
  return true;
}

bool PinnedCopies::queue_chunk_to_host(Buffer& b, std::uint64_t src, std::size_t bytes,
                                       std::string* why) {
  return take(b, why) && device_.queue_to_host(b.memory, src, bytes, why) && release(b, false, why);
}

bool PinnedCopies::stage_to_host(void* dst, std::uint64_t src, std::size_t bytes,
                                 std::string* why) {
  const std::size_t chunks = (bytes + chunk_ - 1) / chunk_;
  auto size = [&](std::size_t i) { return std::min(chunk_, bytes - i * chunk_); };
  // Two chunks in flight: chunk i in buffer i % 2 (the buffers taken in order from the first).
  const unsigned first = next_;
  for (std::size_t i = 0; i < std::min<std::size_t>(chunks, 2); ++i) {
    if (!queue_chunk_to_host(buffers_[(first + i) % 2], src + i * chunk_, size(i), why)) {
      return false;
    }
  }
  for (std::size_t i = 0; i < chunks; ++i) {
    Buffer& b = buffers_[(first + i) % 2];
    if (!take(b, why)) {
      return false;
    }
    std::memcpy(bytes_at(dst, i * chunk_), b.memory, size(i));
    if (i + 2 < chunks && !queue_chunk_to_host(b, src + (i + 2) * chunk_, size(i + 2), why)) {
      return false;
    }
  }
  next_ = static_cast<unsigned>((first + chunks) % 2);
  return true;
}

std::atomic<bool>& cuda_copy_stream() {
  static std::atomic<bool> on{[] {
    const char* v = std::getenv("SOT_CUDA_COPY_STREAM");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }()};
  return on;
}

std::atomic<std::size_t>& cuda_staging_chunk() {
  static std::atomic<std::size_t> chunk{[] {
    const char* v = std::getenv("SOT_CUDA_STAGING");
    if (v == nullptr || *v == '\0') {
      return kDefaultChunk;
    }
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v, &end, 10);
    return end != nullptr && *end == '\0' ? static_cast<std::size_t>(n) : kDefaultChunk;
  }()};
  return chunk;
}

}  // namespace sot::graph
