#include "graph/ufuncs.hpp"

#include "core/loaded_module.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

// Operators whose NumPy method is exactly the ufunc of the op's name for the operand types a graph
// holds (ndarrays, NumPy scalars, Python numbers). Not `pow`: ndarray ** 2 runs `square`, whose
// result dtype differs for bools.
constexpr const char* kUfuncOperators[] = {
    "add", "sub", "mul",    "truediv", "floordiv", "mod", "neg", "pos", "abs", "and_",
    "or_", "xor", "invert", "lshift",  "rshift",   "lt",  "le",  "gt",  "ge",
};

}  // namespace

py::object ufunc_of(const Op& op, const py::module_& numpy) {
  const py::object ufunc = numpy.attr("ufunc");
  if (py::isinstance(op.fn, ufunc)) {
    return op.fn;
  }
  const py::module_ operator_module = loaded_module("operator");
  for (const char* name : kUfuncOperators) {
    if (op.fn.is(operator_module.attr(name)) && py::hasattr(numpy, op.name.c_str())) {
      py::object u = numpy.attr(op.name.c_str());
      return py::isinstance(u, ufunc) ? u : py::none();
    }
  }
  return py::none();
}

}  // namespace sot::graph
