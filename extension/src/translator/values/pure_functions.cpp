#include "translator/values/pure_functions.hpp"
#include "core/loaded_module.hpp"

#include <vector>

namespace py = pybind11;

namespace sot::translator {

namespace {

constexpr Py_ssize_t kMaxIterated = 10000;  // longest argument a folded call may iterate over

std::vector<PureFunction>& table() {
  // Built once with the GIL held; the function objects live as long as the interpreter.
  static auto* functions = [] {
    auto* t = new std::vector<PureFunction>();  // never freed: outlives module teardown
    const py::module_ builtins = loaded_module("builtins");
    for (const char* name : {"len",     "abs", "min",    "max",   "sum",   "int",   "float",
                             "complex", "str", "bool",   "repr",  "ascii", "round", "divmod",
                             "chr",     "ord", "hex",    "oct",   "bin",   "tuple", "sorted",
                             "any",     "all", "format", "range", "slice", "hash",  "frozenset"}) {
      t->push_back(PureFunction{builtins.attr(name), false});
    }
    const py::module_ math = loaded_module("math");
    for (const char* name :
         {"sqrt",  "floor", "ceil",     "trunc",   "exp",     "log",   "log2",
          "log10", "sin",   "cos",      "tan",     "asin",    "acos",  "atan",
          "atan2", "sinh",  "cosh",     "tanh",    "fabs",    "hypot", "isfinite",
          "isinf", "isnan", "copysign", "degrees", "radians", "gcd",   "isqrt"}) {
      t->push_back(PureFunction{math.attr(name), false});
    }
    return t;
  }();
  return *functions;
}

}  // namespace

bool arguments_bounded(const py::list& values, std::size_t leading_unbounded) {
  std::size_t position = 0;
  for (const py::handle v : values) {
    PyObject* o = v.ptr();
    if (position++ >= leading_unbounded && PyLong_CheckExact(o)) {
      int overflow = 0;
      const long n = PyLong_AsLongAndOverflow(o, &overflow);
      if (overflow != 0 || n > kMaxIterated || n < -kMaxIterated) {
        PyErr_Clear();
        return false;
      }
    }
    if (PyRange_Check(o) || PyTuple_Check(o) || PyList_Check(o) || PyUnicode_Check(o) ||
        PyBytes_Check(o) || PyFrozenSet_Check(o)) {
      const Py_ssize_t n = PyObject_Length(o);
      if (n < 0) {
        PyErr_Clear();
        return false;
      }
      if (n > kMaxIterated) {
        return false;
      }
    }
  }
  return true;
}

bool PureFunction::accepts(const py::list& values, std::size_t kw) const {
  return (kw == 0 || keywords) && arguments_bounded(values, /*leading_unbounded=*/1);
}

const PureFunction* find_pure_function(const py::object& callable) {
  for (const PureFunction& f : table()) {
    if (f.function.ptr() == callable.ptr()) {
      return &f;
    }
  }
  return nullptr;
}

}  // namespace sot::translator
