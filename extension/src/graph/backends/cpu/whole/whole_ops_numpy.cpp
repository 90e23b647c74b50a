// Tier C's handlers of NumPy ops (whole_ops.hpp): arithmetic and comparisons of scalars, element
// reads and writes.
#include <map>
#include <string>

#include "graph/backends/cpu/whole/whole_arrays.hpp"
#include "graph/backends/cpu/whole/whole_ops.hpp"
#include "graph/rules/op_list.hpp"

namespace sot::graph::whole {

namespace {

// The largest magnitude of an int a float dtype holds exactly (a Python int operand past it
// gives up: NumPy's conversion of it is not asserted here).
const char* exact_int_limit(DType t) {
  return t == DType::kFloat32 ? "16777216LL" : "9007199254740992LL";
}

}  // namespace

void float_cast_fits(OpCtx& c, const Val& v, DType t) {
  if (v.type.kind == Kind::kPyFloat && t == DType::kFloat32) {
    c.lines.push_back("if (sot_f32_overflows(" + v.expr + ")) " + give_up(c));
  }
}

bool operand_as(OpCtx& c, const Val& v, DType t, std::string* expr) {
  if (!v.type.number()) {
    return false;
  }
  const char to = kind(t);
  if (v.type.kind == Kind::kPyInt) {
    if (to == 'f') {
      c.lines.push_back("if (" + v.expr + " > " + exact_int_limit(t) + " || " + v.expr + " < -" +
                        exact_int_limit(t) + ") " + give_up(c));
    } else if (t != DType::kInt64) {
      c.lines.push_back("if (static_cast<long long>(static_cast<" + c_type(t) + ">(" + v.expr +
                        ")) != " + v.expr + ") " + give_up(c));
    }
  } else if (v.type.kind == Kind::kPyFloat && to != 'f') {
    return false;
  } else {
    float_cast_fits(c, v, t);
  }
  *expr = cast_to(v.expr, v.type, t);
  return true;
}

namespace {

bool operands_as(OpCtx& c, DType t, std::vector<std::string>* exprs) {
  for (const Val& v : c.args) {
    std::string e;
    if (!operand_as(c, v, t, &e)) {
      return false;
    }
    exprs->push_back(e);
  }
  return true;
}

bool scalar_result(OpCtx& c) {
  if (c.result.kind != Kind::kScalar) {
    return refuse(c, "a NumPy op whose result is an array");
  }
  return true;
}

// a + b or a - b of ints in an array op's loop: the wrapped result (computed unsigned), its
// overflow found by the signs (or, unsigned, by the wrap) into the deferred flag: no builtin, so
// that the loop vectorizes.
bool wrapping_sum(OpCtx& c, const std::string& a, const std::string& b, bool add,
                  bool is_unsigned) {
  const std::string t = c.result.c_type();
  const std::string x = c.name + "_x";
  const std::string y = c.name + "_y";
  c.lines.push_back("const " + t + " " + x + " = " + a + ";");
  c.lines.push_back("const " + t + " " + y + " = " + b + ";");
  c.lines.push_back(
      cat({"const ", t, " ", c.name, " = static_cast<", t, ">(static_cast<unsigned long long>(", x,
           ") ", add ? "+" : "-", " static_cast<unsigned long long>(", y, "));"}));
  std::string bad;
  if (is_unsigned) {
    bad = add ? cat({c.name, " < ", x}) : cat({x, " < ", y});
  } else if (add) {
    bad = cat({"((", x, " ^ ", c.name, ") & (", y, " ^ ", c.name, ")) < 0"});
  } else {
    bad = cat({"((", x, " ^ ", y, ") & (", x, " ^ ", c.name, ")) < 0"});
  }
  c.lines.push_back(cat({c.deferred, " |= static_cast<unsigned>(", bad, ");"}));
  return true;
}

// a + b, a - b, a * b of NumPy scalars (and Python numbers): floats in the result's type, ints
// checked for overflow (NumPy warns and wraps: give up).
bool arith(OpCtx& c, const char* builtin, char symbol) {
  std::vector<std::string> e;
  if (!scalar_result(c) || c.args.size() != 2 || !operands_as(c, c.result.dtype, &e)) {
    return refuse(c, "operands that are not numbers");
  }
  const char k = c.result.c_kind();
  if (k == 'f') {
    declare(c, e[0] + " " + symbol + " " + e[1]);
    return true;
  }
  if (k != 'i' && k != 'u') {
    return refuse(c, "arithmetic on booleans");
  }
  if (!c.deferred.empty() && symbol != '*') {
    return wrapping_sum(c, e[0], e[1], symbol == '+', k == 'u');
  }
  c.lines.push_back(c.result.c_type() + " " + c.name + ";");
  const std::string overflow =
      std::string(builtin) + "(" + e[0] + ", " + e[1] + ", &" + c.name + ")";
  if (c.deferred.empty()) {
    c.lines.push_back("if (" + overflow + ") " + give_up(c));
  } else {  // (an array op's loop: checked after it, the loop vectorized)
    c.lines.push_back(c.deferred + " |= static_cast<unsigned>(" + overflow + ");");
  }
  return true;
}

// &, |, ^ of booleans and ints (NumPy's bitwise_and, _or, _xor) in the result's dtype: exact.
bool bitwise(OpCtx& c, char symbol) {
  std::vector<std::string> e;
  const char k = c.result.c_kind();
  if (!scalar_result(c) || c.args.size() != 2 || (k != 'b' && k != 'i' && k != 'u') ||
      !operands_as(c, c.result.dtype, &e)) {
    return refuse(c, "a bitwise op of operands other than booleans and ints");
  }
  declare(c, "static_cast<" + c.result.c_type() + ">(" + e[0] + " " + symbol + " " + e[1] + ")");
  return true;
}
bool bitwise_and(OpCtx& c) {
  return bitwise(c, '&');
}
bool bitwise_or(OpCtx& c) {
  return bitwise(c, '|');
}
bool bitwise_xor(OpCtx& c) {
  return bitwise(c, '^');
}
// ~ of a boolean (not) or an int (its bits).
bool invert(OpCtx& c) {
  std::vector<std::string> e;
  const char k = c.result.c_kind();
  if (!scalar_result(c) || c.args.size() != 1 || (k != 'b' && k != 'i' && k != 'u') ||
      !operands_as(c, c.result.dtype, &e)) {
    return refuse(c, "an invert of something other than a boolean or an int");
  }
  declare(c, k == 'b' ? "!" + e[0] : "static_cast<" + c.result.c_type() + ">(~" + e[0] + ")");
  return true;
}

bool add(OpCtx& c) {
  return arith(c, "__builtin_add_overflow", '+');
}
bool subtract(OpCtx& c) {
  return arith(c, "__builtin_sub_overflow", '-');
}
bool multiply(OpCtx& c) {
  return arith(c, "__builtin_mul_overflow", '*');
}

bool true_divide(OpCtx& c) {
  std::vector<std::string> e;
  if (!scalar_result(c) || c.args.size() != 2 || c.result.c_kind() != 'f' ||
      !operands_as(c, c.result.dtype, &e)) {
    return refuse(c, "operands that are not numbers");
  }
  declare(c, e[0] + " / " + e[1]);  // (by zero: the flag, seen by the runner)
  return true;
}

// a % b and a // b of NumPy's int64 and float64 (npy_remainder, npy_floor_divide: Python's floor
// rules, as the prelude's helpers compute them); a zero divisor or int64's -2**63 // -1 gives up
// (NumPy warns), a float's by its flag.
bool floor_op(OpCtx& c, bool remainder) {
  std::vector<std::string> e;
  const DType t = c.result.dtype;
  if (!scalar_result(c) || c.args.size() != 2 || (t != DType::kInt64 && t != DType::kFloat64) ||
      !operands_as(c, t, &e)) {
    return refuse(c, "a floor division or remainder of dtypes other than int64 and float64");
  }
  if (t == DType::kFloat64) {
    declare(c, std::string(remainder ? "sot_float_mod(" : "sot_float_floordiv(") + e[0] + ", " +
                   e[1] + ")");
    return true;
  }
  c.lines.push_back("long long " + c.name + ";");
  c.lines.push_back(std::string("if (!") + (remainder ? "sot_int_mod(" : "sot_int_floordiv(") +
                    e[0] + ", " + e[1] + ", &" + c.name + ")) " + give_up(c));
  return true;
}
bool remainder_op(OpCtx& c) {
  return floor_op(c, true);
}
bool floor_divide(OpCtx& c) {
  return floor_op(c, false);
}

// np.where(cond, a, b), one element: a or b cast to the result's dtype (NumPy casts both so).
bool where_op(OpCtx& c) {
  std::string a;
  std::string b;
  if (!scalar_result(c) || c.args.size() != 3 || !c.args[0].type.number() ||
      c.args[0].type.c_kind() != 'b' || !operand_as(c, c.args[1], c.result.dtype, &a) ||
      !operand_as(c, c.args[2], c.result.dtype, &b)) {
    return refuse(c, "a where() of other operands");
  }
  declare(c, "static_cast<bool>(" + c.args[0].expr + ") ? " + a + " : " + b);
  return true;
}

// np.minimum and np.maximum in the result's dtype: ints exactly; floats where the two are ordered
// and not zeros of two signs (NumPy's loops may return either zero, and a NaN's bits are its
// loop's): a NaN or such a pair gives up.
bool extreme_of_two(OpCtx& c, bool max) {
  std::vector<std::string> e;
  const char k = c.result.c_kind();
  const bool wide = c.result.dtype == DType::kFloat64;
  if (!scalar_result(c) || c.args.size() != 2 || (k != 'i' && k != 'u' && k != 'f') ||
      (k == 'f' && !wide && c.result.dtype != DType::kFloat32) ||
      !operands_as(c, c.result.dtype, &e)) {
    return refuse(c, "a minimum or maximum of operands other than numbers");
  }
  const std::string a = c.name + "_a";
  const std::string b = c.name + "_b";
  const std::string t = c.result.c_type();
  c.lines.push_back("const " + t + " " + a + " = " + e[0] + ";");
  c.lines.push_back("const " + t + " " + b + " = " + e[1] + ";");
  if (k == 'f') {
    // (equal values of other bits: zeros of two signs; no branch, so that an array op's loop
    // defers the check and stays vectorized)
    const std::string bits = wide ? "unsigned long long" : "unsigned";
    c.lines.push_back(bits + " " + a + "_bits, " + b + "_bits;");
    c.lines.push_back("__builtin_memcpy(&" + a + "_bits, &" + a + ", sizeof " + a + ");");
    c.lines.push_back("__builtin_memcpy(&" + b + "_bits, &" + b + ", sizeof " + b + ");");
    const std::string bad = cat({"static_cast<unsigned>((", a, " != ", a, ") | (", b, " != ", b,
                                 ") | ((", a, " == ", b, ") & (", a, "_bits != ", b, "_bits)))"});
    if (c.deferred.empty()) {
      c.lines.push_back("if (" + bad + ") " + give_up(c));
    } else {
      c.lines.push_back(c.deferred + " |= " + bad + ";");
    }
  }
  // (b < a ? b : a: the form of the machine's min instruction; where a == b both are one value)
  declare(c, b + (max ? " > " : " < ") + a + " ? " + b + " : " + a);
  return true;
}
bool minimum_op(OpCtx& c) {
  return extreme_of_two(c, false);
}
bool maximum_op(OpCtx& c) {
  return extreme_of_two(c, true);
}

bool unary_float(OpCtx& c, const std::string& fn) {
  std::vector<std::string> e;
  if (!scalar_result(c) || c.args.size() != 1 || c.result.c_kind() != 'f' ||
      !operands_as(c, c.result.dtype, &e)) {
    return refuse(c, "an operand that is not a float");
  }
  declare(c, fn + "(" + e[0] + ")");
  return true;
}

bool negative(OpCtx& c) {
  if (c.result.c_kind() == 'i' && c.args.size() == 1) {
    std::vector<std::string> e;
    if (!scalar_result(c) || !operands_as(c, c.result.dtype, &e)) {
      return refuse(c, "an operand that is not a number");
    }
    c.lines.push_back(c.result.c_type() + " " + c.name + ";");
    c.lines.push_back("if (__builtin_sub_overflow(static_cast<" + c.result.c_type() + ">(0), " +
                      e[0] + ", &" + c.name + ")) " + give_up(c));
    return true;
  }
  return unary_float(c, "-");
}
bool absolute(OpCtx& c) {
  return unary_float(c, "sot_fabs");
}
bool sqrt_op(OpCtx& c) {
  return unary_float(c, "sot_sqrt");
}
bool square(OpCtx& c) {
  std::vector<std::string> e;
  if (!scalar_result(c) || c.args.size() != 1 || c.result.c_kind() != 'f' ||
      !operands_as(c, c.result.dtype, &e)) {
    return refuse(c, "an operand that is not a float");
  }
  declare(c, e[0] + " * " + e[0]);
  return true;
}

// One element of x ** 2 of floats: x * x.
bool square_of_first(OpCtx& c) {
  std::vector<std::string> e;
  if (!scalar_result(c) || c.result.c_kind() != 'f' || !operands_as(c, c.result.dtype, &e)) {
    return refuse(c, "an operand that is not a float");
  }
  declare(c, e[0] + " * " + e[0]);
  return true;
}

// x ** 2 of a float array: x * x, as NumPy computes it (its power's fast path for the exponent 2
// is np.square's loop), where NumPy 1.x offers no loop of power tier C may call. Other exponents,
// and NumPy scalars (their power is C's pow): NumPy's loop, as for any ufunc.
bool power_op(OpCtx& c) {
  const bool two =
      c.op != nullptr && c.op->args.size() == 2 && c.args.size() == 2 &&
      c.op->args[1].kind == Arg::Kind::kConst &&
      (PyLong_CheckExact(c.op->args[1].constant.ptr()) ||
       PyFloat_CheckExact(c.op->args[1].constant.ptr())) &&
      PyObject_RichCompareBool(c.op->args[1].constant.ptr(), pybind11::int_(2).ptr(), Py_EQ) == 1;
  PyErr_Clear();
  if (!two || c.result.kind != Kind::kArray || c.result.c_kind() != 'f' ||
      c.args[0].type.dtype != c.result.dtype) {
    return ufunc_loop(c);
  }
  return elementwise(c, square_of_first);
}

// np.isnan(x), np.isinf(x), np.isfinite(x) of float32 or float64: a bool (NumPy's loops for them
// never set a floating-point flag).
bool float_class(OpCtx& c, const char* fn) {
  std::vector<std::string> e;
  const DType t = c.args.size() == 1 ? c.args[0].type.dtype : DType::kBool;
  if (!scalar_result(c) || c.args.size() != 1 || c.result.dtype != DType::kBool ||
      (t != DType::kFloat64 && t != DType::kFloat32) || c.args[0].type.kind == Kind::kPyBool ||
      !operands_as(c, t, &e)) {
    return refuse(c, "a test of something other than a float32 or float64");
  }
  declare(c, std::string(fn) + "(" + e[0] + ")");
  return true;
}
bool isnan_op(OpCtx& c) {
  return float_class(c, "__builtin_isnan");
}
bool isinf_op(OpCtx& c) {
  return float_class(c, "__builtin_isinf");
}
bool isfinite_op(OpCtx& c) {
  return float_class(c, "__builtin_isfinite");
}

// np.float32(0.5), np.int64(3): a NumPy scalar type called on a Python number (a constant the
// translation tried: it does not raise), cast as NumPy converts it; a float into an int type is
// not emitted (NumPy truncates and raises on NaN there).
bool scalar_of(OpCtx& c) {
  std::string e;
  if (!scalar_result(c) || c.args.size() != 1 || !c.args[0].type.python() ||
      (c.args[0].type.kind == Kind::kPyFloat && c.result.c_kind() != 'f')) {
    return refuse(c, "a NumPy scalar made from something other than a Python number");
  }
  if (c.result.c_kind() == 'b') {
    declare(c, "static_cast<bool>(" + c.args[0].expr + ")");
    return true;
  }
  if (!operand_as(c, c.args[0], c.result.dtype, &e)) {
    return refuse(c, "a NumPy scalar made from something other than a Python number");
  }
  declare(c, e);
  return true;
}

// max(a, b, ...) / min(...) of NumPy scalars of one dtype: the builtin's first greatest (least)
// item, compared with NumPy's quiet `<`.
bool scalar_extreme(OpCtx& c, bool greatest) {
  if (c.args.size() == 1 && c.args[0].type.kind == Kind::kArray) {
    return vector_extreme(c, greatest);  // (np.max(x): the builtin's form has two items or more)
  }
  if (!scalar_result(c) || c.args.size() < 2) {
    return refuse(c, "max()/min() of something other than NumPy scalars");
  }
  for (const Val& v : c.args) {
    if (v.type.kind != Kind::kScalar || v.type.dtype != c.result.dtype) {
      return refuse(c, "max()/min() of NumPy scalars of several dtypes");
    }
  }
  const bool floats = c.result.c_kind() == 'f';
  const char* cmp = floats ? (greatest ? "SOT_GT" : "SOT_LT") : (greatest ? ">" : "<");
  c.lines.push_back(c.result.c_type() + " " + c.name + " = " + c.args[0].expr + ";");
  for (std::size_t k = 1; k < c.args.size(); ++k) {
    const std::string& x = c.args[k].expr;
    std::string l = "if (";
    l += floats ? std::string(cmp) + "(" + x + ", " + c.name + ")" : x + " " + cmp + " " + c.name;
    l += ") " + c.name + " = ";
    l += x + ";";
    c.lines.push_back(l);
  }
  return true;
}
bool scalar_max(OpCtx& c) {
  return scalar_extreme(c, true);
}
bool scalar_min(OpCtx& c) {
  return scalar_extreme(c, false);
}

// The dtype NumPy compares two operands in, where tier C asserts it: two scalars of one dtype, or
// a float64/int64 scalar and a Python number (float64, or int64 for two ints).
bool compare_type(const OpCtx& c, DType* t) {
  const Val& a = c.args[0];
  const Val& b = c.args[1];
  if (a.type.kind == Kind::kScalar && b.type.kind == Kind::kScalar) {
    *t = a.type.dtype;
    return a.type.dtype == b.type.dtype;
  }
  const Val& s = a.type.kind == Kind::kScalar ? a : b;
  const Val& p = a.type.kind == Kind::kScalar ? b : a;
  if (s.type.kind != Kind::kScalar || !p.type.python() ||
      (s.type.dtype != DType::kFloat64 && s.type.dtype != DType::kInt64)) {
    return false;
  }
  *t = s.type.dtype == DType::kInt64 && p.type.kind != Kind::kPyFloat ? DType::kInt64
                                                                      : DType::kFloat64;
  return true;
}

bool compare(OpCtx& c, const char* int_op, const char* float_macro) {
  DType t = DType::kFloat64;
  std::vector<std::string> e;
  if (!scalar_result(c) || c.args.size() != 2 || c.result.dtype != DType::kBool ||
      !compare_type(c, &t) || !operands_as(c, t, &e)) {
    return refuse(c, "a comparison of values of other dtypes");
  }
  declare(c, kind(t) == 'f' ? std::string(float_macro) + "(" + e[0] + ", " + e[1] + ")"
                            : e[0] + " " + int_op + " " + e[1]);
  return true;
}

bool less(OpCtx& c) {
  return compare(c, "<", "SOT_LT");
}
bool less_equal(OpCtx& c) {
  return compare(c, "<=", "SOT_LE");
}
bool greater(OpCtx& c) {
  return compare(c, ">", "SOT_GT");
}
bool greater_equal(OpCtx& c) {
  return compare(c, ">=", "SOT_GE");
}
bool equal(OpCtx& c) {
  return compare(c, "==", "SOT_EQ");
}
bool not_equal(OpCtx& c) {
  return compare(c, "!=", "SOT_NE");
}

// The byte offset of element `indices` of array `a` (each index a Python int, wrapped and checked:
// out of range gives up), declared as `name`.
bool element_offset(OpCtx& c, const Val& a, const std::vector<Val>& indices,
                    const std::string& name) {
  if (a.type.kind != Kind::kArray || static_cast<int>(indices.size()) != a.type.ndim) {
    return refuse(c, "an index that is not one int per dimension");
  }
  std::string offset = "0";
  for (std::size_t d = 0; d < indices.size(); ++d) {
    const Val& i = indices[d];
    if (i.is_slice() || i.type.kind != Kind::kPyInt) {
      return refuse(c, "an index that is not a Python int");
    }
    const std::string at = name + "_" + std::to_string(d);
    const std::string dim = std::to_string(d);
    c.lines.push_back("long long " + at + ";");
    std::string check = "if (!sot_index(" + i.expr + ", " + a.expr + "->shape[" + dim + "], &";
    check += at + ")) " + give_up(c);
    c.lines.push_back(check);
    offset += " + " + at + " * ";
    offset += a.expr + "->strides[" + dim + "]";
  }
  c.lines.push_back("char* const " + name + " = " + a.expr + "->data + (" + offset + ");");
  return true;
}

bool getitem(OpCtx& c) {
  if (c.result.kind == Kind::kArray) {
    const bool by_array = c.args.size() == 2 && c.args[1].type.kind == Kind::kArray;
    return by_array ? gather_rows(c) : array_view(c);
  }
  if (c.args.size() < 2 || c.result.kind != Kind::kScalar ||
      c.args[0].type.dtype != c.result.dtype) {
    return refuse(c, "indexing that makes an array");
  }
  const std::vector<Val> indices(c.args.begin() + 1, c.args.end());
  const std::string at = c.name + "_at";
  if (!element_offset(c, c.args[0], indices, at)) {
    return false;
  }
  c.lines.push_back(c.result.c_type() + " " + c.name + ";");
  c.lines.push_back("__builtin_memcpy(&" + c.name + ", " + at + ", sizeof " + c.name + ");");
  return true;
}

// x[i] = v, one element: the value cast to the array's dtype where the cast is NumPy's C cast (a
// number into a float array; an int or bool into an int64 one; a bool into a bool one).
bool setitem(OpCtx& c) {
  if (c.args.size() < 3) {
    return refuse(c, "an assignment of more than one element");
  }
  const Val& a = c.args[0];
  const Val& v = c.args.back();
  const std::vector<Val> indices(c.args.begin() + 1, c.args.end() - 1);
  bool element = v.type.number() && static_cast<int>(indices.size()) == a.type.ndim;
  for (const Val& i : indices) {
    element = element && !i.is_slice();
  }
  if (a.type.kind != Kind::kArray) {
    return refuse(c, "an assignment into something other than an array");
  }
  if (!element) {
    return store(c);  // (rows, slices, arrays: whole_ops_arrays.cpp)
  }
  const char to = kind(a.type.dtype);
  const char from = v.type.c_kind();
  const bool exact = to == 'f' ||
                     (a.type.dtype == DType::kInt64 && (from == 'i' || from == 'b') &&
                      v.type.dtype != DType::kUInt64) ||
                     (to == 'b' && from == 'b');
  // (into an argument, logged; or into an array the code made, which a give-up drops)
  if (!exact || (a.arg < 0 && !a.fresh)) {
    return refuse(c, "an assignment whose cast tier C does not assert");
  }
  const std::string at = c.name + "_at";
  if (!element_offset(c, a, indices, at)) {
    return false;
  }
  const std::string value = c.name + "_v";
  const Val stored = stored_number(c, v, a.type.dtype, c.name + "_n");
  c.lines.push_back("const " + c_type(a.type.dtype) + " " + value + " = " +
                    cast_to(stored.expr, stored.type, a.type.dtype) + ";");
  if (a.arg >= 0) {
    c.lines.push_back("if (!sot_log(env, " + at + ", sizeof " + value + ")) " + give_up(c));
    c.written.push_back(a.arg);
  }
  c.lines.push_back("__builtin_memcpy(" + at + ", &" + value + ", sizeof " + value + ");");
  c.out = a;  // (the op's result is the array itself)
  return true;
}

struct NumpyOp {
  Handler handler;
  bool elementwise;  // the handler computes one element (elementwise() makes arrays of it)
};

const std::map<std::string, NumpyOp>& numpy_ops() {
  static const std::map<std::string, NumpyOp> kNumpy = {
      {"add", {add, true}},
      {"subtract", {subtract, true}},
      {"multiply", {multiply, true}},
      {"true_divide", {true_divide, true}},
      {"remainder", {remainder_op, true}},
      {"floor_divide", {floor_divide, true}},
      {"where", {where_op, true}},
      {"minimum", {minimum_op, true}},
      {"maximum", {maximum_op, true}},
      {"bitwise_and", {bitwise_and, true}},
      {"bitwise_or", {bitwise_or, true}},
      {"bitwise_xor", {bitwise_xor, true}},
      {"invert", {invert, true}},
      {"astype", {astype_element, true}},
      {"negative", {negative, true}},
      {"absolute", {absolute, true}},
      {"sqrt", {sqrt_op, true}},
      {"square", {square, true}},
      {"power", {power_op, false}},
      {"isnan", {isnan_op, true}},
      {"isinf", {isinf_op, true}},
      {"isfinite", {isfinite_op, true}},
      {"less", {less, true}},
      {"less_equal", {less_equal, true}},
      {"greater", {greater, true}},
      {"greater_equal", {greater_equal, true}},
      {"equal", {equal, true}},
      {"not_equal", {not_equal, true}},
      {"scalar", {scalar_of, false}},
      {"max", {scalar_max, false}},
      {"min", {scalar_min, false}},
      {"matmul", {matmul_vectors, false}},
      {"outer", {outer_vectors, false}},
      {"dot", {dot_vectors, false}},
      {"sum", {sum_vector, false}},
      {"mean", {mean_vector, false}},
      {"count_nonzero", {count_nonzero_op, false}},
      {"copy", {copy_array, false}},
      {"zeros", {filled_array, false}},
      {"ones", {filled_array, false}},
      {"empty", {filled_array, false}},
      {"full", {filled_array, false}},
      {"zeros_like", {filled_array, false}},
      {"ones_like", {filled_array, false}},
      {"empty_like", {filled_array, false}},
      {"full_like", {filled_array, false}},
      {"arange", {arange_op, false}},
      {"linalg.norm", {norm_vector, false}},
      {"linalg.solve", {solve_op, false}},
      {"transpose", {transpose_view, false}},
      {"getitem", {getitem, false}},
      {"getitem_at", {getitem, false}},
      {"setitem", {setitem, false}},
      {"setitem_at", {setitem, false}},
  };
  return kNumpy;
}

}  // namespace

Handler numpy_handler_for(const std::string& name) {
  const auto found = numpy_ops().find(name);
  if (found != numpy_ops().end()) {
    return found->second.handler;
  }
  // (the other ops of the one list: NumPy's own loop, as tier B calls it for them)
  return find_op(name) != nullptr ? ufunc_loop : nullptr;
}

bool filled_op(const std::string& name) {
  const auto found = numpy_ops().find(name);
  return found != numpy_ops().end() && found->second.handler == filled_array;
}

bool elementwise_op(const std::string& name) {
  const auto found = numpy_ops().find(name);
  return found != numpy_ops().end() && found->second.elementwise;
}

}  // namespace sot::graph::whole
