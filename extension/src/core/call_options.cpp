#include "core/call_options.hpp"

namespace sot::core {

namespace {

thread_local bool t_device_results = false;

}  // namespace

bool device_results_wanted() {
  return t_device_results;
}

DeviceResultsScope::DeviceResultsScope(bool on) : previous_(t_device_results) {
  t_device_results = on;
}

DeviceResultsScope::~DeviceResultsScope() {
  t_device_results = previous_;
}

}  // namespace sot::core
