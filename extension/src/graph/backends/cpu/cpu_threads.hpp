// The threads the CPU backend's kernels run on (tier A's blocks, tier B's ranges): a persistent
// pool from LLVM's OpenMP runtime (libomp, Debian's libomp-dev), started at the first parallel run
// and reused by every run after it. Why that runtime, measured on the 2-core machine of
// docs/executor.md:
// - it survives fork (the test harness forks): a child of a parent that ran a parallel region runs
//   its own (GNU's libgomp hangs there: its pool's threads are not in the child);
// - its dynamic team size (omp_set_dynamic, mode "load balance") counts the threads running on the
//   machine, BLAS threads and other processes included: on a loaded machine a run gets fewer
//   threads instead of waiting for cores it cannot have;
// - its workers sleep as soon as a run ends (blocktime 0): they take no core from NumPy's BLAS or
//   from the caller between runs.
// Built without libomp (SOT_OPENMP off, as on a machine without it), runs start threads of their
// own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace sot::graph {

// The threads a kernel's blocks run on: cpu_options().threads, or (0) one per core this process
// may run on.
std::int64_t cpu_threads();

// The library behind on_threads ("libomp" or "std::thread"), for the report.
const char* thread_pool_name();

namespace block {

// Elements each thread beyond the first must have: a pool's thread costs 10-60 us to wake and
// join on the 2-core machine of docs/executor.md (a thread started per run 25-60 us), the time of
// about a hundred thousand elements of a short chain, so smaller kernels run on the calling thread
// alone. (With a block size set, as in the tests, every block may go to another thread.)
inline constexpr std::int64_t kMinThreadElements = std::int64_t{1} << 17;

// The threads for `units` parts of a run over `elements` elements.
std::int64_t threads_for(std::int64_t units, std::int64_t elements);

// Runs work(t) on up to `count` threads, t = 0 on the calling thread, all finished before it
// returns. Each work(t) must take its parts from a counter the calls share, so that any number of
// them does the whole run: the pool may give fewer threads than asked (a loaded machine). With
// `holds_gil` the caller holds the GIL while it works and lets go of it while it waits for the
// others (who take it to call NumPy); without, nobody holds it.
void on_threads(std::int64_t count, bool holds_gil, const std::function<void(std::size_t)>& work);

}  // namespace block

}  // namespace sot::graph
