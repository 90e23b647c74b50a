// The CPU backend's machine code (tier B's kernels, tier C's loops): emitted C++ compiled by the
// system compiler into a shared object, in a background thread, and cached on disk by a key of the
// source, the compiler, its flags and the CPU's features, so that a warm start only loads it.
// Flags: -O3 -march=native -ffp-contract=off, never fast-math (which changes results and, with g++,
// links crtfastmath, setting flush-to-zero for the whole process).
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "graph/backends/cpu/cpp_emitter.hpp"

namespace sot::graph {

// The generated kernel: 0, or -1 when a NumPy loop it calls failed.
using NativeFn = int (*)(char* const* buffers, const double* scalars, long long n,
                         const NativeLoop* loops);

class NativeKernel {
 public:
  enum class State : int { kCompiling, kReady, kFailed };

  State state() const { return static_cast<State>(state_.load(std::memory_order_acquire)); }
  NativeFn fn() const { return reinterpret_cast<NativeFn>(symbol_); }  // kReady (tier B's)
  void* symbol() const { return symbol_; }                             // kReady
  const std::string& error() const { return error_; }                  // kFailed
  const std::string& path() const { return path_; }                    // the shared object
  bool from_disk() const { return from_disk_; }  // loaded from the cache, not compiled now
  double compile_seconds() const { return seconds_; }

  // Compiles (or loads) `code` and finds `symbol` in it; called once, off the main thread when
  // compiling.
  void build(const std::string& code, const std::string& symbol, const std::string& key_hex,
             bool compile);
  // In a forked child: a compile the parent's thread was running never ends here.
  void lost_at_fork();

 private:
  std::atomic<int> state_{static_cast<int>(State::kCompiling)};
  void* symbol_ = nullptr;
  std::string error_;
  std::string path_;
  bool from_disk_ = false;
  double seconds_ = 0;
};

struct NativeOptions {
  std::atomic<bool> enabled{true};  // SOT_CPU_TIER_B
};
NativeOptions& native_options();

// The kernel for `source`: loaded now when the cache has it, else compiling in a background thread
// (state() says when it is ready). Kernels of equal source are shared in the process.
std::shared_ptr<NativeKernel> native_kernel(const NativeSource& source);
// The same for any source defining extern "C" `symbol` (tier C's functions); with `wait`, a
// compile finishes before this returns (SOT_CPU_TIER_C=sync: every run native from the first).
std::shared_ptr<NativeKernel> native_kernel(const std::string& code, const std::string& symbol,
                                            bool wait = false);

// Blocks until no kernel is compiling (tests and benchmarks); returns how many were waited for.
int wait_for_native_kernels();

}  // namespace sot::graph
