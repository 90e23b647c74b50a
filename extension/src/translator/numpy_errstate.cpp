#include "translator/numpy_errstate.hpp"
#include "core/loaded_module.hpp"

#include <string>

namespace py = pybind11;

namespace sot::translator {

namespace {

// NumPy 2 keeps its error state in an immutable object of a context variable (a new one whenever
// the state changes): the answer is kept for the last one seen (held, so that its address cannot
// be reused). NumPy 1.x keeps it as an error mask (geterrobj()[1], changed in place): 3 bits per
// error, shifted by 0, 3, 6, 9; mode 2 raises, 3 calls.
struct Probe {
  py::object source;  // NumPy 2: the context variable's get; NumPy 1.x: numpy.geterrobj
  py::object geterr;  // numpy.geterr
  bool numpy1 = false;
  py::object last;
  bool last_raises = false;
};

constexpr long kModeBits = 7;
constexpr long kRaise = 2;
constexpr long kCall = 3;

bool mask_raises(long mask) {
  for (const int shift : {0, 3, 6, 9}) {
    const long mode = (mask >> shift) & kModeBits;
    if (mode == kRaise || mode == kCall) {
      return true;
    }
  }
  return false;
}

Probe& probe() {
  static Probe* p = [] {
    auto* made = new Probe();  // NOLINT(cppcoreguidelines-owning-memory): lives for the process
    try {
      const py::module_ numpy = loaded_module("numpy");
      made->geterr = numpy.attr("geterr");
      if (py::hasattr(numpy, "geterrobj")) {
        made->source = numpy.attr("geterrobj");
        made->numpy1 = true;
      } else {
        made->source =
            loaded_module("numpy._core._ufunc_config").attr("_extobj_contextvar").attr("get");
      }
    } catch (py::error_already_set&) {
      made->source = py::object();  // no NumPy: nothing raises
    }
    return made;
  }();
  return *p;
}

bool raises_now(Probe& p) {
  if (!p.source) {
    return false;
  }
  const py::object state = p.source();
  if (p.numpy1) {
    return mask_raises(state[py::int_(1)].cast<long>());
  }
  if (!p.last || !state.is(p.last)) {
    bool raises = false;
    for (const auto& item : p.geterr().cast<py::dict>()) {
      const std::string mode = py::str(item.second).cast<std::string>();
      raises = raises || mode == "raise" || mode == "call";
    }
    p.last = state;
    p.last_raises = raises;
  }
  return p.last_raises;
}

PyObject* errors_raise(PyObject* /*self*/, PyObject* /*unused*/) {
  try {
    return PyBool_FromLong(raises_now(probe()) ? 1 : 0);
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  }
}

PyMethodDef g_errors_raise_def = {"numpy_errors_raise", errors_raise, METH_NOARGS,
                                  "True when NumPy's error state raises or calls on some error."};

}  // namespace

py::object numpy_errors_raise_probe() {
  static PyObject* fn = PyCFunction_New(&g_errors_raise_def, nullptr);  // lives for the process
  if (fn == nullptr) {
    throw py::error_already_set();
  }
  return py::reinterpret_borrow<py::object>(fn);
}

}  // namespace sot::translator
