// A loop's steps replayed on the device (value_home.hpp, StepRecord): each step's launches are
// logged (cuda_kernel.hpp, LaunchLog); a step that queued nothing but launches (no step on the
// host, nothing copied either way, no flag read, no product through the BLAS: the run still
// optimistic) and the same launches as the step before it (the same kernels, grids and argument
// blocks: the same device addresses and scalars), or as the step two before it (two temporaries'
// blocks swapped from step to step), on the very same values, is queued again as it was (the two
// in turn) for every step left, without the body's graph call. So a heat loop's 500 steps cost two
// graph calls and 498 replays of two launches each. Anything a step reads that changes from step
// to step (the loop variable as a kernel's scalar, a new block) makes its launches differ, and
// the steps run as before.
#pragma once

#include <atomic>
#include <memory>

#include "graph/exec/value_home.hpp"

namespace sot::graph {

class Residency;

// A record of a loop's steps in `r`, or nullptr where replays are off (cuda_replay()).
std::unique_ptr<StepRecord> record_device_steps(Residency& r);

// Whether steps are replayed (SOT_CUDA_REPLAY, on by default).
std::atomic<bool>& cuda_replay();

}  // namespace sot::graph
