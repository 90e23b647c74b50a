// Copies between any host memory and the device through page-locked staging buffers, queued after
// the work before them (cuda_device.hpp's pinned_alloc, queue_to_device, queue_to_host, marks):
// a copy to the device is cut into chunks, each copied into one of two page-locked buffers in turn
// and queued from there, so that the host fills one buffer while the device reads the other, and
// returns once the last chunk is queued: the host goes on (preparing the next launches) while the
// copy and the kernels before it run, instead of waiting for the device to be idle as a copy from
// pageable memory does. A copy to the host queues two chunks ahead and copies each out of its
// buffer once it is there. A buffer is written or read by the host only after the mark queued
// behind its last copy is reached. Knows nothing of kernels or arrays.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

namespace sot::graph {

class DeviceApi;

class PinnedCopies {
 public:
  explicit PinnedCopies(DeviceApi& device) : device_(device) {}
  ~PinnedCopies();  // (the device must still be there: its buffers and marks are given back)
  PinnedCopies(const PinnedCopies&) = delete;
  PinnedCopies& operator=(const PinnedCopies&) = delete;
  PinnedCopies(PinnedCopies&&) = delete;
  PinnedCopies& operator=(PinnedCopies&&) = delete;

  // What became of a copy: queued through the buffers, left to the caller to copy straight, or
  // failed (`why` says why; nothing is then known of the destination).
  enum class Outcome : std::uint8_t { kQueued, kStraight, kFailed };
  // The copies, through the buffers where staging is on (cuda_staging_chunk()) and the device
  // gives page-locked memory (asked once per chunk size), and for a copy to the host, where it is
  // of at least a few pages (a smaller one is one short wait either way); else kStraight.
  Outcome to_device(std::uint64_t dst, const void* src, std::size_t bytes, std::string* why);
  // The same on the device's copy stream (DeviceApi::queue_to_device_aside), the kernels' stream
  // then made to wait for it: false with `why` where it failed or the buffers are not there.
  bool to_device_aside(std::uint64_t dst, const void* src, std::size_t bytes, std::string* why);
  // Whether copies go through the buffers (they are there, or made now).
  bool staging();
  Outcome to_host(void* dst, std::uint64_t src, std::size_t bytes, std::string* why);

 private:
  struct Buffer {
    void* memory = nullptr;
    std::uint64_t mark = 0;  // queued behind the buffer's last copy (0: none in flight)
  };
  // Whether the buffers are there for the chunk size now set (made or remade here).
  bool ready();
  // Waits for a buffer's last copy, so that the host may write or read it.
  bool take(Buffer& b, std::string* why);
  // Queues a mark behind a buffer's copy just queued (on the copy stream where `aside`).
  bool release(Buffer& b, bool aside, std::string* why);
  // Blocks until every copy queued from the buffers is done (false with `why` on failure).
  bool drain(std::string* why);
  // The copies through the buffers (ready(), the lock held).
  bool stage_to_device(std::uint64_t dst, const void* src, std::size_t bytes, bool aside,
                       std::string* why);
  bool stage_to_host(void* dst, std::uint64_t src, std::size_t bytes, std::string* why);
  bool queue_chunk_to_host(Buffer& b, std::uint64_t src, std::size_t bytes, std::string* why);
  void free_buffers();

  DeviceApi& device_;
  std::mutex mutex_;
  Buffer buffers_[2];
  std::size_t chunk_ = 0;   // the buffers' size (0: none made)
  std::size_t failed_ = 0;  // a chunk size the device gave no page-locked memory for
  unsigned next_ = 0;
};

// Whether copies in may go on a device's copy stream (SOT_CUDA_COPY_STREAM=0: never).
std::atomic<bool>& cuda_copy_stream();

// The bytes of a staging buffer (4 MiB by default; SOT_CUDA_STAGING sets it in bytes, 0: copies go
// straight from and to pageable memory, as before staging).
std::atomic<std::size_t>& cuda_staging_chunk();

}  // namespace sot::graph
