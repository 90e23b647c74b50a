#include "graph/backends/cuda/device_inplace.hpp"

#include <pybind11/pybind11.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/loaded_module.hpp"
#include "graph/backends/cuda/cuda_kernel.hpp"
#include "graph/backends/cuda/device_array.hpp"
#include "graph/backends/cuda/device_copy.hpp"
#include "graph/backends/cuda/residency.hpp"
#include "graph/rules/fp_state.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

struct InPlace {
  PyObject* fn;       // operator.iadd, ...
  const char* ufunc;  // the ufunc it runs: "add", ...
};

// The in-place operators, by identity.
const std::vector<InPlace>& in_place_operators() {
  static const std::vector<InPlace>* const table = [] {
    const py::module_ op = loaded_module("operator");
    auto* t = new std::vector<InPlace>();
    const std::pair<const char*, const char*> named[] = {
        {"iadd", "add"}, {"isub", "subtract"}, {"imul", "multiply"}, {"itruediv", "divide"}};
    for (const auto& [name, ufunc] : named) {
      t->push_back(InPlace{py::object(op.attr(name)).release().ptr(), ufunc});
    }
    return t;
  }();
  return *table;
}

const char* ufunc_of(PyObject* fn) {
  for (const InPlace& p : in_place_operators()) {
    if (p.fn == fn) {
      return p.ufunc;
    }
  }
  return nullptr;
}

// The kernel out = x op y: buffer 0 x, then y (buffer 1, of x's dtype) or a float scalar, and the
// output last; the loop of x's dtype.
OwnKernel& in_place_kernel(DeviceApi& device, const char* ufunc, DType dtype, std::size_t rank,
                           bool scalar) {
  const std::string name = std::string("inplace_") + ufunc + "_" + std::string(graph::name(dtype)) +
                           "_" + std::to_string(rank) + (scalar ? "_s" : "");
  return own_kernel(device, name, [&] {
    kir::Kernel k = load_store_kernel(name, dtype, rank);  // b0 in, b1 out, e0 = load b0
    kir::Expr y;                                           // e1
    if (scalar) {
      y.kind = kir::Expr::Kind::kScalar;
      y.dtype = DType::kFloat64;
      y.scalar = 0;
      k.scalars.push_back(kir::Scalar{-1, py::float_(1.0)});  // (its bits given at each launch)
    } else {
      k.buffers.insert(k.buffers.begin() + 1, kir::Buffer{-1, dtype, k.domain, false, false});
      y.kind = kir::Expr::Kind::kLoad;
      y.dtype = dtype;
      y.buffer = 1;
    }
    k.exprs.push_back(y);
    kir::Expr call;  // e2
    call.kind = kir::Expr::Kind::kCall;
    call.dtype = dtype;
    call.fn = ufunc;
    call.ufunc = loaded_module("numpy").attr(ufunc);
    call.operands = {0, 1};
    k.exprs.push_back(call);
    k.stores.push_back(kir::Store{2, static_cast<int>(k.buffers.size()) - 1});
    return k;
  });
}

// Whether two values of one block are the very same view.
bool same_view(const DeviceValue& a, const DeviceValue& b) {
  return a.block == b.block && a.offset == b.offset && a.shape == b.shape && a.strides == b.strides;
}

// Whether y (right-aligned) broadcasts to x's shape.
bool broadcasts_to(const std::vector<std::int64_t>& y, const std::vector<std::int64_t>& x) {
  if (y.size() > x.size()) {
    return false;
  }
  for (std::size_t d = 0; d < y.size(); ++d) {
    const std::int64_t n = y[d];
    if (n != 1 && n != x[x.size() - y.size() + d]) {
      return false;
    }
  }
  return true;
}

// y as the kernel takes it: a device array of x's dtype that broadcasts to x and does not overlap
// x unless it is x, or a number x's dtype holds (a float64 array any double; a float32 one a
// finite float). NumPy's float64 and float32 scalars too where x is float64 (NumPy computes in
// float64 then, as with a Python float; a float32 array meets a float64 scalar in float64 under
// NumPy 2, in float32 under 1.x: the host's). False where the host should take the step.
bool operand(const DeviceValue& x, PyObject* arg, const DeviceValue** y, double* number) {
  *y = device_value_of(arg);
  if (*y != nullptr) {
    return (*y)->dtype() == x.dtype() && broadcasts_to((*y)->shape, x.shape) &&
           ((*y)->block != x.block || same_view(**y, x));
  }
  const std::optional<double> v = fill_number(arg, x.dtype() == DType::kFloat64);
  if (!v) {
    return false;
  }
  *number = *v;
  return x.dtype() == DType::kFloat64 ||
         std::fabs(*v) <= static_cast<double>(std::numeric_limits<float>::max()) || std::isnan(*v);
}

