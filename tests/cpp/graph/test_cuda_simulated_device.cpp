// The simulated CUDA device: memory as host memory with every copy checked against the live
// allocations, modules compiled for the host from their CUDA C++ (blocks and threads run as the
// grid says, a block's threads together where the code meets at __syncthreads), and counts of
// what moved.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "graph/runtime/cuda/simulated_device.hpp"

namespace sot::graph {
namespace {

TEST(SimulatedDevice, CopiesStayInsideLiveAllocations) {
  SimulatedDevice d;
  std::string why;
  const std::uint64_t a = d.alloc(100, &why);
  ASSERT_NE(a, 0U) << why;
  std::vector<char> host(101, 7);
  EXPECT_TRUE(d.copy_to_device(a, host.data(), 100, &why)) << why;
  EXPECT_FALSE(d.copy_to_device(a, host.data(), 101, &why));
  EXPECT_NE(why.find("outside any allocation"), std::string::npos) << why;
  EXPECT_FALSE(d.copy_to_host(host.data(), a + 60, 41, &why));
  EXPECT_TRUE(d.copy_to_host(host.data(), a + 60, 40, &why)) << why;
  EXPECT_TRUE(d.zero(a, 100, &why)) << why;
  d.free(a);
  d.free(a);  // (a second free is a bug the counts show)
  EXPECT_FALSE(d.copy_to_device(a, host.data(), 1, &why));
  const SimulatedCounts c = d.counts();
  EXPECT_EQ(c.allocs, 1U);
  EXPECT_EQ(c.frees, 1U);
  EXPECT_EQ(c.to_device, 1U);
  EXPECT_EQ(c.to_device_bytes, 100U);
  EXPECT_EQ(c.to_host, 1U);
  EXPECT_EQ(c.to_host_bytes, 40U);
  EXPECT_EQ(c.zeroed, 1U);
  EXPECT_EQ(c.bad_accesses, 4U);
  EXPECT_EQ(d.live_bytes(), 0U);
}

constexpr const char* kSource = R"(struct CudaArgs {
  char* b[2];
  long long n;
};
extern "C" __global__ void twice_flat(const CudaArgs a) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < a.n) reinterpret_cast<double*>(a.b[0])[i] *= 2.0;
}
extern "C" __global__ void __launch_bounds__(4, 1) block_sums(const CudaArgs a) {
  __shared__ double part[4];
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  part[threadIdx.x] = i < a.n ? reinterpret_cast<const double*>(a.b[0])[i] : 0.0;
  __syncthreads();
  if (threadIdx.x == 0) {
    reinterpret_cast<double*>(a.b[1])[blockIdx.x] = part[0] + part[1] + part[2] + part[3];
  }
}
extern "C" __global__ void tree_sums(const CudaArgs a) {
  __shared__ double part[64];
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const double own = i < a.n ? reinterpret_cast<const double*>(a.b[0])[i] : 0.0;
  part[threadIdx.x] = own;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (i < a.n) reinterpret_cast<double*>(a.b[1])[i] = part[0] - own;
  __syncthreads();
}
extern "C" __global__ void diverges(const CudaArgs a) {
  if (threadIdx.x % 2 == 1) return;
  __syncthreads();
  reinterpret_cast<double*>(a.b[1])[threadIdx.x] = 1.0;
}
)";

TEST(SimulatedDevice, RunsKernelsCompiledForTheHost) {
  SimulatedDevice d;
  std::string why;
  ModuleImage image;
  image.source = kSource;
  const std::uint64_t module = d.load_module(image, &why);
  ASSERT_NE(module, 0U) << why;
  const std::uint64_t twice = d.function(module, "twice_flat", &why);
  const std::uint64_t sums = d.function(module, "block_sums", &why);
  ASSERT_NE(twice, 0U) << why;
  ASSERT_NE(sums, 0U) << why;
  EXPECT_EQ(d.function(module, "missing", &why), 0U);
  std::vector<double> x = {1, 2, 3, 4, 5, 6, 7};
  const std::uint64_t in = d.alloc(x.size() * sizeof(double), &why);
  const std::uint64_t out = d.alloc(2 * sizeof(double), &why);
  ASSERT_TRUE(d.copy_to_device(in, x.data(), x.size() * sizeof(double), &why)) << why;
  const std::vector<std::uint64_t> args = {in, out, x.size()};
  ASSERT_TRUE(d.launch(twice, 2, 4, args, &why)) << why;
  ASSERT_TRUE(d.launch(sums, 2, 4, args, &why)) << why;
  ASSERT_TRUE(d.synchronize(&why));
  std::vector<double> back(x.size());
  std::vector<double> parts(2);
  ASSERT_TRUE(d.copy_to_host(back.data(), in, back.size() * sizeof(double), &why)) << why;
  ASSERT_TRUE(d.copy_to_host(parts.data(), out, parts.size() * sizeof(double), &why)) << why;
  EXPECT_EQ(back, (std::vector<double>{2, 4, 6, 8, 10, 12, 14}));
  EXPECT_EQ(parts, (std::vector<double>{20, 36}));
  EXPECT_FALSE(d.launch(0, 1, 1, args, &why));
  const SimulatedCounts c = d.counts();
  EXPECT_EQ(c.modules, 1U);
  EXPECT_EQ(c.launches, 3U);
  EXPECT_EQ(c.synchronizations, 1U);
  d.free(in);
  d.free(out);
}

