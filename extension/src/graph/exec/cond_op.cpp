// Cond ops (cond_op.hpp): each way compiled once, the one the test picks run.
#include "graph/exec/cond_op.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/exec/backend.hpp"
#include "graph/exec/loop_op.hpp"

namespace py = pybind11;

namespace sot::graph {

void CondBody::compile(Backend* backend, bool check,
                       const std::function<ValueInfo(ValueInfo)>& current) {
  current_ = spec_;
  for (std::size_t way = 0; way < 2; ++way) {
    Graph body = spec_.body[way];
    for (std::size_t i = 0; i < body.values().size(); ++i) {
      body.info(static_cast<int>(i)) = current(body.values()[i].info);
    }
    compile_loops(body, backend, check, current);
    std::vector<int> outs = spec_.outputs[way];
    const Graph g = body.optimized(&outs);
    current_.body[way] = g;
    current_.outputs[way] = outs;
    compiled_[way] = backend->compile(g, outs, check);
  }
}

PyObject* CondBody::run(PyObject* const* args, std::size_t nargs) {
  if (!compiled_[0]) {
    try {
      compile(find_backend("numpy"), false, [](ValueInfo info) { return info; });
    } catch (py::error_already_set& e) {
      e.restore();
      return nullptr;
    }
  }
  if (nargs == 0) {
    PyErr_SetString(PyExc_SystemError, "a cond op without its test");
    return nullptr;
  }
  const int t = PyObject_IsTrue(args[0]);
  if (t < 0) {
    return nullptr;
  }
  const std::size_t way = t == 1 ? 0 : 1;
  std::vector<PyObject*> argv;
  argv.reserve(spec_.args[way].size());
  for (const int k : spec_.args[way]) {
    if (static_cast<std::size_t>(k) + 1 >= nargs) {
      PyErr_SetString(PyExc_SystemError, "a cond op with too few arguments");
      return nullptr;
    }
    argv.push_back(args[k + 1]);
  }
  PyObject* r = PyObject_Vectorcall(compiled_[way].ptr(), argv.data(), argv.size(), nullptr);
  if (r != nullptr && spec_.outputs[way].empty()) {
    Py_DECREF(r);  // (a way that only changes arrays in place: whatever its graph returned)
    return PyTuple_New(0);
  }
  if (r == nullptr || spec_.outputs[way].size() != 1) {
    return r;  // (a tuple of two or more, or the error)
  }
  PyObject* out = PyTuple_Pack(1, r);
  Py_DECREF(r);
  return out;
}

std::string CondBody::text(const std::string& indent) const {
  std::string s;
  for (std::size_t way = 0; way < 2; ++way) {
    s += indent + (way == 0 ? "true:\n" : "false:\n");
    s += indented(spec_.body[way].text(spec_.outputs[way]), indent + "  ");
  }
  return s;
}

py::object make_cond_callable(CondSpec spec) {
  return py::cast(std::make_shared<CondBody>(std::move(spec)));
}

CondBody* cond_body_of(const py::handle& fn) {
  if (!fn || !py::isinstance<CondBody>(fn)) {
    return nullptr;
  }
  return fn.cast<CondBody*>();
}

void bind_cond_type(py::module_& m) {
  py::class_<CondBody, SubgraphOp, std::shared_ptr<CondBody>>(
      m, "CondBody", "The two ways of a cond op: graphs, the one its test picks run.")
      .def("__repr__", [](const CondBody& body) {
        return "<sot cond: " + std::to_string(body.spec().body[0].ops().size()) + " and " +
               std::to_string(body.spec().body[1].ops().size()) + " ops>";
      });
}

}  // namespace sot::graph
