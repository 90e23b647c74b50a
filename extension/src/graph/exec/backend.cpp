// The backends by name.
#include "graph/exec/backend.hpp"

#include <memory>
#include <string>
#include <vector>

namespace sot::graph {

namespace {

std::vector<std::unique_ptr<Backend>>& registry() {
  static std::vector<std::unique_ptr<Backend>> backends;
  if (backends.empty()) {
    backends.push_back(make_numpy_backend());
    backends.push_back(make_cpu_backend());
    backends.push_back(make_cuda_backend());
  }
  return backends;
}

}  // namespace

Backend* find_backend(const std::string& name) {
  for (const auto& b : registry()) {
    if (b->name() == name) {
      return b.get();
    }
  }
  return nullptr;
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const auto& b : registry()) {
    names.push_back(b->name());
  }
  return names;
}

void register_backend(std::unique_ptr<Backend> backend) {
  registry().push_back(std::move(backend));
}

}  // namespace sot::graph
