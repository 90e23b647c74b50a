#include "graph/backends/cuda/device_library.hpp"

#include <pybind11/pybind11.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/loaded_module.hpp"
#include "graph/backends/cuda/cuda_kernel.hpp"
#include "graph/backends/cuda/device_array.hpp"
#include "graph/backends/cuda/device_copy.hpp"
#include "graph/backends/cuda/device_creation.hpp"
#include "graph/backends/cuda/device_inplace.hpp"
#include "graph/backends/cuda/device_joins.hpp"
#include "graph/backends/cuda/device_reductions.hpp"
#include "graph/backends/cuda/device_views.hpp"
#include "graph/backends/cuda/residency.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

PyObject* norm_fn() {
  static PyObject* const fn =
      py::object(loaded_module("numpy").attr("linalg").attr("norm")).release().ptr();
  return fn;
}

PyObject* einsum_fn() {
  static PyObject* const fn = py::object(loaded_module("numpy").attr("einsum")).release().ptr();
  return fn;
}

bool is_product(PyObject* fn) {
  static PyObject* const fns[3] = {
      py::object(loaded_module("numpy").attr("matmul")).release().ptr(),
      py::object(loaded_module("numpy").attr("dot")).release().ptr(),
      py::object(loaded_module("operator").attr("matmul")).release().ptr(),
  };
  return fn == fns[0] || fn == fns[1] || fn == fns[2];
}

// A device operand of a product: the value itself, or a host array's mirror.
std::optional<DeviceValue> operand(Residency& r, PyObject* v) {
  if (const DeviceValue* d = device_value_of(v)) {
    return *d;
  }
  if (auto m = r.mirror(v)) {
    return *m;
  }
  return std::nullopt;
}

// An einsum of two matrices that is a product x @ y: which operand is x, and whether x and y are
// the operands' transposes.
struct ProductForm {
  int first = 0;
  bool transpose_x = false;
  bool transpose_y = false;
};

// `spec` ("ij,jk->ik", "ij,kj", "ji,jk->ki", ...: two operands of two distinct letters sharing one,
// summed over it, the output the other two) as a product; nullopt for any other einsum.
std::optional<ProductForm> einsum_product(const std::string& spec) {
  const std::size_t arrow = spec.find("->");
  const std::string in = spec.substr(0, arrow);
  const std::size_t comma = in.find(',');
  if (comma != 2 || in.size() != 5) {
    return std::nullopt;
  }
  const std::string a = in.substr(0, 2);
  const std::string b = in.substr(3, 2);
  for (const char c : a + b) {
    if (std::isalpha(static_cast<unsigned char>(c)) == 0) {
      return std::nullopt;
    }
  }
  if (a[0] == a[1] || b[0] == b[1]) {
    return std::nullopt;
  }
  const int shared =
      (a[0] == b[0] || a[0] == b[1] ? 1 : 0) + (a[1] == b[0] || a[1] == b[1] ? 1 : 0);
  if (shared != 1) {
    return std::nullopt;
  }
  const char j = a[0] == b[0] || a[0] == b[1] ? a[0] : a[1];
  const char i = a[0] == j ? a[1] : a[0];
  const char k = b[0] == j ? b[1] : b[0];
  // (implicit output: the letters seen once, in alphabetical order)
  const std::string out = arrow == std::string::npos
                              ? std::string(1, std::min(i, k)) + std::max(i, k)
                              : spec.substr(arrow + 2);
  if (out == std::string{i, k}) {  // x = a as (i, j), y = b as (j, k)
    return ProductForm{0, a[0] == j, b[1] == j};
  }
  if (out == std::string{k, i}) {  // x = b as (k, j), y = a as (j, i)
    return ProductForm{1, b[0] == j, a[1] == j};
  }
  return std::nullopt;
}

DeviceValue transposed(const DeviceValue& v) {
  DeviceValue t = v;
  t.whole = false;
  t.shape.assign(v.shape.rbegin(), v.shape.rend());
  t.strides.assign(v.strides.rbegin(), v.strides.rend());
  return t;
}

