#include "graph/backends/cpu/numpy_loops.hpp"

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/array_fields.hpp"
#include "core/loaded_module.hpp"
#include "graph/rules/fp_state.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

// NumPy's "numpy_1.24_ufunc_call_info" capsule (ufunc._get_strided_loop's documentation).
struct UfuncCallInfo {
  void* strided_loop;
  void* context;
  void* auxdata;
  unsigned char requires_pyapi;
  unsigned char no_floatingpoint_errors;
};

constexpr const char* kCallInfo = "numpy_1.24_ufunc_call_info";

constexpr long kProbe = 1024 + 37;  // whole vectors and a tail

// NumPy's loops of some ufuncs (sign, maximum, minimum, ...) clear the thread's floating-point
// flags when they end (npy_clear_floatstatus_barrier: their comparisons with NaN raise flags NumPy
// does not report). Called from generated code, that would also clear the flags the code's own
// earlier ops raised, which the runner reads after the run (a lost warning). The generated code
// calls this instead (NativeLoop's fn, its context the loop itself): the flags raised before the
// call are raised again after it; the loop's own are as NumPy leaves them.
int flags_kept(void* context, char* const* data, const long* n, const long* strides,
               void* /*auxdata*/) {
  const auto* loop = static_cast<const NativeLoop*>(context);
  const int before = std::fetestexcept(FE_ALL_EXCEPT);
  const int status = loop->fn(loop->context, data, n, strides, loop->auxdata);
  if (before != 0) {
    std::feraiseexcept(before);
  }
  return status;
}

// A gufunc's loop of np.linalg (NativeLoop's fn, its context the loop itself): called with the
// thread's flags cleared; after it, the flags raised before are raised again, the loop's own
// dropped, and an invalid flag among them (a singular matrix) fails the call.
int linalg_checked(void* context, char* const* data, const long* n, const long* strides,
                   void* /*auxdata*/) {
  const auto* loop = static_cast<const NativeLoop*>(context);
  const int before = std::fetestexcept(FE_ALL_EXCEPT);
  std::feclearexcept(FE_ALL_EXCEPT);
  const int status = loop->fn(loop->context, data, n, strides, loop->auxdata);
  const bool invalid = std::fetestexcept(FE_INVALID) != 0;
  std::feclearexcept(FE_ALL_EXCEPT);
  if (before != 0) {
    std::feraiseexcept(before);
  }
  return invalid ? -1 : status;
}

// The loop `_get_strided_loop` put in `capsule`, or nullptr where it needs the GIL (or there is
// none); throws where the capsule is not NumPy's call info.
const UfuncCallInfo* usable_loop(const py::object& capsule) {
  const auto* info =
      static_cast<const UfuncCallInfo*>(PyCapsule_GetPointer(capsule.ptr(), kCallInfo));
  if (info == nullptr) {
    throw py::error_already_set();
  }
  return info->requires_pyapi != 0 || info->strided_loop == nullptr ? nullptr : info;
}

// Probe values for operand `k`: specials, then signed magnitudes from 1e-8 to 1e3 and values in
// [-1, 1] (the domain of arcsin and its kin), from a fixed pseudo-random sequence.
py::object probe_values(std::size_t k, DType t) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double specials[] = {std::numeric_limits<double>::quiet_NaN(),
                             kInf,
                             -kInf,
                             0.0,
                             -0.0,
                             1.0,
                             -1.0,
                             0.5,
                             1e-310,
                             -1e-310,
                             1e-30,
                             700.,
                             -700.,
                             1e10,
                             3.141592653589793,
                             -2.5e-8,
                             88.7,
                             -103.9,
                             1e38,
                             4.0e-39,
                             0.999,
                             -0.999};
  std::vector<double> v;
  std::uint64_t state = 0x9E3779B97F4A7C15ULL * (k + 1);
  for (long i = 0; i < kProbe; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const double u = static_cast<double>(state >> 11) / 9007199254740992.0;  // [0, 1)
    const double sign = (state & 1U) != 0 ? -1.0 : 1.0;
    const auto special = static_cast<std::size_t>(i) % (sizeof specials / sizeof specials[0]);
    if (i % 7 == static_cast<long>(k % 7)) {
      v.push_back(specials[special]);
    } else if (i % 2 == 0) {
      v.push_back(sign * std::pow(10.0, -8.0 + 11.0 * u));
    } else {
      v.push_back(sign * u);
    }
  }
  const py::module_ numpy = loaded_module("numpy");
  const py::object errstate = numpy.attr("errstate")(py::arg("all") = "ignore");
  errstate.attr("__enter__")();
  py::list values;
  for (const double x : v) {
    values.append(x);
  }
  py::object a = numpy.attr("array")(values).attr("astype")(std::string(name(t)));
  errstate.attr("__exit__")(py::none(), py::none(), py::none());
  return a;
}

