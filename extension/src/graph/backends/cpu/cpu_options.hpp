// The CPU backend's settings (sot.config's cpu_block, cpu_threads, profile:
// _sot.graph.cpu_options).
#pragma once

#include <atomic>
#include <cstdint>

namespace sot::graph {

struct CpuOptions {
  // Elements per block (0: chosen so that a block's buffers fill about 1 MiB).
  std::atomic<std::int64_t> block_elements{0};
  // Time each group (plan()["groups"][i]["seconds"]).
  std::atomic<bool> profile{false};
  // Threads running a kernel's blocks (0: one per core).
  std::atomic<std::int64_t> threads{0};
};

inline CpuOptions& cpu_options() {
  static CpuOptions options;
  return options;
}

}  // namespace sot::graph
