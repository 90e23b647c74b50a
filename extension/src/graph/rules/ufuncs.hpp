// Which NumPy ufunc computes a graph op: the op's own function when it is a ufunc, or the ufunc
// behind an operator whose ndarray method is exactly that ufunc.
#pragma once

#include <pybind11/pybind11.h>

#include <vector>

#include "graph/ir/graph.hpp"

namespace sot::graph {

// The ufunc that computes `op` (its own function, or the ufunc behind an operator, in-place ones
// included: `x += y` is np.add(x, y, out=x)), else None.
pybind11::object ufunc_of(const Op& op, const pybind11::module_& numpy);

// The ufunc eager NumPy runs for `op` and the arguments it takes: ufunc_of's, and also `x ** c`
// for a float or complex array x and a Python int or float c, as the running NumPy computes it
// (np.power(x, c), or np.square(x), np.sqrt(x), ... for the exponents its method special-cases;
// asked once per dtype and exponent: the name in the error of one-item samples). `ufunc` is None
// when there is none.
struct UfuncCall {
  pybind11::object ufunc;
  std::vector<Arg> args;
};
UfuncCall ufunc_call(const Graph& graph, const Op& op, const pybind11::module_& numpy);

}  // namespace sot::graph
