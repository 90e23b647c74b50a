// The shape rules of the reordering functions (flip, roll, tril/triu, sort, take_along_axis,
// outer): the shapes NumPy makes, and NumPy's refusals.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/order_rules.hpp"

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

}  // namespace
}  // namespace sot::graph