// True when `loop` gives the ufunc's own results (bit for bit, any NaN for a NaN) on probe values.
bool same_as_ufunc(const py::object& ufunc, DType t, const std::vector<py::object>& constants,
                   const NativeLoop& loop) {
  const py::module_ numpy = loaded_module("numpy");
  py::list args;
  std::vector<char*> data;
  std::vector<long> strides;
  std::vector<double> scalar64(constants.size());
  std::vector<float> scalar32(constants.size());
  for (std::size_t k = 0; k < constants.size(); ++k) {
    if (constants[k]) {
      args.append(constants[k]);
      scalar64[k] = PyFloat_AsDouble(constants[k].ptr());
      scalar32[k] = static_cast<float>(scalar64[k]);
      data.push_back(t == DType::kFloat32 ? reinterpret_cast<char*>(&scalar32[k])
                                          : reinterpret_cast<char*>(&scalar64[k]));
      strides.push_back(0);
    } else {
      const py::object a = probe_values(k, t);
      args.append(a);
      data.push_back(array_fields(a.ptr())->data);
      strides.push_back(static_cast<long>(itemsize(t)));
    }
  }
  const py::object errstate = numpy.attr("errstate")(py::arg("all") = "ignore");
  errstate.attr("__enter__")();
  const py::object expected = ufunc(*args);
  const py::object got = numpy.attr("empty")(kProbe, std::string(name(t)));
  data.push_back(array_fields(got.ptr())->data);
  strides.push_back(static_cast<long>(itemsize(t)));
  const long n = kProbe;
  const int status = loop.fn(loop.context, data.data(), &n, strides.data(), loop.auxdata);
  errstate.attr("__exit__")(py::none(), py::none(), py::none());
  clear_fe_flags();
  if (status < 0) {
    PyErr_Clear();
    return false;
  }
  const std::string bits = t == DType::kFloat32 ? "uint32" : "uint64";
  const py::object equal = got.attr("view")(bits).attr("__eq__")(expected.attr("view")(bits));
  const py::object both_nan =
      numpy.attr("isnan")(got).attr("__and__")(numpy.attr("isnan")(expected));
  return equal.attr("__or__")(both_nan).attr("all")().cast<bool>();
}

}  // namespace

