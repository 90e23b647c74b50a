// Tier C's op handlers (whole_ops.hpp), in tables by the kind of the result: Python numbers, then
// NumPy scalars and elements.
#include "graph/backends/cpu/whole/whole_ops.hpp"

#include <cstring>
#include <map>
#include <string>

namespace sot::graph::whole {

std::string cat(std::initializer_list<std::string_view> parts) {
  std::string s;
  for (const std::string_view p : parts) {
    s += p;
  }
  return s;
}

std::string give_up(const OpCtx& c) {
  return "SOT_GIVE_UP(" + std::to_string(c.give_up) + ");";
}

void declare(OpCtx& c, const std::string& value) {
  c.lines.push_back("const " + c.result.c_type() + " " + c.name + " = " + value + ";");
}

bool all_laid_c(const std::vector<Val>& args) {
  for (const Val& v : args) {
    if (v.type.kind == Kind::kArray && !v.laid_c()) {
      return false;
    }
  }
  return true;
}

namespace {

// Declares `name`_ops, the array operands among `operands` (for sot_c_result), and gives their
// count.
int array_operands(OpCtx& c, const std::vector<Val>& operands) {
  std::string list;
  int count = 0;
  for (const Val& v : operands) {
    if (v.type.kind == Kind::kArray) {
      list += (count++ == 0 ? "" : ", ") + v.expr;
    }
  }
  c.lines.push_back("const SotArr* const " + c.name + "_ops[] = {" + list + "};");
  return count;
}

}  // namespace

void laid_c_result(OpCtx& c, const std::vector<Val>& operands, int rank, const std::string& shape) {
  if (rank < 2 || all_laid_c(operands)) {
    return;  // (a vector is contiguous in both)
  }
  const int count = array_operands(c, operands);
  c.lines.push_back(cat({"if (!sot_c_result(", c.name, "_ops, ", std::to_string(count), ", ",
                         std::to_string(rank), ", ", shape, ")) ", give_up(c)}));
}

void laid_c_or_f_result(OpCtx& c, const std::vector<Val>& operands, const std::string& shape) {
  const int count = array_operands(c, operands);
  c.lines.push_back(cat({"const bool ", c.name, "_f = !sot_c_result(", c.name, "_ops, ",
                         std::to_string(count), ", 2, ", shape, ");"}));
}

bool refuse(OpCtx& c, const std::string& why) {
  c.why = why;
  return false;
}

namespace {

// ---- Python numbers ---------------------------------------------------------------------------

// The operand as a double, as CPython mixes an int (or bool) into float arithmetic.
std::string as_double(const Val& v) {
  return v.type.c_kind() == 'f' && v.type.kind != Kind::kScalar
             ? v.expr
             : "static_cast<double>(" + v.expr + ")";
}

std::string as_int(const Val& v) {
  return v.type.kind == Kind::kPyInt ? v.expr : "static_cast<long long>(" + v.expr + ")";
}

// Python ints and bools only (a NumPy value in Python arithmetic is not captured so).
bool int_operands(const OpCtx& c) {
  for (const Val& v : c.args) {
    if (v.type.kind != Kind::kPyInt && v.type.kind != Kind::kPyBool) {
      return false;
    }
  }
  return true;
}

bool python_operands(const OpCtx& c) {
  for (const Val& v : c.args) {
    if (!v.type.python()) {
      return false;
    }
  }
  return true;
}

bool py_arith(OpCtx& c, const char* builtin, char symbol) {
  if (c.args.size() != 2 || !python_operands(c)) {
    return refuse(c, "operands that are not Python numbers");
  }
  if (c.result.kind == Kind::kPyInt && int_operands(c)) {
    c.lines.push_back("long long " + c.name + ";");
    c.lines.push_back(std::string("if (") + builtin + "(" + as_int(c.args[0]) + ", " +
                      as_int(c.args[1]) + ", &" + c.name + ")) " + give_up(c));
    return true;
  }
  if (c.result.kind != Kind::kPyFloat) {
    return refuse(c, "a Python result that is neither an int nor a float");
  }
  declare(c, as_double(c.args[0]) + " " + symbol + " " + as_double(c.args[1]));
  return true;
}

bool py_add(OpCtx& c) {
  return py_arith(c, "__builtin_add_overflow", '+');
}
bool py_sub(OpCtx& c) {
  return py_arith(c, "__builtin_sub_overflow", '-');
}
bool py_mul(OpCtx& c) {
  return py_arith(c, "__builtin_mul_overflow", '*');
}

bool py_truediv(OpCtx& c) {
  if (c.args.size() != 2 || !python_operands(c) || c.result.kind != Kind::kPyFloat) {
    return refuse(c, "operands that are not Python numbers");
  }
  const Val& a = c.args[0];
  const Val& b = c.args[1];
  if (int_operands(c)) {
    // (CPython divides ints exactly representable as doubles in doubles; others otherwise)
    c.lines.push_back("if (" + as_int(b) + " == 0 || !sot_exact_double(" + as_int(a) +
                      ") || !sot_exact_double(" + as_int(b) + ")) " + give_up(c));
  } else {
    c.lines.push_back("if (" + as_double(b) + " == 0.0) " + give_up(c));
  }
  declare(c, as_double(a) + " / " + as_double(b));
  return true;
}

bool py_floor_or_mod(OpCtx& c, bool floor) {
  if (c.args.size() != 2 || !python_operands(c)) {
    return refuse(c, "operands that are not Python numbers");
  }
  const Val& a = c.args[0];
  const Val& b = c.args[1];
  if (c.result.kind == Kind::kPyInt && int_operands(c)) {
    c.lines.push_back("long long " + c.name + ";");
    c.lines.push_back(std::string("if (!") + (floor ? "sot_int_floordiv(" : "sot_int_mod(") +
                      as_int(a) + ", " + as_int(b) + ", &" + c.name + ")) " + give_up(c));
    return true;
  }
  if (c.result.kind != Kind::kPyFloat) {
    return refuse(c, "a Python result that is neither an int nor a float");
  }
  c.lines.push_back("if (" + as_double(b) + " == 0.0) " + give_up(c));
  declare(c, std::string(floor ? "sot_float_floordiv(" : "sot_float_mod(") + as_double(a) + ", " +
                 as_double(b) + ")");
  return true;
}

bool py_floordiv(OpCtx& c) {
  return py_floor_or_mod(c, true);
}
bool py_mod(OpCtx& c) {
  return py_floor_or_mod(c, false);
}

// a < b of Python numbers: ints exactly, floats quietly, an int and a float only where the int
// is exactly a double (CPython compares the mathematical values).
bool py_compare(OpCtx& c, const char* int_op, const char* float_macro) {
  if (c.args.size() != 2 || !python_operands(c)) {
    return refuse(c, "operands that are not Python numbers");
  }
  const Val& a = c.args[0];
  const Val& b = c.args[1];
  if (int_operands(c)) {
    declare(c, as_int(a) + " " + int_op + " " + as_int(b));
    return true;
  }
  for (const Val& v : c.args) {
    if (v.type.c_kind() != 'f') {
      c.lines.push_back("if (!sot_exact_double(" + as_int(v) + ")) " + give_up(c));
    }
  }
  declare(c, std::string(float_macro) + "(" + as_double(a) + ", " + as_double(b) + ")");
  return true;
}

bool py_lt(OpCtx& c) {
  return py_compare(c, "<", "SOT_LT");
}
bool py_le(OpCtx& c) {
  return py_compare(c, "<=", "SOT_LE");
}
bool py_gt(OpCtx& c) {
  return py_compare(c, ">", "SOT_GT");
}
bool py_ge(OpCtx& c) {
  return py_compare(c, ">=", "SOT_GE");
}
bool py_eq(OpCtx& c) {
  return py_compare(c, "==", "SOT_EQ");
}
bool py_ne(OpCtx& c) {
  return py_compare(c, "!=", "SOT_NE");
}

// int() of a NumPy scalar: a float truncated (a NaN, an infinity or past 64 bits: give up), an
// int as it is (an unsigned one past 63 bits: give up).
bool py_int(OpCtx& c) {
  if (c.args.size() != 1 || c.args[0].type.kind != Kind::kScalar) {
    return refuse(c, "int() of something other than a NumPy scalar");
  }
  const Val& a = c.args[0];
  const char k = a.type.c_kind();
  if (k == 'f') {
    c.lines.push_back("long long " + c.name + ";");
    c.lines.push_back("if (!sot_trunc_int(static_cast<double>(" + a.expr + "), &" + c.name + ")) " +
                      give_up(c));
    return true;
  }
  if (k == 'u' && a.type.dtype == DType::kUInt64) {
    c.lines.push_back("if (" + a.expr + " > 9223372036854775807ULL) " + give_up(c));
  }
  declare(c, "static_cast<long long>(" + a.expr + ")");
  return true;
}

bool py_float(OpCtx& c) {
  // (a NumPy scalar, or a Python number: a 64-bit int rounded to nearest as CPython's
  // PyLong_AsDouble rounds it, the C conversion under the default rounding mode)
  const Kind k = c.args.empty() ? Kind::kArray : c.args[0].type.kind;
  if (c.args.size() != 1 ||
      (k != Kind::kScalar && k != Kind::kPyInt && k != Kind::kPyBool && k != Kind::kPyFloat)) {
    return refuse(c, "float() of something other than a number");
  }
  declare(c, "static_cast<double>(" + c.args[0].expr + ")");
  return true;
}

bool py_abs(OpCtx& c) {
  if (c.args.size() != 1 || !python_operands(c)) {
    return refuse(c, "abs() of something other than a Python number");
  }
  const Val& a = c.args[0];
  if (c.result.kind == Kind::kPyInt) {
    c.lines.push_back("if (" + as_int(a) + " == INT64_MIN) " + give_up(c));
    declare(c, as_int(a) + " < 0 ? -" + as_int(a) + " : " + as_int(a));
    return true;
  }
  declare(c, "sot_fabs(" + as_double(a) + ")");
  return true;
}

// len() of an array (its first dimension, a size known only where the graph runs).
bool py_len(OpCtx& c) {
  if (c.args.size() != 1 || c.args[0].type.kind != Kind::kArray || c.args[0].type.ndim < 1 ||
      c.result.kind != Kind::kPyInt) {
    return refuse(c, "len() of something other than an array of one dimension or more");
  }
  declare(c, "static_cast<long long>(" + c.args[0].expr + "->shape[0])");
  return true;
}

// -x, +x of a Python int or float (the int's negation checked), ~x of an int.
bool py_unary(OpCtx& c, char op) {
  if (c.args.size() != 1 || !python_operands(c) || c.args[0].type.kind != c.result.kind ||
      (op == '~' && c.result.kind != Kind::kPyInt)) {
    return refuse(c, "a unary operator on something other than a Python number of its kind");
  }
  const Val& a = c.args[0];
  if (op == '-' && c.result.kind == Kind::kPyInt) {
    c.lines.push_back("if (" + as_int(a) + " == INT64_MIN) " + give_up(c));
  }
  declare(c, op == '+' ? a.expr : std::string(1, op) + a.expr);
  return true;
}
bool py_neg(OpCtx& c) {
  return py_unary(c, '-');
}
bool py_pos(OpCtx& c) {
  return py_unary(c, '+');
}
bool py_invert(OpCtx& c) {
  return py_unary(c, '~');
}

// max(a, b, ...) / min(...) of Python numbers of one kind: the first greatest (least) item, as
// the builtin keeps it (a NaN first stays; a later one never replaces).
bool py_extreme(OpCtx& c, bool greatest) {
  if (c.args.empty() || !python_operands(c)) {
    return refuse(c, "max()/min() of something other than Python numbers");
  }
  const bool ints = c.result.kind == Kind::kPyInt;
  const char* cmp = ints ? (greatest ? ">" : "<") : (greatest ? "SOT_GT" : "SOT_LT");
  c.lines.push_back(c.result.c_type() + " " + c.name + " = " + c.args[0].expr + ";");
  for (std::size_t k = 1; k < c.args.size(); ++k) {
    const std::string& x = c.args[k].expr;
    std::string l = "if (";
    l += ints ? x + " " + cmp + " " + c.name : std::string(cmp) + "(" + x + ", " + c.name + ")";
    l += ") " + c.name + " = ";
    l += x + ";";
    c.lines.push_back(l);
  }
  return true;
}

bool py_max(OpCtx& c) {
  return py_extreme(c, true);
}
bool py_min(OpCtx& c) {
  return py_extreme(c, false);
}

bool py_math_test(OpCtx& c);

// list_position(count, k) of a list a loop appends to (translator/control/loop_lists.cpp): k, or
// count + k for a negative k; out of range, give up (the op's own path raises IndexError).
bool py_list_position(OpCtx& c) {
  if (c.args.size() != 2 || c.result.kind != Kind::kPyInt || c.args[0].type.kind != Kind::kPyInt ||
      c.args[1].type.kind != Kind::kPyInt) {
    return refuse(c, "a list position of other than two Python ints");
  }
  const std::string& n = c.args[0].expr;
  const std::string& k = c.args[1].expr;
  declare(c, cat({"(", k, " < 0 ? ", n, " + ", k, " : ", k, ")"}));
  c.lines.push_back(cat({"if (", c.name, " < 0 || ", c.name, " >= ", n, ") ", give_up(c)}));
  return true;
}

// math.sqrt(x), math.exp(x), ... of a number (a Python float result): the C library's function, as
// CPython's math module calls it on the number as a double; where CPython raises instead (a NaN
// made of a number: ValueError; an infinity of a finite one: OverflowError or ValueError), give
// up (the op's own path calls the function, which raises).
bool py_math(OpCtx& c) {
  static const std::map<std::string, std::string> kFunctions = {
      {"math.sqrt", "__builtin_sqrt"},   {"math.exp", "__builtin_exp"},
      {"math.expm1", "__builtin_expm1"}, {"math.log", "__builtin_log"},
      {"math.log2", "__builtin_log2"},   {"math.log10", "__builtin_log10"},
      {"math.log1p", "__builtin_log1p"}, {"math.sin", "__builtin_sin"},
      {"math.cos", "__builtin_cos"},     {"math.tan", "__builtin_tan"},
      {"math.asin", "__builtin_asin"},   {"math.acos", "__builtin_acos"},
      {"math.atan", "__builtin_atan"},   {"math.sinh", "__builtin_sinh"},
      {"math.cosh", "__builtin_cosh"},   {"math.tanh", "__builtin_tanh"},
      {"math.fabs", "__builtin_fabs"}};
  if (c.result.kind == Kind::kPyBool) {
    return py_math_test(c);
  }
  const auto f = c.op == nullptr ? kFunctions.end() : kFunctions.find(c.op->name);
  if (f == kFunctions.end() || c.args.size() != 1 || c.result.kind != Kind::kPyFloat) {
    return refuse(c, "a math function it has no form of, or not of one number");
  }
  const Val& a = c.args[0];
  const char k = a.type.c_kind();
  if (k != 'f' && k != 'i' && k != 'u') {
    return refuse(c, "a math function of something other than a number");
  }
  const std::string x = c.name + "_x";
  c.lines.push_back("const double " + x + " = " + as_double(a) + ";");
  declare(c, f->second + "(" + x + ")");
  c.lines.push_back(
      cat({"if ((", c.name, " != ", c.name, " && ", x, " == ", x, ") || (__builtin_isinf(", c.name,
           ") && __builtin_isfinite(", x, "))) ", give_up(c)}));
  return true;
}

// math.isnan(x), math.isinf(x), math.isfinite(x) of a number: a Python bool (a Python int or an
// int64 is a double in range: CPython's conversion raises only past a double's range).
bool py_math_test(OpCtx& c) {
  static const std::map<std::string, std::string> kTests = {
      {"math.isnan", "__builtin_isnan"},
      {"math.isinf", "__builtin_isinf"},
      {"math.isfinite", "__builtin_isfinite"}};
  const auto f = c.op == nullptr ? kTests.end() : kTests.find(c.op->name);
  if (f == kTests.end() || c.args.size() != 1) {
    return refuse(c, "a math function it has no form of, or not of one number");
  }
  const Val& a = c.args[0];
  const char k = a.type.c_kind();
  if ((k != 'f' && k != 'i') ||
      (a.type.kind == Kind::kScalar && a.type.dtype != DType::kFloat64 &&
       a.type.dtype != DType::kFloat32 && a.type.dtype != DType::kInt64)) {
    return refuse(c, "a math test of something other than a float or an int64");
  }
  declare(c, "static_cast<bool>(" + f->second + "(" + as_double(a) + "))");
  return true;
}

}  // namespace

// The NumPy handlers are in whole_ops_numpy.cpp.
Handler numpy_handler_for(const std::string& name);

Handler handler_for(const std::string& name, bool python) {
  static const std::map<std::string, Handler> kPython = {
      {"add", py_add},
      {"sub", py_sub},
      {"mul", py_mul},
      {"truediv", py_truediv},
      {"floordiv", py_floordiv},
      {"mod", py_mod},
      {"lt", py_lt},
      {"le", py_le},
      {"gt", py_gt},
      {"ge", py_ge},
      {"eq", py_eq},
      {"ne", py_ne},
      {"int", py_int},
      {"float", py_float},
      {"abs", py_abs},
      {"neg", py_neg},
      {"len", py_len},
      {"pos", py_pos},
      {"invert", py_invert},
      {"max", py_max},
      {"list_position", py_list_position},
      {"count_nonzero", count_nonzero_op},
      {"min", py_min},
  };
  if (python) {
    if (name.rfind("math.", 0) == 0) {
      return py_math;  // (its own table of the functions it emits; it refuses the others)
    }
    const auto found = kPython.find(name);
    return found == kPython.end() ? nullptr : found->second;
  }
  return numpy_handler_for(name);
}

}  // namespace sot::graph::whole
