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

struct LoopSpec;
class LoopCode;

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
  // A loop op's whole run as native code (graph/exec/loop_code.hpp), for `spec` with its body
  // as compiled; nullptr where this backend has none for it.
  virtual std::shared_ptr<LoopCode> compile_loop(const LoopSpec& spec) {
    (void)spec;
    return nullptr;
  }
  // A whole graph - its ops, and its loop ops with their bodies compiled (compile_loops with
  // native false) - as one native function (graph/exec/native_graph.hpp); nullptr where this
  // backend has none for it (its loops then get their own, compile_native_loops).
  virtual std::shared_ptr<LoopCode> compile_graph(const Graph& graph,
                                                  const std::vector<int>& outputs) {
    (void)graph;
    (void)outputs;
    return nullptr;
  }
  // Whether this backend makes native code of loops at all (now: tier C may be turned off).
  virtual bool compiles_loops() const { return false; }
  // Whether compile_loop would make native code of `spec` (else `why`): the translator keeps a
  // loop op whose steps compute single elements or Python numbers only where it would, since a
  // step run as a graph call from Python objects is slower than CPython's own loop.
  virtual bool native_loop(const LoopSpec& spec, std::string* why) {
    (void)spec;
    *why = "the " + name() + " backend compiles no loop natively";
    return false;
  }
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
