// The NumPy reference backend: a compiled graph runs its program's steps in order (each the NumPy
// call the user's code made), so results are bit-exact with eager NumPy.
#include <memory>
#include <string>
#include <vector>

#include "graph/exec/backend.hpp"
#include "graph/exec/program.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

class StepRunner final : public Runner {
 public:
  explicit StepRunner(std::unique_ptr<Program> program) : p_(std::move(program)) {}

  PyObject* run(PyObject* const* argv, std::size_t nargs) override {
    if (!check_input_count(*p_, nargs)) {
      return nullptr;
    }
    Frame frame(*p_, argv);
    for (std::size_t k = 0; k < p_->steps.size(); ++k) {
      if (!frame.run_step(k)) {
        return nullptr;
      }
    }
    return frame.outputs();
  }

  std::string repr() const override {
    return "<sot compiled graph " + std::to_string(p_->steps.size()) +
           "-op: " + std::to_string(p_->steps.size()) + " ops, " +
           std::to_string(p_->inputs.size()) + " inputs, " + std::to_string(p_->outputs.size()) +
           " outputs (numpy)>";
  }

  py::dict plan() const override {
    py::dict d;
    d["backend"] = "numpy";
    d["steps"] = p_->steps.size();
    return d;
  }

 private:
  std::unique_ptr<Program> p_;
};

class NumpyBackend final : public Backend {
 public:
  std::string name() const override { return "numpy"; }

  py::object compile(const Graph& graph, const std::vector<int>& outputs, bool check) override {
    return make_compiled(std::make_unique<StepRunner>(build_program(graph, outputs, check)));
  }
};

}  // namespace

std::unique_ptr<Backend> make_numpy_backend() {
  return std::make_unique<NumpyBackend>();
}

}  // namespace sot::graph
