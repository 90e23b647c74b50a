// The CUDA backend's compile check, for machines without a GPU: while on, every kernel the CPU
// backend lowers is also emitted as CUDA C++ and compiled by NVRTC to a cubin, and the outcome is
// recorded (emitted or why not, compiled or the log, registers and spills). `make test` runs the
// NumPy differential suites with it on, so that every kernel of that corpus is known to compile.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "graph/lower/kernel_ir.hpp"

namespace sot::graph {

// Turns the check on (for `arch`, e.g. "sm_90") or off; on clears what was recorded.
// While on, it watches the kernels the cpu backend lowers (kir::set_observer).
void set_cuda_check(bool on, const std::string& arch);
// Emits `k` and queues its source's compile (each distinct source once per process) on the
// check's worker thread, which compiles while the tests go on; in a forked child of the worker's
// process, nothing.
void cuda_check_kernel(const kir::Kernel& k);
// Every kernel checked since the last call, once their compiles are done, then forgets them:
// [{"kernel", "why" (not emitted), "source", "ok", "registers", "spill_bytes", "log"}] (a source
// seen before has its first outcome).
pybind11::list cuda_check_take();
// Compiles one source (or loads it from the disk cache): {"ok", "error", "log", "registers",
// "spill_bytes", "from_disk", "seconds", "cubin_bytes", "ptx"}.
pybind11::dict cuda_compile(const std::string& source, const std::string& arch);
// What was recorded, once every compile queued is done: {"kernels", "emitted", "compiled",
// "sources", "not_emitted": {why: count}, "failed": [{"kernel", "source", "log"}],
// "max_registers", "spilling": [{"kernel", "bytes"}], "compile_seconds": [per source compiled
// now], "from_disk", "nvrtc"}.
// With `sources`, also "source_texts": every distinct source emitted.
pybind11::dict cuda_check_report(bool sources);

}  // namespace sot::graph
