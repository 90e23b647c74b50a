// Cond ops: an `if` on a value of the graph, captured as one op instead of a graph break. The op's
// first argument is the test; each way (the one taken when its truth is true, the other) is a graph
// of its own whose inputs are some of the op's other arguments and whose outputs are the locals
// either way may change, in one order for both. Only the way taken runs (so its warnings, errors
// and in-place changes are plain Python's); the op returns a tuple of its outputs, which
// `cond_output` ops take out.
#pragma once

#include <pybind11/pybind11.h>

#include <array>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "graph/ir/graph.hpp"
#include "graph/ir/subgraph.hpp"

namespace sot::graph {

class Backend;

struct CondSpec {
  // [0]: the way taken when the test is true; [1]: when it is false.
  std::array<Graph, 2> body;
  std::array<std::vector<int>, 2> outputs;  // each way's values for the op's outputs
  std::array<std::vector<int>, 2> args;     // each way's inputs: positions among the op's arguments
};

class CondBody final : public SubgraphOp {
 public:
  explicit CondBody(CondSpec spec) : spec_(std::move(spec)) {}
  const CondSpec& spec() const { return spec_; }
  // The spec as compiled (each way optimized, with the sizes of the translation), or as captured
  // before compile().
  const CondSpec& current_spec() const { return compiled_[0] ? current_ : spec_; }
  // Compiles both ways (and the loops and conds inside them) with `backend`.
  void compile(Backend* backend, bool check, const std::function<ValueInfo(ValueInfo)>& current);
  // Runs the way the test (args[0]) picks: a tuple of its outputs (new reference; nullptr with an
  // error set when it raises). Compiles with the reference backend when nothing has.
  PyObject* run(PyObject* const* args, std::size_t nargs) override;
  // Both ways as text, each line after `indent`.
  std::string text(const std::string& indent) const override;
  std::vector<std::pair<std::string, pybind11::object>> compiled_graphs() const override {
    if (!compiled_[0]) {
      return {};
    }
    return {{"if way", compiled_[0]}, {"else way", compiled_[1]}};
  }

 private:
  CondSpec spec_;
  CondSpec current_;
  std::array<pybind11::object, 2> compiled_;
};

// The callable of a cond op (a Python object holding the CondBody).
pybind11::object make_cond_callable(CondSpec spec);
// The CondBody of a cond op's callable, or nullptr when `fn` is not one.
CondBody* cond_body_of(const pybind11::handle& fn);
// Registers the callable's Python type (at module import).
void bind_cond_type(pybind11::module_& m);

}  // namespace sot::graph
