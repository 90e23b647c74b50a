#include "graph/cuda_driver.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <string>

namespace sot::graph {

namespace {

// CUresult is an int (0: success); CUdevice an int ordinal.
struct DriverApi {
  int (*init)(unsigned) = nullptr;
  int (*driver_version)(int*) = nullptr;
  int (*device_count)(int*) = nullptr;
  int (*device_get)(int*, int) = nullptr;
  int (*device_name)(char*, int, int) = nullptr;
  int (*device_attribute)(int*, int, int) = nullptr;
  int (*device_memory)(std::size_t*, int) = nullptr;
  int (*error_string)(int, const char**) = nullptr;
};

// CU_DEVICE_ATTRIBUTE_* values of the driver API.
constexpr int kMultiprocessorCount = 16;
constexpr int kComputeCapabilityMajor = 75;
constexpr int kComputeCapabilityMinor = 76;

template <typename F>
bool bind(void* lib, const char* name, F* fn) {
  *fn = reinterpret_cast<F>(dlsym(lib, name));  // NOLINT(*-reinterpret-cast): dlsym's result
  return *fn != nullptr;
}

std::string error_text(const DriverApi& api, int code) {
  const char* text = nullptr;
  if (api.error_string != nullptr && api.error_string(code, &text) == 0 && text != nullptr) {
    return text;
  }
  return "CUDA error " + std::to_string(code);
}

void* open_library(std::string* tried) {
  const char* override_path = std::getenv("SOT_LIBCUDA");
  const std::string name =
      override_path != nullptr && *override_path != '\0' ? override_path : "libcuda.so.1";
  *tried = name;
  return dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
}

bool bind_all(void* lib, DriverApi* api) {
  return bind(lib, "cuInit", &api->init) && bind(lib, "cuDriverGetVersion", &api->driver_version) &&
         bind(lib, "cuDeviceGetCount", &api->device_count) &&
         bind(lib, "cuDeviceGet", &api->device_get) &&
         bind(lib, "cuDeviceGetName", &api->device_name) &&
         bind(lib, "cuDeviceGetAttribute", &api->device_attribute) &&
         bind(lib, "cuDeviceTotalMem_v2", &api->device_memory) &&
         bind(lib, "cuGetErrorString", &api->error_string);
}

CudaDevice describe(const DriverApi& api, int ordinal) {
  CudaDevice d;
  d.ordinal = ordinal;
  int device = 0;
  if (api.device_get(&device, ordinal) != 0) {
    return d;
  }
  char name[256] = {};
  if (api.device_name(name, static_cast<int>(sizeof name), device) == 0) {
    d.name = name;
  }
  api.device_attribute(&d.major, kComputeCapabilityMajor, device);
  api.device_attribute(&d.minor, kComputeCapabilityMinor, device);
  api.device_attribute(&d.multiprocessors, kMultiprocessorCount, device);
  std::size_t bytes = 0;
  if (api.device_memory(&bytes, device) == 0) {
    d.memory_bytes = static_cast<long long>(bytes);
  }
  return d;
}

CudaStatus probe() {
  CudaStatus s;
  std::string tried;
  void* lib = open_library(&tried);
  if (lib == nullptr) {
    s.reason = "no CUDA device: the NVIDIA driver library (" + tried +
               ") cannot be loaded (no driver on this machine; SOT_LIBCUDA names another path)";
    return s;
  }
  DriverApi api;
  if (!bind_all(lib, &api)) {
    s.reason = "no CUDA device: " + tried + " lacks a driver API entry point";
    return s;
  }
  api.driver_version(&s.driver_version);
  if (const int rc = api.init(0); rc != 0) {
    s.reason = "no CUDA device: cuInit failed (" + error_text(api, rc) + ")";
    return s;
  }
  int count = 0;
  if (const int rc = api.device_count(&count); rc != 0 || count == 0) {
    s.reason = "no CUDA device: " + (rc != 0 ? error_text(api, rc) : std::string("none found"));
    return s;
  }
  for (int i = 0; i < count; ++i) {
    s.devices.push_back(describe(api, i));
  }
  s.available = true;
  return s;  // (the library stays loaded: the backend launches through it)
}

}  // namespace

const CudaStatus& cuda_status() {
  static const CudaStatus status = probe();
  return status;
}

}  // namespace sot::graph
