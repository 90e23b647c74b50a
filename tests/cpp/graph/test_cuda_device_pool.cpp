// The CUDA backend's device memory pool against a fake device: blocks are reused by size, kept up
// to the limit, all freed with the pool, an allocation that fails frees what is kept first, and a
// copy on the copy stream takes only blocks that no queued work may still use.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "graph/runtime/cuda/cuda_device.hpp"

namespace sot::graph {
namespace {

class FakeDevice final : public DeviceApi {
 public:
  std::size_t capacity = 1 << 20;  // bytes it can hand out
  std::size_t in_use = 0;
  std::set<std::uint64_t> live;
  int allocs = 0;
  int frees = 0;

  std::string arch() const override { return "sm_90"; }
  int multiprocessors() const override { return 2; }
  std::uint64_t load_module(const ModuleImage&, std::string* why) override {
    *why = "fake";
    return 0;
  }
  std::uint64_t function(std::uint64_t, const std::string&, std::string* why) override {
    *why = "fake";
    return 0;
  }
  void unload_module(std::uint64_t) override {}
  std::uint64_t alloc(std::size_t bytes, std::string* why) override {
    if (in_use + bytes > capacity) {
      *why = "out of memory";
      return 0;
    }
    ++allocs;
    in_use += bytes;
    next_ += 1 << 20;
    live.insert(next_);
    sizes_.push_back({next_, bytes});
    return next_;
  }
  void free(std::uint64_t address) override {
    ++frees;
    live.erase(address);
    for (const auto& [a, bytes] : sizes_) {
      if (a == address) {
        in_use -= bytes;
      }
    }
  }
  bool copy_to_device(std::uint64_t, const void*, std::size_t, std::string*) override {
    return true;
  }
  bool copy_to_host(void*, std::uint64_t, std::size_t, std::string*) override { return true; }
  bool zero(std::uint64_t, std::size_t, std::string*) override { return true; }
  bool launch(std::uint64_t, unsigned, unsigned, const std::vector<std::uint64_t>&,
              std::string*) override {
    return true;
  }
  bool synchronize(std::string*) override { return true; }
  std::uint64_t alloc_aside(std::size_t bytes, std::string* why) override {
    ++asides;
    return alloc(bytes, why);
  }
  std::uint64_t work_queued() const override { return queued; }
  std::uint64_t work_done() const override { return done; }
  int asides = 0;
  std::uint64_t queued = 0;  // the work counts the pool reads
  std::uint64_t done = 0;

 private:
  std::uint64_t next_ = 0;
  std::vector<std::pair<std::uint64_t, std::size_t>> sizes_;
};

TEST(DevicePool, ReusesBlocksOfTheSameRoundedSize) {
  FakeDevice device;
  DevicePool pool(device);
  std::string why;
  const std::uint64_t a = pool.take(1000, &why);
  pool.give(a, 1000);
  EXPECT_EQ(pool.kept_bytes(), DevicePool::rounded(1000));
  EXPECT_EQ(pool.take(1020, &why), a);  // the same 1024-byte block
  EXPECT_EQ(device.allocs, 1);
  const std::uint64_t b = pool.take(5000, &why);
  EXPECT_NE(b, a);
  EXPECT_EQ(device.allocs, 2);
  EXPECT_EQ(DevicePool::rounded(0), 256U);
  EXPECT_EQ(DevicePool::rounded(257), 512U);
}

TEST(DevicePool, KeepsUpToItsLimitAndFreesEverythingAtTheEnd) {
  FakeDevice device;
  {
    DevicePool pool(device, 4096);
    std::string why;
    std::vector<std::uint64_t> blocks;
    blocks.reserve(6);
    for (int i = 0; i < 6; ++i) {
      blocks.push_back(pool.take(1024, &why));
    }
    for (const std::uint64_t a : blocks) {
      pool.give(a, 1024);
    }
    EXPECT_EQ(pool.kept_bytes(), 4096U);  // four kept, two freed at once
    EXPECT_EQ(device.frees, 2);
  }
  EXPECT_TRUE(device.live.empty());
  EXPECT_EQ(device.in_use, 0U);
}

TEST(DevicePool, AnAllocationThatFailsFreesWhatIsKeptAndTriesAgain) {
  FakeDevice device;
  device.capacity = 3000;
  DevicePool pool(device);
  std::string why;
  const std::uint64_t a = pool.take(2048, &why);
  pool.give(a, 2048);
  const std::uint64_t b = pool.take(2560, &why);  // 2048 kept + 2560 > 3000: the kept block goes
  EXPECT_NE(b, 0U);
  EXPECT_EQ(pool.kept_bytes(), 0U);
  EXPECT_EQ(pool.take(4096, &why), 0U);
  EXPECT_EQ(why, "out of memory");
}

TEST(DevicePool, ACopyAsideTakesOnlyBlocksNoQueuedWorkMayUse) {
  FakeDevice device;
  DevicePool pool(device);
  std::string why;
  const std::uint64_t a = pool.take(1000, &why);
  device.queued = 5;
  pool.give(a, 1000);  // (given back while 5 pieces of work were queued)
  device.done = 4;
  const std::uint64_t fresh = pool.take_for_copy(1000, &why);
  EXPECT_NE(fresh, a);  // work 5 may still read `a`: a new block, allocated for the copy stream
  EXPECT_EQ(device.asides, 1);
  device.done = 5;
  EXPECT_EQ(pool.take_for_copy(1000, &why), a);  // all of it seen done: `a` is taken
  EXPECT_EQ(device.asides, 1);
  EXPECT_EQ(pool.kept_bytes(), 0U);
  pool.give(a, 1000);
  pool.give(fresh, 1000);
}

}  // namespace
}  // namespace sot::graph
