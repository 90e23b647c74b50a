#include "graph/rules/rules.hpp"

#include "graph/rules/rule_helpers.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <numeric>

namespace sot::graph {

using namespace rule_helpers;

namespace {

// NumPy's kind order for value-based casting: bool < integers < floats < complex.
int category(DType t) {
  switch (kind(t)) {
    case 'b':
      return 0;
    case 'i':
    case 'u':
      return 1;
    case 'f':
      return 2;
    default:
      return 3;
  }
}

int category(const PyScalar& s) {
  return static_cast<int>(s.kind);
}

bool is_array(const Operand& o) {
  return !o.is_python && !o.info.scalar && o.info.ndim() > 0;
}

DType real_of(DType t) {
  if (t == DType::kComplex64) {
    return DType::kFloat32;
  }
  if (t == DType::kComplex128) {
    return DType::kFloat64;
  }
  return t;
}

}  // namespace

namespace {

// NEP 50 (NumPy 2, or 1.24's "weak" state): NumPy values and arrays promote; Python numbers are
// weak - the arrays' dtype wins within its kind (result_type_with_scalar).
std::optional<DType> weak_result_dtype(const std::vector<Operand>& operands, std::string* why) {
  std::optional<DType> strong;
  auto join = [&](DType t) { strong = strong ? promote_types(*strong, t) : t; };
  for (const Operand& o : operands) {
    if (!o.is_python) {
      join(o.info.dtype);
    }
  }
  if (!strong) {
    // Python numbers only (np.sqrt(3), np.where(c, 1, -1)): their default dtypes.
    for (const Operand& o : operands) {
      join(default_dtype(o.scalar));
    }
    if (!strong) {
      *why = "no operand";
    }
    return strong;
  }
  DType r = *strong;
  for (const Operand& o : operands) {
    if (o.is_python) {
      const auto t = result_type_with_scalar(r, o.scalar, ScalarPromotion::kWeak, why);
      if (!t) {
        return std::nullopt;
      }
      r = *t;
    }
  }
  return r;
}

// NumPy 1.x: when every operand is a scalar, or a scalar's kind is above every array's, plain
// promotion of everyone's dtype; else the scalars count by value.
std::optional<DType> value_based_result_dtype(const std::vector<Operand>& operands,
                                              std::string* why) {
  std::optional<DType> strong;  // the arrays'
  int array_cat = -1;
  int scalar_cat = -1;
  for (const Operand& o : operands) {
    if (is_array(o)) {
      array_cat = std::max(array_cat, category(o.info.dtype));
      strong = strong ? promote_types(*strong, o.info.dtype) : o.info.dtype;
    } else {
      scalar_cat = std::max(scalar_cat, o.is_python ? category(o.scalar) : category(o.info.dtype));
    }
  }
  if (!strong || scalar_cat > array_cat) {
    std::optional<DType> r;
    for (const Operand& o : operands) {
      const DType t = o.is_python ? default_dtype(o.scalar) : o.info.dtype;
      r = r ? promote_types(*r, t) : t;
    }
    if (!r) {
      *why = "no operand";
    }
    return r;
  }
  DType r = *strong;
  for (const Operand& o : operands) {
    if (is_array(o)) {
      continue;
    }
    if (o.is_python) {
      const auto t = result_type_with_scalar(r, o.scalar, ScalarPromotion::kValueBased, why);
      if (!t) {
        return std::nullopt;
      }
      r = *t;
    } else if (promote_types(r, o.info.dtype) != r) {
      // The smallest dtype holding the scalar's value decides, and the value is not known here.
      *why = "the result dtype depends on the value of a " + std::string(name(o.info.dtype)) +
             " NumPy scalar (NumPy 1.x value-based casting with a " + std::string(name(r)) +
             " array)";
      return std::nullopt;
    }
  }
  return r;
}

}  // namespace

std::optional<DType> result_dtype(const std::vector<Operand>& operands, ScalarPromotion mode,
                                  std::string* why) {
  return mode == ScalarPromotion::kWeak ? weak_result_dtype(operands, why)
                                        : value_based_result_dtype(operands, why);
}

std::optional<ValueInfo> broadcast_info(const std::vector<Operand>& operands, std::string* why) {
  std::size_t nd = 0;
  for (const Operand& o : operands) {
    if (!o.is_python) {
      nd = std::max(nd, o.info.shape.size());
    }
  }
  ValueInfo r;
  r.shape.assign(nd, 1);
  r.symbols.assign(nd, -1);
  std::vector<bool> set(nd, false);
  for (const Operand& o : operands) {
    if (o.is_python) {
      continue;
    }
    const std::size_t off = nd - o.info.shape.size();
    for (std::size_t d = 0; d < o.info.shape.size(); ++d) {
      const std::int64_t n = o.info.shape[d];
      const int s = sym(o.info, d);
      const std::size_t rd = off + d;
      if (n == 1 && s < 0) {
        continue;
      }
      if (!set[rd]) {
        r.shape[rd] = n;
        r.symbols[rd] = s;
        set[rd] = true;
        continue;
      }
      if (r.shape[rd] != n) {
        std::string shapes;
        for (const Operand& p : operands) {
          if (!p.is_python) {
            shapes += (shapes.empty() ? "" : " ") + shape_text(p.info.shape);
          }
        }
        *why = "operands could not be broadcast together with shapes " + shapes;
        return std::nullopt;
      }
      if (r.symbols[rd] != s) {
        *why = "a dynamic dimension broadcast against another dimension";
        return std::nullopt;
      }
    }
  }
  if (!std::any_of(r.symbols.begin(), r.symbols.end(), [](int s) { return s >= 0; })) {
    r.symbols.clear();
  }
  return r;
}

bool can_cast_same_kind(DType from, DType to) {
  return promote_types(from, to) == to || kind(from) == kind(to) || category(from) < category(to);
}

std::optional<ValueInfo> ufunc_result(const std::string& fname, UfuncKind k,
                                      const std::vector<Operand>& operands, ScalarPromotion mode,
                                      std::string* why) {
  auto shape = broadcast_info(operands, why);
  if (!shape) {
    return std::nullopt;
  }
  const auto promoted = result_dtype(operands, mode, why);
  if (!promoted) {
    return std::nullopt;
  }
  DType t = *promoted;
  const char tk = kind(t);
  auto unsupported = [&](const char* what) {
    *why = "numpy " + fname + " is not supported for " + what + " (" + std::string(name(t)) + ")";
    return std::nullopt;
  };
  switch (k) {
    case UfuncKind::kArith:
      break;
    case UfuncKind::kSubtract:
      if (tk == 'b') {
        return unsupported("booleans");
      }
      break;
    case UfuncKind::kTrueDivide:
      if (tk == 'b' || tk == 'i' || tk == 'u') {
        t = DType::kFloat64;
      }
      break;
    case UfuncKind::kFloorDivide:
      if (tk == 'c') {
        return unsupported("complex numbers");
      }
      if (tk == 'b') {
        t = DType::kInt8;
      }
      break;
    case UfuncKind::kPower:
      if (tk == 'b') {
        t = DType::kInt8;
      }
      break;
    case UfuncKind::kCompare:
    case UfuncKind::kLogical:
    case UfuncKind::kPredicate:
      if (k == UfuncKind::kPredicate && tk != 'f' && tk != 'c') {
        // isnan & co. of integers: NumPy has loops for them too (always False / True).
      }
      t = DType::kBool;
      break;
    case UfuncKind::kBitwise:
      if (tk == 'f' || tk == 'c') {
        return unsupported("floating point numbers");
      }
      break;
    case UfuncKind::kFloat:
      if (tk == 'b' || tk == 'i' || tk == 'u') {
        const int size = itemsize(t);
        t = tk == 'b' || size == 1 ? DType::kFloat16
                                   : (size == 2 ? DType::kFloat32 : DType::kFloat64);
      }
      break;
    case UfuncKind::kSame:
      if (tk == 'b') {
        return unsupported("booleans");
      }
      break;
    case UfuncKind::kAbs:
      t = real_of(t);
      break;
    case UfuncKind::kRound:
      if (tk != 'f') {
        return unsupported("this dtype");
      }
      break;
  }
  ValueInfo r = std::move(*shape);
  r.dtype = t;
  r.scalar = r.shape.empty();
  return r;
}

std::optional<ValueInfo> reduce_result(ReduceKind k, const ValueInfo& in,
                                       const std::vector<int>& axes, bool all, bool keepdims,
                                       std::optional<DType> dtype, std::string* why) {
  const auto normal = normalize_axes(axes, all, in.ndim(), why);
  if (!normal) {
    return std::nullopt;
  }
  if (k == ReduceKind::kArg && !all && normal->size() != 1) {
    *why = "argmax/argmin take one axis";
    return std::nullopt;
  }
  if (k == ReduceKind::kSame || k == ReduceKind::kArg) {
    for (const int a : *normal) {
      if (in.shape[static_cast<std::size_t>(a)] == 0) {
        *why = "a reduction over an empty axis (NumPy raises: no identity)";
        return std::nullopt;
      }
    }
    if (in.ndim() == 0 || (all && product(in.shape) == 0)) {
      if (product(in.shape) == 0) {
        *why = "a reduction of an empty array (NumPy raises: no identity)";
        return std::nullopt;
      }
    }
  }
  const DType t = in.dtype;
  const char tk = kind(t);
  DType r = t;
  switch (k) {
    case ReduceKind::kSum:
      if (dtype) {
        r = *dtype;
      } else if (tk == 'b' || (tk == 'i' && itemsize(t) < 8)) {
        r = DType::kInt64;
      } else if (tk == 'u' && itemsize(t) < 8) {
        r = DType::kUInt64;
      }
      break;
    case ReduceKind::kMean:
      if (dtype) {
        r = *dtype;
      } else if (tk == 'b' || tk == 'i' || tk == 'u') {
        r = DType::kFloat64;
      }
      break;
    case ReduceKind::kVar:
      if (dtype) {
        *why = "var/std with a dtype";
        return std::nullopt;
      }
      r = (tk == 'b' || tk == 'i' || tk == 'u') ? DType::kFloat64 : real_of(t);
      break;
    case ReduceKind::kSame:
      if (dtype) {
        *why = "max/min with a dtype";
        return std::nullopt;
      }
      break;
    case ReduceKind::kArg:
      r = DType::kInt64;
      break;
    case ReduceKind::kBool:
      r = DType::kBool;
      break;
  }
  ValueInfo out;
  out.dtype = r;
  out.shape = reduced_shape(in.shape, *normal, keepdims);
  // Symbols of the axes that stay.
  if (has_symbols(in)) {
    for (int d = 0; d < in.ndim(); ++d) {
      const bool reduced = std::find(normal->begin(), normal->end(), d) != normal->end();
      if (!reduced) {
        out.symbols.push_back(sym(in, static_cast<std::size_t>(d)));
      } else if (keepdims) {
        out.symbols.push_back(-1);
      }
    }
  }
  out.scalar = out.shape.empty();
  return out;
}

std::optional<ValueInfo> cumulative_result(const ValueInfo& in, int axis, bool all,
                                           std::optional<DType> dtype, std::string* why) {
  auto r = reduce_result(ReduceKind::kSum, in, {}, true, false, dtype, why);
  if (!r) {
    return std::nullopt;
  }
  if (!all && !axis_of(axis, in.ndim(), why)) {
    return std::nullopt;
  }
  if (has_symbols(in)) {
    *why = "cumulative op on a dynamic shape";
    return std::nullopt;
  }
  return array_info(r->dtype, all ? Shape{product(in.shape)} : in.shape);
}

std::optional<ValueInfo> matmul_result(const ValueInfo& a, const ValueInfo& b, std::string* why) {
  if (a.ndim() == 0 || b.ndim() == 0) {
    *why = "matmul: Input operand does not have enough dimensions";
    return std::nullopt;
  }
  // Shape symbols: the rows of `a` and the columns of `b` carry theirs; a contracted or batch
  // dimension that is dynamic is not handled (the caller specializes and asks again).
  const int rows_sym = a.ndim() >= 2 ? sym(a, static_cast<std::size_t>(a.ndim() - 2)) : -1;
  const int cols_sym = b.ndim() >= 2 ? sym(b, static_cast<std::size_t>(b.ndim() - 1)) : -1;
  {
    const int ka = sym(a, static_cast<std::size_t>(a.ndim() - 1));
    const int kb = sym(b, static_cast<std::size_t>(b.ndim() >= 2 ? b.ndim() - 2 : 0));
    bool batch_sym = false;
    for (int d = 0; d + 2 < a.ndim(); ++d) {
      batch_sym = batch_sym || sym(a, static_cast<std::size_t>(d)) >= 0;
    }
    for (int d = 0; d + 2 < b.ndim(); ++d) {
      batch_sym = batch_sym || sym(b, static_cast<std::size_t>(d)) >= 0;
    }
    if (ka != kb || batch_sym) {
      *why = "matmul over a dynamic dimension";
      return std::nullopt;
    }
  }
  Shape sa = a.shape;
  Shape sb = b.shape;
  const bool a1 = sa.size() == 1;
  const bool b1 = sb.size() == 1;
  if (a1) {
    sa.insert(sa.begin(), 1);
  }
  if (b1) {
    sb.push_back(1);
  }
  if (sa.back() != sb[sb.size() - 2]) {
    *why = "matmul: mismatch in its core dimension (" + std::to_string(sa.back()) +
           " is different from " + std::to_string(sb[sb.size() - 2]) + ")";
    return std::nullopt;
  }
  const Shape ba(sa.begin(), sa.end() - 2);
  const Shape bb(sb.begin(), sb.end() - 2);
  auto batch = broadcast_shapes(ba, bb, why);
  if (!batch) {
    return std::nullopt;
  }
  Shape out = *batch;
  if (!a1) {
    out.push_back(sa[sa.size() - 2]);
  }
  if (!b1) {
    out.push_back(sb.back());
  }
  ValueInfo r = array_info(promote_types(a.dtype, b.dtype), out);
  if (rows_sym >= 0 || cols_sym >= 0) {
    r.symbols.assign(out.size(), -1);
    if (!a1) {
      r.symbols[out.size() - (b1 ? 1 : 2)] = rows_sym;
    }
    if (!b1) {
      r.symbols[out.size() - 1] = cols_sym;
    }
  }
  r.scalar = out.empty();
  return r;
}

std::optional<ValueInfo> dot_result(const ValueInfo& a, const ValueInfo& b, std::string* why) {
  if (a.ndim() == 0 || b.ndim() == 0 || a.ndim() > 2 || b.ndim() > 2) {
    *why = "np.dot of " + std::to_string(a.ndim()) + "-d and " + std::to_string(b.ndim()) +
           "-d operands";
    return std::nullopt;
  }
  return matmul_result(a, b, why);
}

std::optional<ValueInfo> einsum_result(const std::string& subscripts,
                                       const std::vector<ValueInfo>& operands, std::string* why) {
  if (subscripts.find('.') != std::string::npos) {
    *why = "einsum with an ellipsis";
    return std::nullopt;
  }
  std::string spec;
  for (const char c : subscripts) {
    if (c != ' ') {
      spec += c;
    }
  }
  const auto arrow = spec.find("->");
  const std::string lhs = spec.substr(0, arrow);
  std::vector<std::string> terms;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= lhs.size(); ++i) {
    if (i == lhs.size() || lhs[i] == ',') {
      terms.push_back(lhs.substr(start, i - start));
      start = i + 1;
    }
  }
  if (terms.size() != operands.size()) {
    *why = "einsum: " + std::to_string(terms.size()) + " subscripts for " +
           std::to_string(operands.size()) + " operands";
    return std::nullopt;
  }
  std::map<char, std::int64_t> size;
  std::map<char, int> count;
  std::optional<DType> t;
  for (std::size_t k = 0; k < terms.size(); ++k) {
    const ValueInfo& op = operands[k];
    if (has_symbols(op)) {
      *why = "einsum of dynamic shapes";
      return std::nullopt;
    }
    if (static_cast<int>(terms[k].size()) != op.ndim()) {
      *why = "einsum: operand " + std::to_string(k) + " has " + std::to_string(op.ndim()) +
             " dimensions, its subscripts " + std::to_string(terms[k].size());
      return std::nullopt;
    }
    for (std::size_t d = 0; d < terms[k].size(); ++d) {
      const char c = terms[k][d];
      if (std::isalpha(static_cast<unsigned char>(c)) == 0) {
        *why = std::string("einsum: invalid subscript '") + c + "'";
        return std::nullopt;
      }
      const std::int64_t n = op.shape[d];
      if (size.count(c) != 0 && size[c] != n) {
        *why = std::string("einsum: sizes of '") + c + "' differ";
        return std::nullopt;
      }
      size[c] = n;
      ++count[c];
    }
    t = t ? promote_types(*t, op.dtype) : op.dtype;
  }
  std::string out;
  if (arrow == std::string::npos) {
    for (const auto& [c, n] : count) {  // letters seen once, in alphabetical order
      if (n == 1) {
        out += c;
      }
    }
  } else {
    out = spec.substr(arrow + 2);
  }
  ValueInfo r = array_info(t.value_or(DType::kFloat64), {});
  for (const char c : out) {
    if (size.count(c) == 0 || std::count(out.begin(), out.end(), c) != 1) {
      *why = std::string("einsum: output subscript '") + c + "' is not a single input subscript";
      return std::nullopt;
    }
    r.shape.push_back(size[c]);
  }
  r.scalar = r.shape.empty();
  return r;
}

}  // namespace sot::graph
