#include "graph/rules/fp_state.hpp"

#include <cfenv>
#include <string>

#include "core/loaded_module.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

constexpr long kModeBits = 7;

// NumPy 2 keeps the state in a context variable holding an immutable object (a new one per
// change); NumPy 1.x in an error object [bufsize, mask, callback] set with seterrobj, whose mask
// holds 3 bits per error (divide at 0, over at 3, under at 6, invalid at 9; 0 ignores).
struct State {
  bool numpy1 = false;
  py::object contextvar;  // NumPy 2
  py::object ignore;      // NumPy 2: the state object of np.errstate(all="ignore")
  py::object geterr;      // numpy.geterr
  py::object geterrobj;   // NumPy 1.x
  py::object seterrobj;   // NumPy 1.x
  py::object last;        // NumPy 2: the state object last asked about
  long last_mask = 0;     // NumPy 2: its error mask
};

State& state() {
  static State* s = [] {
    auto* made = new State();  // NOLINT(cppcoreguidelines-owning-memory): lives for the process
    const py::module_ numpy = loaded_module("numpy");
    made->geterr = numpy.attr("geterr");
    if (py::hasattr(numpy, "geterrobj")) {
      made->numpy1 = true;
      made->geterrobj = numpy.attr("geterrobj");
      made->seterrobj = numpy.attr("seterrobj");
    } else {
      made->contextvar = loaded_module("numpy._core._ufunc_config").attr("_extobj_contextvar");
      const py::object ctx = numpy.attr("errstate")(py::arg("all") = "ignore");
      ctx.attr("__enter__")();
      made->ignore = made->contextvar.attr("get")();
      ctx.attr("__exit__")(py::none(), py::none(), py::none());
    }
    return made;
  }();
  return *s;
}

// NumPy's mode numbers (np.seterr): ignore 0, warn 1, raise 2, call 3, print 4, log 5.
long mode_of(const std::string& mode) {
  static const char* const kModes[] = {"ignore", "warn", "raise", "call", "print", "log"};
  for (long m = 0; m < 6; ++m) {
    if (mode == kModes[m]) {
      return m;
    }
  }
  return 1;
}

long shift_of(const std::string& error) {
  if (error == "divide") {
    return 0;
  }
  if (error == "over") {
    return 3;
  }
  return error == "under" ? 6 : 9;
}

long error_mask_now(State& s) {
  if (s.numpy1) {
    return s.geterrobj()[py::int_(1)].cast<long>();
  }
  PyObject* current = nullptr;
  if (PyContextVar_Get(s.contextvar.ptr(), nullptr, &current) < 0 || current == nullptr) {
    throw py::error_already_set();
  }
  const py::object now = py::reinterpret_steal<py::object>(current);
  if (!s.last || !now.is(s.last)) {
    long mask = 0;
    for (const auto& item : s.geterr().cast<py::dict>()) {
      mask |= mode_of(py::str(item.second).cast<std::string>())
              << shift_of(py::str(item.first).cast<std::string>());
    }
    s.last = now;
    s.last_mask = mask;
  }
  return s.last_mask;
}

}  // namespace

int numpy_fe_flags() {
  return FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID;
}

long numpy_error_mask() {
  return error_mask_now(state());
}

int reported_fe_flags(int flags) {
  if (flags == 0) {
    return 0;
  }
  const long mask = numpy_error_mask();
  int reported = 0;
  reported |= (mask & kModeBits) != 0 ? FE_DIVBYZERO : 0;
  reported |= ((mask >> 3) & kModeBits) != 0 ? FE_OVERFLOW : 0;
  reported |= ((mask >> 6) & kModeBits) != 0 ? FE_UNDERFLOW : 0;
  reported |= ((mask >> 9) & kModeBits) != 0 ? FE_INVALID : 0;
  return flags & reported;
}

namespace {

using GiveFpErrors = int (*)(const char*, int);

// NumPy 2's PyUFunc_GiveFloatingpointErrors: entry 46 of its ufunc C API table (the capsule
// numpy._core._multiarray_umath._UFUNC_API); null on NumPy 1.x.
GiveFpErrors give_fp_errors() {
  static const GiveFpErrors fn = []() -> GiveFpErrors {
    constexpr std::size_t kEntry = 46;
    if (state().numpy1) {
      return nullptr;
    }
    try {
      const py::object capsule = loaded_module("numpy._core._multiarray_umath").attr("_UFUNC_API");
      void* table = PyCapsule_GetPointer(capsule.ptr(), nullptr);
      if (table == nullptr) {
        PyErr_Clear();
        return nullptr;
      }
      return reinterpret_cast<GiveFpErrors>(static_cast<void**>(table)[kEntry]);
    } catch (py::error_already_set&) {
      return nullptr;
    }
  }();
  return fn;
}

}  // namespace

bool numpy_reports_fp_flags() {
  return give_fp_errors() != nullptr;
}

bool report_fp_flags(const char* name, int fe_flags) {
  // NumPy's NPY_FPE_* bits.
  constexpr int kDivide = 1;
  constexpr int kOver = 2;
  constexpr int kUnder = 4;
  constexpr int kInvalid = 8;
  const int npy =
      ((fe_flags & FE_DIVBYZERO) != 0 ? kDivide : 0) | ((fe_flags & FE_OVERFLOW) != 0 ? kOver : 0) |
      ((fe_flags & FE_UNDERFLOW) != 0 ? kUnder : 0) | ((fe_flags & FE_INVALID) != 0 ? kInvalid : 0);
  return npy == 0 || give_fp_errors()(name, npy) == 0;
}

IgnoreNumpyErrors::IgnoreNumpyErrors() {
  try {
    State& s = state();
    if (s.numpy1) {
      py::object saved = s.geterrobj();
      // A copy (py::list of a list would be the same object, and restoring it would restore 0).
      auto quiet = py::reinterpret_steal<py::list>(PySequence_List(saved.ptr()));
      if (!quiet) {
        throw py::error_already_set();
      }
      quiet[1] = py::int_(0);
      s.seterrobj(quiet);
      saved_ = saved.release().ptr();
      seterrobj_ = s.seterrobj.ptr();
    } else {
      token_ = PyContextVar_Set(s.contextvar.ptr(), s.ignore.ptr());
      if (token_ == nullptr) {
        return;
      }
      contextvar_ = s.contextvar.ptr();
    }
    ok_ = true;
  } catch (py::error_already_set& e) {
    e.restore();
  }
}

IgnoreNumpyErrors::~IgnoreNumpyErrors() {
  if (!ok_) {
    return;
  }
  // An error being raised is kept across the restore.
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  if (saved_ != nullptr) {
    PyObject* r = PyObject_CallOneArg(seterrobj_, saved_);
    Py_XDECREF(r);
    Py_DECREF(saved_);
  } else {
    if (PyContextVar_Reset(contextvar_, token_) < 0) {
      PyErr_Clear();
    }
    Py_DECREF(token_);
  }
  PyErr_Clear();
  PyErr_Restore(type, value, tb);
}

}  // namespace sot::graph
