#include "graph/cpp_emitter.hpp"

#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace py = pybind11;

namespace sot::graph {

namespace {

// The C++ of each op tier B emits, its operands written $0 and $1, with the kinds of its result and
// operands: 'T' (the kernel's float type) or 'b' (bool). Each is exact: +, -, *, /, sqrt are
// correctly rounded by IEEE 754; the comparisons are the quiet ones (no invalid flag for a NaN, as
// NumPy's comparisons report none); the logical ops are on booleans.
struct OpForm {
  const char* pattern;
  char result;
  char operands;
};

const std::map<std::string, OpForm>& op_forms() {
  static const std::map<std::string, OpForm> table = {
      {"add", {"$0 + $1", 'T', 'T'}},
      {"subtract", {"$0 - $1", 'T', 'T'}},
      {"multiply", {"$0 * $1", 'T', 'T'}},
      {"divide", {"$0 / $1", 'T', 'T'}},
      {"true_divide", {"$0 / $1", 'T', 'T'}},
      {"negative", {"-$0", 'T', 'T'}},
      {"positive", {"$0", 'T', 'T'}},
      {"absolute", {"std::fabs($0)", 'T', 'T'}},
      {"fabs", {"std::fabs($0)", 'T', 'T'}},
      {"sqrt", {"std::sqrt($0)", 'T', 'T'}},
      {"square", {"$0 * $0", 'T', 'T'}},
      {"greater", {"std::isgreater($0, $1)", 'b', 'T'}},
      {"greater_equal", {"std::isgreaterequal($0, $1)", 'b', 'T'}},
      {"less", {"std::isless($0, $1)", 'b', 'T'}},
      {"less_equal", {"std::islessequal($0, $1)", 'b', 'T'}},
      {"logical_and", {"($0 && $1)", 'b', 'b'}},
      {"logical_or", {"($0 || $1)", 'b', 'b'}},
      {"logical_xor", {"($0 != $1)", 'b', 'b'}},
      {"logical_not", {"!$0", 'b', 'b'}},
      {"bitwise_and", {"($0 && $1)", 'b', 'b'}},
      {"bitwise_or", {"($0 || $1)", 'b', 'b'}},
      {"bitwise_xor", {"($0 != $1)", 'b', 'b'}},
      {"invert", {"!$0", 'b', 'b'}},
  };
  return table;
}

std::string substitute(const std::string& pattern, const std::vector<std::string>& operands) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '$' && i + 1 < pattern.size()) {
      const auto k = static_cast<std::size_t>(pattern[i + 1] - '0');
      out += k < operands.size() ? operands[k] : std::string("?");
      ++i;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

// A Python number tier B may take as a constant of the kernel's float type: a float, or an int
// that the type holds exactly (NumPy converts it to the array's dtype).
bool scalar_ok(const kir::Scalar& s, DType t) {
  if (s.value >= 0 || !s.constant) {
    return false;  // graph scalars: their dtype could promote the result
  }
  PyObject* c = s.constant.ptr();
  if (PyFloat_CheckExact(c)) {
    return true;
  }
  if (PyLong_CheckExact(c)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(c, &overflow);
    const long long limit = t == DType::kFloat32 ? (1LL << 24) : (1LL << 53);
    return overflow == 0 && v <= limit && v >= -limit;
  }
  return false;
}

class Emitter {
 public:
  Emitter(const kir::Kernel& k, DType t)
      : k_(k), t_(t), type_(t == DType::kFloat32 ? "float" : "double") {}

  bool expr(std::size_t i, std::string* why) {
    const kir::Expr& e = k_.exprs[i];
    const std::string name = "e" + std::to_string(i);
    switch (e.kind) {
      case kir::Expr::Kind::kLoad: {
        const std::string at = "b[" + std::to_string(e.buffer) + "])[j]";
        body_ += kind_of(e) == 'b'
                     ? "    const bool " + name + " = reinterpret_cast<const unsigned char*>(" +
                           at + " != 0;\n"
                     : "    const T " + name + " = reinterpret_cast<const T*>(" + at + ";\n";
        return true;
      }
      case kir::Expr::Kind::kScalar:
        body_ +=
            "    const T " + name + " = static_cast<T>(s[" + std::to_string(e.scalar) + "]);\n";
        return true;
      case kir::Expr::Kind::kReduce:
        *why = "a reduction";
        return false;
      case kir::Expr::Kind::kCast:
        *why = "a cast (astype)";
        return false;
      case kir::Expr::Kind::kSelect:
        return select(i, why);
      case kir::Expr::Kind::kCall:
        break;
    }
    const auto found = op_forms().find(e.fn);
    if (found == op_forms().end()) {
      *why = e.fn + " (not an exact op tier B emits)";
      return false;
    }
    const OpForm& form = found->second;
    std::vector<std::string> operands;
    for (const int o : e.operands) {
      if (kind_of(k_.exprs[static_cast<std::size_t>(o)]) != form.operands) {
        *why = e.fn + " of other operand types";
        return false;
      }
      operands.push_back("e" + std::to_string(o));
    }
    if (kind_of(e) != form.result) {
      *why = e.fn + " makes " + std::string(sot::graph::name(e.dtype));
      return false;
    }
    body_ += std::string("    const ") + (form.result == 'b' ? "bool " : "T ") + name + " = " +
             substitute(form.pattern, operands) + ";\n";
    return true;
  }

  std::string code() const {
    std::string stores;
    for (const kir::Store& st : k_.stores) {
      const std::string value = "e" + std::to_string(st.expr);
      const std::string at = "b[" + std::to_string(st.buffer) + "])[j] = ";
      if (kind_of(k_.exprs[static_cast<std::size_t>(st.expr)]) == 'b') {
        stores += "    reinterpret_cast<unsigned char*>(";
        stores += at;
        stores += "(" + value + " ? 1 : 0);\n";
      } else {
        stores += "    reinterpret_cast<T*>(";
        stores += at;
        stores += value + ";\n";
      }
    }
    return "// " + k_.name + ": generated by xeus-sot from its kernel IR\n#include <cmath>\n" +
           "using T = " + type_ +
           ";\nextern \"C\" void sot_kernel(char* const* b, const double* s, long long n) {\n" +
           "  (void)s;\n  for (long long j = 0; j < n; ++j) {\n" + body_ + stores + "  }\n}\n";
  }

 private:
  // 'T' (the kernel's float type), 'b' (bool) or '?' (neither: not emitted). Scalars are 'T'.
  char kind_of(const kir::Expr& e) const {
    if (e.kind == kir::Expr::Kind::kScalar) {
      return 'T';
    }
    if (e.dtype == t_) {
      return 'T';
    }
    return e.dtype == DType::kBool ? 'b' : '?';
  }

  // where(c, x, y): c boolean, x and y of the kernel's type (a pure selection).
  bool select(std::size_t i, std::string* why) {
    const kir::Expr& e = k_.exprs[i];
    const auto& o = e.operands;
    if (o.size() != 3 || kind_of(e) != 'T' ||
        kind_of(k_.exprs[static_cast<std::size_t>(o[0])]) != 'b' ||
        kind_of(k_.exprs[static_cast<std::size_t>(o[1])]) != 'T' ||
        kind_of(k_.exprs[static_cast<std::size_t>(o[2])]) != 'T') {
      *why = "a select (where) of other types";
      return false;
    }
    body_ += "    const T e" + std::to_string(i) + " = e" + std::to_string(o[0]) + " ? e" +
             std::to_string(o[1]) + " : e" + std::to_string(o[2]) + ";\n";
    return true;
  }

  const kir::Kernel& k_;
  DType t_;
  std::string type_;
  std::string body_;
};

}  // namespace

std::optional<NativeSource> emit_cpp(const kir::Kernel& k, std::string* why) {
  if (k.buffers.empty()) {
    *why = "no buffer";
    return std::nullopt;
  }
  if (k.reduction() >= 0) {
    *why = "it ends in a reduction (tier A reduces with NumPy's loops)";
    return std::nullopt;
  }
  if (k.calls() < 2) {
    *why = "a single op (tier A runs NumPy's own loop for it)";
    return std::nullopt;
  }
  // The kernel's float type: its buffers' (booleans aside).
  DType t = DType::kBool;
  for (const kir::Buffer& b : k.buffers) {
    if (b.dtype == DType::kBool) {
      continue;
    }
    if (t != DType::kBool && b.dtype != t) {
      *why = "buffers of several dtypes";
      return std::nullopt;
    }
    t = b.dtype;
  }
  if (t != DType::kFloat32 && t != DType::kFloat64) {
    *why = std::string(name(t)) + " (tier B emits float32 and float64 kernels)";
    return std::nullopt;
  }
  for (const kir::Expr& e : k.exprs) {
    if (e.kind == kir::Expr::Kind::kScalar &&
        !scalar_ok(k.scalars[static_cast<std::size_t>(e.scalar)], t)) {
      *why = "a scalar operand that is not a Python float or small int";
      return std::nullopt;
    }
  }
  Emitter emitter(k, t);
  for (std::size_t i = 0; i < k.exprs.size(); ++i) {
    if (!emitter.expr(i, why)) {
      return std::nullopt;
    }
  }
  return NativeSource{emitter.code()};
}

}  // namespace sot::graph
