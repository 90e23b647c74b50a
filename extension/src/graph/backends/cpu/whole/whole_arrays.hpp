// Tier C's making of arrays (whole_ops_arrays.cpp), for the handler files that make arrays of
// their own (whole_ops_ufuncs.cpp): a new C-ordered array from the arena, the broadcast shape of
// operands, an operand as a C-ordered array of a shape.
#pragma once

#include <string>
#include <vector>

#include "graph/backends/cpu/whole/whole_ops.hpp"

namespace sot::graph::whole {

// The most items of an array tier C makes (as the translation sized it) for its code to run
// untimed: past them one pass per op may cost more than a step of tier B's fused kernel plus its
// call (heat_1d at 4096: 2.5 ms in tier C, 0.76 ms on its own path; jacobi_2d at 256x256: 22 ms
// and 5.3 ms), or less (nbody's (128, 128, 2) arrays). Code that makes arrays past them, up to
// kMostTimedItems, runs where timing says it pays (TimedLoop).
constexpr long long kMostItems = 16384;
constexpr long long kMostTimedItems = 1LL << 22;

// The most dimensions tier C makes arrays of (and of an operand of NumPy's loops it calls).
constexpr int kMaxDims = 8;

// A new array of dtype `t` and shape `shape` (`rank` dimensions) from the arena, C-ordered, as
// `name` (a SotArr*), its data `name`_data, its items `name`_count and strides `name`_strides.
void new_array(OpCtx& c, DType t, const std::string& shape, int rank, const std::string& name);

// Broadcasts the shapes of the arrays among `args` into `shape` (declared, `rank` dimensions, one
// item each to start with); shapes that do not broadcast give up (NumPy raises).
void broadcast(OpCtx& c, const std::vector<Val>& args, int rank, const std::string& shape);

// The number `v` as it is stored into elements of dtype `to`: `v` itself, or, where the store
// narrows a double into float32, the cast made once, at run time, through a volatile. NumPy casts
// the number once per assignment, even of no element (1e300 into an empty float32 slice warns
// "overflow encountered in cast"), and a cast of a constant the compiler folds raises no flag.
Val stored_number(OpCtx& c, const Val& v, DType to, const std::string& name);

// Array `a` as a C-ordered array of `shape` (`rank` dimensions; `a` broadcasts to it), declared as
// `name` (a const SotArr*): `a` itself where at run time it already is one, else a copy of it (its
// elements as they are now, broadcast) from the arena. Declared in the op's scope: no block of the
// lines ends before its uses.
void dense_of(OpCtx& c, const Val& a, const std::string& shape, int rank, const std::string& name);

}  // namespace sot::graph::whole
