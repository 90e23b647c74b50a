// The graph IR's NumPy rules: dtype promotion (the full table is checked against NumPy by
// tests/python/graph/test_rules.py), broadcasting and reduction shapes.
#include <gtest/gtest.h>

#include "graph/ir/dtype.hpp"
#include "graph/ir/shape.hpp"

namespace sot::graph {
namespace {

TEST(DType, NamesRoundTrip) {
  for (int i = 0; i < kDTypeCount; ++i) {
    const auto t = static_cast<DType>(i);
    ASSERT_EQ(dtype_from_name(name(t)), t);
  }
  EXPECT_FALSE(dtype_from_name("object").has_value());
  EXPECT_EQ(itemsize(DType::kComplex128), 16);
  EXPECT_EQ(kind(DType::kUInt16), 'u');
}

TEST(DType, PromotionCorners) {
  EXPECT_EQ(promote_types(DType::kBool, DType::kInt8), DType::kInt8);
  EXPECT_EQ(promote_types(DType::kInt8, DType::kUInt8), DType::kInt16);
  EXPECT_EQ(promote_types(DType::kUInt16, DType::kInt8), DType::kInt32);
  EXPECT_EQ(promote_types(DType::kInt32, DType::kUInt16), DType::kInt32);
  EXPECT_EQ(promote_types(DType::kInt64, DType::kUInt64), DType::kFloat64);
  EXPECT_EQ(promote_types(DType::kUInt8, DType::kFloat16), DType::kFloat16);
  EXPECT_EQ(promote_types(DType::kInt16, DType::kFloat16), DType::kFloat32);
  EXPECT_EQ(promote_types(DType::kInt64, DType::kFloat32), DType::kFloat64);
  EXPECT_EQ(promote_types(DType::kFloat16, DType::kComplex64), DType::kComplex64);
  EXPECT_EQ(promote_types(DType::kFloat64, DType::kComplex64), DType::kComplex128);
  EXPECT_EQ(promote_types(DType::kInt32, DType::kComplex64), DType::kComplex128);
  for (int i = 0; i < kDTypeCount; ++i) {
    for (int j = 0; j < kDTypeCount; ++j) {
      const auto a = static_cast<DType>(i);
      const auto b = static_cast<DType>(j);
      EXPECT_EQ(promote_types(a, b), promote_types(b, a)) << name(a) << " " << name(b);
    }
  }
}

TEST(DType, PythonScalars) {
  std::string error;
  const auto int_scalar = [](long double v) {
    PyScalar s;
    s.kind = PyScalar::Kind::kInt;
    s.value = v;
    return s;
  };
  PyScalar f;
  f.kind = PyScalar::Kind::kFloat;
  f.value = 1e5L;
  // NumPy 1.x: by value.
  EXPECT_EQ(
      result_type_with_scalar(DType::kInt8, int_scalar(100), ScalarPromotion::kValueBased, &error),
      DType::kInt8);
  EXPECT_EQ(
      result_type_with_scalar(DType::kInt8, int_scalar(200), ScalarPromotion::kValueBased, &error),
      DType::kInt16);
  EXPECT_EQ(result_type_with_scalar(DType::kFloat16, f, ScalarPromotion::kValueBased, &error),
            DType::kFloat32);
  // NEP 50: the array's dtype within its kind; an int out of range raises.
  EXPECT_EQ(result_type_with_scalar(DType::kFloat16, f, ScalarPromotion::kWeak, &error),
            DType::kFloat16);
  EXPECT_EQ(result_type_with_scalar(DType::kInt8, f, ScalarPromotion::kWeak, &error),
            DType::kFloat64);
  EXPECT_FALSE(
      result_type_with_scalar(DType::kInt8, int_scalar(300), ScalarPromotion::kWeak, &error));
  EXPECT_EQ(error, "Python integer out of bounds for int8");
}

TEST(Shape, Broadcasting) {
  std::string error;
  EXPECT_EQ(broadcast_shapes({2, 3}, {3}, &error), (Shape{2, 3}));
  EXPECT_EQ(broadcast_shapes({4, 1, 5}, {3, 1}, &error), (Shape{4, 3, 5}));
  EXPECT_EQ(broadcast_shapes({}, {2, 2}, &error), (Shape{2, 2}));
  EXPECT_EQ(broadcast_shapes({0, 1}, {1, 7}, &error), (Shape{0, 7}));
  EXPECT_FALSE(broadcast_shapes({2, 3}, {4}, &error).has_value());
  EXPECT_EQ(error, "operands could not be broadcast together with shapes (2,3) (4,)");
}

TEST(Shape, Reductions) {
  std::string error;
  const auto axes = normalize_axes({-1, 0}, false, 3, &error);
  ASSERT_TRUE(axes.has_value());
  EXPECT_EQ(*axes, (std::vector<int>{0, 2}));
  EXPECT_EQ(reduced_shape({2, 3, 4}, *axes, false), (Shape{3}));
  EXPECT_EQ(reduced_shape({2, 3, 4}, *axes, true), (Shape{1, 3, 1}));
  EXPECT_EQ(reduced_shape({2, 3}, *normalize_axes({}, true, 2, &error), false), Shape{});
  EXPECT_FALSE(normalize_axes({3}, false, 3, &error).has_value());
  EXPECT_EQ(error, "axis 3 is out of bounds for array of dimension 3");
  EXPECT_FALSE(normalize_axes({1, -2}, false, 3, &error).has_value());
  EXPECT_EQ(error, "duplicate value in 'axis'");
  EXPECT_EQ(shape_text({4}), "(4,)");
  EXPECT_EQ(shape_text({}), "()");
}

}  // namespace
}  // namespace sot::graph
