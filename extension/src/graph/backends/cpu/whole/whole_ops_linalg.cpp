// Tier C's handler of np.linalg.solve(A, b) of a float64 matrix and vector (whole_ops.hpp): the
// loop NumPy's solve runs (its gufunc _umath_linalg.solve1, the LAPACK gesv NumPy calls, on A and
// b through their strides), into a new vector - NumPy's result bit for bit. A singular matrix
// (the loop's invalid flag), sizes that do not agree, strides that are not whole items, and NumPy
// 1.x give up or are not emitted: NumPy's own call then raises LinAlgError or computes.
#include <string>
#include <vector>

#include "core/array_fields.hpp"
#include "core/loaded_module.hpp"
#include "graph/backends/cpu/numpy_loops.hpp"
#include "graph/backends/cpu/whole/whole_arrays.hpp"
#include "graph/backends/cpu/whole/whole_ops.hpp"

namespace py = pybind11;

namespace sot::graph::whole {

namespace {

// Whether `loop`, called as the generated code calls it, solves a fixed 3x3 system exactly as
// np.linalg.solve does (bit for bit): the loop is the one NumPy's solve runs.
bool solves_as_numpy(const NativeLoop& loop) {
  const py::module_ numpy = loaded_module("numpy");
  py::list rows;
  const double a[3][3] = {{4.0, -1.25, 0.5}, {2.0, 7.0, -3.0}, {0.1, 1.0 / 3.0, 5.5}};
  for (const auto& row : a) {
    rows.append(py::make_tuple(row[0], row[1], row[2]));
  }
  const py::object A = numpy.attr("array")(rows);
  const py::object b = numpy.attr("array")(py::make_tuple(1.0, -2.0 / 3.0, 1e-3));
  const py::object want = numpy.attr("linalg").attr("solve")(A, b);
  const py::object got = numpy.attr("empty")(3);
  char* const io[] = {array_fields(A.ptr())->data, array_fields(b.ptr())->data,
                      array_fields(got.ptr())->data};
  const long dims[] = {1, 3};
  const long strides[] = {0, 0, 0, 24, 8, 8, 8};
  if (loop.fn(loop.context, io, dims, strides, loop.auxdata) < 0) {
    return false;
  }
  return got.attr("tobytes")().equal(want.attr("tobytes")());
}

}  // namespace

bool solve_op(OpCtx& c) {
  const bool kinds = c.args.size() == 2 && c.op->kwargs.empty() && c.result.kind == Kind::kArray &&
                     c.result.ndim == 1 && c.result.dtype == DType::kFloat64 &&
                     c.args[0].type.kind == Kind::kArray && c.args[0].type.ndim == 2 &&
                     c.args[0].type.dtype == DType::kFloat64 &&
                     c.args[1].type.kind == Kind::kArray && c.args[1].type.ndim == 1 &&
                     c.args[1].type.dtype == DType::kFloat64;
  if (!kinds || c.loops == nullptr) {
    return refuse(c, "a solve other than of a float64 matrix and vector");
  }
  NativeLoop loop{};
  py::object owner;
  std::string why;
  const py::object gufunc = loaded_module("numpy.linalg._umath_linalg").attr("solve1");
  if (!numpy_gufunc_loop(gufunc, DType::kFloat64, &loop, &owner, &why)) {
    return refuse(c, "no NumPy loop to call: " + why);
  }
  static const bool kSame = solves_as_numpy(loop);
  if (!kSame) {
    return refuse(c, "NumPy's loop of solve1 differs from np.linalg.solve");
  }
  const std::size_t index = c.loops->loops.size();
  c.loops->loops.push_back(loop);
  c.loops->owners.push_back(std::move(owner));
  const std::string& a = c.args[0].expr;
  const std::string& b = c.args[1].expr;
  const std::string& n = c.name;
  const std::string m = n + "_m";
  c.lines.push_back("const long long " + m + " = " + a + "->shape[0];");
  c.lines.push_back(cat({"if (", a, "->shape[1] != ", m, " || ", b, "->shape[0] != ", m, " || ", m,
                         " < 1 || ", m, " > (1LL << 30)) ", give_up(c)}));
  c.lines.push_back(cat({"if (", a, "->strides[0] % 8 != 0 || ", a, "->strides[1] % 8 != 0 || ", b,
                         "->strides[0] % 8 != 0) ", give_up(c)}));
  c.lines.push_back("const long long " + n + "_shape[1] = {" + m + "};");
  new_array(c, DType::kFloat64, n + "_shape", 1, n);
  c.lines.push_back(
      cat({"char* const ", n, "_io[] = {", a, "->data, ", b, "->data, ", n, "_data};"}));
  c.lines.push_back(cat({"const long ", n, "_dims[] = {1L, static_cast<long>(", m, ")};"}));
  c.lines.push_back(cat({"const long ", n, "_st[] = {0L, 0L, 0L, static_cast<long>(", a,
                         "->strides[0]), static_cast<long>(", a,
                         "->strides[1]), static_cast<long>(", b, "->strides[0]), 8L};"}));
  const std::string f = "env->loops[" + std::to_string(index) + "]";
  c.lines.push_back(cat({"if (", f, ".fn(", f, ".context, ", n, "_io, ", n, "_dims, ", n, "_st, ",
                         f, ".auxdata) < 0) ", give_up(c)}));
  c.out = Val{n, c.result, -1};
  c.out.fresh = true;
  c.out.c_order = true;
  return true;
}

}  // namespace sot::graph::whole
