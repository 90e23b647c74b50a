// What the caller of a jit function asks of the runs its call makes (sot.jit's options), for the
// length of the call, on the calling thread; the backends read it.
#pragma once

namespace sot::core {

// Whether runs hand back the arrays their kernels made on the device as device arrays
// (sot.jit(..., device_results=True)), not as host arrays.
bool device_results_wanted();

// Sets device_results_wanted() to `on` for its lifetime (the previous setting after).
class DeviceResultsScope {
 public:
  explicit DeviceResultsScope(bool on);
  ~DeviceResultsScope();
  DeviceResultsScope(const DeviceResultsScope&) = delete;
  DeviceResultsScope& operator=(const DeviceResultsScope&) = delete;
  DeviceResultsScope(DeviceResultsScope&&) = delete;
  DeviceResultsScope& operator=(DeviceResultsScope&&) = delete;

 private:
  bool previous_;
};

}  // namespace sot::core