// `v` as a row-major matrix for the BLAS (its rows' stride, or its columns' when it is stored
// transposed), or nullopt for another layout.
// A vector operand of a product as the matrix of one row (`row`: the left operand) or one column
// it stands for; a matrix as it is.
DeviceValue as_two_axes(const DeviceValue& v, bool row) {
  if (v.shape.size() != 1) {
    return v;
  }
  DeviceValue m = v;
  const std::int64_t item = itemsize(v.dtype());
  const std::int64_t n = v.shape[0];
  m.shape = row ? std::vector<std::int64_t>{1, n} : std::vector<std::int64_t>{n, 1};
  m.strides = row ? std::vector<std::int64_t>{n * item, v.strides[0]}
                  : std::vector<std::int64_t>{v.strides[0], item};
  return m;
}

std::optional<GemmMatrix> as_matrix(const DeviceValue& v) {
  const std::int64_t item = itemsize(v.dtype());
  const std::int64_t rows = v.shape[0];
  const std::int64_t cols = v.shape[1];
  const std::int64_t s0 = v.strides[0];
  const std::int64_t s1 = v.strides[1];
  const std::uint64_t address = v.block->address + static_cast<std::uint64_t>(v.offset);
  constexpr std::int64_t kMostLd = std::numeric_limits<int>::max();
  if (s0 / item > kMostLd || s1 / item > kMostLd) {
    return std::nullopt;
  }
  if ((cols == 1 || s1 == item) && s0 > 0 && s0 % item == 0 && s0 / item >= cols) {
    return GemmMatrix{address, s0 / item, false};
  }
  if (rows == 1 && s1 == item) {
    return GemmMatrix{address, cols, false};
  }
  if ((rows == 1 || s0 == item) && s1 > 0 && s1 % item == 0 && s1 / item >= rows) {
    return GemmMatrix{address, s1 / item, true};
  }
  return std::nullopt;
}

// The check of a product's result (NumPy's matmul warns "overflow" or "invalid value" where its
// result is not finite, and the BLAS reports nothing): x * 0.0 is NaN from a non-NaN operand where
// x is infinite, sqrt(where(isnan(x), -1.0, 1.0)) where x is NaN; either sets the kernel's invalid
// flag.
kir::Expr scalar_expr(kir::Kernel& k, double v, DType dtype) {
  kir::Expr e;
  e.kind = kir::Expr::Kind::kScalar;
  e.dtype = dtype;
  e.scalar = static_cast<int>(k.scalars.size());
  k.scalars.push_back(kir::Scalar{-1, py::float_(v)});
  return e;
}

kir::Expr call_expr(const char* fn, std::vector<int> operands, DType dtype) {
  kir::Expr e;
  e.kind = kir::Expr::Kind::kCall;
  e.fn = fn;
  e.ufunc = loaded_module("numpy").attr(fn);
  e.operands = std::move(operands);
  e.dtype = dtype;
  return e;
}

kir::Kernel finite_check_ir(const std::string& name, DType dtype) {
  kir::Kernel k = load_store_kernel(name, dtype, 1);         // e0 = x
  k.exprs.push_back(scalar_expr(k, 0.0, dtype));             // e1
  k.exprs.push_back(call_expr("multiply", {0, 1}, dtype));   // e2 = x * 0.0
  k.exprs.push_back(call_expr("isnan", {0}, DType::kBool));  // e3
  k.exprs.push_back(scalar_expr(k, -1.0, dtype));            // e4
  k.exprs.push_back(scalar_expr(k, 1.0, dtype));             // e5
  kir::Expr select;                                          // e6
  select.kind = kir::Expr::Kind::kSelect;
  select.fn = "where";
  select.ufunc = loaded_module("numpy").attr("where");
  select.operands = {3, 4, 5};
  select.dtype = dtype;
  k.exprs.push_back(select);
  k.exprs.push_back(call_expr("sqrt", {6}, dtype));    // e7
  k.exprs.push_back(call_expr("add", {2, 7}, dtype));  // e8
  k.stores.push_back(kir::Store{8, 1});
  return k;
}

