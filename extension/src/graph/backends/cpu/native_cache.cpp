#include "graph/backends/cpu/native_cache.hpp"

#include "graph/runtime/disk_cache.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, for posix_spawn

namespace sot::graph {

namespace {

const std::vector<std::string>& compile_flags() {
  static const std::vector<std::string> flags = {
      "-O3",   "-march=native", "-ffp-contract=off", "-fno-math-errno",
      "-fPIC", "-shared",       "-std=c++17"};
  return flags;
}

std::string compiler() {
  const char* cxx = std::getenv("SOT_CXX");
  return cxx != nullptr && *cxx != '\0' ? cxx : "c++";
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

// Runs the compiler; its output (errors) goes to `log`. True on success.
bool run_compiler(const std::string& source, const std::string& object, const std::string& log) {
  std::vector<std::string> argv_text = {compiler()};
  for (const std::string& f : compile_flags()) {
    argv_text.push_back(f);
  }
  argv_text.insert(argv_text.end(), {source, "-o", object});
  std::vector<char*> argv;
  argv.reserve(argv_text.size() + 1);
  for (std::string& a : argv_text) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    return false;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      return false;
    }
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
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
  if (compile) {
    if (!make_dirs(dir)) {
      error_ = "cannot make the kernel cache folder " + dir;
      state_.store(static_cast<int>(State::kFailed), std::memory_order_release);
      return;
    }
    // Written under names of this process, renamed into place: another process compiling the same
    // kernel at once does not see a half-written file.
    const std::string stem = dir + "/" + key_hex + "." + std::to_string(::getpid());
    std::ofstream(stem + ".cpp") << code;
    if (!run_compiler(stem + ".cpp", stem + ".so", stem + ".log")) {
      std::ifstream log(stem + ".log");
      error_ = "compiler failed: " + std::string(std::istreambuf_iterator<char>(log), {});
      state_.store(static_cast<int>(State::kFailed), std::memory_order_release);
      return;
    }
    std::rename((stem + ".cpp").c_str(), (dir + "/" + key_hex + ".cpp").c_str());
    std::rename((stem + ".so").c_str(), path_.c_str());
    std::remove((stem + ".log").c_str());
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
    std::string text = compiler();
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
