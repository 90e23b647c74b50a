// Tier C's handlers of arrays made in the code (whole_ops.hpp): elementwise ops whose result is an
// array, assignments into views, sums and means of vectors.
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "core/loaded_module.hpp"
#include "graph/backends/cpu/whole/whole_arrays.hpp"
#include "graph/backends/cpu/whole/whole_blas.hpp"
#include "graph/backends/cpu/whole/whole_ops.hpp"

namespace sot::graph::whole {

namespace {

// An array a loop nest walks: its first element and, per dimension of the nest, its byte stride
// (0 along a broadcast dimension).
struct Walked {
  std::string data;
  std::vector<std::string> strides;
  std::string size;  // the item's size (a constant of the generated code)
};

// The element type's size, as the generated code writes it.
std::string size_of(DType t) {
  return "static_cast<long long>(sizeof(" + c_type(t) + "))";
}

// Array `a` walked over a nest of `rank` dimensions (its dimensions the last ones, NumPy's
// broadcasting: a dimension of one item has stride 0); its strides declared as `name`_s<d>.
Walked walk(OpCtx& c, const Val& a, int rank, const std::string& name) {
  Walked w;
  w.data = a.expr + "->data";
  w.size = size_of(a.type.dtype);
  const int lead = rank - a.type.ndim;
  for (int d = 0; d < rank; ++d) {
    if (d < lead) {
      w.strides.emplace_back("0LL");
      continue;
    }
    const std::string e = std::to_string(d - lead);
    const std::string s = name + "_s" + std::to_string(d);
    c.lines.push_back(cat({"const long long ", s, " = ", a.expr, "->shape[", e,
                           "] == 1 ? 0LL : ", a.expr, "->strides[", e, "];"}));
    w.strides.push_back(s);
  }
  return w;
}

// A loop nest over `shape` (`rank` dimensions: `shape`[d]) whose innermost body, made by `body`
// from the element pointers of `walked` (declared `name`_p<k>), goes into the op's lines (once per
// form of the innermost loop, below).
void nest(OpCtx& c, const std::string& shape, int rank, const std::vector<Walked>& walked,
          const std::string& name,
          const std::function<void(const std::vector<std::string>&)>& body) {
  const auto last = static_cast<std::size_t>(rank - 1);
  for (int d = 0; d + 1 < rank; ++d) {
    const std::string i = name + "_i" + std::to_string(d);
    c.lines.push_back(cat({"for (long long ", i, " = 0; ", i, " < ", shape, "[", std::to_string(d),
                           "]; ++", i, ") {"}));
  }
  for (std::size_t k = 0; k < walked.size(); ++k) {
    std::string at = walked[k].data;
    for (std::size_t d = 0; d < last; ++d) {
      at += cat({" + ", name, "_i", std::to_string(d), " * ", walked[k].strides[d]});
    }
    c.lines.push_back(cat({"char* const ", name, "_b", std::to_string(k), " = ", at, ";"}));
  }
  const std::string i = name + "_i" + std::to_string(last);
  // The innermost loop's forms, each with constant steps (vectorized) under its test: every array
  // stepping by its item, then (two or three arrays: an op of one or two operands) each operand
  // in turn repeating one item (a row or column broadcast), then any strides.
  std::vector<std::vector<bool>> forms = {std::vector<bool>(walked.size(), false)};
  if (walked.size() == 2 || walked.size() == 3) {
    for (std::size_t k = 0; k + 1 < walked.size(); ++k) {
      forms.emplace_back(walked.size(), false);
      forms.back()[k] = true;
    }
  }
  for (std::size_t f = 0; f <= forms.size(); ++f) {
    const bool any = f == forms.size();
    std::string test = "true";
    for (std::size_t k = 0; !any && k < walked.size(); ++k) {
      test += cat({" && ", walked[k].strides[last], " == ", forms[f][k] ? "0" : walked[k].size});
    }
    c.lines.push_back(any ? "} else {" : (f == 0 ? "if (" : "} else if (") + test + ") {");
    c.lines.push_back(cat({"for (long long ", i, " = 0; ", i, " < ", shape, "[",
                           std::to_string(last), "]; ++", i, ") {"}));
    std::vector<std::string> ptrs;
    for (std::size_t k = 0; k < walked.size(); ++k) {
      const std::string p = name + "_p" + std::to_string(k);
      const std::string step = any ? walked[k].strides[last] : (forms[f][k] ? "0" : walked[k].size);
      c.lines.push_back(cat(
          {"char* const ", p, " = ", name, "_b", std::to_string(k), " + ", i, " * ", step, ";"}));
      ptrs.push_back(p);
    }
    body(ptrs);
    c.lines.emplace_back("}");
  }
  c.lines.emplace_back("}");
  for (int d = 0; d + 1 < rank; ++d) {
    c.lines.emplace_back("}");
  }
}

// The walked array of a new array made by new_array.
Walked walk_new(const std::string& name, int rank, DType t) {
  Walked w;
  w.data = name + "_data";
  w.size = size_of(t);
  for (int d = 0; d < rank; ++d) {
    w.strides.push_back(name + "_strides[" + std::to_string(d) + "]");
  }
  return w;
}

// The element at `ptr` read into a new variable of `name` (dtype `t`): its Val, a NumPy scalar.
Val load(OpCtx& c, const std::string& ptr, DType t, const std::string& name) {
  c.lines.push_back(c_type(t) + " " + name + ";");
  c.lines.push_back("__builtin_memcpy(&" + name + ", " + ptr + ", sizeof " + name + ");");
  WType s;
  s.kind = Kind::kScalar;
  s.dtype = t;
  return Val{name, s, -1};
}

// The value `v` written at `ptr` as dtype `t` (logged first where it writes into an argument).
void put(OpCtx& c, const std::string& ptr, const Val& v, DType t, bool logged,
         const std::string& name) {
  c.lines.push_back("const " + c_type(t) + " " + name + " = " + cast_to(v.expr, v.type, t) + ";");
  if (logged) {
    c.lines.push_back("if (!sot_log(env, " + ptr + ", sizeof " + name + ")) " + give_up(c));
  }
  c.lines.push_back("__builtin_memcpy(" + ptr + ", &" + name + ", sizeof " + name + ");");
}

// A copy of array `a` from the arena (its elements as they are now), as `name`.
Val copy_of(OpCtx& c, const Val& a, const std::string& name) {
  const int rank = a.type.ndim;
  new_array(c, a.type.dtype, a.expr + "->shape", rank, name);
  const std::vector<Walked> walked = {walk(c, a, rank, name + "_from"),
                                      walk_new(name, rank, a.type.dtype)};
  nest(c, a.expr + "->shape", rank, walked, name, [&](const std::vector<std::string>& p) {
    const Val e = load(c, p[0], a.type.dtype, name + "_e");
    put(c, p[1], e, a.type.dtype, false, name + "_w");
  });
  return Val{name, a.type, -1};
}

// Whether a value of kind `from` is written into an array of dtype `to` by a cast tier C asserts
// as NumPy's (the element rule of setitem).
bool exact_store(const WType& from, DType to) {
  const char k = kind(to);
  const char f = from.c_kind();
  return k == 'f' ||
         (to == DType::kInt64 && (f == 'i' || f == 'b') && from.dtype != DType::kUInt64) ||
         (k == 'b' && f == 'b');
}

}  // namespace

Val stored_number(OpCtx& c, const Val& v, DType to, const std::string& name) {
  if (!v.type.number() || to != DType::kFloat32 || v.type.c_kind() != 'f' ||
      v.type.dtype == DType::kFloat32) {
    return v;
  }
  // (both volatile: the conversion is neither folded nor moved into the loop that uses it)
  c.lines.push_back("volatile double " + name + "_d = " + v.expr + ";");
  c.lines.push_back("volatile float " + name + "_f = static_cast<float>(" + name + "_d);");
  c.lines.push_back("const float " + name + " = " + name + "_f;");
  WType s;
  s.kind = Kind::kScalar;
  s.dtype = to;
  return Val{name, s, -1};
}

void new_array(OpCtx& c, DType t, const std::string& shape, int rank, const std::string& name) {
  const std::string count = name + "_count";
  c.lines.push_back("long long " + count + " = 1;");
  for (int d = 0; d < rank; ++d) {
    c.lines.push_back(
        cat({"if (__builtin_mul_overflow(", count, ", ", shape, "[", std::to_string(d), "], &",
             count, ") || ", count, " > (1LL << 40)) ", give_up(c)}));
  }
  c.lines.push_back("char* const " + name + "_data = sot_alloc(env, " + count + " * " + size_of(t) +
                    ");");
  c.lines.push_back("if (" + name + "_data == nullptr) " + give_up(c));
  const std::string strides = name + "_strides";
  c.lines.push_back("long long " + strides + "[" + std::to_string(rank) + "];");
  c.lines.push_back(strides + "[" + std::to_string(rank - 1) + "] = " + size_of(t) + ";");
  for (int d = rank - 2; d >= 0; --d) {
    const std::string next = std::to_string(d + 1);
    c.lines.push_back(cat({strides, "[", std::to_string(d), "] = ", strides, "[", next, "] * ",
                           shape, "[", next, "];"}));
  }
  c.lines.push_back("const SotArr " + name + "_view = {" + name + "_data, " + shape + ", " +
                    strides + ", " + std::to_string(rank) + "};");
  c.lines.push_back("const SotArr* const " + name + " = &" + name + "_view;");
  c.makes_array = true;
}

void broadcast(OpCtx& c, const std::vector<Val>& args, int rank, const std::string& shape) {
  std::string init = "long long " + shape + "[" + std::to_string(rank) + "] = {";
  for (int d = 0; d < rank; ++d) {
    init += d > 0 ? ", 1" : "1";
  }
  c.lines.push_back(init + "};");
  for (const Val& a : args) {
    if (a.type.kind != Kind::kArray) {
      continue;
    }
    for (int e = 0; e < a.type.ndim; ++e) {
      const std::string n = a.expr + "->shape[" + std::to_string(e) + "]";
      const std::string to = shape + "[" + std::to_string(rank - a.type.ndim + e) + "]";
      c.lines.push_back(cat({"if (", n, " != 1) { if (", to, " == 1) ", to, " = ", n, "; else if (",
                             n, " != ", to, ") ", give_up(c), " }"}));
    }
  }
}

void dense_of(OpCtx& c, const Val& a, const std::string& shape, int rank, const std::string& name) {
  const std::string size = size_of(a.type.dtype);
  const std::string strides = name + "_cs";
  c.lines.push_back("long long " + strides + "[" + std::to_string(rank) + "];");
  c.lines.push_back(strides + "[" + std::to_string(rank - 1) + "] = " + size + ";");
  for (int d = rank - 2; d >= 0; --d) {
    const std::string next = std::to_string(d + 1);
    c.lines.push_back(cat({strides, "[", std::to_string(d), "] = ", strides, "[", next, "] * ",
                           shape, "[", next, "];"}));
  }
  // (dense: of the shape itself, each dimension of more than one item at its C stride)
  std::string dense = a.type.ndim == rank ? "true" : "false";
  for (int d = 0; a.type.ndim == rank && d < rank; ++d) {
    const std::string at = "[" + std::to_string(d) + "]";
    dense += cat({" && ", a.expr, "->shape", at, " == ", shape, at, " && (", shape, at, " <= 1 || ",
                  a.expr, "->strides", at, " == ", strides, at, ")"});
  }
  c.lines.push_back("SotArr " + name + "_view = {" + a.expr + "->data, " + shape + ", " + strides +
                    ", " + std::to_string(rank) + "};");
  c.lines.push_back("if (!(" + dense + ")) {");
  std::string count = "1LL";
  for (int d = 0; d < rank; ++d) {
    count += cat({" * ", shape, "[", std::to_string(d), "]"});
  }
  c.lines.push_back(
      cat({"char* const ", name, "_data = sot_alloc(env, ", count, " * ", size, ");"}));
  c.lines.push_back("if (" + name + "_data == nullptr) " + give_up(c));
  Walked to;
  to.data = name + "_data";
  to.size = size;
  for (int d = 0; d < rank; ++d) {
    to.strides.push_back(strides + "[" + std::to_string(d) + "]");
  }
  const std::vector<Walked> walked = {walk(c, a, rank, name + "_from"), to};
  nest(c, shape, rank, walked, name, [&](const std::vector<std::string>& p) {
    const Val e = load(c, p[0], a.type.dtype, name + "_e");
    put(c, p[1], e, a.type.dtype, false, name + "_w");
  });
  c.lines.push_back(name + "_view.data = " + name + "_data;");
  c.lines.emplace_back("}");
  c.lines.push_back("const SotArr* const " + name + " = &" + name + "_view;");
  c.makes_array = true;
}

bool astype_element(OpCtx& c) {
  // (one element of x.astype(t): the element rule's casts - exact, or NumPy's C cast into a float;
  // a float into an int is left to NumPy, which warns where C's cast is undefined)
  if (c.result.kind != Kind::kScalar || c.args.size() != 1 || !c.args[0].type.number() ||
      !exact_store(c.args[0].type, c.result.dtype)) {
    return refuse(c, "an astype other than into a float, of ints into int64 or of booleans");
  }
  declare(c, cast_to(c.args[0].expr, c.args[0].type, c.result.dtype));
  return true;
}

namespace {

// The operands of an in-place op (Python numbers aside) promote to the target's dtype (x += mask of
// an int64 x: int64): NumPy's loop then computes in it, each operand cast to it as the element's
// handler casts it; a wider one (float32 += float64) computes in another dtype than the target's.
bool in_place_operands(const OpCtx& c) {
  DType promoted = c.result.dtype;
  for (const Val& v : c.args) {
    if (!v.type.python()) {
      promoted = promote_types(promoted, v.type.dtype);
    }
  }
  return promoted == c.result.dtype && c.args[0].type.kind == Kind::kArray &&
         c.args[0].type.dtype == c.result.dtype && c.args[0].type.ndim == c.result.ndim;
}

}  // namespace

bool elementwise(OpCtx& c, Handler scalar) {
  const int rank = c.result.ndim;
  const bool in_place = c.op != nullptr && c.op->mutates;
  if (c.result.kind != Kind::kArray || rank < 1 || rank > kMaxDims ||
      c_type(c.result.dtype).empty()) {
    return refuse(c, "an array result of another kind");
  }
  for (const Val& a : c.args) {
    if (a.is_slice() || (a.type.kind == Kind::kArray && a.type.ndim > rank)) {
      return refuse(c, "operands of more dimensions than the result");
    }
  }
  if (c.size_hint > kMostTimedItems) {
    return refuse(c, "an array of " + std::to_string(c.size_hint) +
                         " items (the loop's own path: tier B's fused kernels)");
  }
  if (in_place && !in_place_operands(c)) {
    return refuse(c, "an in-place op whose operands have other dtypes than its target");
  }
  const std::string& n = c.name;
  const std::string shape = n + "_shape";
  broadcast(c, c.args, rank, shape);
  const bool may_be_f =
      !in_place && rank == 2 && !all_laid_c(c.args) &&
      std::any_of(c.args.begin(), c.args.end(), [](const Val& a) { return a.may_be_f; });
  if (may_be_f) {
    laid_c_or_f_result(c, c.args, shape);
  } else if (in_place) {  // (NumPy's output does not broadcast)
    for (int d = 0; d < rank; ++d) {
      const std::string at = "[" + std::to_string(d) + "]";
      c.lines.push_back(
          cat({"if (", shape, at, " != ", c.args[0].expr, "->shape", at, ") ", give_up(c)}));
    }
  } else {
    laid_c_result(c, c.args, rank, shape);
  }
  new_array(c, c.result.dtype, shape, rank, n);
  if (may_be_f) {  // (F-ordered where NumPy's is: the strides the nest below writes through)
    const std::string item = size_of(c.result.dtype);
    c.lines.push_back(cat({"if (", n, "_f) { ", n, "_strides[0] = ", item, "; ", n,
                           "_strides[1] = ", item, " * ", shape, "[0]; }"}));
  }
  for (const Val& a : c.args) {  // (NumPy casts a Python float before its loop, even an empty one)
    float_cast_fits(c, a, c.result.dtype);
  }
  std::vector<Walked> walked;
  std::vector<int> which;  // the operand each walked array is
  for (std::size_t k = 0; k < c.args.size(); ++k) {
    if (c.args[k].type.kind == Kind::kArray) {
      walked.push_back(walk(c, c.args[k], rank, n + "_a" + std::to_string(k)));
      which.push_back(static_cast<int>(k));
    }
  }
  walked.push_back(walk_new(n, rank, c.result.dtype));
  bool ok = true;
  const std::string deferred = n + "_bad";
  c.lines.push_back("unsigned " + deferred + " = 0;");
  nest(c, shape, rank, walked, n, [&](const std::vector<std::string>& p) {
    OpCtx e;
    e.op = c.op;
    e.args = c.args;
    e.deferred = deferred;
    for (std::size_t j = 0; j < which.size(); ++j) {
      const Val& a = c.args[static_cast<std::size_t>(which[j])];
      e.args[static_cast<std::size_t>(which[j])] =
          load(c, p[j], a.type.dtype, n + "_x" + std::to_string(which[j]));
    }
    e.result.kind = Kind::kScalar;
    e.result.dtype = c.result.dtype;
    e.name = n + "_e";
    e.give_up = c.give_up;
    if (!scalar(e)) {
      ok = refuse(c, e.why);
      return;
    }
    c.lines.insert(c.lines.end(), e.lines.begin(), e.lines.end());
    c.lines.push_back("__builtin_memcpy(" + p.back() + ", &" + e.name + ", sizeof " + e.name +
                      ");");
  });
  if (!ok) {
    return false;
  }
  c.lines.push_back("if (" + deferred + " != 0) " + give_up(c));
  c.out = Val{n, c.result, -1};
  c.out.fresh = !in_place && !may_be_f;
  c.out.c_order = c.out.fresh;  // (laid_c_result)
  c.out.may_be_f = may_be_f;
  if (!in_place) {
    return true;
  }
  // (x += y: the new array copied into the target)
  const Val& target = c.args[0];
  const std::vector<Walked> back = {walk_new(n, rank, c.result.dtype),
                                    walk(c, target, rank, n + "_t")};
  nest(c, shape, rank, back, n + "_c", [&](const std::vector<std::string>& p) {
    const Val e = load(c, p[0], c.result.dtype, n + "_ce");
    put(c, p[1], e, c.result.dtype, target.arg >= 0, n + "_cw");
  });
  c.out = target;
  if (target.arg >= 0) {
    c.written.push_back(target.arg);
  }
  return true;
}

bool store(OpCtx& c) {
  if (c.args.size() < 3 || c.args[0].type.kind != Kind::kArray) {
    return refuse(c, "an assignment into something other than an array");
  }
  const Val& a = c.args[0];
  const Val& v = c.args.back();
  int rank = a.type.ndim;
  for (std::size_t k = 1; k + 1 < c.args.size(); ++k) {
    rank -= c.args[k].is_slice() ? 0 : 1;
  }
  if (rank < 1 || rank > kMaxDims || !exact_store(v.type, a.type.dtype) || v.is_slice() ||
      (v.type.kind == Kind::kArray && v.type.ndim > rank)) {
    return refuse(c, "an assignment whose cast or shape tier C does not assert");
  }
  // The view written: x[key] as array_view makes it.
  OpCtx view;
  view.op = c.op;
  view.args.assign(c.args.begin(), c.args.end() - 1);
  view.result = WType{Kind::kArray, a.type.dtype, rank};
  view.name = c.name + "_to";
  view.give_up = c.give_up;
  if (!array_view(view)) {
    return refuse(c, view.why);
  }
  c.lines.insert(c.lines.end(), view.lines.begin(), view.lines.end());
  const Val target{view.name, view.result, a.arg};
  std::vector<Walked> walked = {walk(c, target, rank, c.name + "_w")};
  Val from = v;
  if (v.type.kind == Kind::kArray) {
    for (int e = 0; e < v.type.ndim; ++e) {  // (the value broadcasts to the view, not beyond)
      const std::string n = v.expr + "->shape[" + std::to_string(e) + "]";
      const std::string to =
          target.expr + "->shape[" + std::to_string(rank - v.type.ndim + e) + "]";
      c.lines.push_back(cat({"if (", n, " != 1 && ", n, " != ", to, ") ", give_up(c)}));
    }
    if (v.arg >= 0 || a.arg < 0) {  // (it may overlap the view: NumPy reads a copy then)
      from = copy_of(c, v, c.name + "_v");
    }
    walked.push_back(walk(c, from, rank, c.name + "_r"));
  } else {
    from = stored_number(c, v, a.type.dtype, c.name + "_n");
  }
  const std::string& n = c.name;
  nest(c, target.expr + "->shape", rank, walked, n, [&](const std::vector<std::string>& p) {
    const Val e = from.type.kind == Kind::kArray ? load(c, p[1], from.type.dtype, n + "_e") : from;
    put(c, p[0], e, a.type.dtype, a.arg >= 0, n + "_x");
  });
  c.out = a;
  if (a.arg >= 0) {
    c.written.push_back(a.arg);
  }
  return true;
}

namespace {

bool vector_reduction(OpCtx& c, bool mean) {
  if (c.args.size() != 1 || c.result.kind != Kind::kScalar) {
    return refuse(c, "a reduction of another form");
  }
  const Val& a = c.args[0];
  if (a.type.kind != Kind::kArray || a.type.ndim != 1 || a.type.dtype != c.result.dtype ||
      (c.result.dtype != DType::kFloat64 && (mean || c.result.dtype != DType::kInt64))) {
    return refuse(c, "a reduction of something other than a float64 or int64 vector");
  }
  const bool f = c.result.dtype == DType::kFloat64;
  const std::string sum = mean ? c.name + "_sum" : c.name;
  c.lines.push_back(c.result.c_type() + " " + sum + ";");
  c.lines.push_back(std::string("if (!") + (f ? "sot_sum_f64(" : "sot_sum_i64(") + a.expr +
                    "->shape[0], " + a.expr + "->data, " + a.expr + "->strides[0], &" + sum +
                    ")) " + give_up(c));
  if (mean) {  // (of no items: NumPy warns and makes a NaN)
    c.lines.push_back("if (" + a.expr + "->shape[0] == 0) " + give_up(c));
    declare(c, sum + " / static_cast<double>(" + a.expr + "->shape[0])");
  }
  return true;
}

}  // namespace

bool copy_array(OpCtx& c) {
  // (x.copy(): C-ordered whatever x's layout; np.copy(x) keeps x's order, which is C order where x
  // is C-ordered, so a matrix of another layout gives up; one dimension has one order)
  if (c.args.size() != 1 || c.args[0].type.kind != Kind::kArray || c.args[0].type.ndim < 1 ||
      c.args[0].type.ndim > kMaxDims || !(c.args[0].type == c.result) || !c.op->kwargs.empty()) {
    return refuse(c, "a copy of something other than an array, or with an order");
  }
  const Val& a = c.args[0];
  const bool method = c.op->fn.is(loaded_module("numpy").attr("ndarray").attr("copy"));
  if (!method && a.type.ndim > 1) {
    std::string item = size_of(a.type.dtype);
    for (int d = a.type.ndim - 1; d >= 0; --d) {
      const std::string at = "[" + std::to_string(d) + "]";
      c.lines.push_back(cat({"if (", a.expr, "->shape", at, " > 1 && ", a.expr, "->strides", at,
                             " != ", item, ") ", give_up(c)}));
      item = cat({item, " * ", a.expr, "->shape", at});
    }
  }
  c.out = copy_of(c, a, c.name);
  c.out.fresh = true;
  c.out.c_order = true;
  return true;
}

bool filled_array(OpCtx& c) {
  // (np.zeros / ones / empty / full of Python int sizes, or the _like forms of an array's shape:
  // a new C-ordered array of the result's dtype - the _like forms only of a C-ordered array, else
  // give up: NumPy keeps the argument's layout; np.empty's items are zeros here, NumPy leaves them
  // as they come; np.full's value cast as a store's is; a negative size gives up: NumPy raises)
  const std::string& op = c.op->name;
  const bool like = op.size() > 5 && op.compare(op.size() - 5, 5, "_like") == 0;
  const bool full = op == "full" || op == "full_like";
  const int rank = c.result.ndim;
  const std::size_t sizes = c.args.size() - (full ? 1 : 0);
  const Val& a = c.args.empty() ? Val{} : c.args[0];
  const bool sizes_ok =
      like ? sizes == 1 && a.type.kind == Kind::kArray && a.type.ndim == rank
           : sizes == static_cast<std::size_t>(rank) &&
                 std::none_of(
                     c.args.begin(), c.args.begin() + static_cast<std::ptrdiff_t>(sizes),
                     [](const Val& v) { return v.is_slice() || v.type.kind != Kind::kPyInt; });
  if (c.result.kind != Kind::kArray || rank < 1 || c.args.empty() || !sizes_ok) {
    return refuse(c, "an array made of sizes other than Python ints");
  }
  const Val* fill = full ? &c.args.back() : nullptr;
  if (fill != nullptr && !(fill->type.number() && exact_store(fill->type, c.result.dtype))) {
    return refuse(c, "a fill value whose cast tier C does not assert");
  }
  if (c.size_hint > kMostTimedItems) {
    return refuse(c, "an array of " + std::to_string(c.size_hint) + " items");
  }
  const std::string& n = c.name;
  std::string shape = n + "_shape";
  if (like) {
    shape = a.expr + "->shape";
    std::string item = "static_cast<long long>(sizeof(" + a.type.c_type() + "))";
    for (int d = rank - 1; d >= 0; --d) {  // (C order: each dimension steps over those after it)
      const std::string at = "[" + std::to_string(d) + "]";
      c.lines.push_back(cat({"if (", a.expr, "->shape", at, " > 1 && ", a.expr, "->strides", at,
                             " != ", item, ") ", give_up(c)}));
      item = cat({item, " * ", a.expr, "->shape", at});
    }
  } else {
    std::string init = "long long " + shape + "[" + std::to_string(rank) + "] = {";
    for (int d = 0; d < rank; ++d) {
      init += cat({d > 0 ? ", " : "", c.args[static_cast<std::size_t>(d)].expr});
    }
    c.lines.push_back(init + "};");
    for (int d = 0; d < rank; ++d) {
      c.lines.push_back(cat({"if (", shape, "[", std::to_string(d), "] < 0) ", give_up(c)}));
    }
  }
  new_array(c, c.result.dtype, shape, rank, n);
  const std::string t = c_type(c.result.dtype);
  if (fill != nullptr || op == "ones" || op == "ones_like") {
    std::string v = "static_cast<" + t + ">(1)";
    if (fill != nullptr) {
      const Val stored = stored_number(c, *fill, c.result.dtype, n + "_fill");
      v = cast_to(stored.expr, stored.type, c.result.dtype);
    }
    c.lines.push_back(cat({"{ const ", t, " one = ", v, "; for (long long k = 0; k < ", n,
                           "_count; ++k) __builtin_memcpy(", n, "_data + k * sizeof one, &one, ",
                           "sizeof one); }"}));
  } else {
    c.lines.push_back(
        cat({"__builtin_memset(", n, "_data, 0, ", n, "_count * ", size_of(c.result.dtype), ");"}));
  }
  c.out = Val{n, c.result, -1};
  c.out.fresh = true;
  c.out.c_order = true;
  return true;
}

bool norm_vector(OpCtx& c) {
  // np.linalg.norm(x) of a float64 vector: NumPy ravels it (a copy where it is not contiguous),
  // then sqrt(x.dot(x)): its BLAS on contiguous items.
  const Val& a = c.args.empty() ? Val{} : c.args[0];
  if (c.args.size() != 1 || a.type.kind != Kind::kArray || a.type.ndim != 1 ||
      a.type.dtype != DType::kFloat64 || c.result.kind != Kind::kScalar ||
      c.result.dtype != DType::kFloat64) {
    return refuse(c, "a norm of something other than a float64 vector");
  }
  std::string why;
  if (numpy_ddot(&why) == nullptr) {
    return refuse(c, "a norm without NumPy's BLAS (" + why + ")");
  }
  const std::string flat = c.name + "_flat";
  dense_of(c, a, a.expr + "->shape", 1, flat);
  const std::string sq = c.name + "_sq";
  const std::string n = flat + "->shape[0]";
  c.lines.push_back("double " + sq + ";");
  c.lines.push_back("if (!sot_ddot(env, " + n + ", " + flat + "->data, " + flat + "->strides[0], " +
                    flat + "->data, " + flat + "->strides[0], &" + sq + ")) " + give_up(c));
  declare(c, "sot_sqrt(" + sq + ")");
  return true;
}

bool matrix_vector(OpCtx& c) {
  // A @ x of a float64 matrix and vector: NumPy's matmul calls its BLAS's gemv (DOUBLE_gemv,
  // transposed, column-major over C-ordered rows or row-major over F-ordered columns) where both
  // sizes pass 1, the matrix's rows or columns are contiguous and the vector's stride is a
  // positive multiple of its item; its other cases (sizes 0 and 1, other strides) give up.
  const bool kinds = c.args.size() == 2 && c.result.kind == Kind::kArray && c.result.ndim == 1 &&
                     c.result.dtype == DType::kFloat64 && c.args[0].type.kind == Kind::kArray &&
                     c.args[0].type.ndim == 2 && c.args[0].type.dtype == DType::kFloat64 &&
                     c.args[1].type.kind == Kind::kArray && c.args[1].type.ndim == 1 &&
                     c.args[1].type.dtype == DType::kFloat64;
  if (!kinds) {
    return refuse(c, "a matmul other than of a float64 matrix and vector");
  }
  std::string why;
  if (numpy_dgemv(&why) == nullptr) {
    return refuse(c, "a matrix-vector product without NumPy's BLAS (" + why + ")");
  }
  const std::string& a = c.args[0].expr;
  const std::string& x = c.args[1].expr;
  const std::string m = c.name + "_m";
  const std::string n = c.name + "_n";
  const std::string most = "2147483646LL";  // (NumPy's BLAS_MAXSIZE for a BLAS of 32-bit ints)
  c.lines.push_back(
      cat({"const long long ", m, " = ", a, "->shape[0], ", n, " = ", a, "->shape[1];"}));
  c.lines.push_back(cat({"if (", n, " != ", x, "->shape[0] || ", m, " < 2 || ", n, " < 2 || ", m,
                         " > (1LL << 30) || ", n, " > (1LL << 30)) ", give_up(c)}));
  const std::string s0 = a + "->strides[0]";
  const std::string s1 = a + "->strides[1]";
  const std::string order = c.name + "_order";
  const std::string lda = c.name + "_lda";
  c.lines.push_back("int " + order + " = " + std::to_string(kColMajor) + ";");
  c.lines.push_back("long long " + lda + " = " + s0 + " / 8;");
  c.lines.push_back(cat({"if (!(", s1, " == 8 && ", s0, " % 8 == 0 && ", lda, " >= ", n, " && ",
                         lda, " <= ", most, ")) {"}));
  c.lines.push_back(order + " = " + std::to_string(kRowMajor) + ";");
  c.lines.push_back(lda + " = " + s1 + " / 8;");
  c.lines.push_back(cat({"if (!(", s0, " == 8 && ", s1, " % 8 == 0 && ", lda, " >= ", m, " && ",
                         lda, " <= ", most, ")) ", give_up(c)}));
  c.lines.emplace_back("}");
  const std::string sx = x + "->strides[0]";
  c.lines.push_back(
      cat({"if (", sx, " <= 0 || ", sx, " % 8 != 0 || ", sx, " / 8 > ", most, ") ", give_up(c)}));
  const std::string shape = c.name + "_shape";
  c.lines.push_back("const long long " + shape + "[1] = {" + m + "};");
  new_array(c, DType::kFloat64, shape, 1, c.name);
  // (zeros first: a BLAS whose beta = 0 scales y instead of setting it keeps no NaN of the arena)
  c.lines.push_back(cat({"__builtin_memset(", c.name, "_data, 0, ", m, " * 8);"}));
  c.lines.push_back(cat({"env->dgemv(", order, ", ", std::to_string(kTrans), ", ", n, ", ", m,
                         ", 1.0, reinterpret_cast<const double*>(", a, "->data), ", lda,
                         ", reinterpret_cast<const double*>(", x, "->data), ", sx,
                         " / 8, 0.0, reinterpret_cast<double*>(", c.name, "_data), 1);"}));
  c.out = Val{c.name, c.result, -1};
  c.out.fresh = true;
  return true;
}

bool outer_vectors(OpCtx& c) {
  // np.outer(a, b) of two vectors: NumPy multiplies a.ravel()[:, None] by b.ravel()[None, :], so
  // the same elementwise multiply over the two as a column and a row (views of their data).
  const auto vector = [](const Val& v) { return v.type.kind == Kind::kArray && v.type.ndim == 1; };
  if (c.args.size() != 2 || c.result.kind != Kind::kArray || c.result.ndim != 2 ||
      !vector(c.args[0]) || !vector(c.args[1])) {
    return refuse(c, "an outer product of something other than two vectors");
  }
  OpCtx m = c;  // (a as a column, b as a row)
  for (std::size_t k = 0; k < 2; ++k) {
    const Val& a = c.args[k];
    const std::string v = c.name + "_v" + std::to_string(k);
    const std::string n = a.expr + "->shape[0]", s = a.expr + "->strides[0]";
    c.lines.push_back(cat(
        {"const long long ", v, "_shape[2] = {", k == 0 ? n : "1", ", ", k == 0 ? "1" : n, "};"}));
    c.lines.push_back(cat({"const long long ", v, "_strides[2] = {", k == 0 ? s : "0", ", ",
                           k == 0 ? "0" : s, "};"}));
    c.lines.push_back(cat(
        {"const SotArr ", v, "_view = {", a.expr, "->data, ", v, "_shape, ", v, "_strides, 2};"}));
    c.lines.push_back(cat({"const SotArr* const ", v, " = &", v, "_view;"}));
    WType t = a.type;
    t.ndim = 2;
    m.args[k] = Val{v, t, a.arg};
  }
  m.lines.clear();
  if (!elementwise(m, handler_for("multiply", false))) {
    return refuse(c, m.why);
  }
  c.lines.insert(c.lines.end(), m.lines.begin(), m.lines.end());
  c.makes_array = c.makes_array || m.makes_array;
  c.deferred = m.deferred;
  c.out = m.out;
  c.out.c_order = true;  // (NumPy multiplies contiguous ravels: C order)
  return true;
}

bool sum_over_axis(OpCtx& c) {
  // x.sum(axis=k) of a C-ordered float64 array, as NumPy's reduction orders it (checked against
  // NumPy 2.4 and 1.24 on 1,800 shapes): where the dimensions after k hold one item, the reduced
  // axis is its loop's inner one and each result is 0.0 plus its pairwise sum (as a vector's, up to
  // 8192 items); else the inner loop runs over those dimensions and each result adds its items in
  // order from 0.0. Other layouts give up.
  const Val& a = c.args.empty() ? Val{} : c.args[0];
  const int rank = a.type.ndim;
  if (c.args.size() != 2 || a.type.kind != Kind::kArray || a.type.dtype != DType::kFloat64 ||
      c.result.kind != Kind::kArray || c.result.dtype != DType::kFloat64 || rank < 2 ||
      c.result.ndim != rank - 1 || c.args[1].type.kind != Kind::kPyInt) {
    return refuse(c, "a sum over an axis of something other than a float64 array");
  }
  // (the axis's literal: digits after an optional sign, then LL)
  const std::string& literal = c.args[1].expr;
  char* end = nullptr;
  const long long given = std::strtoll(literal.c_str(), &end, 10);
  const long long k = given < 0 ? given + rank : given;
  if (end == literal.c_str() || std::string(end) != "LL" || k < 0 || k >= rank) {
    return refuse(c, "a sum over an axis the array does not have");
  }
  const std::string& n = c.name;
  const std::string& x = a.expr;
  auto dim = [&x](long long d) { return cat({x, "->shape[", std::to_string(d), "]"}); };
  std::string lead = "1LL";
  std::string trail = "1LL";
  std::string shape = "{";
  for (long long d = 0; d < rank; ++d) {
    if (d == k) {
      continue;
    }
    shape += cat({shape.size() > 1 ? ", " : "", dim(d)});
    (d < k ? lead : trail) += cat({" * ", dim(d)});
  }
  // (C order: each dimension of more than one item steps over the items after it)
  std::string item = "8LL";
  for (long long d = rank - 1; d >= 0; --d) {
    const std::string s = cat({x, "->strides[", std::to_string(d), "]"});
    c.lines.push_back(cat({"if (", dim(d), " > 1 && ", s, " != ", item, ") ", give_up(c)}));
    item = cat({item, " * ", dim(d)});
  }
  c.lines.push_back("const long long " + n + "_shape[" + std::to_string(rank - 1) + "] = " + shape +
                    "};");
  new_array(c, DType::kFloat64, n + "_shape", rank - 1, n);
  const std::string m = dim(k);
  c.lines.push_back(
      cat({"const long long ", n, "_lead = ", lead, ", ", n, "_trail = ", trail, ";"}));
  c.lines.push_back(cat({"double* const ", n, "_out = reinterpret_cast<double*>(", n, "_data);"}));
  c.lines.push_back(cat({"const char* const ", n, "_in = ", x, "->data;"}));
  const std::string l = n + "_l";
  const std::string t = n + "_t";
  const std::string o = n + "_o";
  c.lines.push_back(cat({"if (", n, "_trail == 1) {"}));
  c.lines.push_back(cat({"for (long long ", l, " = 0; ", l, " < ", n, "_lead; ++", l, ") {"}));
  c.lines.push_back(cat({"if (!sot_sum_f64(", m, ", ", n, "_in + ", l, " * ", m, " * 8, 8, ", n,
                         "_out + ", l, ")) ", give_up(c)}));
  c.lines.emplace_back("}");
  c.lines.emplace_back("} else {");
  c.lines.push_back(cat({"for (long long ", l, " = 0; ", l, " < ", n, "_lead; ++", l, ") {"}));
  c.lines.push_back(cat({"double* const ", o, " = ", n, "_out + ", l, " * ", n, "_trail;"}));
  c.lines.push_back(cat(
      {"for (long long ", t, " = 0; ", t, " < ", n, "_trail; ++", t, ") ", o, "[", t, "] = 0.0;"}));
  c.lines.push_back(cat({"for (long long ", n, "_j = 0; ", n, "_j < ", m, "; ++", n, "_j) {"}));
  c.lines.push_back(cat({"const double* const ", n, "_r = reinterpret_cast<const double*>(", n,
                         "_in) + (", l, " * ", m, " + ", n, "_j) * ", n, "_trail;"}));
  c.lines.push_back(cat({"for (long long ", t, " = 0; ", t, " < ", n, "_trail; ++", t, ") ", o, "[",
                         t, "] += ", n, "_r[", t, "];"}));
  c.lines.emplace_back("}");
  c.lines.emplace_back("}");
  c.lines.emplace_back("}");
  c.out = Val{n, c.result, -1};
  c.out.fresh = true;
  c.out.c_order = true;  // (NumPy's reduction of a C-ordered array: C order)
  return true;
}

bool vector_extreme(OpCtx& c, bool greatest) {
  // np.max(x) / x.min() of a float64 or int64 vector: its items compared in order (the prelude's
  // sot_extreme_*; where NumPy's answer could differ from that, the run gives up)
  if (c.args.size() != 1) {
    return refuse(c, "np.max()/np.min() of another form");
  }
  const Val& a = c.args[0];
  if (c.result.kind != Kind::kScalar || a.type.kind != Kind::kArray || a.type.ndim != 1 ||
      a.type.dtype != c.result.dtype ||
      (c.result.dtype != DType::kFloat64 && c.result.dtype != DType::kInt64)) {
    return refuse(c, "np.max()/np.min() of something other than a float64 or int64 vector");
  }
  const bool f = c.result.dtype == DType::kFloat64;
  c.lines.push_back(c.result.c_type() + " " + c.name + ";");
  c.lines.push_back(std::string("if (!") + (f ? "sot_extreme_f64(" : "sot_extreme_i64(") + a.expr +
                    "->shape[0], " + a.expr + "->data, " + a.expr + "->strides[0], " +
                    (greatest ? "true" : "false") + ", &" + c.name + ")) " + give_up(c));
  return true;
}

bool sum_vector(OpCtx& c) {
  return c.args.size() == 2 ? sum_over_axis(c) : vector_reduction(c, false);
}

bool mean_vector(OpCtx& c) {
  return vector_reduction(c, true);
}

}  // namespace sot::graph::whole
