// The CUDA backend's launch planning without a GPU: entry points, grids and the CudaArgs block for
// contiguous, broadcast, transposed and reduced buffers, and the reductions' block count.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/backends/cuda/cuda_emitter.hpp"
#include "graph/backends/cuda/cuda_launch.hpp"
#include "graph/lower/kernel_ir.hpp"

namespace sot::graph {
namespace {

kir::Dim dim(std::int64_t n) {
  kir::Dim d;
  d.size = n;
  return d;
}

// b0 + b1 -> b2 over `domain`, b1 of shape `other` (right-aligned); with `reduce`, the sum of it
// over the last axis (or all axes) into b2 instead.
kir::Kernel add_kernel(const std::vector<std::int64_t>& domain,
                       const std::vector<std::int64_t>& other, bool reduce = false,
                       bool all = false, bool keepdims = false) {
  kir::Kernel k;
  k.name = "k0";
  std::vector<kir::Dim> full;
  for (const std::int64_t n : domain) {
    full.push_back(dim(n));
  }
  std::vector<kir::Dim> second;
  for (const std::int64_t n : other) {
    second.push_back(dim(n));
  }
  k.domain = full;
  k.buffers = {kir::Buffer{0, DType::kFloat64, full, false},
               kir::Buffer{1, DType::kFloat64, second, false}};
  kir::Expr load0;
  load0.kind = kir::Expr::Kind::kLoad;
  load0.buffer = 0;
  kir::Expr load1 = load0;
  load1.buffer = 1;
  kir::Expr add;
  add.kind = kir::Expr::Kind::kCall;
  add.fn = "add";
  add.operands = {0, 1};
  k.exprs = {load0, load1, add};
  if (!reduce) {
    k.buffers.push_back(kir::Buffer{2, DType::kFloat64, full, true});
    k.stores = {kir::Store{2, 2}};
    return k;
  }
  kir::Expr sum;
  sum.kind = kir::Expr::Kind::kReduce;
  sum.fn = "add";
  sum.operands = {2};
  sum.reduce.all = all;
  sum.reduce.keepdims = keepdims;
  k.exprs.push_back(sum);
  std::vector<kir::Dim> reduced = all ? std::vector<kir::Dim>{} : full;
  if (!all) {
    reduced.back() = dim(1);
    if (!keepdims) {
      reduced.pop_back();
    }
  }
  k.buffers.push_back(kir::Buffer{3, DType::kFloat64, reduced, true});
  k.stores = {kir::Store{3, 2}};
  return k;
}

DeviceArray contiguous(std::uint64_t address, const std::vector<std::int64_t>& shape) {
  DeviceArray a;
  a.address = address;
  a.shape = shape;
  std::int64_t stride = 8;
  a.strides.assign(shape.size(), 0);
  for (std::size_t d = shape.size(); d-- > 0;) {
    a.strides[d] = stride;
    stride *= shape[d];
  }
  return a;
}

CudaSource source_of(const kir::Kernel& k) {
  std::string why;
  const auto src = emit_cuda(k, &why);
  EXPECT_TRUE(src.has_value()) << why;
  return src.value_or(CudaSource{});
}

TEST(CudaLaunch, ContiguousElementwiseIsFlatWithTheArgsLaidOut) {
  const kir::Kernel k = add_kernel({4, 1000}, {4, 1000});
  const CudaSource src = source_of(k);
  std::string why;
  const auto l = plan_launch(
      k, src, {4, 1000},
      {contiguous(0x1000, {4, 1000}), contiguous(0x2000, {4, 1000}), contiguous(0x3000, {4, 1000})},
      {}, 0x9000, 0, 132, &why);
  ASSERT_TRUE(l) << why;
  EXPECT_EQ(l->entry, "k0_flat");
  EXPECT_NE(src.code.find(l->entry + "(const CudaArgs a)"), std::string::npos);
  EXPECT_EQ(l->block, 256U);
  EXPECT_EQ(l->grid, 16U);  // ceil(4000 / 256)
  const CudaArgsLayout lay{3, 2, 0};
  ASSERT_EQ(l->args.size(), lay.words());
  EXPECT_EQ(l->args[lay.pointer(1)], 0x2000U);
  EXPECT_EQ(l->args[lay.stride(2, 0)], 1000U);
  EXPECT_EQ(l->args[lay.stride(2, 1)], 1U);
  EXPECT_EQ(l->args[lay.size(1)], 1000U);
  EXPECT_EQ(l->args[lay.n()], 4000U);
  EXPECT_EQ(l->args[lay.flags()], 0x9000U);
}

TEST(CudaLaunch, BroadcastAndTransposedBuffersAreStrided) {
  const kir::Kernel k = add_kernel({4, 1000}, {4, 1});
  const CudaSource src = source_of(k);
  DeviceArray transposed = contiguous(0x1000, {4, 1000});
  transposed.strides = {8, 32};  // a (1000, 4) array's transpose
  std::string why;
  const auto l = plan_launch(
      k, src, {4, 1000}, {transposed, contiguous(0x2000, {4, 1}), contiguous(0x3000, {4, 1000})},
      {}, 0, 0, 2, &why);
  ASSERT_TRUE(l) << why;
  EXPECT_EQ(l->entry, "k0_strided");
  const CudaArgsLayout lay{3, 2, 0};
  EXPECT_EQ(l->args[lay.stride(0, 0)], 1U);
  EXPECT_EQ(l->args[lay.stride(0, 1)], 4U);
  EXPECT_EQ(l->args[lay.stride(1, 0)], 1U);
  EXPECT_EQ(l->args[lay.stride(1, 1)], 0U);  // the column, broadcast along the rows
  EXPECT_EQ(l->grid, 16U);                   // ceil(4000 / 256), under the cap of 2 SMs x 32
}

TEST(CudaLaunch, StridesThatAreNotWholeElementsAreRefused) {
  const kir::Kernel k = add_kernel({10}, {10});
  DeviceArray odd = contiguous(0x1000, {10});
  odd.strides = {12};
  std::string why;
  EXPECT_FALSE(plan_launch(k, source_of(k), {10},
                           {odd, contiguous(0x2000, {10}), contiguous(0x3000, {10})}, {}, 0, 0, 1,
                           &why));
  EXPECT_NE(why.find("whole number of elements"), std::string::npos);
  EXPECT_FALSE(plan_launch(k, source_of(k), {0},
                           {contiguous(1, {0}), contiguous(2, {0}), contiguous(3, {0})}, {}, 0, 0,
                           1, &why));
  EXPECT_EQ(why, "an empty domain");
}

TEST(CudaLaunch, RowReductionsTakeOneBlockARow) {
  for (const bool keepdims : {false, true}) {
    const kir::Kernel k = add_kernel({300, 64}, {64}, true, false, keepdims);
    const CudaSource src = source_of(k);
    const std::vector<std::int64_t> out_shape =
        keepdims ? std::vector<std::int64_t>{300, 1} : std::vector<std::int64_t>{300};
    std::string why;
    const auto l =
        plan_launch(k, src, {300, 64},
                    {contiguous(1, {300, 64}), contiguous(2, {64}), contiguous(3, out_shape)}, {},
                    0, 0, 4, &why);
    ASSERT_TRUE(l) << why;
    EXPECT_EQ(l->entry, "k0_rows");
    const CudaArgsLayout lay{3, 2, 0};
    EXPECT_EQ(l->args[lay.rows()], 300U);
    EXPECT_EQ(l->grid, 128U);  // min(rows, 4 SMs x 32)
    EXPECT_EQ(l->args[lay.stride(2, 0)], 1U);
    EXPECT_EQ(l->args[lay.stride(2, 1)], 0U);  // the reduced axis
    EXPECT_EQ(l->args[lay.stride(1, 0)], 0U);  // the row vector, broadcast down the rows
  }
}

TEST(CudaLaunch, ReductionsInOrderTakeOneThreadARow) {
  // (a reduction along a non-innermost axis: the domain has it last, the output its size 1)
  kir::Kernel k = add_kernel({300, 64}, {64}, true, false, true);
  k.exprs.back().reduce.ordered = true;
  const CudaSource src = source_of(k);
  EXPECT_TRUE(src.ordered);
  EXPECT_NE(src.code.find("for (long long j = 0; j < length; ++j)"), std::string::npos);
  std::string why;
  const auto l = plan_launch(
      k, src, {300, 64}, {contiguous(1, {300, 64}), contiguous(2, {64}), contiguous(3, {300, 1})},
      {}, 0, 0, 4, &why);
  ASSERT_TRUE(l) << why;
  EXPECT_EQ(l->entry, "k0_rows");
  const CudaArgsLayout lay{3, 2, 0};
  EXPECT_EQ(l->args[lay.rows()], 300U);
  EXPECT_EQ(l->grid, 2U);  // 300 rows, 256 threads a block
}

TEST(CudaLaunch, SumsOverAllAxesUseBlocksSetByTheSizeAlone) {
  const kir::Kernel k = add_kernel({1000, 1000}, {1000}, true, true);
  const CudaSource src = source_of(k);
  std::string why;
  std::vector<unsigned> grids;
  for (const int sms : {2, 132}) {
    const auto l =
        plan_launch(k, src, {1000, 1000},
                    {contiguous(1, {1000, 1000}), contiguous(2, {1000}), contiguous(3, {})}, {}, 0,
                    0xabc0, sms, &why);
    ASSERT_TRUE(l) << why;
    EXPECT_EQ(l->entry, "k0_partial");
    EXPECT_EQ(l->second, "k0_total");
    EXPECT_EQ(l->parts, reduction_parts(1000000, src.sum_chunk));
    EXPECT_EQ(l->partial_bytes, l->parts * 8U);
    const CudaArgsLayout lay{3, 2, 0};
    EXPECT_EQ(l->args[lay.rows()], l->parts);
    EXPECT_EQ(l->args[lay.partial()], 0xabc0U);
    grids.push_back(l->grid);
  }
  EXPECT_EQ(grids[0], grids[1]);
  // pairwise (chunk 0): a power of 2 of blocks, each a subtree of at least 32768 elements
  EXPECT_EQ(reduction_parts(0, 0), 1U);
  EXPECT_EQ(reduction_parts(65535, 0), 1U);
  EXPECT_EQ(reduction_parts(65536, 0), 2U);
  EXPECT_EQ(reduction_parts(1000000, 0), 16U);
  EXPECT_EQ(reduction_parts(std::int64_t{1} << 40, 0), 4096U);
  // NumPy's parts (chunk 8192): a block each
  EXPECT_EQ(reduction_parts(0, 8192), 1U);
  EXPECT_EQ(reduction_parts(8192, 8192), 1U);
  EXPECT_EQ(reduction_parts(8193, 8192), 2U);
}

}  // namespace
}  // namespace sot::graph
