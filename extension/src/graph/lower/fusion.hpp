// Fusion: a graph's ops partitioned into groups, in program order. A fused group is a run of
// elementwise ufunc ops over one iteration domain (the result shape they share; operands
// broadcast into it), optionally ending in a reduction of one of its values over the whole domain
// (graph/rules/reductions.hpp); its values that nothing after it reads never reach memory. matmul,
// dot and einsum are library calls; everything else (views, in-place ops, other reductions, shape
// ops, indexing) is opaque and runs as the NumPy call the user made. In-place ops end a group, so
// NumPy's aliasing is kept by running them as they are; so do views, except a basic slice of a
// value made before the group (`u[1:-1, :-2]`), which is moved ahead of the group (it reads nothing
// the group makes, and the group's members change nothing) and read by the group as an input.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

#include "graph/ir/graph.hpp"

namespace sot::graph {

struct Group {
  enum class Kind : std::uint8_t { kFused, kLibrary, kOpaque };
  Kind kind = Kind::kOpaque;
  std::vector<int> ops;       // op indices, in program order, consecutive but for `hoisted`
  std::vector<int> hoisted;   // slices run before the group though they come between its ops
  std::vector<int> inputs;    // values the group reads and does not make, in first-use order
  std::vector<int> outputs;   // values it makes that a later op or the graph's outputs need
  std::vector<int> returned;  // those of its outputs the graph returns
  std::string why;            // an opaque op: why it is not fused ("a view", "reduction sum")
  // A fused group of one op that reads the result of a library call (matmul, dot, einsum).
  bool single_after_library = false;
};

std::string_view kind_name(Group::Kind kind);

// Why `op` cannot be an elementwise member of a fused group (empty: it can).
std::string unfusable_reason(const Graph& graph, const Op& op, const pybind11::module_& numpy);

// The groups of `graph`, covering every op once, in program order.
std::vector<Group> partition(const Graph& graph, const std::vector<int>& outputs);

}  // namespace sot::graph
