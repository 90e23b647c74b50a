// Test helper: the inputs of a simulation of `fn` called with `args` (its positional parameters,
// in order), as the capture runtime would give them.
#pragma once

#include <pybind11/pybind11.h>

#include <vector>

#include "translator/opcode_executor.hpp"

namespace sot::test {

inline translator::FrameInputs frame_inputs(const pybind11::object& fn,
                                            const std::vector<pybind11::object>& args) {
  translator::FrameInputs inputs;
  inputs.code = reinterpret_cast<PyCodeObject*>(fn.attr("__code__").ptr());
  inputs.globals = fn.attr("__globals__").ptr();
  inputs.builtins = PyEval_GetBuiltins();
  inputs.locals.resize(static_cast<std::size_t>(inputs.code->co_nlocalsplus));
  for (std::size_t i = 0; i < args.size(); ++i) {
    inputs.locals[i] = args[i];
  }
  return inputs;
}

}  // namespace sot::test
