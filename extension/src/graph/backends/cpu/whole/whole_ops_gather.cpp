// Tier C's handler of indexing by an array of ints (whole_ops.hpp): x[idx], a vector of
// positions along x's first dimension, as NumPy's advanced indexing computes it - a new C-ordered
// array of idx's length and x's other dimensions, each of its rows the item of x that the
// position picks (wrapped as Python's; out of range gives up: NumPy raises IndexError).
#include <string>

#include "graph/backends/cpu/whole/whole_arrays.hpp"
#include "graph/backends/cpu/whole/whole_ops.hpp"

namespace sot::graph::whole {

namespace {

// Whether an array of dtype `t` is an index array whose every value NumPy takes as the position
// it is (its ints fit a long long: not uint64, whose values past 2**63 NumPy refuses to cast).
bool index_dtype(DType t) {
  const char k = kind(t);
  return k == 'i' || (k == 'u' && t != DType::kUInt64);
}

}  // namespace

bool gather_rows(OpCtx& c) {
  if (c.args.size() != 2 || c.args[1].is_slice() || c.args[1].newaxis) {
    return refuse(c, "an index of another form");
  }
  const Val& a = c.args[0];
  const Val& idx = c.args[1];
  const int rank = a.type.ndim;
  if (a.type.kind != Kind::kArray || idx.type.kind != Kind::kArray || idx.type.ndim != 1 ||
      !index_dtype(idx.type.dtype) || rank < 1 || rank > kMaxDims || !(c.result == a.type)) {
    return refuse(c, "an index array other than a vector of ints into an array");
  }
  if (c.size_hint > kMostTimedItems) {
    return refuse(c, "an array of " + std::to_string(c.size_hint) + " items");
  }
  const std::string& n = c.name;
  const std::string shape = n + "_shape";
  std::string dims =
      "long long " + shape + "[" + std::to_string(rank) + "] = {" + idx.expr + "->shape[0]";
  for (int d = 1; d < rank; ++d) {
    dims += cat({", ", a.expr, "->shape[", std::to_string(d), "]"});
  }
  c.lines.push_back(dims + "};");
  new_array(c, a.type.dtype, shape, rank, n);
  // (each row: its position read and checked, then the item it picks copied element by element
  // through x's strides, the rows of the result one after the other)
  const std::string item = "static_cast<long long>(sizeof(" + a.type.c_type() + "))";
  const std::string row = n + "_r";
  c.lines.push_back("char* " + n + "_to = " + n + "_data;");
  c.lines.push_back(
      cat({"for (long long ", row, " = 0; ", row, " < ", shape, "[0]; ++", row, ") {"}));
  c.lines.push_back(idx.type.c_type() + " " + n + "_j;");
  c.lines.push_back(cat({"__builtin_memcpy(&", n, "_j, ", idx.expr, "->data + ", row, " * ",
                         idx.expr, "->strides[0], sizeof ", n, "_j);"}));
  c.lines.push_back("long long " + n + "_at;");
  c.lines.push_back(cat({"if (!sot_index(static_cast<long long>(", n, "_j), ", a.expr,
                         "->shape[0], &", n, "_at)) ", give_up(c)}));
  std::string from = cat({a.expr, "->data + ", n, "_at * ", a.expr, "->strides[0]"});
  for (int d = 1; d < rank; ++d) {
    const std::string i = n + "_i" + std::to_string(d);
    c.lines.push_back(cat({"for (long long ", i, " = 0; ", i, " < ", shape, "[", std::to_string(d),
                           "]; ++", i, ") {"}));
    from += cat({" + ", i, " * ", a.expr, "->strides[", std::to_string(d), "]"});
  }
  c.lines.push_back(cat({"__builtin_memcpy(", n, "_to, ", from, ", ", item, ");"}));
  c.lines.push_back(n + "_to += " + item + ";");
  for (int d = 1; d < rank; ++d) {
    c.lines.emplace_back("}");
  }
  c.lines.emplace_back("}");
  c.out = Val{n, c.result, -1};
  c.out.fresh = true;
  c.out.c_order = true;
  return true;
}

}  // namespace sot::graph::whole
