// The host program of a simulated CUDA module (simulated_device.hpp): CUDA's built-ins as the
// generated kernels use them (a shim), the module's source, and per entry point NAME a function
// `int sot_sim_NAME(const unsigned long long* words, unsigned long count, unsigned grid,
// unsigned block, const SotSimFibers* fibers)` (SotSimFibers: the shim's SimulatedFibers) that
// runs a launch on a CudaArgs block of 8-byte words: 0; 1 where a block's threads had no stacks;
// 2 where some threads of a block ended while others waited at __syncthreads.
#pragma once

#include <string>
#include <vector>

namespace sot::graph {

std::string simulated_host_program(const std::string& source);
// The flags it is compiled with by the host's compiler.
const std::vector<std::string>& simulated_host_flags();

}  // namespace sot::graph
