#include "graph/backends/cpu/cpu_threads.hpp"

#include <Python.h>

#include <algorithm>
#include <exception>
#include <thread>
#include <vector>

#include "graph/backends/cpu/block_executor.hpp"

#ifdef SOT_OPENMP
#include <omp.h>

// libomp's own (not in GCC's omp.h): how long, in ms, a worker waits busy after a region before it
// sleeps.
extern "C" void kmp_set_blocktime(int msec);
#endif

namespace sot::graph {

namespace {

#ifdef SOT_OPENMP
std::int64_t cores() {
  return std::max(1, omp_get_num_procs());
}
#else
std::int64_t cores() {
  return std::max<std::int64_t>(1, std::thread::hardware_concurrency());
}
#endif

}  // namespace

std::int64_t cpu_threads() {
  const std::int64_t n = cpu_options().threads.load();
  return n > 0 ? n : cores();
}

namespace block {

std::int64_t threads_for(std::int64_t units, std::int64_t elements) {
  std::int64_t n = units;
  if (cpu_options().block_elements.load() == 0) {
    n = std::min<std::int64_t>(n, std::max<std::int64_t>(1, elements / kMinThreadElements));
  }
  if (n <= 1) {
    return 1;  // (without asking how many cores: the many small runs)
  }
  return std::max<std::int64_t>(std::min<std::int64_t>(cpu_threads(), n), 1);
}

namespace {

// Runs work(t), keeping what it throws for the caller (an exception must not leave a thread).
void run_keeping(const std::function<void(std::size_t)>& work, std::size_t t,
                 std::exception_ptr& error) {
  try {
    work(t);
  } catch (...) {
    error = std::current_exception();
  }
}

void rethrow_first(const std::vector<std::exception_ptr>& errors) {
  for (const std::exception_ptr& e : errors) {
    if (e) {
      std::rethrow_exception(e);
    }
  }
}

}  // namespace

#ifdef SOT_OPENMP

void on_threads(std::int64_t count, bool holds_gil, const std::function<void(std::size_t)>& work) {
  if (count <= 1) {
    work(std::size_t{0});
    return;
  }
  // (Per calling thread, as libomp keeps them: a Python thread running kernels sets its own.)
  thread_local const bool configured = [] {
    kmp_set_blocktime(0);
    omp_set_dynamic(1);
    return true;
  }();
  static_cast<void>(configured);
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(count));
  PyThreadState* saved = nullptr;
#pragma omp parallel num_threads(static_cast <int>(count))
  {
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    run_keeping(work, t, errors[t]);
    if (t == 0 && holds_gil && omp_get_num_threads() > 1) {
      saved = PyEval_SaveThread();  // the others may wait for the GIL: let go of it at the barrier
    }
  }
  if (saved != nullptr) {
    PyEval_RestoreThread(saved);
  }
  rethrow_first(errors);
}

#else

void on_threads(std::int64_t count, bool holds_gil, const std::function<void(std::size_t)>& work) {
  std::vector<std::exception_ptr> errors(
      static_cast<std::size_t>(std::max<std::int64_t>(count, 1)));
  std::vector<std::thread> helpers;
  for (std::int64_t t = 1; t < count; ++t) {
    const auto i = static_cast<std::size_t>(t);
    helpers.emplace_back([&work, &errors, i] { run_keeping(work, i, errors[i]); });
  }
  run_keeping(work, 0, errors[0]);
  PyThreadState* saved = holds_gil && !helpers.empty() ? PyEval_SaveThread() : nullptr;
  for (std::thread& h : helpers) {
    h.join();
  }
  if (saved != nullptr) {
    PyEval_RestoreThread(saved);
  }
  rethrow_first(errors);
}

#endif

}  // namespace block

const char* thread_pool_name() {
#ifdef SOT_OPENMP
  return "libomp";
#else
  return "std::thread";
#endif
}

}  // namespace sot::graph