std::uint64_t bits_of(double v) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

// Queues the kernel writing `out` from x and y (or the number); with the run's flag word while the
// run is optimistic (nothing read), else with a word of its own, read now. nullopt: the device
// failed or did not take it; false: an error was flagged (the host gives NumPy's warnings).
std::optional<bool> run_kernel(Residency& r, OwnKernel& own, const DeviceValue& x,
                               const DeviceValue* y, double number, DeviceValue& out,
                               bool* wrote_directly) {
  std::string why;
  Staging staging(*r.pool());
  LaunchFlags flags(r, staging, false, &why);
  if (flags.address() == 0) {
    return std::nullopt;
  }
  // An own word is read only after the launch: x itself is written only under the run's word.
  *wrote_directly = !flags.own();
  if (!*wrote_directly && !make_device_current(*out.block, &why)) {
    return std::nullopt;
  }
  std::vector<DeviceArray> arrays = {x.launch_array()};
  std::vector<std::uint64_t> bits;
  if (y != nullptr) {
    arrays.push_back(y->launch_array());
  } else {
    bits.push_back(bits_of(number));
  }
  arrays.push_back(*wrote_directly ? x.launch_array() : out.launch_array());
  std::uint64_t launches = 0;
  if (own.cuda->launch(own.k, x.shape, arrays, bits, flags.address(), staging, &launches, &why) !=
      CudaKernel::Launched::kQueued) {
    return std::nullopt;
  }
  const std::optional<unsigned> word = flags.settle(&why);
  if (!word) {
    return std::nullopt;
  }
  return reported_fe_flags(fe_flags_of(*word)) == 0;
}

}  // namespace

PyObject* run_device_inplace(Residency& r, PyObject* fn, PyObject* const* args, std::size_t nargs,
                             PyObject* kwnames) {
  const char* ufunc = ufunc_of(fn);
  if (ufunc == nullptr || nargs != 2 || kwnames != nullptr) {
    return nullptr;
  }
  const DeviceValue* xp = device_value_of(args[0]);
  if (xp == nullptr || xp->shape.empty() || xp->size() == 0 || !is_float64_or_32(xp->dtype()) ||
      !writeable(*xp->block)) {
    return nullptr;  // (NumPy's error for a read-only array comes from the host)
  }
  const DeviceValue& x = *xp;
  if (!x.block->device_valid && !r.in_loop()) {
    // x lives on the host only (a caller's array no kernel read yet) and the step runs once:
    // copying x in, and out again at the end, costs more than copying y out. In a loop's steps x
    // is copied in once and stays.
    return nullptr;
  }
  const DeviceValue* y = nullptr;
  double number = 0;
  if (!operand(x, args[1], &y, &number)) {
    return nullptr;
  }
  OwnKernel& own = in_place_kernel(r.device(), ufunc, x.dtype(), x.shape.size(), y == nullptr);
  std::string why;
  if (!own.cuda->usable() || !make_device_current(*x.block, &why) ||
      (y != nullptr && !make_device_current(*y->block, &why))) {
    return nullptr;
  }
  if (!r.before_write(x.block)) {
    return nullptr;  // (an error set: the run goes to the host)
  }
  // Where x cannot be written under the run's word: the result into a new block first.
  auto temp = whole_value(std::make_shared<DeviceBlock>(r.device(), r.pool(), x.shape, x.dtype()));
  bool wrote_directly = false;
  const std::optional<bool> clean = run_kernel(r, own, x, y, number, *temp, &wrote_directly);
  if (!clean || !*clean) {
    return nullptr;
  }
  if (!wrote_directly && !copy_on_device(r, x, *temp, &why)) {
    return nullptr;
  }
  r.wrote(*x.block);
  Py_INCREF(args[0]);
  return args[0];
}

}  // namespace sot::graph
