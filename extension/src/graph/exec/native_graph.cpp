// A compiled graph run natively first (native_graph.hpp).
#include "graph/exec/native_graph.hpp"

#include <string>
#include <utility>

#include "graph/exec/program.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

class NativeFirst final : public Runner {
 public:
  NativeFirst(py::object compiled, std::shared_ptr<LoopCode> native, std::size_t noutputs,
              std::function<void()> on_retire)
      : compiled_(std::move(compiled)),
        native_(std::move(native)),
        noutputs_(noutputs),
        on_retire_(std::move(on_retire)) {}

  PyObject* run(PyObject* const* argv, std::size_t nargs) override {
    return run_routed(
        *native_, argv, nargs, [this](PyObject* tuple) { return unpack(tuple); },
        [&]() -> PyObject* {
          if (on_retire_ && native_->retired()) {
            const std::function<void()> retire = std::move(on_retire_);
            on_retire_ = nullptr;
            try {
              retire();
            } catch (py::error_already_set& e) {
              e.restore();
              return nullptr;
            }
          }
          return PyObject_Vectorcall(compiled_.ptr(), argv, nargs, nullptr);
        });
  }

  std::string repr() const override { return py::str(compiled_).cast<std::string>(); }

  py::dict plan() const override {
    py::dict plan = compiled_.attr("plan")();
    py::dict whole;
    whole["status"] = native_->status();
    whole["runs"] = native_->runs();
    whole["gave_up"] = native_->gave_up();
    plan["whole"] = std::move(whole);
    return plan;
  }

 private:
  // The native code's tuple of outputs (stolen) as a compiled graph returns them: None, the one
  // value, or the tuple.
  PyObject* unpack(PyObject* tuple) const {
    if (noutputs_ == 1) {
      PyObject* one = Py_NewRef(PyTuple_GET_ITEM(tuple, 0));
      Py_DECREF(tuple);
      return one;
    }
    if (noutputs_ == 0) {
      Py_DECREF(tuple);
      return Py_NewRef(Py_None);
    }
    return tuple;
  }

  py::object compiled_;
  std::shared_ptr<LoopCode> native_;
  std::size_t noutputs_;
  std::function<void()> on_retire_;
};

}  // namespace

py::object native_first(py::object compiled, std::shared_ptr<LoopCode> native, std::size_t noutputs,
                        std::function<void()> on_retire) {
  return make_compiled(std::make_unique<NativeFirst>(std::move(compiled), std::move(native),
                                                     noutputs, std::move(on_retire)));
}

}  // namespace sot::graph