// Whether every element of the product's result is finite (nullopt: it could not be checked).
std::optional<bool> all_finite(Residency& r, const DeviceValue& c) {
  const std::string name = "finite_" + std::string(graph::name(c.dtype()));
  OwnKernel& check = own_kernel(r.device(), name, [&] { return finite_check_ir(name, c.dtype()); });
  if (!check.cuda->usable()) {
    return std::nullopt;
  }
  std::string why;
  Staging staging(*r.pool());
  LaunchFlags flags(r, staging, true, &why);
  const std::uint64_t scratch = staging.take(c.block->bytes, &why);
  if (flags.address() == 0 || scratch == 0) {
    return std::nullopt;
  }
  const std::int64_t n = c.size();
  const std::int64_t item = itemsize(c.dtype());
  const std::vector<DeviceArray> arrays = {DeviceArray{c.block->address, {n}, {item}},
                                           DeviceArray{scratch, {n}, {item}}};
  std::vector<std::uint64_t> bits;
  for (const double v : {0.0, -1.0, 1.0}) {
    std::uint64_t b = 0;
    std::memcpy(&b, &v, sizeof b);
    bits.push_back(b);
  }
  std::uint64_t launches = 0;
  if (check.cuda->launch(check.k, {n}, arrays, bits, flags.address(), staging, &launches, &why) !=
      CudaKernel::Launched::kQueued) {
    return std::nullopt;
  }
  const std::optional<unsigned> word = flags.settle(&why);
  if (!word) {
    return std::nullopt;
  }
  return *word == 0;
}

// A product's result: the device array, or for two vectors NumPy's scalar, copied out (nullptr,
// no error set, where it is not finite: NumPy's matmul on the host warns or raises as the error
// state says; with an error set where the run's flags said one).
PyObject* product_result(Residency& r, const std::shared_ptr<DeviceValue>& result) {
  const std::optional<bool> finite = all_finite(r, *result);
  if (!finite || !*finite) {
    return nullptr;
  }
  try {
    if (!result->shape.empty()) {
      return wrap(result).release().ptr();
    }
    std::optional<py::object> value = read_element(r, result->block->address, result->dtype());
    return value ? value->release().ptr() : nullptr;
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  }
}

// The product x @ y of a run_library_op step (operands nullopt where the device has no form of
// them): a device array or NumPy's scalar, or nullptr as run_library_op. `least_dims`: 1 where
// vectors may come (matmul, dot), 2 (einsum).
PyObject* run_product(Residency& r, std::optional<DeviceValue> a, std::optional<DeviceValue> b,
                      const ProductForm& form, int least_dims) {
  // (matmul and dot take vectors: a row on the left, a column on the right)
  const int a_dims = a ? static_cast<int>(a->shape.size()) : 0;
  const int b_dims = b ? static_cast<int>(b->shape.size()) : 0;
  if (!a || !b || a->dtype() != b->dtype() || a_dims < least_dims || a_dims > 2 ||
      b_dims < least_dims || b_dims > 2 || !is_float64_or_32(a->dtype())) {
    return nullptr;
  }
  a = as_two_axes(*a, true);
  b = as_two_axes(*b, false);
  if (form.transpose_x) {
    a = transposed(*a);
  }
  if (form.transpose_y) {
    b = transposed(*b);
  }
  const std::int64_t m = a->shape[0];
  const std::int64_t k = a->shape[1];
  const std::int64_t n = b->shape[1];
  constexpr std::int64_t kMost = std::numeric_limits<int>::max();
  if (b->shape[0] != k || m <= 0 || n <= 0 || k < 0 || m > kMost || n > kMost || k > kMost) {
    return nullptr;
  }
  std::string why;
  std::optional<GemmMatrix> ma;
  std::optional<GemmMatrix> mb;
  if (k > 0) {
    if (!make_device_current(*a->block, &why) || !make_device_current(*b->block, &why)) {
      return nullptr;
    }
    ma = as_matrix(*a);
    mb = as_matrix(*b);
    if (!ma || !mb) {
      return nullptr;
    }
    ma->dims = a_dims;
    mb->dims = b_dims;
  }
  // The result's shape as NumPy gives it: (m, n), (n,) or (m,), or a scalar of two vectors.
  std::vector<std::int64_t> shape;
  if (a_dims == 2) {
    shape.push_back(m);
  }
  if (b_dims == 2) {
    shape.push_back(n);
  }
  auto block = std::make_shared<DeviceBlock>(r.device(), r.pool(), shape, a->dtype());
  if (!make_device_current(*block, &why)) {
    return nullptr;
  }
  const char kind = a->dtype() == DType::kFloat64 ? 'd' : 'f';
  r.did_host_work();  // (the BLAS call is no launch a loop step's replay could queue again)
  GemmMatrix mc{block->address, n, false, static_cast<int>(shape.size())};
  // (nothing to add: NumPy's zeros, as a sum of no products; `x[:0] @ y[:0]` is 0.0)
  if (k == 0 ? !r.device().zero(block->address, block->bytes, &why)
             : !r.device().gemm(kind, m, n, k, *ma, *mb, mc, &why)) {
    return nullptr;
  }
  return product_result(r, whole_value(std::move(block)));
}

