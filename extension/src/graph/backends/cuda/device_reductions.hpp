// Reductions run on the device: numpy.sum, numpy.mean, numpy.max and numpy.min (and amax, amin,
// the ndarray methods) of a device array, over all axes, one axis or a tuple of axes (axis= and
// keepdims= by name), where the device gives NumPy's result bit for bit:
//   - floats (float64, float32): the axes NumPy's iterator loops over are found (axes of one
//     element left out, neighbours merged where one steps over the other and both are reduced or
//     both kept); where one loop is reduced, NumPy's order is known. The innermost loop, or all
//     elements of a contiguous array: the rows kernel adds a row in NumPy's pairwise order (past
//     NumPy 1.x's buffer size too); another loop: in index order, one thread an output element.
//     A max or min over a row compares in another order than NumPy, which only decides between
//     +0.0 and -0.0 and among NaNs: over all elements a zero or NaN result is thrown away and
//     computed by the host; over rows with kept axes it runs on the host.
//   - ints: a sum (into NumPy's int64 or uint64: wrapped sums agree in any order), a max or a min;
//     bools: a sum; a mean of ints of at most 32 bits or of bools, where the count times the
//     dtype's largest magnitude is at most 2^53 (NumPy adds them in float64; every partial sum is
//     then an integer float64 holds, so any order adds exactly).
// - loops reduced apart with the innermost loop reduced (axis=(0, 2) of a 3-d array, a batch
//   norm's (0, 2, 3) of NCHW): NumPy adds each innermost row pairwise and the rows' sums into each
//   output in index order, so the rows kernel runs, then the ordered one over its results, then a
//   mean's division (floats: sums and means only, a kept loop just outside the innermost, and
//   under NumPy 1.x rows no longer than its buffer size; ints: sums, maxima, minima).
// A result over all axes without keepdims is NumPy's scalar, copied out; a mean over all axes is
// NumPy's own `type(s)(s / intp(n))` of the sum. Anything else runs on the host: other loops
// reduced apart (the innermost kept, reduced loops in three places), other means of ints (64-bit,
// more items; a split one), another layout, dtype= or out=.
#pragma once

#include <Python.h>

#include <cstddef>

namespace sot::graph {

class Residency;

// Whether `fn` is one of the reductions above.
bool is_reduction(PyObject* fn);

// The reduction's result (a new reference, a device array), or nullptr with no error set when the
// step is not one this runs (`args`: `nargs` positional, then one per name of `kwnames`, a tuple
// or nullptr).
PyObject* run_device_reduction(Residency& r, PyObject* fn, PyObject* const* args, std::size_t nargs,
                               PyObject* kwnames);

}  // namespace sot::graph
