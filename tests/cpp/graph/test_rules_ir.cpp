// The graph IR's shape/dtype rules for ops (ufuncs, reductions, matmul, shape ops, indexing,
// einsum) and the IR itself: text form, dead-code elimination, common subexpressions, folding,
// in-place ops kept in order.
#include <gtest/gtest.h>
#include <pybind11/embed.h>

#include <string>
#include <vector>

#include "graph/ir/graph.hpp"
#include "graph/rules/rules.hpp"

namespace py = pybind11;

namespace sot::graph {
namespace {

ValueInfo arr(DType t, Shape s) {
  ValueInfo v;
  v.dtype = t;
  v.shape = std::move(s);
  return v;
}

TEST(Rules, UfuncDtypes) {
  std::string why;
  const auto i8 = Operand::array(arr(DType::kInt8, {3}));
  auto r = ufunc_result("sqrt", UfuncKind::kFloat, {i8}, ScalarPromotion::kValueBased, &why);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->dtype, DType::kFloat16);
  r = ufunc_result("true_divide", UfuncKind::kTrueDivide, {i8, i8}, ScalarPromotion::kValueBased,
                   &why);
  EXPECT_EQ(r->dtype, DType::kFloat64);
  const auto b = Operand::array(arr(DType::kBool, {3}));
  EXPECT_FALSE(
      ufunc_result("subtract", UfuncKind::kSubtract, {b, b}, ScalarPromotion::kWeak, &why));
  EXPECT_NE(why.find("booleans"), std::string::npos);
  PyScalar big;
  big.kind = PyScalar::Kind::kInt;
  big.value = 1000;
  r = ufunc_result("add", UfuncKind::kArith, {i8, Operand::python(big)},
                   ScalarPromotion::kValueBased, &why);
  EXPECT_EQ(r->dtype, DType::kInt16);
  EXPECT_FALSE(ufunc_result("add", UfuncKind::kArith, {i8, Operand::python(big)},
                            ScalarPromotion::kWeak, &why));  // NEP 50: OverflowError
}

TEST(Rules, NumpyScalarsByValueAreUnknown) {
  std::string why;
  ValueInfo s = arr(DType::kFloat64, {});
  s.scalar = true;
  const auto f32 = Operand::array(arr(DType::kFloat32, {2, 2}));
  EXPECT_FALSE(result_dtype({f32, Operand::array(s)}, ScalarPromotion::kValueBased, &why));
  EXPECT_EQ(result_dtype({f32, Operand::array(s)}, ScalarPromotion::kWeak, &why), DType::kFloat64);
  // A scalar whose dtype the array's already covers: decided whatever its value.
  s.dtype = DType::kFloat32;
  EXPECT_EQ(result_dtype({f32, Operand::array(s)}, ScalarPromotion::kValueBased, &why),
            DType::kFloat32);
}

TEST(Rules, ReductionsAndScalars) {
  std::string why;
  auto r = reduce_result(ReduceKind::kSum, arr(DType::kUInt8, {2, 3}), {}, true, false,
                         std::nullopt, &why);
  EXPECT_EQ(r->dtype, DType::kUInt64);
  EXPECT_TRUE(r->scalar);
  r = reduce_result(ReduceKind::kMean, arr(DType::kInt32, {2, 3}), {-1}, false, true, std::nullopt,
                    &why);
  EXPECT_EQ(r->dtype, DType::kFloat64);
  EXPECT_EQ(r->shape, (Shape{2, 1}));
  EXPECT_FALSE(r->scalar);
  EXPECT_FALSE(reduce_result(ReduceKind::kArg, arr(DType::kFloat64, {2, 3}), {0, 1}, false, false,
                             std::nullopt, &why));
  EXPECT_FALSE(reduce_result(ReduceKind::kSame, arr(DType::kFloat64, {0, 3}), {0}, false, false,
                             std::nullopt, &why));
}

TEST(Rules, MatmulShapesAndSymbols) {
  std::string why;
  auto r = matmul_result(arr(DType::kFloat32, {5, 2, 3}), arr(DType::kFloat64, {3, 4}), &why);
  EXPECT_EQ(r->shape, (Shape{5, 2, 4}));
  EXPECT_EQ(r->dtype, DType::kFloat64);
  r = matmul_result(arr(DType::kFloat64, {3}), arr(DType::kFloat64, {3}), &why);
  EXPECT_TRUE(r->scalar);
  EXPECT_FALSE(matmul_result(arr(DType::kFloat64, {2, 3}), arr(DType::kFloat64, {2, 3}), &why));
  ValueInfo x = arr(DType::kFloat64, {7, 3});
  x.symbols = {0, -1};
  r = matmul_result(x, arr(DType::kFloat64, {3, 4}), &why);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->symbols, (std::vector<int>{0, -1}));
  EXPECT_EQ(r->text(), "float64[s0, 4]");
}