// numpy.linalg.norm(x) of a C-contiguous float device array (no other argument): NumPy's own
// steps, `sqrt(x.ravel().dot(x.ravel()))`, the dot product on the device; nullptr as
// run_library_op.
PyObject* run_norm(Residency& r, PyObject* const* args, std::size_t nargs, PyObject* kwnames) {
  const DeviceValue* x = nargs == 1 && kwnames == nullptr ? device_value_of(args[0]) : nullptr;
  if (x == nullptr || x->shape.empty() || !x->c_contiguous() || !is_float64_or_32(x->dtype()) ||
      (x->block->host_valid && !x->block->device_valid)) {
    return nullptr;  // (an array only the host holds: the host's, copying nothing)
  }
  DeviceValue flat = *x;
  flat.whole = false;
  flat.shape = {x->size()};
  flat.strides = {static_cast<std::int64_t>(itemsize(x->dtype()))};
  PyObject* square = run_product(r, flat, flat, ProductForm{}, 1);
  if (square == nullptr) {
    return nullptr;
  }
  PyObject* sqrt = PyObject_GetAttrString(loaded_module("numpy").ptr(), "sqrt");
  PyObject* norm = sqrt != nullptr ? PyObject_CallOneArg(sqrt, square) : nullptr;
  Py_XDECREF(sqrt);
  Py_DECREF(square);
  return norm;
}

}  // namespace

PyObject* run_library_op(Residency& r, PyObject* fn, PyObject* const* args, std::size_t nargs,
                         PyObject* kwnames) {
  if (PyObject* made = run_device_creation(r, fn, args, nargs, kwnames)) {
    return made;
  }
  if (PyObject* joined = run_device_join(r, fn, args, nargs, kwnames)) {
    return joined;
  }
  if (PyObject* changed = run_device_inplace(r, fn, args, nargs, kwnames)) {
    return changed;
  }
  if (PyObject* view = run_device_view(r, fn, args, nargs, kwnames)) {
    return view;
  }
  if (PyErr_Occurred() != nullptr) {
    return nullptr;
  }
  if (kwnames != nullptr || is_reduction(fn)) {
    return run_device_reduction(r, fn, args, nargs, kwnames);
  }
  PyObject* x = nullptr;
  PyObject* y = nullptr;
  ProductForm form;
  if (nargs == 2 && is_product(fn)) {
    x = args[0], y = args[1];
  } else if (nargs == 3 && fn == einsum_fn() && PyUnicode_Check(args[0]) != 0) {
    const char* spec = PyUnicode_AsUTF8(args[0]);
    const auto found = spec != nullptr ? einsum_product(spec) : std::nullopt;
    PyErr_Clear();
    if (!found) {
      return nullptr;
    }
    form = *found;
    x = args[1 + form.first], y = args[2 - form.first];
  } else if (fn == norm_fn()) {
    return run_norm(r, args, nargs, kwnames);
  } else {
    return nullptr;
  }
  if (device_value_of(x) == nullptr && device_value_of(y) == nullptr) {
    return nullptr;
  }
  return run_product(r, operand(r, x), operand(r, y), form, fn == einsum_fn() ? 2 : 1);
}

}  // namespace sot::graph
