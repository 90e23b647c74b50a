// NumPy's own strided inner loops, for tier B's generated code to call on chunk arrays: the loop
// NumPy runs for a ufunc on given dtypes and strides, found through NumPy's (>= 1.24) loop access,
// `ufunc._resolve_dtypes_and_context` then `ufunc._get_strided_loop` with the strides fixed. The
// same loop on the same strides gives eager NumPy's results bit for bit, whatever its
// implementation (SIMD, SVML, the C library).
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "graph/backends/cpu/cpp_emitter.hpp"
#include "graph/ir/dtype.hpp"

namespace sot::graph {

// The loop NumPy runs for `ufunc` on operands of dtype `t` with `strides` (bytes; 0: a scalar,
// whose Python value is in `constants`, null for an array), making a contiguous result of dtype
// `t`. Fills `loop`; `owner` keeps what it points into alive (NumPy's capsule: the loop's context
// and data). False and `why` when NumPy does not offer it: NumPy 1.x (whose loop access gives
// other loops than its ufunc calls run: exp, cos, log1p and arcsin differed in up to a quarter of
// the elements), another resolved dtype, a loop that needs the GIL, or a loop that differs from
// the ufunc's own call on probe values (specials, subnormals and sixteen orders of magnitude).
bool numpy_loop(const pybind11::object& ufunc, DType t, const std::vector<long>& strides,
                const std::vector<pybind11::object>& constants, NativeLoop* loop,
                pybind11::object* owner, std::string* why);

// The loop NumPy runs for generalized ufunc `gufunc` (np.linalg's: _umath_linalg.solve1, ...) on
// operands and results of dtype `t`, called as NumPy calls a gufunc's loop: dimensions {count,
// core sizes...}, strides {each operand's per item, then each core dimension's, operand by
// operand}. The loop is wrapped so that the flags raised before the call are kept, the loop's own
// ignored (np.linalg runs its gufuncs with over, under and divide ignored), and its invalid flag -
// how np.linalg's loops say "singular" - makes the call fail (-1, no Python error: the generated
// code gives up there). NumPy 2 only, as numpy_loop.
bool numpy_gufunc_loop(const pybind11::object& gufunc, DType t, NativeLoop* loop,
                       pybind11::object* owner, std::string* why);

}  // namespace sot::graph
