// int() and float() of a NumPy value of the graph: `return board, int(board.sum())`. The number is
// made where the graph runs, by the builtin itself (an op of the graph whose result is a Python int
// or float, ValueInfo::python), so it is exactly what plain Python makes. The frame may return it,
// keep it in a container or pass it on; whatever needs its value here (arithmetic, a branch,
// formatting) breaks the graph, as before. int() of a NaN or an infinity raises where the graph
// runs: that op is made only while no side effect waits to be replayed after the graph.
#include <string>
#include <vector>

#include "core/loaded_module.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

VarPtr OpcodeExecutor::python_number_of(const VarPtr& callable, const std::vector<VarPtr>& args,
                                        std::size_t nkw) {
  if (callable->kind() != Variable::Kind::kObject || args.size() != 1 || nkw != 0 ||
      args[0]->kind() != Variable::Kind::kArray || !is_array_like(args[0])) {
    return nullptr;
  }
  PyObject* fn = callable->value().ptr();
  const bool to_int = fn == reinterpret_cast<PyObject*>(&PyLong_Type);
  if (!to_int && fn != reinterpret_cast<PyObject*>(&PyFloat_Type)) {
    return nullptr;
  }
  const int id = args[0]->graph_id();
  const graph::ValueInfo info = array_info(id);
  const char k = graph::kind(info.dtype);
  if (info.is_tuple() || !(info.scalar || info.ndim() == 0) ||
      (k != 'b' && k != 'i' && k != 'u' && k != 'f')) {
    return nullptr;  // (an array of more items, complex values: the break below)
  }
  if (to_int && k == 'f' && effects().pending()) {
    graph_break(
        "int() of a NumPy float: it may raise on a NaN or an infinity, after side effects "
        "that are replayed once the graph has run");
  }
  guards_->identity(callable);
  graph::Op g;
  g.name = to_int ? "int" : "float";
  g.fn = callable->value();
  g.args = {graph::Arg::of(id)};
  graph::ValueInfo number;
  number.dtype = to_int ? graph::DType::kInt64 : graph::DType::kFloat64;
  number.scalar = true;
  number.python = to_int ? 'i' : 'f';
  return add_array_op(std::move(g), number);
}

}  // namespace sot::translator
