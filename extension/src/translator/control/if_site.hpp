// What an `if` being captured as a cond op looks like to the translator (if_capture.cpp; a
// loop's tests joined by `and` with work between them are one too, while_capture.cpp).
#pragma once

#include <pybind11/pybind11.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "graph/ir/graph.hpp"
#include "translator/opcode_executor.hpp"

namespace sot::translator {

struct OpcodeExecutor::IfSite {
  std::size_t jump = 0;    // the jump on the test
  std::size_t target = 0;  // its target
  std::size_t join = 0;    // where the two ways meet
  int test = -1;
  std::array<std::size_t, 2> start{};  // [0]: the way taken when the test is true, [1]: false
  // What the run looked like at the jump, to put back (the stack with the test), and the stack
  // each way must leave (without it).
  std::vector<VarPtr> locals, stack, stack_after;
  Mark mark;
  std::uint64_t serial = 0;
  std::size_t values = 0, ops = 0, inputs = 0;  // the graph at the jump
  // Each way's ops [ops_from, ops_to) and values [values_from, values_to) in the frame's graph, and
  // the locals it left.
  std::array<std::size_t, 2> ops_from{}, ops_to{}, values_from{}, values_to{};
  std::array<std::vector<VarPtr>, 2> way_locals;
  // The values a way leaves on the stack above `stack_after` (a conditional expression's: `a if t
  // else b`), the same count both ways.
  std::array<std::vector<VarPtr>, 2> way_stack;
  // The exits inside each way (loop_exits.cpp): their tests, [tests_from, tests_to) of the loop's.
  std::array<std::size_t, 2> tests_from{}, tests_to{};
  // How much of `stack_after` each way left as it was, and both: a chained comparison's way takes
  // the value it copied (`0 <= k < n`), the other pops it.
  std::array<std::size_t, 2> kept{};
  std::size_t kept_both = 0;
  // Once both ways ran: what both kept of `stack_after`, and each way's stack above it alone.
  void trim_way_stacks() {
    kept_both = std::min(kept[0], kept[1]);
    for (std::vector<VarPtr>& way : way_stack) {
      way.erase(way.begin(),
                way.begin() + static_cast<std::ptrdiff_t>(std::min(kept_both, way.size())));
    }
  }
  // The outputs: the local's slot (or, with `stack` >= 0, the way's stack value there), and in each
  // way the value (a graph id) or a constant.
  struct Output {
    int slot = -1;
    int stack = -1;
    int test = -1;  // (>= 0: the test of an exit inside a way, at that index of the loop's tests)
    graph::ValueInfo info;
    std::array<int, 2> id{-1, -1};
    std::array<pybind11::object, 2> constant;
    // A constant truth for a way of a bool output of `info`'s kind: Python's bool where the value
    // is one, else NumPy's (a loop's "go on" or "leave" where no exit of the way is taken).
    static pybind11::object truth(const graph::ValueInfo& info, bool value);
  };
  std::vector<Output> outputs;
  std::vector<std::pair<int, VarPtr>> same;  // locals both ways set to one constant
  std::vector<VarPtr> stack_values;          // the values left on the stack (null: an output's)
};

}  // namespace sot::translator
