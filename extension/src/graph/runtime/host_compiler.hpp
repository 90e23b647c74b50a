// The system C++ compiler, for code that runs on the host: the CPU backend's native code
// (graph/backends/cpu/native_cache.hpp) and the simulated CUDA device's kernels
// (graph/runtime/cuda/simulated_device.hpp). It knows nothing of what the code is.
#pragma once

#include <string>
#include <vector>

namespace sot::graph {

// The compiler: $SOT_CXX, else c++.
std::string host_compiler();

// Compiles `code` with `flags` into the shared object `dir`/`key_hex`.so: written under names of
// this process and renamed into place, so that another process compiling the same code at once
// does not see a half-written file. The source is kept beside it (`key_hex`.cpp). False with
// `why` (the compiler's output) on failure.
bool compile_shared_object(const std::string& code, const std::vector<std::string>& flags,
                           const std::string& dir, const std::string& key_hex, std::string* why);

}  // namespace sot::graph
