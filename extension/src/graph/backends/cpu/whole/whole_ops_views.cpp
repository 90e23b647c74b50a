// Tier C's handlers of views and dot products (whole_ops.hpp): A[i], L[i, :i], x[k + 1:] and x.T
// as views of the arrays the runner passes, and `a @ b` of two vectors as NumPy computes it.
#include <string>

#include "graph/backends/cpu/whole/whole_blas.hpp"
#include "graph/backends/cpu/whole/whole_ops.hpp"

namespace sot::graph::whole {

namespace {

// A literal of the generated code that is a positive int ("2LL").
bool positive_literal(const std::string& e) {
  const std::size_t digits = e.size() > 2 ? e.size() - 2 : 0;
  if (digits == 0 || e.compare(digits, 2, "LL") != 0 || e[0] == '0') {
    return false;
  }
  for (std::size_t k = 0; k < digits; ++k) {
    if (e[k] < '0' || e[k] > '9') {
      return false;
    }
  }
  return true;
}

// An int of the key: a Python int (a value or a literal).
bool is_int(const Val& v) {
  return !v.is_slice() && v.type.kind == Kind::kPyInt;
}

}  // namespace

// x[key]: each int of the key picks an item of its dimension (wrapped as Python's and checked: out
// of range gives up, the op's own path raises IndexError), each slice keeps its dimension's items
// by Python's slice rules, each None adds a dimension of one item (stride 0), the dimensions after
// the key stay whole.
bool array_view(OpCtx& c) {
  const Val& a = c.args.empty() ? Val{} : c.args[0];
  if (a.type.kind != Kind::kArray || a.type.dtype != c.result.dtype) {
    return refuse(c, "indexing that makes an array of something other than an array");
  }
  const std::string& n = c.name;
  std::vector<std::string> shape;
  std::vector<std::string> strides;
  c.lines.push_back("char* " + n + "_data = " + a.expr + "->data;");
  bool forward = true;  // (every slice steps forward by a constant)
  int d = 0;            // the dimension of `a` the next key item indexes
  for (std::size_t k = 1; k < c.args.size(); ++k, ++d) {
    const Val& item = c.args[k];
    if (item.newaxis) {  // (a dimension of one item, indexing none of `a`'s)
      shape.emplace_back("1LL");
      strides.emplace_back("0LL");
      --d;
      continue;
    }
    if (d >= a.type.ndim) {
      return refuse(c, "an index past the array's dimensions");
    }
    const std::string dim = cat({a.expr, "->shape[", std::to_string(d), "]"});
    const std::string stride = cat({a.expr, "->strides[", std::to_string(d), "]"});
    const std::string at = cat({n, "_", std::to_string(d)});
    if (is_int(item)) {
      c.lines.push_back(cat({"long long ", at, ";"}));
      c.lines.push_back(
          cat({"if (!sot_index(", item.expr, ", ", dim, ", &", at, ")) ", give_up(c)}));
      c.lines.push_back(cat({n, "_data += ", at, " * ", stride, ";"}));
      continue;
    }
    if (!item.is_slice() || item.slice.size() != 3) {
      return refuse(c, "an index that is neither a Python int nor a slice");
    }
    const std::string& start = item.slice[0];
    const std::string& stop = item.slice[1];
    const std::string step = item.slice[2].empty() ? "1LL" : item.slice[2];
    forward = forward && positive_literal(step);
    c.lines.push_back(cat({"long long ", at, ", ", at, "_n;"}));
    c.lines.push_back(cat({"sot_slice(", dim, ", ", start.empty() ? "false, 0" : "true, ", start,
                           ", ", stop.empty() ? "false, 0" : "true, ", stop, ", ", step, ", &", at,
                           ", &", at, "_n);"}));
    c.lines.push_back(cat({n, "_data += ", at, " * ", stride, ";"}));
    shape.push_back(at + "_n");
    strides.push_back(cat({stride, " * (", step, ")"}));
  }
  for (; d < a.type.ndim; ++d) {
    shape.push_back(cat({a.expr, "->shape[", std::to_string(d), "]"}));
    strides.push_back(cat({a.expr, "->strides[", std::to_string(d), "]"}));
  }
  if (static_cast<int>(shape.size()) != c.result.ndim || shape.empty()) {
    return refuse(c, "a view of another number of dimensions");
  }
  std::string dims = "{";
  std::string steps = "{";
  for (std::size_t k = 0; k < shape.size(); ++k) {
    dims += (k > 0 ? ", " : "") + shape[k];
    steps += (k > 0 ? ", " : "") + strides[k];
  }
  c.lines.push_back("const long long " + n + "_shape[] = " + dims + "};");
  c.lines.push_back("const long long " + n + "_strides[] = " + steps + "};");
  c.lines.push_back("const SotArr " + n + "_view = {" + n + "_data, " + n + "_shape, " + n +
                    "_strides, " + std::to_string(shape.size()) + "};");
  c.lines.push_back("const SotArr* const " + n + " = &" + n + "_view;");
  c.out = Val{n, c.result, a.arg};  // (a write into it writes into the argument)
  c.out.c_like = a.laid_c() && forward;
  return true;
}

// x.T, np.transpose(x), x.transpose(): the array's dimensions in reverse, a view of its data.
bool transpose_view(OpCtx& c) {
  const Val& a = c.args.empty() ? Val{} : c.args[0];
  if (c.args.size() != 1 || a.type.kind != Kind::kArray || !(a.type == c.result) ||
      a.type.ndim < 1) {
    return refuse(c, "a transpose with axes, or of something other than an array");
  }
  const std::string& n = c.name;
  std::string dims = "{";
  std::string steps = "{";
  for (int d = a.type.ndim - 1; d >= 0; --d) {
    const std::string at = "[" + std::to_string(d) + "]";
    const char* sep = d < a.type.ndim - 1 ? ", " : "";
    dims += cat({sep, a.expr, "->shape", at});
    steps += cat({sep, a.expr, "->strides", at});
  }
  c.lines.push_back("const long long " + n + "_shape[] = " + dims + "};");
  c.lines.push_back("const long long " + n + "_strides[] = " + steps + "};");
  c.lines.push_back("const SotArr " + n + "_view = {" + a.expr + "->data, " + n + "_shape, " + n +
                    "_strides, " + std::to_string(a.type.ndim) + "};");
  c.lines.push_back("const SotArr* const " + n + " = &" + n + "_view;");
  c.out = Val{n, c.result, a.arg};  // (a write into it writes into the argument)
  c.out.may_be_f = a.type.ndim == 2;
  return true;
}

namespace {

// a @ b or np.dot(a, b) of two vectors of the result's dtype: NumPy's dot of them (float64:
// whole_blas.hpp). np.dot of float64 vectors copies one of "bad strides" (negative, not a
// multiple of the item, 0 over several items) before its BLAS: such vectors give up there.
bool dot_of_vectors(OpCtx& c, bool copies_bad_strides) {
  if (c.args.size() != 2 || c.result.kind != Kind::kScalar) {
    return refuse(c, "a matmul whose result is not a scalar");
  }
  const Val& a = c.args[0];
  const Val& b = c.args[1];
  for (const Val* v : {&a, &b}) {
    if (v->type.kind != Kind::kArray || v->type.ndim != 1 || v->type.dtype != c.result.dtype) {
      return refuse(c, "a matmul of something other than two vectors of its dtype");
    }
  }
  std::string why;
  if (c.result.dtype == DType::kFloat64 && numpy_ddot(&why) == nullptr) {
    return refuse(c, "a float64 dot product without NumPy's BLAS (" + why + ")");
  }
  if (c.result.dtype != DType::kFloat64 && c.result.dtype != DType::kInt64) {
    return refuse(c, "a dot product of a dtype other than float64 and int64");
  }
  const std::string n = a.expr + "->shape[0]";
  c.lines.push_back("if (" + n + " != " + b.expr + "->shape[0]) " + give_up(c));
  if (copies_bad_strides && c.result.dtype == DType::kFloat64) {
    for (const Val* v : {&a, &b}) {
      const std::string st = cat({v->expr, "->strides[0]"});
      c.lines.push_back(cat({"if (", st, " < 0 || ", st, " % 8 != 0 || (", st, " == 0 && ", n,
                             " > 1)) ", give_up(c)}));
    }
  }
  c.lines.push_back(c.result.c_type() + " " + c.name + ";");
  const std::string fn = c.result.dtype == DType::kFloat64 ? "sot_ddot(env, " : "sot_ldot(";
  c.lines.push_back("if (!" + fn + n + ", " + a.expr + "->data, " + a.expr + "->strides[0], " +
                    b.expr + "->data, " + b.expr + "->strides[0], &" + c.name + ")) " + give_up(c));
  return true;
}

}  // namespace

bool matmul_vectors(OpCtx& c) {
  if (c.result.kind != Kind::kArray) {
    return dot_of_vectors(c, false);
  }
  const bool vector_matrix = c.args.size() == 2 && c.args[0].type.kind == Kind::kArray &&
                             c.args[0].type.ndim == 1 && c.args[1].type.kind == Kind::kArray &&
                             c.args[1].type.ndim == 2;
  if (!vector_matrix) {
    return matrix_vector(c);
  }
  // x @ A: NumPy's matmul swaps the operands and the matrix's strides into the gemv it calls for
  // A.T @ x (its vector-matrix case), under the same conditions: A.T @ x as tier C computes it.
  OpCtx t;
  t.op = c.op;
  t.args = {c.args[1]};
  t.result = c.args[1].type;
  t.name = c.name + "_t";
  t.give_up = c.give_up;
  if (!transpose_view(t)) {
    return refuse(c, t.why);
  }
  c.lines.insert(c.lines.end(), t.lines.begin(), t.lines.end());
  c.args = {t.out, c.args[0]};
  return matrix_vector(c);
}

bool dot_vectors(OpCtx& c) {
  return dot_of_vectors(c, true);
}

}  // namespace sot::graph::whole
