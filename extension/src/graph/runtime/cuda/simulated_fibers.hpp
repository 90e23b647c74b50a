// The stacks a simulated CUDA block's threads run on (simulated_device.hpp). A block whose code
// meets at __syncthreads runs its threads as fibers on the launching host thread: each thread runs
// on its own stack until it reaches the barrier, then the next one runs, and once all have reached
// it the first goes on. (Host threads meeting at a barrier took most of a simulated launch's time
// in the kernel's scheduler: a 64-row sum took 120 ms.) The module's shim switches between them;
// the host only lends the memory (no code of the extension's runs on these stacks: the kernels,
// and the C library's functions they call).
#pragma once

namespace sot::graph {

// What a simulated module is given (its shim declares the same struct). stacks(count, &stride)
// gives the calling thread's stacks for `count` threads: thread t's stack ends (its top) at
// base + (t + 1) * stride, and the lowest page of each stride is a guard page (an overflow
// faults). The memory is the calling host thread's, kept for its next launch.
struct SimulatedFibers {
  void* (*stacks)(unsigned count, unsigned long* stride);
};

// The process's (one, for every module).
const SimulatedFibers* simulated_fibers();

}  // namespace sot::graph
