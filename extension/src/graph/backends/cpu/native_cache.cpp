#include "graph/backends/cpu/native_cache.hpp"

#include "graph/runtime/disk_cache.hpp"
#include "graph/runtime/host_compiler.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace sot::graph {

namespace {

const std::vector<std::string>& compile_flags() {
  static const std::vector<std::string> flags = {
      "-O3",   "-march=native", "-ffp-contract=off", "-fno-math-errno",
      "-fPIC", "-shared",       "-std=c++17"};
  return flags;
}

// The CPU's feature flags (what -march=native compiles for), from /proc/cpuinfo.
std::string cpu_features() {
  std::ifstream info("/proc/cpuinfo");
  std::string line;
  while (std::getline(info, line)) {
    if (line.rfind("flags", 0) == 0) {
      return line;
    }
  }
  return "unknown";
}

struct Registry {
  std::mutex mutex;
  std::condition_variable done;
  int compiling = 0;
  std::map<std::string, std::shared_ptr<NativeKernel>> by_key;
};

Registry* g_registry = nullptr;

// A forked child (the test harness forks) has none of the parent's compiling threads: its lock is
// made anew and nothing counts as compiling (kernels left compiling stay on tier A there).
void registry_after_fork_in_child() {
  if (g_registry != nullptr) {
    new (&g_registry->mutex) std::mutex();
    new (&g_registry->done) std::condition_variable();
    g_registry->compiling = 0;
    for (auto& entry : g_registry->by_key) {
      entry.second->lost_at_fork();
    }
  }
}

Registry& registry() {
  static Registry* r = [] {
    g_registry = new Registry();  // NOLINT(cppcoreguidelines-owning-memory): lives for the process
    ::pthread_atfork(nullptr, nullptr, registry_after_fork_in_child);
    return g_registry;
  }();
  return *r;
}

}  // namespace

NativeOptions& native_options() {
  static NativeOptions options;
  return options;
}

void NativeKernel::build(const std::string& code, const std::string& symbol,
                         const std::string& key_hex, bool compile) {
  const auto start = std::chrono::steady_clock::now();
  const std::string dir = kernel_cache_dir();
  path_ = dir + "/" + key_hex + ".so";
  if (compile && !compile_shared_object(code, compile_flags(), dir, key_hex, &error_)) {
    state_.store(static_cast<int>(State::kFailed), std::memory_order_release);
    return;
  }
  from_disk_ = !compile;
  void* handle = ::dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  void* found = handle != nullptr ? ::dlsym(handle, symbol.c_str()) : nullptr;
  if (found == nullptr) {
    const char* e = ::dlerror();
    error_ = std::string("cannot load ") + path_ + ": " + (e != nullptr ? e : "no " + symbol);
    state_.store(static_cast<int>(State::kFailed), std::memory_order_release);
    return;
  }
  symbol_ = found;
  seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  state_.store(static_cast<int>(State::kReady), std::memory_order_release);
}

void NativeKernel::lost_at_fork() {
  if (state() == State::kCompiling) {
    error_ = "its compile was running in the parent of this forked process";
    state_.store(static_cast<int>(State::kFailed), std::memory_order_release);
  }
}

std::shared_ptr<NativeKernel> native_kernel(const NativeSource& source) {
  return native_kernel(source.code, "sot_kernel");
}

std::shared_ptr<NativeKernel> native_kernel(const std::string& code, const std::string& symbol,
                                            bool wait) {
  static const std::string environment = [] {
    std::string text = host_compiler();
    for (const std::string& f : compile_flags()) {
      text += " " + f;
    }
    return text + "\n" + cpu_features();
  }();
  const std::string key = cache_key(environment + code);
  Registry& r = registry();
  std::unique_lock<std::mutex> lock(r.mutex);
  const auto found = r.by_key.find(key);
  if (found != r.by_key.end()) {
    std::shared_ptr<NativeKernel> known = found->second;
    if (wait) {  // (compiling in another thread: its end is told through `done`)
      r.done.wait(lock, [&] { return known->state() != NativeKernel::State::kCompiling; });
    }
    return known;
  }
  auto kernel = std::make_shared<NativeKernel>();
  r.by_key[key] = kernel;
  struct stat st {};
  if (::stat((kernel_cache_dir() + "/" + key + ".so").c_str(), &st) == 0) {
    lock.unlock();
    kernel->build(code, symbol, key, false);  // a warm start: only dlopen
    return kernel;
  }
  if (wait) {
    lock.unlock();
    kernel->build(code, symbol, key, true);
    const std::lock_guard<std::mutex> guard(r.mutex);
    r.done.notify_all();
    return kernel;
  }
  ++r.compiling;
  lock.unlock();
  std::thread([kernel, code, symbol, key] {
    kernel->build(code, symbol, key, true);
    Registry& reg = registry();
    const std::lock_guard<std::mutex> guard(reg.mutex);
    --reg.compiling;
    reg.done.notify_all();
  }).detach();
  return kernel;
}

int wait_for_native_kernels() {
  Registry& r = registry();
  std::unique_lock<std::mutex> lock(r.mutex);
  const int waited = r.compiling;
  r.done.wait(lock, [&] { return r.compiling == 0; });
  return waited;
}

}  // namespace sot::graph