bool numpy_loop(const py::object& ufunc, DType t, const std::vector<long>& strides,
                const std::vector<py::object>& constants, NativeLoop* loop, py::object* owner,
                std::string* why) {
  const std::string fn = py::str(ufunc.attr("__name__")).cast<std::string>();
  if (!numpy_reports_fp_flags() || !py::hasattr(ufunc, "_get_strided_loop")) {
    *why = fn + " (NumPy 1.x: its loop access gives other loops than its ufunc calls)";
    return false;
  }
  const py::object dtype = loaded_module("numpy").attr("dtype")(std::string(name(t)));
  py::tuple dtypes(strides.size());
  for (std::size_t i = 0; i + 1 < strides.size(); ++i) {
    dtypes[i] = dtype;
  }
  dtypes[strides.size() - 1] = py::none();
  try {
    const py::tuple resolved = ufunc.attr("_resolve_dtypes_and_context")(dtypes);
    for (const py::handle d : resolved[0].cast<py::tuple>()) {
      if (!d.equal(dtype)) {
        *why = fn + " (NumPy's loop for " + std::string(name(t)) + " has other dtypes)";
        return false;
      }
    }
    const py::object capsule = resolved[1];
    py::tuple fixed(strides.size());
    for (std::size_t i = 0; i < strides.size(); ++i) {
      fixed[i] = py::int_(strides[i]);
    }
    ufunc.attr("_get_strided_loop")(capsule, py::arg("fixed_strides") = fixed);
    const UfuncCallInfo* info = usable_loop(capsule);
    if (info == nullptr) {
      *why = fn + " (NumPy's loop needs the GIL)";
      return false;
    }
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): a C function pointer, as NumPy
    // documents it (context, data, dimensions, strides, auxdata).
    loop->fn = reinterpret_cast<decltype(loop->fn)>(info->strided_loop);
    loop->context = info->context;
    loop->auxdata = info->auxdata;
    if (!same_as_ufunc(ufunc, t, constants, *loop)) {
      *why = fn + " (NumPy's loop differs from its ufunc call on probe values)";
      return false;
    }
    // (the loop itself, owned with the capsule, behind flags_kept)
    auto* kept = new NativeLoop(*loop);  // NOLINT(cppcoreguidelines-owning-memory): the capsule's
    const py::capsule kept_owner(kept, [](void* p) { delete static_cast<NativeLoop*>(p); });
    loop->fn = &flags_kept;
    loop->context = kept;
    loop->auxdata = nullptr;
    *owner = py::make_tuple(capsule, kept_owner);
    return true;
  } catch (std::exception& e) {  // a Python error or a failed conversion: tier A runs it
    PyErr_Clear();
    *why = fn + " (NumPy's loop: " + std::string(e.what()) + ")";
    return false;
  }
}

bool numpy_gufunc_loop(const py::object& gufunc, DType t, NativeLoop* loop, py::object* owner,
                       std::string* why) {
  const std::string fn = py::str(gufunc.attr("__name__")).cast<std::string>();
  if (!numpy_reports_fp_flags() || !py::hasattr(gufunc, "_get_strided_loop")) {
    *why = fn + " (NumPy 1.x)";
    return false;
  }
  const py::object dtype = loaded_module("numpy").attr("dtype")(std::string(name(t)));
  const auto nargs = gufunc.attr("nargs").cast<std::size_t>();
  py::tuple dtypes(nargs);
  for (std::size_t i = 0; i < nargs; ++i) {
    dtypes[i] = dtype;
  }
  try {
    const py::tuple resolved = gufunc.attr("_resolve_dtypes_and_context")(dtypes);
    const py::object capsule = resolved[1];
    gufunc.attr("_get_strided_loop")(capsule);
    const UfuncCallInfo* info = usable_loop(capsule);
    if (info == nullptr) {
      *why = fn + " (NumPy's loop needs the GIL)";
      return false;
    }
    // NOLINTNEXTLINE(cppcoreguidelines-owning-memory): the capsule's, behind linalg_checked
    auto* kept = new NativeLoop{
        // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): as numpy_loop's
        reinterpret_cast<decltype(loop->fn)>(info->strided_loop), info->context, info->auxdata};
    const py::capsule kept_owner(kept, [](void* p) { delete static_cast<NativeLoop*>(p); });
    loop->fn = &linalg_checked;
    loop->context = kept;
    loop->auxdata = nullptr;
    *owner = py::make_tuple(capsule, kept_owner);
    return true;
  } catch (std::exception& e) {
    PyErr_Clear();
    *why = fn + " (NumPy's loop: " + std::string(e.what()) + ")";
    return false;
  }
}

}  // namespace sot::graph