TEST(Rules, ShapeOps) {
  std::string why;
  const ValueInfo t = arr(DType::kInt16, {2, 3, 4});
  EXPECT_EQ(reshape_result(t, {-1, 4}, &why)->shape, (Shape{6, 4}));
  EXPECT_FALSE(reshape_result(t, {5, -1}, &why));
  EXPECT_EQ(transpose_result(t, {}, &why)->shape, (Shape{4, 3, 2}));
  EXPECT_EQ(moveaxis_result(t, {0}, {-1}, &why)->shape, (Shape{3, 4, 2}));
  EXPECT_EQ(expand_dims_result(t, {0, -1}, &why)->shape, (Shape{1, 2, 3, 4, 1}));
  EXPECT_FALSE(squeeze_result(t, {0}, false, &why));
  EXPECT_EQ(concatenate_result({t, t}, 1, ScalarPromotion::kWeak, &why)->shape, (Shape{2, 6, 4}));
  EXPECT_EQ(stack_result({t, t}, -1, ScalarPromotion::kWeak, &why)->shape, (Shape{2, 3, 4, 2}));
  EXPECT_EQ(einsum_result("bij,jk->bik", {t, arr(DType::kFloat32, {4, 5})}, &why)->shape,
            (Shape{2, 3, 5}));
  EXPECT_TRUE(einsum_result("ii", {arr(DType::kFloat64, {3, 3})}, &why)->scalar);
}

TEST(Rules, BasicIndexing) {
  std::string why;
  const ValueInfo m = arr(DType::kFloat64, {4, 5});
  IndexItem i;
  i.kind = IndexItem::Kind::kInt;
  i.index = -1;
  IndexItem s;
  s.kind = IndexItem::Kind::kSlice;
  s.step = -2;
  IndexItem none;
  none.kind = IndexItem::Kind::kNewAxis;
  auto r = index_result(m, {i, s}, &why);
  EXPECT_EQ(r->shape, (Shape{3}));  // x[-1, ::-2]
  EXPECT_FALSE(r->scalar);
  r = index_result(m, {none, i}, &why);
  EXPECT_EQ(r->shape, (Shape{1, 5}));
  i.index = 1;
  IndexItem j = i;
  r = index_result(m, {i, j}, &why);
  EXPECT_TRUE(r->scalar);
  i.index = 4;
  EXPECT_FALSE(index_result(m, {i}, &why));
}

class GraphIR : public ::testing::Test {
 protected:
  static py::object op_fn(const char* name) { return py::module_::import("operator").attr(name); }
};

TEST_F(GraphIR, TextDceCseAndFolding) {
  Graph g;
  const int x = g.add_input(arr(DType::kFloat64, {3}), "x");
  Op add;
  add.name = "add";
  add.fn = op_fn("add");
  add.args = {Arg::of(x), Arg::constant_of(py::int_(1))};
  const int a = g.add_op(add, arr(DType::kFloat64, {3}));
  const int b = g.add_op(add, arr(DType::kFloat64, {3}));  // the same op: merged
  Op mul;
  mul.name = "multiply";
  mul.fn = op_fn("mul");
  mul.args = {Arg::of(a), Arg::of(b)};
  const int c = g.add_op(mul, arr(DType::kFloat64, {3}));
  Op unused = mul;
  unused.args = {Arg::of(x), Arg::of(x)};
  g.add_op(unused, arr(DType::kFloat64, {3}));  // nothing needs it, but it computes: it stays
  Op view;
  view.name = "reshape";
  view.fn = op_fn("getitem");
  view.args = {Arg::of(x), Arg::constant_of(py::slice(0, 2, 1))};
  view.view = true;
  g.add_op(view, arr(DType::kFloat64, {2}));  // an unused view: removed
  const int k = g.add_constant(py::int_(6), arr(DType::kInt64, {}));
  Op folded;
  folded.name = "multiply";
  folded.fn = op_fn("mul");
  folded.args = {Arg::of(k), Arg::constant_of(py::int_(7))};
  const int f = g.add_op(folded, arr(DType::kInt64, {}));
  std::vector<int> outs = {c, f};
  const Graph o = g.optimized(&outs);
  EXPECT_EQ(o.ops().size(), 3U);  // one add, two multiplies; 6 * 7 folded; the view dropped
  EXPECT_EQ(o.value(outs[1]).source, Value::Source::kConst);
  EXPECT_EQ(o.value(outs[1]).constant.cast<int>(), 42);
  const std::string text = o.text(outs);
  EXPECT_NE(text.find("%0 = input x : float64[3]"), std::string::npos) << text;
  EXPECT_NE(text.find("= add(%0, 1) : float64[3]"), std::string::npos) << text;
  const py::dict js = o.json(outs);
  EXPECT_EQ(py::len(js["ops"]), 3U);
  EXPECT_FALSE(o.op_counts().contains("reshape"));
  EXPECT_EQ(o.op_counts()["add"].cast<int>(), 1);
}

TEST_F(GraphIR, InPlaceOpsStayAndStopMerging) {
  Graph g;
  const int x = g.add_input(arr(DType::kFloat64, {3}), "x");
  Op add;
  add.name = "add";
  add.fn = op_fn("add");
  add.args = {Arg::of(x), Arg::constant_of(py::int_(1))};
  const int a = g.add_op(add, arr(DType::kFloat64, {3}));
  Op iadd;
  iadd.name = "add";
  iadd.fn = op_fn("iadd");
  iadd.args = {Arg::of(x), Arg::constant_of(py::int_(1))};
  iadd.mutates = true;
  g.add_op(iadd, arr(DType::kFloat64, {3}));
  const int b = g.add_op(add, arr(DType::kFloat64, {3}));  // after the change: not the same value
  std::vector<int> outs = {a, b};
  const Graph o = g.optimized(&outs);
  EXPECT_EQ(o.ops().size(), 3U);
  EXPECT_NE(outs[0], outs[1]);
  std::vector<int> none;
  // No output: the in-place op still changes x, and the adds may still raise or warn.
  EXPECT_EQ(g.optimized(&none).ops().size(), 3U);
  EXPECT_TRUE(g.runs_for_effect());
}

}  // namespace
}  // namespace sot::graph