// A block whose threads do not all meet at a barrier (undefined in CUDA), or of more threads than
// CUDA allows, fails its launch with the reason.
TEST(SimulatedDevice, RefusesDivergentBarriersAndOversizedBlocks) {
  SimulatedDevice d;
  std::string why;
  ModuleImage image;
  image.source = kSource;
  const std::uint64_t module = d.load_module(image, &why);
  ASSERT_NE(module, 0U) << why;
  const std::uint64_t diverges = d.function(module, "diverges", &why);
  const std::uint64_t tree = d.function(module, "tree_sums", &why);
  ASSERT_NE(diverges, 0U) << why;
  const std::uint64_t out = d.alloc(64 * sizeof(double), &why);
  const std::vector<std::uint64_t> args = {out, out, 64};
  EXPECT_FALSE(d.launch(diverges, 1, 8, args, &why));
  EXPECT_NE(why.find("ended while others waited"), std::string::npos) << why;
  why.clear();
  EXPECT_FALSE(d.launch(tree, 1, 2048, args, &why));
  EXPECT_NE(why.find("2048 threads"), std::string::npos) << why;
  why.clear();
  EXPECT_TRUE(d.launch(tree, 1, 64, args, &why)) << why;  // (the device goes on)
  d.free(out);
}

// A block's threads keep their own values (their locals) across barriers, each round of a tree
// sum sees the round before it whole, and blocks one after another reuse the shared memory.
TEST(SimulatedDevice, BlockThreadsMeetAtEachBarrier) {
  SimulatedDevice d;
  std::string why;
  ModuleImage image;
  image.source = kSource;
  const std::uint64_t module = d.load_module(image, &why);
  ASSERT_NE(module, 0U) << why;
  const std::uint64_t tree = d.function(module, "tree_sums", &why);
  ASSERT_NE(tree, 0U) << why;
  constexpr unsigned kBlock = 64;
  constexpr unsigned kGrid = 3;
  const std::size_t n = kBlock * kGrid - 5;
  std::vector<double> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = static_cast<double>(i * i % 97);
  }
  const std::size_t bytes = n * sizeof(double);
  const std::uint64_t in = d.alloc(bytes, &why);
  const std::uint64_t out = d.alloc(bytes, &why);
  ASSERT_TRUE(d.copy_to_device(in, x.data(), bytes, &why)) << why;
  const std::vector<std::uint64_t> args = {in, out, n};
  for (int run = 0; run < 2; ++run) {  // (the second on the stacks the first left)
    ASSERT_TRUE(d.launch(tree, kGrid, kBlock, args, &why)) << why;
    std::vector<double> back(n);
    ASSERT_TRUE(d.copy_to_host(back.data(), out, bytes, &why)) << why;
    for (std::size_t i = 0; i < n; ++i) {
      double block_sum = 0.0;
      const std::size_t first = i / kBlock * kBlock;
      for (std::size_t j = first; j < std::min(first + kBlock, n); ++j) {
        block_sum += x[j];
      }
      ASSERT_EQ(back[i], block_sum - x[i]) << "element " << i << ", run " << run;
    }
  }
  d.free(in);
  d.free(out);
}

// The copy stream: a copy aside runs only when waited for; a kernel on memory whose copy it did not
// wait for, or a copy aside into memory a kernel not known done may still use, is a bad access.
TEST(SimulatedDevice, CopiesAsideRunWhenWaitedForAndCheckTheirMemory) {
  SimulatedDevice d;
  std::string why;
  ModuleImage image;
  image.source = kSource;
  const std::uint64_t module = d.load_module(image, &why);
  ASSERT_NE(module, 0U) << why;
  const std::uint64_t twice = d.function(module, "twice_flat", &why);
  std::vector<double> x = {1, 2, 3, 4};
  const std::size_t bytes = x.size() * sizeof(double);
  void* pinned = d.pinned_alloc(bytes, &why);
  ASSERT_NE(pinned, nullptr) << why;
  std::memcpy(pinned, x.data(), bytes);
  const std::uint64_t in = d.alloc_aside(bytes, &why);
  const std::vector<std::uint64_t> args = {in, in, x.size()};
  // Waited for by the kernels' stream: the copy runs before the kernel.
  ASSERT_TRUE(d.queue_to_device_aside(in, pinned, bytes, &why)) << why;
  const std::uint64_t copied = d.mark_aside(&why);
  ASSERT_TRUE(d.wait_aside(copied, &why)) << why;
  ASSERT_TRUE(d.launch(twice, 1, 4, args, &why)) << why;
  std::vector<double> back(x.size());
  ASSERT_TRUE(d.copy_to_host(back.data(), in, bytes, &why)) << why;
  EXPECT_EQ(back, (std::vector<double>{2, 4, 6, 8}));
  EXPECT_EQ(d.counts().bad_accesses, 0U);
  EXPECT_EQ(d.work_done(), d.work_queued());  // (the copy out waited for all of it)
  // Not waited for: the kernel reads memory whose copy has not run.
  ASSERT_TRUE(d.queue_to_device_aside(in, pinned, bytes, &why)) << why;
  ASSERT_TRUE(d.launch(twice, 1, 4, args, &why)) << why;
  EXPECT_EQ(d.counts().bad_accesses, 1U);
  // Into memory a queued kernel not known done may still use.
  ASSERT_TRUE(d.queue_to_device_aside(in, pinned, bytes, &why)) << why;
  EXPECT_EQ(d.counts().bad_accesses, 2U);
  EXPECT_EQ(d.counts().staged_aside, 3U);
  EXPECT_EQ(d.counts().overlapped, 1U);  // (the last, with a kernel queued before it not done)
  ASSERT_TRUE(d.synchronize(&why));
  d.drop_mark(copied);
  d.pinned_free(pinned);
  d.free(in);
}

}  // namespace
}  // namespace sot::graph
