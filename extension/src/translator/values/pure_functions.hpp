// Builtins (and math functions) that the translator may call at translation time on constant
// arguments: they have no side effects, their result depends only on the arguments, and they run
// in bounded time on arguments of bounded size.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>

namespace sot::translator {

struct PureFunction {
  pybind11::object function;
  bool keywords = false;  // accepts keyword arguments
  // Whether the call may be folded with these argument values (`kw` of them passed by keyword).
  bool accepts(const pybind11::list& values, std::size_t kw) const;
};

// Whether folding may run on these argument values: sequences of bounded length, and integers of
// bounded size past the first `leading_unbounded` arguments (counts and widths such as
// round(5, -10**9) or "x".zfill(10**9) would make huge results).
bool arguments_bounded(const pybind11::list& values, std::size_t leading_unbounded);

// The pure function `callable` is, or nullptr.
const PureFunction* find_pure_function(const pybind11::object& callable);

}  // namespace sot::translator
