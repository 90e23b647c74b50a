// Tier C's runtime as source text: what every generated function starts with. The layout of the
// arguments the runner fills (an array's data, shape and strides; a number's bits), the
// environment (signal checks, the op that gave up), and the helpers that compute as CPython and
// NumPy do (Python's floor division and remainder of ints and floats, index wrapping, int() of a
// float, quiet comparisons), so that the emitter writes calls, not algorithms.
#pragma once

namespace sot::graph::whole {

// The text; the generated function returns 0 (done), 1 (gave up: the caller runs the op's
// original path) or 2 (a Python error is set: a signal handler raised).
const char* prelude();

}  // namespace sot::graph::whole
