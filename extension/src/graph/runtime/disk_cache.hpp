// The disk cache of compiled kernels, shared by the CPU backend's native code (graph/backends/cpu/
// native_cache.hpp) and NVRTC's output (graph/runtime/cuda/nvrtc.hpp): where it is, and the keys
// its files are named by.
#pragma once

#include <string>

namespace sot::graph {

// The folder of the kernel cache: $SOT_CACHE_DIR, else $XDG_CACHE_HOME/xeus-sot, else
// ~/.cache/xeus-sot; then "kernels".
std::string kernel_cache_dir();

// A stable key of `text` across processes and builds (FNV-1a, 64 bits, as 16 hex digits).
std::string cache_key(const std::string& text);
// Makes `path` and its parents; true when it is a folder afterwards.
bool make_dirs(const std::string& path);

}  // namespace sot::graph
