// NVRTC, loaded at run time (dlopen): the CUDA backend compiles its kernels' CUDA C++ to a cubin
// for the device's architecture (sm_90 by default) and to PTX (the fallback a newer device
// JIT-compiles), with FMA contraction off and never fast-math, and caches both on disk by a key of
// the source, the options and NVRTC's version. Nothing else in sot needs CUDA: where NVRTC cannot
// be loaded the compile reports why.
#pragma once

#include <string>

namespace sot::graph {

struct CudaBinary {
  bool ok = false;
  std::string error;    // when not ok: why (no NVRTC, or the compile log)
  std::string cubin;    // the machine code for `arch`
  std::string ptx;      // the PTX of the same source (virtual architecture compute_XY)
  std::string log;      // the compiler's messages (ptxas's resource report)
  int registers = 0;    // the most registers any entry point uses
  int spill_bytes = 0;  // spill stores and loads, summed over the entry points
  bool from_disk = false;
  double seconds = 0;  // compile time (0 when loaded from the cache)
};

// NVRTC's version ("13.0"), or "" with `why` when it cannot be loaded. The library is
// $SOT_NVRTC, else libnvrtc.so from the loader's path, $CUDA_HOME/lib64 or /usr/local/cuda/lib64.
std::string nvrtc_version(std::string* why);

// The options every kernel is compiled with for `arch` ("sm_90").
std::string nvrtc_options(const std::string& arch);

// Compiles `source` (a CudaSource's code) for `arch`, or loads it from the disk cache.
CudaBinary compile_cuda(const std::string& source, const std::string& arch);

}  // namespace sot::graph
