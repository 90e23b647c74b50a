// Backends run graphs. Each compiles a Graph (with its outputs) into a Python callable
// `f(*inputs)` that returns the outputs: the value itself for one output, a tuple for several, None
// for none. Backends are found by name: "numpy" (the reference), "cpu" (fused groups) and "cuda"
// (fused groups on the GPU).
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/ir/graph.hpp"

namespace sot::graph {

// A backend that cannot compile graphs here (the cuda backend without a device): the translation
// fails with this reason and the function runs as is.
class BackendError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Backend {
 public:
  Backend() = default;
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;
  Backend(Backend&&) = delete;
  Backend& operator=(Backend&&) = delete;

  virtual std::string name() const = 0;
  // `check`: after every op, compare the array it made with what the graph says (dtype, shape,
  // scalar or array) and raise AssertionError on a difference (for tests).
  virtual pybind11::object compile(const Graph& graph, const std::vector<int>& outputs,
                                   bool check) = 0;
};

// The backend called `name`, or nullptr.
Backend* find_backend(const std::string& name);
std::vector<std::string> backend_names();
void register_backend(std::unique_ptr<Backend> backend);

// The reference backend: every op is the NumPy call the user's code made, in order, so results are
// bit-exact with eager NumPy (views stay views, in-place ops change the same arrays).
std::unique_ptr<Backend> make_numpy_backend();
// The CPU backend: elementwise chains fused into groups run block by block (cpu_backend.cpp).
std::unique_ptr<Backend> make_cpu_backend();
// The CUDA backend: fused groups as NVRTC-compiled kernels on the GPU, NumPy arrays in and out
// (cuda_backend.cpp); compiling a graph without a CUDA device raises "no CUDA device: <why>".
std::unique_ptr<Backend> make_cuda_backend();

}  // namespace sot::graph
