// The CUDA driver API, loaded at run time (dlopen of libcuda.so.1, the NVIDIA driver's library):
// the CUDA backend launches through it, and where there is no driver or no device it says why
// instead of failing to import. Only the entry points the backend needs are bound.
#pragma once

#include <string>
#include <vector>

namespace sot::graph {

struct CudaDevice {
  int ordinal = 0;
  std::string name;
  int major = 0;  // compute capability
  int minor = 0;
  long long memory_bytes = 0;
  int multiprocessors = 0;

  std::string arch() const { return "sm_" + std::to_string(major) + std::to_string(minor); }
};

struct CudaStatus {
  bool available = false;
  std::string reason;      // when not available: "no CUDA device: ..."
  int driver_version = 0;  // e.g. 13000
  std::vector<CudaDevice> devices;
};

// The driver's state, found once per process: the library ($SOT_LIBCUDA, else libcuda.so.1),
// cuInit, and every device with its name, compute capability, memory and multiprocessors.
const CudaStatus& cuda_status();

}  // namespace sot::graph
