// Which NumPy ufunc computes a graph op: the op's own function when it is a ufunc, or the ufunc
// behind an operator whose ndarray method is exactly that ufunc.
#pragma once

#include <pybind11/pybind11.h>

#include "graph/graph.hpp"

namespace sot::graph {

// The ufunc that computes `op` (its own function, or the ufunc behind an operator), else None.
pybind11::object ufunc_of(const Op& op, const pybind11::module_& numpy);

}  // namespace sot::graph
