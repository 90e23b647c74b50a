// Tier C's handlers of ops it computes through NumPy's own loops, and of np.arange
// (whole_ops.hpp).
//   - a float ufunc with no form of tier C's own (exp, log, sin, power, clip, ...): NumPy's strided
//     loop for it, found as tier B finds it (numpy_loops.hpp: the loop eager NumPy runs for the
//     dtype, checked against the ufunc's own call on probe values), called on the operands made
//     C-ordered (a copy where one is not) and a new array: each element is the loop's, as tier B's
//     chunks are. Not emitted where NumPy offers no such loop (NumPy 1.x);
//   - np.arange of Python ints into int64 or float64: start + i * step, exact below 2**40 (past it
//     the function gives up; a zero step too: NumPy raises).
#include <cstddef>
#include <string>
#include <vector>

#include "core/loaded_module.hpp"
#include "graph/backends/cpu/numpy_loops.hpp"
#include "graph/backends/cpu/whole/whole_arrays.hpp"
#include "graph/backends/cpu/whole/whole_ops.hpp"
#include "graph/rules/ufuncs.hpp"

namespace py = pybind11;

namespace sot::graph::whole {

namespace {

// The lines that call loop `index` on `count` items of the pointers `io` (operands, then the
// result) with `strides`, giving up where it fails.
void call_loop(OpCtx& c, std::size_t index, const std::vector<std::string>& io,
               const std::vector<std::string>& strides, const std::string& count) {
  const std::string& n = c.name;
  std::string data = "char* const " + n + "_io[] = {";
  std::string steps = "const long " + n + "_st[] = {";
  for (std::size_t k = 0; k < io.size(); ++k) {
    data += cat({k > 0 ? ", " : "", io[k]});
    steps += cat({k > 0 ? ", " : "", strides[k]});
  }
  c.lines.push_back(data + "};");
  c.lines.push_back(steps + "};");
  c.lines.push_back("const long " + n + "_n = static_cast<long>(" + count + ");");
  const std::string f = "env->loops[" + std::to_string(index) + "]";
  c.lines.push_back(cat({"if (", n, "_n > 0 && ", f, ".fn(", f, ".context, ", n, "_io, &", n,
                         "_n, ", n, "_st, ", f, ".auxdata) < 0) ", give_up(c)}));
}

}  // namespace

bool ufunc_loop(OpCtx& c) {
  if (c.graph == nullptr || c.loops == nullptr || c.op == nullptr || c.op->mutates ||
      !c.op->kwargs.empty() || c.args.size() != c.op->args.size()) {
    return refuse(c, "a ufunc call of another form (in place, keywords)");
  }
  const DType t = c.result.dtype;
  const bool array = c.result.kind == Kind::kArray;
  if ((c.result.kind != Kind::kScalar && !array) || c.result.c_kind() != 'f' ||
      (array && (c.result.ndim < 1 || c.result.ndim > kMaxDims))) {
    return refuse(c, "a ufunc whose result is not a float array or scalar (NumPy's loop: floats)");
  }
  if (array && c.size_hint > kMostTimedItems) {
    return refuse(c, "an array of " + std::to_string(c.size_hint) + " items");
  }
  const py::module_ numpy = loaded_module("numpy");
  const UfuncCall call = ufunc_call(*c.graph, *c.op, numpy);
  if (call.ufunc.is_none() || call.args.size() > c.args.size()) {
    return refuse(c, "no NumPy ufunc computes it");
  }
  const std::vector<Val> operands(c.args.begin(),
                                  c.args.begin() + static_cast<std::ptrdiff_t>(call.args.size()));
  const std::string size = "static_cast<long>(sizeof(" + c.result.c_type() + "))";
  std::vector<long> probe_strides;
  std::vector<py::object> constants;
  std::vector<std::string> strides;
  for (std::size_t k = 0; k < operands.size(); ++k) {
    const Val& v = operands[k];
    const bool is_array = v.type.kind == Kind::kArray;
    if (is_array ? (!array || v.type.dtype != t || v.type.ndim < 1 || v.type.ndim > c.result.ndim)
                 : (!v.type.number() || v.is_slice() || v.type.kind == Kind::kPyBool ||
                    (v.type.kind == Kind::kScalar && v.type.dtype != t))) {
      return refuse(c, "a ufunc's operands of other dtypes than its result's");
    }
    probe_strides.push_back(is_array ? static_cast<long>(itemsize(t)) : 0);
    strides.push_back(is_array ? size : "0L");
    const Arg& a = call.args[k];
    // (a scalar the graph computes is probed with a stand-in, as tier B's: the loop is one)
    constants.push_back(is_array                      ? py::object()
                        : a.kind == Arg::Kind::kConst ? a.constant
                                                      : py::object(py::float_(0.75)));
  }
  probe_strides.push_back(static_cast<long>(itemsize(t)));
  strides.push_back(size);
  NativeLoop loop{};
  py::object owner;
  std::string why;
  if (!numpy_loop(call.ufunc, t, probe_strides, constants, &loop, &owner, &why)) {
    return refuse(c, "no NumPy loop to call: " + why);
  }
  const std::string& n = c.name;
  std::vector<std::string>
      scalars;  // (each scalar operand as the result's type, before the loop is kept)
  for (std::size_t k = 0; k < operands.size(); ++k) {
    const Val& v = operands[k];
    if (v.type.kind == Kind::kArray) {
      continue;  // (below, once the result's shape is known)
    }
    std::string e;
    if (!operand_as(c, v, t, &e)) {
      return refuse(c, "a ufunc's operand tier C does not cast");
    }
    scalars.push_back(cat({c.result.c_type(), " ", n, "_a", std::to_string(k), " = ", e, ";"}));
  }
  c.lines.insert(c.lines.end(), scalars.begin(), scalars.end());
  const std::size_t index = c.loops->loops.size();
  c.loops->loops.push_back(loop);
  c.loops->owners.push_back(std::move(owner));
  std::vector<std::string> io;
  if (!array) {
    c.lines.push_back(c.result.c_type() + " " + n + " = 0;");
    for (std::size_t k = 0; k < operands.size(); ++k) {
      io.push_back("reinterpret_cast<char*>(&" + n + "_a" + std::to_string(k) + ")");
    }
    io.push_back("reinterpret_cast<char*>(&" + n + ")");
    call_loop(c, index, io, strides, "1");
    return true;
  }
  const int rank = c.result.ndim;
  broadcast(c, operands, rank, n + "_shape");
  laid_c_result(c, operands, rank, n + "_shape");
  new_array(c, t, n + "_shape", rank, n);
  for (std::size_t k = 0; k < operands.size(); ++k) {
    const std::string at = n + "_a" + std::to_string(k);
    if (operands[k].type.kind == Kind::kArray) {
      dense_of(c, operands[k], n + "_shape", rank, at);
      io.push_back(at + "->data");
    } else {
      io.push_back("reinterpret_cast<char*>(&" + at + ")");
    }
  }
  io.push_back(n + "_data");
  call_loop(c, index, io, strides, n + "_count");
  c.out = Val{n, c.result, -1};
  c.out.fresh = true;
  c.out.c_order = true;  // (laid_c_result)
  return true;
}

bool arange_op(OpCtx& c) {
  const DType t = c.result.dtype;
  if (c.result.kind != Kind::kArray || c.result.ndim != 1 ||
      (t != DType::kInt64 && t != DType::kFloat64) || c.args.empty() || c.args.size() > 3) {
    return refuse(c, "an arange other than of int64 or float64");
  }
  for (const Val& v : c.args) {
    if (v.is_slice() || v.type.kind != Kind::kPyInt) {
      return refuse(c, "an arange of something other than Python ints");
    }
  }
  const std::string& n = c.name;
  const bool one = c.args.size() == 1;
  c.lines.push_back(cat({"const long long ", n, "_a = ", one ? "0LL" : c.args[0].expr, ", ", n,
                         "_b = ", one ? c.args[0].expr : c.args[1].expr, ", ", n,
                         "_c = ", c.args.size() == 3 ? c.args[2].expr : "1LL", ";"}));
  const std::string most = "(1LL << 40)";
  c.lines.push_back(
      cat({"if (",  n,    "_c == 0 || ", n,    "_a > ",  most, " || ",   n,         "_a < -", most,
           " || ",  n,    "_b > ",       most, " || ",   n,    "_b < -", most,      " || ",   n,
           "_c > ", most, " || ",        n,    "_c < -", most, ") ",     give_up(c)}));
  // (its length: the ceiling of (stop - start) / step, none where that is not positive)
  c.lines.push_back(cat({"long long ", n, "_len = ",     n, "_c > 0 ? (", n, "_b - ", n,
                         "_a + ",      n, "_c - 1) / ",  n, "_c : (",     n, "_a - ", n,
                         "_b - ",      n, "_c - 1) / -", n, "_c;"}));
  c.lines.push_back(
      cat({"const long long ", n, "_shape[1] = {", n, "_len > 0 ? ", n, "_len : 0};"}));
  new_array(c, t, n + "_shape", 1, n);
  const std::string ct = c_type(t);
  c.lines.push_back(cat({"for (long long k = 0; k < ", n, "_count; ++k) { const ", ct,
                         " v = static_cast<", ct, ">(", n, "_a + k * ", n, "_c); __builtin_memcpy(",
                         n, "_data + k * sizeof v, &v, sizeof v); }"}));
  c.out = Val{n, c.result, -1};
  c.out.fresh = true;
  c.out.c_order = true;
  return true;
}

}  // namespace sot::graph::whole
