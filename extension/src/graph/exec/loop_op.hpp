// Loop ops: a `for` loop over a range, or a `while` loop, whose body is array code, captured as one
// op of the graph instead of one copy of the body per step. The op's callable holds the body as a
// graph of its own (inputs: the loop-carried values, then the values the body only reads; outputs:
// the carried values at the end of a step, then the values the body makes that the frame reads
// after the loop), compiled once by the backend of the graph around it, and runs it once per step,
// each step's outputs becoming the next step's carried inputs. The op returns a tuple of the final
// carried and last values; `loop_output` ops take them out. A `while` loop's trip count is known
// only where the graph runs: the op's last arguments are its condition's tests as the loop is
// reached, the body's last outputs the tests after each step, and it stops at the first test that
// says so.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/exec/loop_code.hpp"
#include "graph/ir/graph.hpp"
#include "graph/ir/subgraph.hpp"

namespace sot::graph {

class Backend;
class ValueHome;

struct LoopSpec {
  Graph body;                // inputs: the `ncarried` carried values first, then the read-only ones
  std::vector<int> outputs;  // the carried values after one step, then the last values
  std::size_t ncarried = 0;
  std::int64_t trips = 0;  // the number of steps (at least 1); -1: a while loop
  // A while loop: the op's last arguments and the body's last outputs are the condition's tests;
  // the loop goes on while the truth of each is the one given here.
  std::vector<bool> entry_go_on_if, step_go_on_if;
  // The loop variable as an input of the body (the Python int start + step * k on step k), at
  // position `ncarried`, before the read-only inputs; -1 when the body does not read it.
  int index_input = -1;
  std::int64_t start = 0, step = 1;
  // A range of ints known only where the loop runs (`range(j + 1, n)` in an outer loop's body): the
  // op's last two arguments are its start and stop (Python ints; `step` is the constant step, 1),
  // the steps as many as the range has (none at all too); `start` and `trips` are then unused.
  bool runtime_bounds = false;
  // enumerate's counter (counter_start + k on step k) as an input, after the loop variable's
  // place; -1 when the loop is not over enumerate(...).
  int counter_input = -1;
  std::int64_t counter_start = 0;
  // A whole graph as one step (graph_as_step): its outputs are the graph's, not a loop's.
  bool whole_graph = false;
  // The op's outputs that no op of the graph around it reads (set by compile_loops: the native
  // code may hand them on as None); empty: all are read.
  std::vector<bool> unread;
};

// first + step * k in `out`, false when that is not a 64-bit int: a loop op computes its variable
// and enumerate's count so, and a loop is captured only where every value it takes is one.
bool linear_in_int64(std::int64_t first, std::int64_t step, std::int64_t k, std::int64_t* out);

class LoopBody final : public SubgraphOp {
 public:
  explicit LoopBody(LoopSpec spec) : spec_(std::move(spec)) {}
  const LoopSpec& spec() const { return spec_; }
  // The spec as compiled (the body optimized, with the sizes of the translation), or as captured
  // before compile().
  const LoopSpec& current_spec() const { return compiled_ ? current_ : spec_; }
  // Compiles the body (and the loops inside it) with `backend`; `current` gives each value's
  // description as the translation left it (symbols specialized on the way become sizes). The
  // backend may give the whole loop as native code too (graph/exec/loop_code.hpp).
  // With `native` false the backend is not asked for the loop's native code (compile_native
  // asks later: the graph around it may be native as a whole).
  void compile(Backend* backend, bool check, const std::function<ValueInfo(ValueInfo)>& current,
               std::vector<bool> unread = {}, bool native = true);
  // Asks the backend for the compiled loop's native code, once.
  void compile_native(Backend* backend);
  // Runs the loop on the op's arguments: a tuple of the outputs (new reference; nullptr with an
  // error set when a step raises): the native code when it is ready and does not give up, else a
  // graph call per step. Compiles with the reference backend when nothing has.
  PyObject* run(PyObject* const* args, std::size_t nargs) override;
  const std::shared_ptr<LoopCode>& native() const { return native_; }
  // The body as text, each line after `indent`.
  std::string text(const std::string& indent) const override;
  std::vector<std::pair<std::string, pybind11::object>> compiled_graphs() const override {
    if (!compiled_) {
      return {};
    }
    return {{"loop body", compiled_}};
  }

 private:
  PyObject* run_steps(PyObject* const* args, std::size_t nargs);
  // The tests of a step's result `r` (the body's last outputs) read: as step_ahead, or as they
  // are where the loop runs no step ahead.
  int step_tests(ValueHome* home, PyObject* r, const std::vector<PyObject*>& argv,
                 pybind11::object* ahead);
  // A while loop's tests `tests` (borrowed) read with the next step (on `argv`) run ahead where
  // `home` does so (ValueHome::ahead_begin): 1 (the loop goes on: the step's result in `ahead`),
  // 0 (it ends: the step dropped) or -1 (an error set).
  int step_ahead(ValueHome* home, const std::vector<PyObject*>& tests,
                 const std::vector<PyObject*>& argv, pybind11::object* ahead);

  LoopSpec spec_;
  LoopSpec current_;
  pybind11::object compiled_;
  std::shared_ptr<LoopCode> native_;
  bool ahead_ok_ = false;  // a while loop whose body holds no loop or cond op
};

// The callable of a loop op (a Python object holding the LoopBody).
pybind11::object make_loop_callable(LoopSpec spec);
// The LoopBody of a loop op's callable, or nullptr when `fn` is not one.
LoopBody* loop_body_of(const pybind11::handle& fn);
// Compiles the bodies of the loop and cond ops of `graph` (see LoopBody::compile), each loop op
// told which of its outputs no op of `graph` reads (give it the optimized graph: its dead
// `loop_output` ops are gone).
// With `native` false the loop ops of `graph` itself get no native code (the loops inside their
// bodies do): compile_native_loops gives it them later.
void compile_loops(const Graph& graph, Backend* backend, bool check,
                   const std::function<ValueInfo(ValueInfo)>& current, bool native = true);
void compile_native_loops(const Graph& graph, Backend* backend);
// A whole graph as a loop op of one step (no carried values, its inputs read-only, its outputs
// the last values), for a backend to make one native function of (Backend::compile_graph).
LoopSpec graph_as_step(const Graph& graph, const std::vector<int>& outputs);
// Registers the callable's Python type (at module import).
void bind_loop_type(pybind11::module_& m);

}  // namespace sot::graph
