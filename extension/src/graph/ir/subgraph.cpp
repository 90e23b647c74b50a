// Subgraph ops (subgraph.hpp): the lookup, the indenting of their text, and the one binding of
// their call.
#include "graph/ir/subgraph.hpp"

#include <memory>
#include <vector>

namespace py = pybind11;

namespace sot::graph {

SubgraphOp* subgraph_of(const py::handle& fn) {
  if (!fn || !py::isinstance<SubgraphOp>(fn)) {
    return nullptr;
  }
  return fn.cast<SubgraphOp*>();
}

std::string indented(const std::string& text, const std::string& indent) {
  std::string s;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      end = text.size();
    }
    s += indent + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return s;
}

void bind_subgraph_type(py::module_& m) {
  py::class_<SubgraphOp, std::shared_ptr<SubgraphOp>>(
      m, "SubgraphOp", "An op whose callable holds graphs of its own (a loop or cond op).")
      .def("__call__",
           [](SubgraphOp& op, const py::args& args) {
             std::vector<PyObject*> argv;
             argv.reserve(args.size());
             for (const py::handle a : args) {
               argv.push_back(a.ptr());
             }
             PyObject* r = op.run(argv.data(), argv.size());
             if (r == nullptr) {
               throw py::error_already_set();
             }
             return py::reinterpret_steal<py::object>(r);
           })
      .def("text", [](const SubgraphOp& op) { return op.text(""); });
}

}  // namespace sot::graph
