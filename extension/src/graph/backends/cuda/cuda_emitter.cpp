#include "graph/backends/cuda/cuda_emitter.hpp"

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/loaded_module.hpp"
#include "graph/backends/cuda/cuda_overrides.hpp"
#include "graph/backends/cuda/cuda_pairwise.hpp"
#include "graph/backends/cuda/cuda_prelude.hpp"
#include "graph/rules/reductions.hpp"
namespace py = pybind11;

namespace sot::graph {

namespace {

constexpr int kThreads = kReductionThreads;  // (a power of 2)

// The C++ type of a dtype in the generated code (nullptr: not emitted).
const char* ctype(DType t) {
  switch (t) {
    case DType::kBool:
      return "bool";
    case DType::kInt8:
      return "signed char";
    case DType::kInt16:
      return "short";
    case DType::kInt32:
      return "int";
    case DType::kInt64:
      return "long long";
    case DType::kUInt8:
      return "unsigned char";
    case DType::kUInt16:
      return "unsigned short";
    case DType::kUInt32:
      return "unsigned int";
    case DType::kUInt64:
      return "unsigned long long";
    case DType::kFloat32:
      return "float";
    case DType::kFloat64:
      return "double";
    default:
      return nullptr;
  }
}

// The smallest (`lowest`) or largest value of integer type `t`, as a CUDA C++ constant of it.
std::string integer_limit(DType t, bool lowest) {
  const int bits = itemsize(t) * CHAR_BIT;
  const std::string type = ctype(t);
  if (kind(t) == 'u') {
    return lowest ? "static_cast<" + type + ">(0)" : "static_cast<" + type + ">(~0ULL)";
  }
  const std::string largest = std::to_string((1ULL << (bits - 1)) - 1ULL) + "LL";
  return "static_cast<" + type + ">(" + (lowest ? "-" + largest + " - 1" : largest) + ")";
}

// An unsigned type at least as wide (integer wrap-around without signed overflow; the result is
// cast back to the loop type). Narrower types would promote to int, where a product overflows.
const char* utype(DType t) {
  return itemsize(t) <= 4 ? "unsigned int" : "unsigned long long";
}

char kind_of(DType t) {
  const char k = kind(t);
  return k == 'u' ? 'i' : k;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

std::string substitute(const std::string& pattern, const std::vector<std::string>& operands,
                       DType loop) {
  std::string out = replace_all(replace_all(pattern, "$T", ctype(loop)), "$U", utype(loop));
  for (std::size_t k = 0; k < operands.size(); ++k) {
    out = replace_all(out, "$" + std::to_string(k), operands[k]);
  }
  return out;
}

// A Python constant the code takes: its kind for the argument block ('f' a double's bits, 'i' an
// int64, 'u' a uint64), or 0 when not taken.
char constant_kind(PyObject* c) {
  if (PyBool_Check(c)) {
    return 'i';
  }
  if (exact_double_float(c)) {
    return 'f';
  }
  if (PyLong_CheckExact(c)) {
    int overflow = 0;
    (void)PyLong_AsLongLongAndOverflow(c, &overflow);
    if (overflow == 0) {
      return 'i';
    }
    const unsigned long long u = PyLong_AsUnsignedLongLong(c);
    if (u == static_cast<unsigned long long>(-1) && PyErr_Occurred() != nullptr) {
      PyErr_Clear();
      return 0;
    }
    return 'u';
  }
  return 0;
}

// Writes a kernel's entry points. Every value is a register; each load reads its buffer once per
// element.
class CudaWriter {
 public:
  explicit CudaWriter(const kir::Kernel& k)
      : k_(k), loop_(k.exprs.size(), DType::kFloat64), scalar_kind_(k.scalars.size(), 0) {}

  bool plan(std::string* why) {
    if (k_.domain.empty()) {
      *why = "a 0-d domain";
      return false;
    }
    if (!plan_sum_order(why)) {
      return false;
    }
    if (const int r = k_.reduction(); r >= 0 && reducer().buffer < 0) {
      *why = "a reduction whose result is not stored";  // (kept for its warnings: the host's)
      return false;
    }
    for (const kir::Buffer& b : k_.buffers) {
      if (ctype(b.dtype) == nullptr) {
        *why = std::string(name(b.dtype)) + " arrays";
        return false;
      }
    }
    for (std::size_t i = 0; i < k_.exprs.size(); ++i) {
      if (!plan_expr(i, why)) {
        return false;
      }
    }
    for (const kir::Store& st : k_.stores) {
      const kir::Expr& e = k_.exprs[static_cast<std::size_t>(st.expr)];
      if (e.dtype != k_.buffers[static_cast<std::size_t>(st.buffer)].dtype) {
        *why = "a stored value of another dtype";
        return false;
      }
    }
    return true;
  }

  // A sum or mean adds in the running NumPy's order: pairwise over a row or over all elements
  // (NumPy >= 2.3), or pairwise over parts of the buffer size added in order (NumPy 1.x to 2.2);
  // an order not known is refused. (The order is read once, at emission: a buffer size set later
  // changes only the rounding, within the tolerance.)
  bool plan_sum_order(std::string* why) {
    const int r = k_.reduction();
    if (r < 0 || expr(r).reduce.ordered ||
        (expr(r).reduce.fn != Reduction::Fn::kSum && expr(r).reduce.fn != Reduction::Fn::kMean)) {
      return true;
    }
    const py::module_ numpy = loaded_module("numpy");
    const auto bufsize = numpy.attr("getbufsize")().cast<std::int64_t>();
    const SumOrder order = numpy_sum_order(bufsize, numpy);
    if (order == SumOrder::kUnknown) {
      *why = "NumPy's summation order for this buffer size is not known";
      return false;
    }
    sum_chunk_ = order == SumOrder::kChunked ? bufsize : 0;
    return true;
  }

  CudaSource source() const {
    CudaSource out;
    out.name = k_.name;
    out.scalars = static_cast<int>(k_.scalars.size());
    const int r = k_.reduction();
    out.reduces = r >= 0;
    out.all_axes = r >= 0 && k_.exprs[static_cast<std::size_t>(r)].reduce.all;
    out.ordered = r >= 0 && k_.exprs[static_cast<std::size_t>(r)].reduce.ordered;
    out.order_dependent = r >= 0 && !out.all_axes && !out.ordered && tree_checks_order();
    out.sum_chunk = sum_chunk_;
    std::string code = preamble();
    if (r < 0) {
      code += elementwise("_flat", true) + elementwise("_strided", false);
    } else if (out.all_axes) {
      code += sum_passes();
    } else {
      code += rows_kernel();
    }
    out.code = code;
    out.scalar_kinds = std::string(scalar_kind_.begin(), scalar_kind_.end());
    return out;
  }

 private:
  std::size_t nb() const { return k_.buffers.size(); }
  std::size_t rank() const { return k_.domain.size(); }
  const kir::Expr& expr(int i) const { return k_.exprs[static_cast<std::size_t>(i)]; }

  // The dtype of the variable expression `i` is in the code: a constant's is that of its Python
  // type (float64, int64 or uint64), every other's its own.
  DType dtype_of(int i) const {
    const kir::Expr& e = expr(i);
    if (e.kind == kir::Expr::Kind::kScalar &&
        k_.scalars[static_cast<std::size_t>(e.scalar)].value < 0) {
      const char k = scalar_kind_[static_cast<std::size_t>(e.scalar)];
      return k == 'f' ? DType::kFloat64 : (k == 'u' ? DType::kUInt64 : DType::kInt64);
    }
    return e.dtype;
  }

  bool plan_expr(std::size_t i, std::string* why) {
    const kir::Expr& e = k_.exprs[i];
    switch (e.kind) {
      case kir::Expr::Kind::kLoad:
        return true;
      case kir::Expr::Kind::kScalar:
        return plan_scalar(e, why);
      case kir::Expr::Kind::kCast:
        loop_[i] = dtype_of(e.operands[0]);  // (the flags read the operand as it is)
        return plan_cast(e, why);
      case kir::Expr::Kind::kSelect:
        loop_[i] = e.dtype;
        if (ctype(e.dtype) == nullptr || expr(e.operands[0]).dtype != DType::kBool) {
          *why = "a select (where) of other types";
          return false;
        }
        return constants_representable(e, e.dtype, why);
      case kir::Expr::Kind::kReduce: {
        const DType t = expr(e.operands[0]).dtype;
        if (ctype(t) == nullptr || ctype(e.dtype) == nullptr || !reducible(e, t)) {
          *why = "a reduction of " + std::string(name(t));
          return false;
        }
        if (e.reduce.all &&
            (e.reduce.fn == Reduction::Fn::kMax || e.reduce.fn == Reduction::Fn::kMin)) {
          *why = "max or min over all axes";
          return false;
        }
        loop_[i] = t;
        return true;
      }
      case kir::Expr::Kind::kCall:
        break;
    }
    return plan_call(i, why);
  }

  // Reductions run here: of floats, as NumPy's dtype (a sum or mean adding in NumPy's order); of
  // ints and bools a sum (into NumPy's int64 or uint64: any order gives the same wrapped sum), and
  // of ints a max or min, each exact in any order; a mean of ints or bools in float64 where the
  // caller found it exact (Reduction::exact_int_mean; any other adds floats: the host's).
  static bool reducible(const kir::Expr& e, DType t) {
    const char k = kind(t);
    if (k == 'f') {
      return e.dtype == t;
    }
    if (e.reduce.fn == Reduction::Fn::kMean) {
      return e.reduce.exact_int_mean && e.dtype == DType::kFloat64;
    }
    if (e.reduce.fn == Reduction::Fn::kSum) {
      return (k == 'i' || k == 'b' || k == 'u') && e.dtype == sum_dtype(t);
    }
    return (e.reduce.fn == Reduction::Fn::kMax || e.reduce.fn == Reduction::Fn::kMin) &&
           (k == 'i' || k == 'u') && e.dtype == t;
  }

  bool plan_scalar(const kir::Expr& e, std::string* why) {
    const kir::Scalar& s = k_.scalars[static_cast<std::size_t>(e.scalar)];
    char& k = scalar_kind_[static_cast<std::size_t>(e.scalar)];
    if (s.value >= 0) {
      if (ctype(e.dtype) == nullptr) {
        *why = "a " + std::string(name(e.dtype)) + " scalar";
        return false;
      }
      const char dk = kind(e.dtype);
      k = dk == 'f' ? 'f' : (dk == 'u' ? 'u' : (dk == 'i' || dk == 'b' ? 'i' : '\0'));
    } else {
      k = s.constant ? constant_kind(s.constant.ptr()) : '\0';
    }
    if (k == '\0') {
      *why = "a scalar that is not a bool, an int or a float";
      return false;
    }
    return true;
  }

  bool plan_cast(const kir::Expr& e, std::string* why) {
    const DType from = dtype_of(e.operands[0]);
    if (ctype(e.dtype) == nullptr || ctype(from) == nullptr) {
      *why = "a cast of " + std::string(name(from)) + " to " + std::string(name(e.dtype));
      return false;
    }
    if (kind(from) == 'f' && (kind(e.dtype) == 'i' || kind(e.dtype) == 'u')) {
      // (the GPU converts NaN and out-of-range values to other integers than the CPU does)
      *why = "a float-to-integer cast";
      return false;
    }
    return true;
  }

  // The dtype NumPy's loop computes a call in: its result's, or for comparisons the operands'
  // promotion. Refused where the operands would promote to another type than the result's (an
  // in-place op cast back), or where a constant could change a comparison's loop.
  bool plan_call(std::size_t i, std::string* why) {
    const kir::Expr& e = k_.exprs[i];
    const auto logical = logical_ops().find(e.fn);
    const auto found = cuda_ops().find(e.fn);
    if (logical == logical_ops().end() && found == cuda_ops().end()) {
      *why = e.fn + " (no CUDA form)";
      return false;
    }
    bool any = false;
    DType promoted = DType::kBool;
    for (const int o : e.operands) {
      const kir::Expr& x = expr(o);
      const bool constant = x.kind == kir::Expr::Kind::kScalar &&
                            k_.scalars[static_cast<std::size_t>(x.scalar)].value < 0;
      if (!constant) {
        promoted = any ? promote_types(promoted, x.dtype) : x.dtype;
        any = true;
      }
    }
    if (logical != logical_ops().end()) {
      loop_[i] = e.dtype;
      return true;
    }
    const CudaOp& op = found->second;
    const DType loop = op.boolean ? promoted : e.dtype;
    if (!any || ctype(loop) == nullptr) {
      *why = e.fn + " of " + std::string(name(loop));
      return false;
    }
    if (!op.boolean && promoted != e.dtype &&
        !(kind(e.dtype) == 'f' && kind_of(promoted) != 'f' && kind_of(promoted) != 'c')) {
      *why = e.fn + " computed in " + std::string(name(promoted)) + " and stored as " +
             std::string(name(e.dtype));
      return false;
    }
    if (!constants_representable(e, loop, why) || (op.boolean && !constants_fit(e, loop, why))) {
      return false;
    }
    const char* form = kind_of(loop) == 'f' ? op.f : (kind_of(loop) == 'i' ? op.i : op.b);
    if (form == nullptr) {
      *why = e.fn + " of " + std::string(name(loop));
      return false;
    }
    loop_[i] = loop;
    return true;
  }

  // A float constant a float32 loop cannot hold (1e300): NumPy warns "overflow encountered in
  // cast" converting it; the kernel would not.
  bool constants_representable(const kir::Expr& e, DType loop, std::string* why) const {
    if (loop != DType::kFloat32) {
      return true;
    }
    for (const int o : e.operands) {
      const kir::Expr& x = expr(o);
      if (x.kind != kir::Expr::Kind::kScalar || dtype_of(o) != DType::kFloat64) {
        continue;
      }
      const kir::Scalar& s = k_.scalars[static_cast<std::size_t>(x.scalar)];
      const double v = s.value < 0 ? PyFloat_AsDouble(s.constant.ptr()) : 0.0;
      if (std::isfinite(v) && std::fabs(v) > static_cast<double>(FLT_MAX)) {
        *why = "a float constant beyond float32's range";
        return false;
      }
    }
    return true;
  }

  // A comparison's constants keep the loop NumPy picks from its arrays: no float constant beside
  // integer arrays, integers within the arrays' range.
  bool constants_fit(const kir::Expr& e, DType loop, std::string* why) const {
    for (const int o : e.operands) {
      const kir::Expr& x = expr(o);
      if (x.kind != kir::Expr::Kind::kScalar) {
        continue;
      }
      const kir::Scalar& s = k_.scalars[static_cast<std::size_t>(x.scalar)];
      if (s.value >= 0) {
        continue;  // (its dtype took part in the promotion)
      }
      const char k = scalar_kind_[static_cast<std::size_t>(x.scalar)];
      const bool fits =
          kind(loop) == 'f' || (k != 'f' && kind(loop) != 'b' && int_fits(s.constant.ptr(), loop));
      if (!fits) {
        *why = "a comparison of " + std::string(name(loop)) + " with a constant of another kind";
        return false;
      }
    }
    return true;
  }

  static bool int_fits(PyObject* c, DType t) {
    if (PyBool_Check(c)) {
      return true;
    }
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(c, &overflow);
    if (overflow != 0) {
      return false;
    }
    const int bits = itemsize(t) * CHAR_BIT;
    if (kind(t) == 'u') {
      return v >= 0 && (bits >= 64 || v < (1LL << bits));
    }
    return bits >= 64 || (v >= -(1LL << (bits - 1)) && v < (1LL << (bits - 1)));
  }

  std::string preamble() const {
    std::string s = "// " + k_.name + ": generated by xeus-sot from its kernel IR (CUDA)\n";
    s += "#define SOT_NB " + std::to_string(nb()) + "\n#define SOT_R " + std::to_string(rank()) +
         "\n#define SOT_NS " + std::to_string(k_.scalars.empty() ? 1 : k_.scalars.size()) + "\n";
    s += cuda_prelude();
    return s;
  }

  // The statements computing every expression at one element (`off(b)`: buffer b's offset) and
  // storing the elementwise outputs; `reduced`, when given, receives the reduced operand's name.
  std::string element(const std::function<std::string(int)>& off, std::string* reduced) const {
    std::string out;
    for (std::size_t i = 0; i < k_.exprs.size(); ++i) {
      const kir::Expr& e = k_.exprs[i];
      if (e.kind == kir::Expr::Kind::kReduce) {
        if (reduced != nullptr) {
          *reduced = var(e.operands[0]);
        }
        continue;
      }
      out += "    " + definition(i, off) + "\n";
    }
    for (const kir::Store& st : k_.stores) {
      if (expr(st.expr).kind == kir::Expr::Kind::kReduce) {
        continue;
      }
      out += "    " + store(st.buffer, var(st.expr), off(st.buffer)) + "\n";
    }
    return out;
  }

  static std::string var(int i) { return "e" + std::to_string(i); }

  std::string store(int buffer, const std::string& value, const std::string& at) const {
    const DType t = k_.buffers[static_cast<std::size_t>(buffer)].dtype;
    const std::string to = "reinterpret_cast<" +
                           std::string(t == DType::kBool ? "unsigned char" : ctype(t)) + "*>(a.b[" +
                           std::to_string(buffer) + "])[" + at + "] = ";
    return to + (t == DType::kBool ? "(" + value + " ? 1 : 0)" : value) + ";";
  }

  std::string definition(std::size_t i, const std::function<std::string(int)>& off) const {
    const kir::Expr& e = k_.exprs[i];
    const std::string type =
        std::string("const ") + ctype(e.dtype) + " " + var(static_cast<int>(i)) + " = ";
    switch (e.kind) {
      case kir::Expr::Kind::kLoad: {
        const std::string from = "(a.b[" + std::to_string(e.buffer) + "])[" + off(e.buffer) + "]";
        return type +
               (e.dtype == DType::kBool
                    ? "reinterpret_cast<const unsigned char*>" + from + " != 0;"
                    : "reinterpret_cast<const " + std::string(ctype(e.dtype)) + "*>" + from + ";");
      }
      case kir::Expr::Kind::kScalar:
        return scalar_definition(i);
      case kir::Expr::Kind::kCast:
        return type + cast(e.dtype, var(e.operands[0]), dtype_of(e.operands[0])) + ";" +
               flags(i, {e.operands[0]}, nullptr);
      case kir::Expr::Kind::kSelect:
        return type + var(e.operands[0]) + " ? " +
               cast(e.dtype, var(e.operands[1]), dtype_of(e.operands[1])) + " : " +
               cast(e.dtype, var(e.operands[2]), dtype_of(e.operands[2])) + ";";
      default:
        break;
    }
    std::vector<std::string> operands;
    for (const int o : e.operands) {
      operands.push_back(cast(loop_[i], var(o), dtype_of(o)));
    }
    const auto logical = logical_ops().find(e.fn);
    if (logical != logical_ops().end()) {
      return type + substitute(logical->second, operands, loop_[i]) + ";";
    }
    const CudaOp& op = cuda_ops().at(e.fn);
    const char k = kind_of(loop_[i]);
    const char* form = k == 'f' ? op.f : (k == 'i' ? op.i : op.b);
    std::string text =
        type + "static_cast<" + ctype(e.dtype) + ">(" + substitute(form, operands, loop_[i]) + ");";
    if (!op.boolean && k == 'f') {
      text += flags(i, e.operands, op.pole);
    }
    return text;
  }

  // A value converted to `to` from `from` (bools as 0/1 and truth).
  static std::string cast(DType to, const std::string& v, DType from) {
    if (to == from) {
      return v;
    }
    if (to == DType::kBool) {
      return "(" + v + " != 0)";
    }
    return "static_cast<" + std::string(ctype(to)) + ">(" + v + ")";
  }

  // NumPy's flags for a float result from its operands: a NaN from no NaN is "invalid", an
  // infinity from finite operands "overflow" (or "divide by zero" where `pole` holds).
  std::string flags(std::size_t i, const std::vector<int>& operands, const char* pole) const {
    if (kind(k_.exprs[i].dtype) != 'f') {
      return {};
    }
    std::string no_nan;
    std::string finite;
    std::vector<std::string> names;
    for (const int o : operands) {
      const std::string v = cast(loop_[i], var(o), dtype_of(o));
      names.push_back(v);
      if (kind(dtype_of(o)) == 'f') {
        no_nan += " && !isnan(" + v + ")";
        finite += " && isfinite(" + v + ")";
      }
    }
    const std::string r = var(static_cast<int>(i));
    std::string out = "\n    if (isnan(" + r + ")" + no_nan + ") fl |= 8u;";
    out += "\n    if (isinf(" + r + ")" + finite + ") fl |= ";
    if (pole != nullptr) {
      const std::string cond = substitute(pole, names, loop_[i]);
      out += "(" + cond + ") ? 1u : 2u;";
    } else {
      out += "2u;";
    }
    return out;
  }

  std::string scalar_definition(std::size_t i) const {
    const kir::Expr& e = k_.exprs[i];
    const std::string slot = "a.s[" + std::to_string(e.scalar) + "]";
    const char k = scalar_kind_[static_cast<std::size_t>(e.scalar)];
    // A constant takes the type of the ops that read it (each converts it to its loop type).
    const std::string value = k == 'f'
                                  ? "__longlong_as_double(static_cast<long long>(" + slot + "))"
                                  : (k == 'u' ? slot : "static_cast<long long>(" + slot + ")");
    const kir::Scalar& s = k_.scalars[static_cast<std::size_t>(e.scalar)];
    const std::string type =
        s.value >= 0 ? ctype(e.dtype)
                     : (k == 'f' ? "double" : (k == 'u' ? "unsigned long long" : "long long"));
    return "const " + type + " " + var(static_cast<int>(i)) + " = static_cast<" + type + ">(" +
           value + ");";
  }

  std::string elementwise(const std::string& suffix, bool flat) const {
    const std::string body =
        flat ? element([](int) { return std::string("i"); }, nullptr)
             : "    long long off[SOT_NB];\n    sot_offsets(a, i, SOT_R, off);\n" +
                   element([](int b) { return "off[" + std::to_string(b) + "]"; }, nullptr);
    return "extern \"C\" __global__ void " + k_.name + suffix + "(const CudaArgs a) {\n" +
           "  unsigned fl = 0;\n" +
           "  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;\n" +
           "  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i "
           "< a.n; i += step) {\n" +
           body + "  }\n  if (fl != 0) atomicOr(a.flags, fl);\n}\n";
  }

  // The reduction's operand type, identity and combining step.
  struct Reducer {
    std::string type;
    std::string identity;  // max and min (a sum's order is cuda_pairwise.hpp's)
    std::string combine;   // of `x` and `y` into x
    bool mean = false;
    bool fn_sum = false;  // a sum or mean (NumPy adds pairwise)
    int buffer = -1;      // the reduced output
  };

  Reducer reducer() const {
    const int r = k_.reduction();
    const kir::Expr& e = expr(r);
    Reducer out;
    out.type = ctype(e.dtype);
    const bool floats = kind(e.dtype) == 'f';
    switch (e.reduce.fn) {
      case Reduction::Fn::kMax:
        out.identity =
            floats ? "-static_cast<" + out.type + ">(__longlong_as_double(0x7ff0000000000000LL))"
                   : integer_limit(e.dtype, true);
        out.combine = "x = sot_max(x, y);";
        break;
      case Reduction::Fn::kMin:
        out.identity =
            floats ? "static_cast<" + out.type + ">(__longlong_as_double(0x7ff0000000000000LL))"
                   : integer_limit(e.dtype, false);
        out.combine = "x = sot_min(x, y);";
        break;
      case Reduction::Fn::kMean:  // (sums add in NumPy's order: no identity or combining step)
        out.mean = true;
        out.fn_sum = true;
        break;
      case Reduction::Fn::kSum:
        out.fn_sum = true;
        break;
    }
    for (const kir::Store& st : k_.stores) {
      if (st.expr == r) {
        out.buffer = st.buffer;
      }
    }
    return out;
  }

  // NumPy's mean divides the sum by the count as an integer (np.intp): in float64, then cast.
  std::string mean_of(const std::string& count) const {
    return "x = static_cast<" + reducer().type + ">(static_cast<double>(x) / static_cast<double>(" +
           count + "));";
  }

  // The shared-memory tree over kThreads values, thread 0's `x` ends with the result.
  static std::string tree(const Reducer& red) {
    return "    red[threadIdx.x] = x;\n    __syncthreads();\n"
           "    for (int w = " +
           std::to_string(kThreads / 2) +
           "; w > 0; w >>= 1) {\n"
           "      if (threadIdx.x < w) {\n        " +
           red.type + " y = red[threadIdx.x + w];\n        x = red[threadIdx.x];\n        " +
           red.combine +
           "\n        red[threadIdx.x] = x;\n      }\n      __syncthreads();\n    }\n";
  }

  // A sum or mean over the last axis adds each row as NumPy does: 0 plus the row's pairwise sum
  // (cuda_pairwise.hpp). A row of at most kPairwiseLeaf elements is one thread's; a longer one is
  // one block's, thread t summing the subtree its 8 bits choose in NumPy's recursion (a path that
  // ends early in a leaf: the thread whose remaining bits are 0), thread 0 adding the 256 subtrees'
  // sums as the recursion's top 8 levels do. One call of the walk in the code (compile time).
  std::string pairwise_rows_kernel() const {
    const Reducer red = reducer();
    const std::string& t = red.type;
    const std::string k = k_.name;
    const std::string leaf = std::to_string(kPairwiseLeaf);
    const std::string chunk = std::to_string(sum_chunk_);
    return pairwise_functions(red) + cuda_reduction_entry(k + "_rows") +
           "(const CudaArgs a) {\n  __shared__ " + t + " red[" + std::to_string(kThreads) +
           "];\n  unsigned fl = 0;\n  const long long length = a.size[SOT_R - 1];\n"
           "  // NumPy's chunks of a row (" +
           chunk +
           ": its buffer size where NumPy < 2.3 sums a row in parts; 0: none)\n"
           "  const long long chunk = " +
           chunk + " > 0 ? " + chunk +
           " : (length > 0 ? length : 1);\n"
           "  const bool own = length <= " +
           leaf +
           " && length <= chunk;  // a row a thread\n"
           "  const long long per_block = own ? blockDim.x : 1;\n"
           "  for (long long first = blockIdx.x * per_block; first < a.rows; first += "
           "static_cast<long long>(gridDim.x) * per_block) {\n"
           "    const long long row = own ? first + threadIdx.x : first;\n"
           "    long long base[SOT_NB];\n    sot_offsets(a, row < a.rows ? row : 0, SOT_R - 1, "
           "base);\n    " +
           t + " x = 0;\n    for (long long c = 0; c == 0 || c < length; c += chunk) {\n" +
           "      const long long part = length - c < chunk ? length - c : chunk;\n"
           "      long long lo = c;\n      long long n = part;\n      int level = 0;\n"
           "      for (; !own && level < 8 && n > " +
           leaf +
           "; ++level) {\n        const long long h = sot_half(n);\n"
           "        if (((threadIdx.x >> (7 - level)) & 1u) != 0) {\n          lo += h;\n"
           "          n -= h;\n        } else {\n          n = h;\n        }\n      }\n"
           "      const bool mine = own ? row < a.rows : (threadIdx.x & ((1u << (8 - level)) - "
           "1u)) == 0;\n      const " +
           t + " v = mine ? sot_pairwise<" + t +
           ">(n, 32, [&](long long at, long long m, unsigned, unsigned& f) { return " + k +
           "_leaf(a, base, lo + at, m, f); }, fl) : static_cast<" + t +
           ">(0);\n"
           "      if (own) {\n        x = sot_add(x, v, fl);\n        continue;\n      }\n"
           "      red[threadIdx.x] = v;\n      __syncthreads();\n"
           "      if (threadIdx.x == 0) x = sot_add(x, sot_pairwise<" +
           t +
           ">(part, 8, [&](long long, long long, unsigned p, unsigned&) { return red[p]; }, fl), "
           "fl);\n      __syncthreads();\n    }\n"
           "    if (own ? row < a.rows : threadIdx.x == 0) {\n" +
           (red.mean ? "      " + mean_of("length") + "\n" : std::string()) + "      " +
           store(red.buffer, "x", "base[" + std::to_string(red.buffer) + "]") +
           "\n    }\n  }\n  if (fl != 0) atomicOr(a.flags, fl);\n}\n";
  }

  // The device functions of pairwise_rows_kernel (cuda_pairwise.hpp).
  std::string pairwise_functions(const Reducer& red) const {
    std::string reduced;
    const std::string body = element(
        [](int b) {
          return "base[" + std::to_string(b) + "] + j * a.st[" + std::to_string(b) + "][SOT_R - 1]";
        },
        &reduced);
    return cuda_pairwise_functions(red.type, k_.name, body, reduced);
  }

  // A reduction in index order (Reduction::ordered): a row a thread, from 0 (a sum) or the
  // identity (max, min), each element combined in turn, as NumPy adds along an axis that is not
  // its innermost loop.
  std::string ordered_rows_kernel() const {
    const Reducer red = reducer();
    std::string reduced;
    const std::string body = element(
        [](int b) {
          return "base[" + std::to_string(b) + "] + j * a.st[" + std::to_string(b) + "][SOT_R - 1]";
        },
        &reduced);
    const std::string combine =
        red.fn_sum ? "x = sot_add(x, static_cast<" + red.type + ">(" + reduced + "), fl);"
                   : red.type + " y = " + reduced + ";\n      " + red.combine;
    return "extern \"C\" __global__ void " + k_.name + "_rows(const CudaArgs a) {\n" +
           "  unsigned fl = 0;\n  const long long length = a.size[SOT_R - 1];\n" +
           "  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;\n" +
           "  for (long long row = static_cast<long long>(blockIdx.x) * blockDim.x + "
           "threadIdx.x; row < a.rows; row += step) {\n" +
           "    long long base[SOT_NB];\n    sot_offsets(a, row, SOT_R - 1, base);\n    " +
           red.type + " x = " + (red.fn_sum ? "0" : red.identity) + ";\n" +
           "    for (long long j = 0; j < length; ++j) {\n" + body + "      " + combine +
           "\n    }\n" + (red.mean ? "    " + mean_of("length") + "\n" : std::string()) + "    " +
           store(red.buffer, "x", "base[" + std::to_string(red.buffer) + "]") + "\n  }\n" +
           "  if (fl != 0) atomicOr(a.flags, fl);\n}\n";
  }

  // Whether the rows kernel's tree (a float max or min) flags results whose bits its order of
  // comparisons decides.
  bool tree_checks_order() const {
    const kir::Expr& e = expr(k_.reduction());
    return kind(e.dtype) == 'f' &&
           (e.reduce.fn == Reduction::Fn::kMax || e.reduce.fn == Reduction::Fn::kMin);
  }

  std::string rows_kernel() const {
    const Reducer red = reducer();
    if (expr(k_.reduction()).reduce.ordered) {
      return ordered_rows_kernel();
    }
    if (red.fn_sum) {
      return pairwise_rows_kernel();
    }
    std::string reduced;
    const std::string body = element(
        [](int b) {
          return "base[" + std::to_string(b) + "] + j * a.st[" + std::to_string(b) + "][SOT_R - 1]";
        },
        &reduced);
    return cuda_reduction_entry(k_.name + "_rows") + "(const CudaArgs a) {\n  __shared__ " +
           red.type + " red[" + std::to_string(kThreads) +
           "];\n  unsigned fl = 0;\n  const long long length = a.size[SOT_R - 1];\n" +
           "  for (long long row = blockIdx.x; row < a.rows; row += gridDim.x) {\n" +
           "    long long base[SOT_NB];\n    sot_offsets(a, row, SOT_R - 1, base);\n" + "    " +
           red.type + " x = " + red.identity + ";\n" +
           "    for (long long j = threadIdx.x; j < length; j += " + std::to_string(kThreads) +
           ") {\n" + body + "      " + red.type + " y = " + reduced + ";\n      " + red.combine +
           "\n    }\n" + tree(red) + "    if (threadIdx.x == 0) {\n      " +
           (red.mean ? mean_of("length") + "\n      " : std::string()) +
           (tree_checks_order()
                ? "if (x == 0 || x != x) fl |= " + std::to_string(kCudaOrder) + "u;\n      "
                : std::string()) +
           store(red.buffer, "x", "base[" + std::to_string(red.buffer) + "]") +
           "\n    }\n    __syncthreads();\n  }\n" + "  if (fl != 0) atomicOr(a.flags, fl);\n}\n";
  }

  // All axes: the two passes of cuda_pairwise.hpp, each element read by its flat index.
  std::string sum_passes() const {
    const Reducer red = reducer();
    std::string reduced;
    const std::string body =
        "    long long off[SOT_NB];\n    sot_offsets(a, j, SOT_R, off);\n" +
        element([](int b) { return "off[" + std::to_string(b) + "]"; }, &reduced);
    const std::string finish = (red.mean ? "    " + mean_of("a.n") + "\n" : std::string()) +
                               "    " + store(red.buffer, "x", "0") + "\n";
    return cuda_pairwise_functions(red.type, k_.name, body, reduced) +
           cuda_pairwise_sum_passes(red.type, k_.name, sum_chunk_, finish);
  }

  const kir::Kernel& k_;
  std::vector<DType> loop_;        // the dtype each call computes in
  std::vector<char> scalar_kind_;  // per scalar: 'f', 'i' or 'u'
  std::int64_t sum_chunk_ = 0;     // a sum's parts: NumPy's buffer size where it sums in parts
};

}  // namespace

std::optional<CudaSource> emit_cuda(const kir::Kernel& k, std::string* why) {
  if (k.buffers.empty()) {
    *why = "no buffer";
    return std::nullopt;
  }
  CudaWriter writer(k);
  if (!writer.plan(why)) {
    return std::nullopt;
  }
  return writer.source();
}

}  // namespace sot::graph
