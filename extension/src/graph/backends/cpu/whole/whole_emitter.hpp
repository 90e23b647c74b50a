// Tier C's emitter: a loop op - its steps, its body's ops, the loops inside it - as one C++
// function, so that a step costs what its arithmetic costs and not a graph call from Python
// objects. Each op of the body becomes a few lines (whole_ops.cpp: one handler per op name) whose
// result is CPython's or NumPy's by construction, or the function gives up at that op (an int
// past 64 bits, a division by zero, an index out of range: `SOT_GIVE_UP`) and the caller runs the
// loop op's own path, which raises or computes as plain Python does. An op the emitter has no
// handler for, or a value it has no kind for, and the loop is not emitted (the reason says which).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graph/backends/cpu/whole/whole_ops.hpp"
#include "graph/backends/cpu/whole/whole_types.hpp"
#include "graph/exec/loop_op.hpp"

namespace sot::graph::whole {

struct WholeSource {
  // Defines extern "C" int sot_whole(const SotSlot* in, SotSlot* out, SotEnv* env).
  std::string code;
  std::vector<WType> args;     // the loop op's arguments, in order
  std::size_t tests = 0;       // of which the last are a while loop's entry tests (truths)
  std::vector<WType> outputs;  // the loop op's outputs (its carried, then its last values)
  std::vector<bool> unread;    // of which those no op reads: the runner hands on None
  // of which a whole graph's arrays: the slot is 1 + the argument handed on, or 0: the new array
  // made by env->out_array
  std::vector<bool> handed_out;
  std::vector<int> written;      // the arguments (arrays) whose elements the code writes
  std::vector<std::string> ops;  // the text of each op an `env->why` may name
  bool makes_arrays = false;     // the code makes arrays (the runner sets up the arena)
  long long largest_array = 0;   // the most items of one, as the translation sized it
  UfuncLoops ufunc_loops;        // the NumPy loops it calls (env->loops)
};

// The function of the loop op `spec` (its body with the sizes of this translation), or nullopt
// and `why`.
std::optional<WholeSource> emit_loop(const LoopSpec& spec, std::string* why);

}  // namespace sot::graph::whole
