// In-place arithmetic on a device array, run on the device: `x += y`, `x -= y`, `x *= y` and
// `x /= y` (operator.iadd, isub, imul, itruediv, as the graph records `t += y` and
// `u[1:-1, 1:-1] += y`) where x is a float64 or float32 device array or view (any strides) and y a
// device array of x's dtype broadcast to x's shape (not overlapping x unless it is x itself) or a
// Python number (a float, or an int a double holds exactly), and x current on the device or the
// step in a loop op's steps (outside loops a host-only x, as a caller's array no kernel read yet,
// runs on the host: copying it in and out again costs more than copying y out), by one kernel of
// the backend's own per operator, dtype
// and rank: x[i] = x[i] op y[i], NumPy's loop of x's dtype. While the run is
// optimistic the kernel writes x directly under the run's flag word (a flagged error reruns the
// run on the host, the caller's device arrays put back); else it computes into a new block, its
// own word read, and only an unflagged result is copied into x, so that x is never half changed
// when the host takes the step. Anything else runs on the host, as before: each such step copied
// its array out and back in.
#pragma once

#include <Python.h>

#include <cstddef>

namespace sot::graph {

class Residency;

// The changed array (a new reference to args[0]), or nullptr with no error set when the step is not
// one of the above or the device did not take it (`args`: `nargs` positional, then one per name of
// `kwnames`).
PyObject* run_device_inplace(Residency& r, PyObject* fn, PyObject* const* args, std::size_t nargs,
                             PyObject* kwnames);

}  // namespace sot::graph
