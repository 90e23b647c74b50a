#include "graph/backends/cpu/cpp_emitter.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/loaded_module.hpp"
#include "graph/rules/op_list.hpp"

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
      {"conjugate", {"$0", 'T', 'T'}},
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
  if (s.value >= 0) {
    // A scalar the graph computes (or takes): its value is read at each run (the executor takes
    // floats and exact ints); its dtype is guarded, and where it promoted the result the kernel's
    // types differ. Not on NumPy 1.x, whose value-based casting makes the result's dtype depend on
    // the value.
    static const bool numpy2 =
        py::str(loaded_module("numpy").attr("__version__")).cast<std::string>().rfind("1.", 0) != 0;
    return numpy2;
  }
  if (!s.constant) {
    return false;
  }
  PyObject* c = s.constant.ptr();
  // A float converts to double exactly, and from there to the kernel's type as NumPy converts it
  // (its dtype, if it promoted the result, made the kernel's types differ).
  if (exact_double_float(c)) {
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

// Plans and writes a kernel's code. Each expression is computed inline (an exact op, a select), by
// a call of NumPy's loop for its ufunc (graph/backends/cpu/numpy_loops.hpp), or is a load or a
// scalar. Without loops the code is one loop over the block, every value in a register. With loops
// the block runs in chunks of kChunk elements, and each chunk in stages: a loop over the chunk
// computing the inline values up to the next NumPy call, then that call on chunk arrays, and so on;
// a value read by a later stage or by a call goes through a chunk array, loads and scalars are read
// again where used.
class Emitter {
 public:
  Emitter(const kir::Kernel& k, DType t)
      : k_(k),
        t_(t),
        type_(t == DType::kFloat32 ? "float" : "double"),
        form_(k.exprs.size(), Form::kInline),
        stage_(k.exprs.size(), 0),
        temp_(k.exprs.size(), false) {}

  // Decides how each expression is computed; false (and why) when one cannot be emitted.
  bool plan(std::string* why) {
    int stage = 0;
    for (std::size_t i = 0; i < k_.exprs.size(); ++i) {
      if (!plan_expr(i, why)) {
        return false;
      }
      stage += form_[i] == Form::kLoop ? 1 : 0;
      stage_[i] = stage;  // a loop's value is there from the stage after its call
    }
    stages_ = stage + 1;
    for (std::size_t i = 0; i < k_.exprs.size(); ++i) {
      for (const int o : form_[i] == Form::kLoop ? k_.exprs[i].operands : std::vector<int>()) {
        const kir::Expr& x = k_.exprs[static_cast<std::size_t>(o)];
        if (x.kind == kir::Expr::Kind::kLoad && k_.row_scalar(static_cast<std::size_t>(x.buffer))) {
          *why = k_.exprs[i].fn + " of a column broadcast along the rows (tier A)";
          return false;
        }
      }
    }
    for (std::size_t i = 0; i < k_.exprs.size(); ++i) {
      if (form_[i] == Form::kReduce) {
        continue;  // (NumPy reduces the scratch rows the operand's stage writes)
      }
      for (const int o : k_.exprs[i].operands) {
        const auto u = static_cast<std::size_t>(o);
        const bool computed = form_[u] == Form::kInline || form_[u] == Form::kLoop;
        temp_[u] = temp_[u] || (computed && (form_[i] == Form::kLoop || stage_[u] < stage_[i]));
      }
      temp_[i] = temp_[i] || form_[i] == Form::kLoop;
    }
    for (const kir::Store& st : k_.stores) {
      if (kind_of(k_.exprs[static_cast<std::size_t>(st.expr)]) == '?') {
        *why = "a stored value of another dtype";
        return false;
      }
    }
    return all_values_read(why);
  }

  // Every value computed inline reaches a store or the reduction: the compiler removes a value
  // nothing reads, and with it the floating-point flags its operation raises (`x * 0.0 / 0.0`
  // whose result is unused warns in eager NumPy).
  bool all_values_read(std::string* why) const {
    std::vector<bool> live(k_.exprs.size(), false);
    for (const kir::Store& st : k_.stores) {
      live[static_cast<std::size_t>(st.expr)] = true;
    }
    const int reduced = reduced_value();
    if (reduced >= 0) {
      live[static_cast<std::size_t>(reduced)] = true;
    }
    for (std::size_t i = k_.exprs.size(); i-- > 0;) {
      if (!live[i] || form_[i] == Form::kReduce) {
        continue;
      }
      for (const int o : k_.exprs[i].operands) {
        live[static_cast<std::size_t>(o)] = true;
      }
    }
    for (std::size_t i = 0; i < k_.exprs.size(); ++i) {
      if (!live[i] && form_[i] == Form::kInline) {
        *why = k_.exprs[i].fn + " of a value nothing reads (its floating-point flags)";
        return false;
      }
    }
    return true;
  }

  NativeSource source() const {
    NativeSource out;
    std::string body;
    if (stages_ == 1) {
      body = "  for (long long j = 0; j < n; ++j) {\n" + stage_code(0, "j") + "  }\n";
    } else {
      body = declarations() + "  for (long long j0 = 0; j0 < n; j0 += kChunk) {\n" +
             "    const long long m = n - j0 < kChunk ? n - j0 : kChunk;\n";
      for (int s = 0; s < stages_; ++s) {
        const std::string code = stage_code(s, "j0 + j");
        if (!code.empty()) {
          body += "    for (long long j = 0; j < m; ++j) {\n" + code + "    }\n";
        }
        if (s + 1 < stages_) {
          body += loop_call(s, out.loops);
        }
      }
      body += "  }\n";
    }
    out.code = "// " + k_.name + ": generated by xeus-sot from its kernel IR\n#include <cmath>\n" +
               "using T = " + type_ + ";\n" + kLoopType +
               "extern \"C\" int sot_kernel(char* const* b, const double* s, long long n, "
               "const NativeLoop* f) {\n  (void)s;\n  (void)f;\n" +
               body + "  return 0;\n}\n";
    return out;
  }

 private:
  enum class Form : std::uint8_t { kInline, kLoop, kLoad, kScalar, kReduce };
  static constexpr const char* kLoopType =
      "struct NativeLoop {\n  int (*fn)(void*, char* const*, const long*, const long*, void*);\n"
      "  void* context;\n  void* auxdata;\n};\nconstexpr long long kChunk = 512;\n";

  bool plan_expr(std::size_t i, std::string* why) {
    const kir::Expr& e = k_.exprs[i];
    switch (e.kind) {
      case kir::Expr::Kind::kLoad:
        form_[i] = Form::kLoad;
        return kind_of(e) != '?' || (*why = "a load of another dtype", false);
      case kir::Expr::Kind::kScalar:
        form_[i] = Form::kScalar;
        return true;
      case kir::Expr::Kind::kReduce:
        // Over the last axis: the code stores the reduced value's rows into the scratch rows
        // (b[buffers]), and NumPy's reduce runs on them (block_executor.cpp).
        form_[i] = Form::kReduce;
        if (e.reduce.all || kind_of(k_.exprs[static_cast<std::size_t>(e.operands[0])]) != 'T') {
          *why = "a reduction over all axes (tier A sums in NumPy's order)";
          return false;
        }
        return true;
      case kir::Expr::Kind::kCast:
        *why = "a cast (astype)";
        return false;
      case kir::Expr::Kind::kSelect:
        return select_ok(e, why);
      case kir::Expr::Kind::kCall:
        break;
    }
    const auto found = op_forms().find(e.fn);
    if (found != op_forms().end()) {
      return inline_ok(e, found->second, why);
    }
    form_[i] = Form::kLoop;
    if (kind_of(e) != 'T' || e.ufunc.attr("nin").cast<std::size_t>() != e.operands.size()) {
      *why = e.fn + " (NumPy's loop is called only on the kernel's float type)";
      return false;
    }
    for (const int o : e.operands) {
      if (kind_of(k_.exprs[static_cast<std::size_t>(o)]) != 'T') {
        *why = e.fn + " of other operand types";
        return false;
      }
    }
    return true;
  }

  bool inline_ok(const kir::Expr& e, const OpForm& form, std::string* why) const {
    for (const int o : e.operands) {
      if (kind_of(k_.exprs[static_cast<std::size_t>(o)]) != form.operands) {
        *why = e.fn + " of other operand types";
        return false;
      }
    }
    if (kind_of(e) != form.result) {
      *why = e.fn + " makes " + std::string(sot::graph::name(e.dtype));
      return false;
    }
    return true;
  }

  // where(c, x, y): c boolean, x and y of the kernel's type (a pure selection).
  bool select_ok(const kir::Expr& e, std::string* why) const {
    const auto& o = e.operands;
    if (o.size() != 3 || kind_of(e) != 'T' ||
        kind_of(k_.exprs[static_cast<std::size_t>(o[0])]) != 'b' ||
        kind_of(k_.exprs[static_cast<std::size_t>(o[1])]) != 'T' ||
        kind_of(k_.exprs[static_cast<std::size_t>(o[2])]) != 'T') {
      *why = "a select (where) of other types";
      return false;
    }
    return true;
  }

  // 'T' (the kernel's float type), 'b' (bool) or '?' (neither: not emitted). Scalars are 'T'.
  char kind_of(const kir::Expr& e) const {
    if (e.kind == kir::Expr::Kind::kScalar || e.dtype == t_) {
      return 'T';
    }
    return e.dtype == DType::kBool ? 'b' : '?';
  }

  static std::string name(std::size_t i) { return "e" + std::to_string(i); }
  std::string temp(std::size_t i) const { return "t" + std::to_string(i); }

  // The chunk arrays and the scalars NumPy's loops read (declared once per kernel call).
  std::string declarations() const {
    std::string out;
    for (std::size_t i = 0; i < k_.exprs.size(); ++i) {
      if (temp_[i]) {
        out += std::string("  alignas(64) ") +
               (kind_of(k_.exprs[i]) == 'b' ? "unsigned char " : "T ") + temp(i) + "[kChunk];\n";
      }
      if (form_[i] == Form::kScalar) {
        out += "  T c" + std::to_string(i) + " = static_cast<T>(s[" +
               std::to_string(k_.exprs[i].scalar) + "]);\n";
      }
    }
    return out;
  }

  // The statements of stage `s` (inside its element loop; `at` indexes the block's arrays).
  std::string stage_code(int s, const std::string& at) const {
    std::string out;
    std::vector<bool> ready(k_.exprs.size(), false);
    for (std::size_t i = 0; i < k_.exprs.size(); ++i) {
      if (stage_[i] != s || form_[i] != Form::kInline) {
        continue;
      }
      for (const int o : k_.exprs[i].operands) {
        out += bring(static_cast<std::size_t>(o), at, ready);
      }
      out += "      " + definition(i) + "\n";
      ready[i] = true;
      if (temp_[i] && stages_ > 1) {
        out += "      " + temp(i) + "[j] = " + store_value(i) + ";\n";
      }
    }
    for (const kir::Store& st : k_.stores) {
      const auto i = static_cast<std::size_t>(st.expr);
      if (form_[i] != Form::kReduce && stage_[i] == s) {
        out += bring(i, at, ready);
        out += "      " + store(st, at) + "\n";
      }
    }
    const int reduced = reduced_value();
    if (reduced >= 0 && stage_[static_cast<std::size_t>(reduced)] == s) {
      const auto i = static_cast<std::size_t>(reduced);
      out += bring(i, at, ready);
      out += "      " + store(kir::Store{reduced, static_cast<int>(k_.buffers.size())}, at) + "\n";
    }
    return out;
  }

  // The value a reduction at the end reduces (-1: none): the code stores it into the scratch rows.
  int reduced_value() const {
    const int r = k_.reduction();
    return r < 0 ? -1 : k_.exprs[static_cast<std::size_t>(r)].operands[0];
  }

  // Makes expression `i` readable in the current stage: a load or a scalar read again, a value of
  // an earlier stage (or of a NumPy call) read from its chunk array.
  std::string bring(std::size_t i, const std::string& at, std::vector<bool>& ready) const {
    if (ready[i]) {
      return {};
    }
    ready[i] = true;
    const kir::Expr& e = k_.exprs[i];
    const bool boolean = kind_of(e) == 'b';
    const std::string type = boolean ? "const bool " : "const T ";
    switch (form_[i]) {
      case Form::kLoad: {
        // (a column broadcast along the rows: one value per row)
        const bool column = k_.row_scalar(static_cast<std::size_t>(e.buffer));
        const std::string from =
            "b[" + std::to_string(e.buffer) + "])[" + (column ? std::string("0") : at) + "]";
        return "      " + type + name(i) + " = " +
               (boolean ? "reinterpret_cast<const unsigned char*>(" + from + " != 0;\n"
                        : "reinterpret_cast<const T*>(" + from + ";\n");
      }
      case Form::kScalar:
        return "      " + type + name(i) + " = static_cast<T>(s[" + std::to_string(e.scalar) +
               "]);\n";
      default:
        return "      " + type + name(i) + " = " + temp(i) + "[j]" + (boolean ? " != 0" : "") +
               ";\n";
    }
  }

  std::string definition(std::size_t i) const {
    const kir::Expr& e = k_.exprs[i];
    std::vector<std::string> operands;
    for (const int o : e.operands) {
      operands.push_back(name(static_cast<std::size_t>(o)));
    }
    if (e.kind == kir::Expr::Kind::kSelect) {
      return "const T " + name(i) + " = " + operands[0] + " ? " + operands[1] + " : " +
             operands[2] + ";";
    }
    const OpForm& form = op_forms().at(e.fn);
    return std::string("const ") + (form.result == 'b' ? "bool " : "T ") + name(i) + " = " +
           substitute(form.pattern, operands) + ";";
  }

  std::string store_value(std::size_t i) const {
    return kind_of(k_.exprs[i]) == 'b' ? "(" + name(i) + " ? 1 : 0)" : name(i);
  }

  std::string store(const kir::Store& st, const std::string& at) const {
    const auto i = static_cast<std::size_t>(st.expr);
    const std::string to = "b[" + std::to_string(st.buffer) + "])[" + at + "] = ";
    return (kind_of(k_.exprs[i]) == 'b' ? "reinterpret_cast<unsigned char*>("
                                        : "reinterpret_cast<T*>(") +
           to + store_value(i) + ";";
  }

  // The NumPy call after stage `s`: its operands' chunk arrays (a load: the block's own array, a
  // scalar: stride 0), the result into its chunk array.
  std::string loop_call(int s, std::vector<LoopCall>& loops) const {
    std::size_t i = 0;
    while (form_[i] != Form::kLoop || stage_[i] != s + 1) {
      ++i;
    }
    LoopCall call;
    call.expr = static_cast<int>(i);
    std::string data;
    std::string strides;
    for (const int o : k_.exprs[i].operands) {
      const auto u = static_cast<std::size_t>(o);
      const kir::Expr& x = k_.exprs[u];
      call.scalar.push_back(form_[u] == Form::kScalar);
      if (form_[u] == Form::kLoad) {
        data += "b[" + std::to_string(x.buffer) + "] + j0 * static_cast<long long>(sizeof(T)), ";
      } else if (form_[u] == Form::kScalar) {
        data += "reinterpret_cast<char*>(&c" + std::to_string(u) + "), ";
      } else {
        data += "reinterpret_cast<char*>(" + temp(u) + "), ";
      }
      strides += form_[u] == Form::kScalar ? "0, " : "static_cast<long>(sizeof(T)), ";
    }
    const std::string f = "f[" + std::to_string(loops.size()) + "]";
    loops.push_back(std::move(call));
    return "    {  // " + name(i) + " = " + k_.exprs[i].fn + "(...): NumPy's loop\n" +
           "      char* const data[] = {" + data + "reinterpret_cast<char*>(" + temp(i) +
           ")};\n      const long count = static_cast<long>(m);\n" +
           "      static const long strides[] = {" + strides + "static_cast<long>(sizeof(T))};\n" +
           "      if (" + f + ".fn(" + f + ".context, data, &count, strides, " + f +
           ".auxdata) < 0) {\n        return -1;\n      }\n    }\n";
  }

  const kir::Kernel& k_;
  DType t_;
  std::string type_;
  std::vector<Form> form_;
  std::vector<int> stage_;  // the stage where each value is computed (a loop's: where it is read)
  std::vector<bool> temp_;  // goes through a chunk array
  int stages_ = 1;
};

}  // namespace

std::vector<std::string> cpp_override_names() {
  std::vector<std::string> names;
  for (const auto& [name, form] : op_forms()) {
    names.push_back(name);
  }
  return names;
}

std::string cpp_form(const std::string& name) {
  if (const auto found = op_forms().find(name); found != op_forms().end()) {
    return std::string("inline: ") + found->second.pattern;
  }
  if (find_op(name) != nullptr) {
    return "NumPy's loop: a float kernel calls NumPy's own strided loop for it (bit for bit "
           "eager NumPy's); other dtypes keep tier A";
  }
  return "";
}

std::optional<NativeSource> emit_cpp(const kir::Kernel& k, std::string* why) {
  if (k.buffers.empty()) {
    *why = "no buffer";
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
      *why =
          "a scalar operand that is not a float or a small int (or, on NumPy 1.x, not a constant)";
      return std::nullopt;
    }
  }
  Emitter emitter(k, t);
  if (!emitter.plan(why)) {
    return std::nullopt;
  }
  return emitter.source();
}

}  // namespace sot::graph
