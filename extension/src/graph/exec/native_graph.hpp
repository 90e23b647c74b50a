// A compiled graph that runs as one native function where the backend made one of the whole graph
// (Backend::compile_graph: the cpu backend's tier C of a graph with loop ops): a call then costs
// the function's arithmetic, not a group call per op from Python objects (the steps a loop op's
// first steps leave outside it, `total = 0.0` made a NumPy scalar by the first, cost 2-3 us of op
// calls where the loop itself took 0.3 us). Until the code is ready, where it gives up (nothing
// changed: the arrays it wrote are put back) and once it is retired, the backend's compiled graph
// runs; at retirement `on_retire` runs once (the loops get native code of their own).
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <functional>
#include <memory>

#include "graph/exec/loop_code.hpp"

namespace sot::graph {

// `compiled` (the backend's compiled graph of `noutputs` outputs) with `native` tried first. Its
// plan() is compiled's with "whole": {status, runs, gave_up}.
pybind11::object native_first(pybind11::object compiled, std::shared_ptr<LoopCode> native,
                              std::size_t noutputs, std::function<void()> on_retire);

}  // namespace sot::graph
