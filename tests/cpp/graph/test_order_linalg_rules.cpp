// The shape rules of the reordering functions (flip, roll, tril/triu, sort, take_along_axis,
// outer), of np.linalg, cov and histogram, and of diag, trace, vander, insert, rfft and lstsq: the
// shapes NumPy makes, and NumPy's refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "graph/rules/library_rules.hpp"
#include "graph/rules/linalg_rules.hpp"
#include "graph/rules/order_rules.hpp"

namespace sot::graph {
namespace {

ValueInfo arr(DType t, Shape s) {
  ValueInfo v;
  v.dtype = t;
  v.shape = std::move(s);
  return v;
}

TEST(OrderRules, FlipRollTriangle) {
  std::string why;
  const ValueInfo a = arr(DType::kFloat64, {3, 4});
  EXPECT_EQ(flip_result(a, {1}, false, &why)->shape, (Shape{3, 4}));
  EXPECT_FALSE(flip_result(a, {2}, false, &why));
  EXPECT_NE(why.find("out of bounds"), std::string::npos);
  EXPECT_FALSE(flip_result(arr(DType::kFloat64, {}), {}, true, &why));
  EXPECT_FALSE(flip_side_result(arr(DType::kFloat64, {4}), 2, &why));
  EXPECT_EQ(why, "Input must be >= 2-d.");
  EXPECT_TRUE(flip_side_result(arr(DType::kFloat64, {4}), 1, &why));
  EXPECT_TRUE(roll_result(a, 2, {0, 1}, false, &why));
  EXPECT_FALSE(roll_result(a, 2, {0, 1, 1}, false, &why));
  EXPECT_TRUE(roll_result(a, 1, {}, true, &why));
  EXPECT_FALSE(roll_result(a, 1, {-3}, false, &why));
  EXPECT_TRUE(triangle_result(a, &why));
  EXPECT_FALSE(triangle_result(arr(DType::kFloat64, {4}), &why));
}

TEST(OrderRules, SortAndTakeAlongAxis) {
  std::string why;
  ValueInfo a = arr(DType::kFloat32, {3, 4});
  a.symbols = {0, -1};
  auto r = sort_result(a, -1, false, false, &why);
  EXPECT_EQ(r->dtype, DType::kFloat32);
  EXPECT_EQ(r->symbols, (std::vector<int>{0, -1}));
  r = sort_result(a, 0, true, true, &why);
  EXPECT_EQ(r->dtype, DType::kInt64);
  EXPECT_EQ(r->shape, (Shape{12}));
  EXPECT_TRUE(r->symbols.empty());
  EXPECT_FALSE(sort_result(a, 2, false, false, &why));

  const ValueInfo x = arr(DType::kFloat64, {3, 4});
  EXPECT_EQ(take_along_axis_result(x, arr(DType::kInt64, {3, 2}), 1, false, &why)->shape,
            (Shape{3, 2}));
  EXPECT_EQ(take_along_axis_result(x, arr(DType::kInt32, {1, 2}), 1, false, &why)->shape,
            (Shape{3, 2}));
  EXPECT_FALSE(take_along_axis_result(x, arr(DType::kInt64, {2, 2}), 1, false, &why));
  EXPECT_FALSE(take_along_axis_result(x, arr(DType::kFloat64, {3, 2}), 1, false, &why));
  EXPECT_FALSE(take_along_axis_result(x, arr(DType::kInt64, {3}), 0, false, &why));
  EXPECT_EQ(take_along_axis_result(x, arr(DType::kInt64, {5}), 0, true, &why)->shape, (Shape{5}));
  EXPECT_EQ(outer_shape({3, 4}, {}), (Shape{12, 1}));
}

TEST(OrderRules, AdvancedIndexing) {
  std::string why;
  ValueInfo x = arr(DType::kFloat32, {5, 4, 3});
  x.symbols = {0, -1, -1};
  auto r = take_result(x, arr(DType::kInt64, {2, 6}), 1, &why);
  EXPECT_EQ(r->shape, (Shape{5, 2, 6, 3}));
  EXPECT_EQ(r->symbols, (std::vector<int>{0, -1, -1, -1}));
  EXPECT_EQ(r->dtype, DType::kFloat32);
  ValueInfo i = arr(DType::kInt64, {});
  i.scalar = true;
  r = take_result(arr(DType::kFloat64, {4}), i, 0, &why);
  EXPECT_TRUE(r->scalar);
  EXPECT_FALSE(take_result(arr(DType::kFloat64, {4}), arr(DType::kFloat64, {2}), 0, &why));
  EXPECT_FALSE(take_result(arr(DType::kFloat64, {4}), arr(DType::kInt64, {2}), 1, &why));

  r = mask_result(x, arr(DType::kBool, {4, 3}), 1, 7, 12, &why);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->shape, (Shape{5, 12}));
  EXPECT_EQ(r->symbols, (std::vector<int>{0, 7}));
  EXPECT_FALSE(r->scalar);
  ValueInfo m = arr(DType::kBool, {5});
  m.symbols = {0};
  r = mask_result(x, m, 0, 8, 5, &why);
  EXPECT_EQ(r->shape, (Shape{5, 4, 3}));
  EXPECT_EQ(r->symbols, (std::vector<int>{8, -1, -1}));
  EXPECT_FALSE(mask_result(x, arr(DType::kBool, {5}), 0, 8, 5, &why));  // s0 is not 5 everywhere
  EXPECT_FALSE(mask_result(x, arr(DType::kBool, {4, 4}), 1, 8, 5, &why));
  EXPECT_NE(why.find("boolean index did not match"), std::string::npos);
  EXPECT_FALSE(mask_result(x, arr(DType::kInt64, {5}), 0, 8, 5, &why));
}

TEST(LinalgRules, Factorizations) {
  std::string why;
  EXPECT_EQ(*square_stack({2, 3, 3}, &why), (Shape{2, 3, 3}));
  EXPECT_FALSE(square_stack({3, 4}, &why));
  EXPECT_FALSE(square_stack({3}, &why));
  EXPECT_EQ(why, "1-dimensional array given. Array must be at least two-dimensional");
  EXPECT_EQ(*solve_shape({3, 3}, {3}, &why), (Shape{3}));
  EXPECT_EQ(*solve_shape({3, 3}, {3, 2}, &why), (Shape{3, 2}));
  EXPECT_FALSE(solve_shape({2, 3, 3}, {2, 3}, &why));  // stacks: read differently by 1.x and 2.x
  EXPECT_FALSE(solve_shape({3, 3}, {4}, &why));
  EXPECT_EQ(*qr_shapes({5, 3}, false, &why), (std::vector<Shape>{{5, 3}, {3, 3}}));
  EXPECT_EQ(*qr_shapes({5, 3}, true, &why), (std::vector<Shape>{{5, 5}, {5, 3}}));
  EXPECT_EQ(*svd_shapes({2, 5, 3}, true, true, &why),
            (std::vector<Shape>{{2, 5, 5}, {2, 3}, {2, 3, 3}}));
  EXPECT_EQ(*svd_shapes({5, 3}, false, true, &why), (std::vector<Shape>{{5, 3}, {3}, {3, 3}}));
  EXPECT_EQ(*svd_shapes({5, 3}, false, false, &why), (std::vector<Shape>{{3}}));
  EXPECT_EQ(*eigh_shapes({4, 4}, &why), (std::vector<Shape>{{4}, {4, 4}}));
}

TEST(LinalgRules, NormCovHistogram) {
  std::string why;
  bool svd = false;
  NormOrder none;
  NormOrder two;
  two.kind = NormOrder::Kind::kNumber;
  two.value = 2;
  NormOrder fro;
  fro.kind = NormOrder::Kind::kFro;
  NormOrder three = two;
  three.value = 3;
  EXPECT_EQ(*norm_shape({2, 3, 4}, none, {}, true, false, &svd, &why), Shape{});
  EXPECT_EQ(*norm_shape({2, 3, 4}, none, {}, true, true, &svd, &why), (Shape{1, 1, 1}));
  EXPECT_FALSE(norm_shape({2, 3, 4}, two, {}, true, false, &svd, &why));
  EXPECT_EQ(why, "Improper number of dimensions to norm.");
  EXPECT_EQ(*norm_shape({3, 4}, two, {}, true, false, &svd, &why), Shape{});
  EXPECT_TRUE(svd);
  EXPECT_EQ(*norm_shape({2, 3, 4}, fro, {0, 2}, false, true, &svd, &why), (Shape{1, 3, 1}));
  EXPECT_FALSE(svd);
  EXPECT_FALSE(norm_shape({4}, fro, {}, true, false, &svd, &why));
  EXPECT_FALSE(norm_shape({3, 4}, three, {}, true, false, &svd, &why));
  EXPECT_EQ(*norm_shape({3, 4}, three, {1}, false, false, &svd, &why), (Shape{3}));

  EXPECT_EQ(*cov_shape({3, 5}, true, &why), (Shape{3, 3}));
  EXPECT_EQ(*cov_shape({3, 5}, false, &why), (Shape{5, 5}));
  EXPECT_EQ(*cov_shape({5}, true, &why), Shape{});
  EXPECT_EQ(*cov_shape({1, 5}, false, &why), Shape{});  // one row: not transposed
  EXPECT_EQ(*cov_shape({0, 5}, true, &why), (Shape{0, 0}));
  EXPECT_FALSE(cov_shape({2, 2, 2}, true, &why));
  EXPECT_EQ(*histogram_shapes(7, &why), (std::vector<Shape>{{7}, {8}}));
  EXPECT_FALSE(histogram_shapes(0, &why));
}

TEST(LibraryRules, DiagTraceVander) {
  std::string why;
  EXPECT_EQ(*diag_shape({3}, 0, &why), (Shape{3, 3}));
  EXPECT_EQ(*diag_shape({3}, -2, &why), (Shape{5, 5}));
  EXPECT_EQ(*diag_shape({3, 4}, 0, &why), (Shape{3}));
  EXPECT_EQ(*diag_shape({3, 4}, 2, &why), (Shape{2}));
  EXPECT_EQ(*diag_shape({3, 4}, -2, &why), (Shape{1}));
  EXPECT_EQ(*diag_shape({3, 4}, 9, &why), (Shape{0}));
  EXPECT_FALSE(diag_shape({2, 3, 4}, 0, &why));
  EXPECT_EQ(why, "Input must be 1- or 2-d.");
  EXPECT_EQ(*trace_shape({3, 3}, 0, 1, &why), (Shape{}));
  EXPECT_EQ(*trace_shape({2, 3, 4}, -1, 0, &why), (Shape{3}));
  EXPECT_FALSE(trace_shape({3}, 0, 1, &why));
  EXPECT_FALSE(trace_shape({3, 3}, 1, -1, &why));
  EXPECT_EQ(why, "axis1 and axis2 cannot be the same");
  EXPECT_EQ(*vander_shape({5}, 3, &why), (Shape{5, 3}));
  EXPECT_FALSE(vander_shape({5, 2}, 3, &why));
  EXPECT_FALSE(vander_shape({5}, -1, &why));
}

TEST(LibraryRules, InsertRfftLstsq) {
  std::string why;
  EXPECT_EQ(*insert_shape({4}, 0, 1, 0, true, &why), (Shape{5}));
  EXPECT_EQ(*insert_shape({4}, -4, 3, 0, false, &why), (Shape{7}));
  EXPECT_EQ(*insert_shape({2, 3}, 6, 1, 0, true, &why), (Shape{7}));
  EXPECT_EQ(*insert_shape({2, 3}, 1, 1, -1, false, &why), (Shape{2, 4}));
  EXPECT_FALSE(insert_shape({4}, 5, 1, 0, true, &why));
  EXPECT_EQ(why, "index 5 is out of bounds for axis 0 with size 4");
  EXPECT_FALSE(insert_shape({4}, -5, 1, 0, false, &why));
  EXPECT_FALSE(insert_shape({2, 3}, 0, 1, 2, false, &why));
  EXPECT_EQ(*rfft_shape({8}, std::nullopt, -1, &why), (Shape{5}));
  EXPECT_EQ(*rfft_shape({3, 7}, std::nullopt, 0, &why), (Shape{2, 7}));
  EXPECT_EQ(*rfft_shape({8}, 3, 0, &why), (Shape{2}));
  EXPECT_FALSE(rfft_shape({8}, 0, 0, &why));
  EXPECT_FALSE(rfft_shape({0}, std::nullopt, 0, &why));
  EXPECT_FALSE(rfft_shape({8}, std::nullopt, 1, &why));
  const auto v = lstsq_shapes({6, 3}, {6}, &why);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, (std::vector<Shape>{{3}, {1}, {}, {3}}));
  const auto m = lstsq_shapes({2, 3}, {2, 4}, &why);
  ASSERT_TRUE(m);
  EXPECT_EQ(*m, (std::vector<Shape>{{3, 4}, {4}, {}, {2}}));
  EXPECT_FALSE(lstsq_shapes({3, 3}, {4}, &why));
  EXPECT_FALSE(lstsq_shapes({3}, {3}, &why));
  EXPECT_FALSE(lstsq_shapes({3, 0}, {3}, &why));
}

}  // namespace
}  // namespace sot::graph
