#include "translator/handlers/binary_operators.hpp"

#include <array>

namespace sot::translator {

namespace {

PyObject* power(PyObject* a, PyObject* b) {
  return PyNumber_Power(a, b, Py_None);
}

using graph::UfuncKind;

constexpr int kOperators = 13;

const std::array<BinaryOperator, kOperators> kTable = {{
    {0, "+", PyNumber_Add, "add", UfuncKind::kArith, "add", "iadd"},
    {1, "&", PyNumber_And, "bitwise_and", UfuncKind::kBitwise, "and_", "iand"},
    {2, "//", PyNumber_FloorDivide, "floor_divide", UfuncKind::kFloorDivide, "floordiv",
     "ifloordiv"},
    {3, "<<", PyNumber_Lshift, "left_shift", UfuncKind::kBitwise, "lshift", "ilshift"},
    {4, "@", PyNumber_MatrixMultiply, "matmul", UfuncKind::kBitwise, "matmul", "imatmul"},
    {5, "*", PyNumber_Multiply, "multiply", UfuncKind::kArith, "mul", "imul"},
    {6, "%", PyNumber_Remainder, "remainder", UfuncKind::kFloorDivide, "mod", "imod"},
    {7, "|", PyNumber_Or, "bitwise_or", UfuncKind::kBitwise, "or_", "ior"},
    {8, "**", power, "power", UfuncKind::kPower, "pow", "ipow"},
    {9, ">>", PyNumber_Rshift, "right_shift", UfuncKind::kBitwise, "rshift", "irshift"},
    {10, "-", PyNumber_Subtract, "subtract", UfuncKind::kSubtract, "sub", "isub"},
    {11, "/", PyNumber_TrueDivide, "true_divide", UfuncKind::kTrueDivide, "truediv", "itruediv"},
    {12, "^", PyNumber_Xor, "bitwise_xor", UfuncKind::kBitwise, "xor", "ixor"},
}};

}  // namespace

const BinaryOperator* binary_operator(int oparg) {
  if (oparg < 0 || oparg >= 2 * kOperators) {
    return nullptr;
  }
  return &kTable[static_cast<std::size_t>(oparg % kOperators)];
}

}  // namespace sot::translator
