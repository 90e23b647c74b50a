// Tier C's handler of counts over a whole array (whole_ops.hpp): np.count_nonzero(x) with no axis,
// the items of x that are not zero (NaN counts, -0.0 does not: each item's truth), as NumPy 1.x's
// Python int or NumPy 2's int64 scalar - the graph's kind of the result says which.
#include <string>

#include "graph/backends/cpu/whole/whole_arrays.hpp"
#include "graph/backends/cpu/whole/whole_ops.hpp"

namespace sot::graph::whole {

bool count_nonzero_op(OpCtx& c) {
  const Val& a = c.args.empty() ? Val{} : c.args[0];
  const bool counted = c.result.kind == Kind::kPyInt ||
                       (c.result.kind == Kind::kScalar && c.result.dtype == DType::kInt64);
  if (c.args.size() != 1 || !c.op->kwargs.empty() || a.type.kind != Kind::kArray ||
      a.type.ndim < 1 || a.type.ndim > kMaxDims || !counted || kind(a.type.dtype) == 'c' ||
      c_type(a.type.dtype).empty()) {
    return refuse(c, "a count over axes, or of something other than an array of numbers");
  }
  const std::string& n = c.name;
  const int rank = a.type.ndim;
  c.lines.push_back("long long " + n + " = 0;");
  std::string at = a.expr + "->data";
  for (int d = 0; d < rank; ++d) {
    const std::string i = n + "_i" + std::to_string(d);
    const std::string dim = std::to_string(d);
    c.lines.push_back(cat(
        {"for (long long ", i, " = 0; ", i, " < ", a.expr, "->shape[", dim, "]; ++", i, ") {"}));
    at += cat({" + ", i, " * ", a.expr, "->strides[", dim, "]"});
  }
  c.lines.push_back(a.type.c_type() + " " + n + "_x;");
  c.lines.push_back(cat({"__builtin_memcpy(&", n, "_x, ", at, ", sizeof ", n, "_x);"}));
  c.lines.push_back(cat({n, " += ", n, "_x != 0 ? 1 : 0;"}));
  for (int d = 0; d < rank; ++d) {
    c.lines.emplace_back("}");
  }
  return true;
}

}  // namespace sot::graph::whole
