// Ops whose callable holds graphs of their own (the loop and cond ops of graph/exec/): what the IR
// knows of them. The graph's text shows their bodies through this interface without knowing which
// kind of op they are, and one Python type binds their call for every kind.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace sot::graph {

class SubgraphOp {
 public:
  SubgraphOp() = default;
  SubgraphOp(const SubgraphOp&) = delete;
  SubgraphOp& operator=(const SubgraphOp&) = delete;
  SubgraphOp(SubgraphOp&&) = delete;
  SubgraphOp& operator=(SubgraphOp&&) = delete;
  virtual ~SubgraphOp() = default;

  // Runs the op on its arguments (borrowed): a new reference, or nullptr with an error set.
  virtual PyObject* run(PyObject* const* args, std::size_t nargs) = 0;
  // Its graphs as text, each line after `indent`.
  virtual std::string text(const std::string& indent) const = 0;
  // Its graphs as compiled (callables with a plan()), each with what it is ("loop body", "if
  // way", "else way"); empty before they are compiled.
  virtual std::vector<std::pair<std::string, pybind11::object>> compiled_graphs() const {
    return {};
  }
};

// The SubgraphOp an op's callable is, or nullptr when it is none.
SubgraphOp* subgraph_of(const pybind11::handle& fn);
// `text` with `indent` before each of its lines.
std::string indented(const std::string& text, const std::string& indent);
// Registers the Python type every subgraph op's type derives from (its __call__ and text()); at
// module import, before the loop and cond types.
void bind_subgraph_type(pybind11::module_& m);

}  // namespace sot::graph
