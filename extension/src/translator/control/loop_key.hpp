// The key of x[i], x[..., i, ..., j, ...] with ints of a loop body being captured
// (control/loop_keys.cpp).
#pragma once

#include <pybind11/pybind11.h>

#include <utility>
#include <vector>

#include "graph/ir/graph.hpp"
#include "graph/rules/rules.hpp"
#include "translator/opcode_executor.hpp"

namespace sot::translator {

// x[i] or x[..., i, ..., j, ...] with `i`, `j` loop variables of a loop body being captured, or
// ints computed from them (i - 1: any int of the graph whose range is known): the index as basic
// index items (checked in range over the whole range, else a break), the ints, and for a tuple
// key the tuple (None in their places) that getter()/setter() fill in when the graph runs;
// nullopt when `key` is no such key.
struct OpcodeExecutor::LoopKey {
  std::vector<graph::IndexItem> items;
  std::vector<int> indices;    // the ints of the graph at the key's places, in order
  std::vector<int> positions;  // their places in the key (-1: a part of a slice)
  pybind11::tuple tuple;       // empty: the key is one int itself
  // Slices with parts of the graph (L[i, :i]): each one's dimension of the result and the runtime
  // symbol of its length (-1 - n: n items each step, x[i:i + 4]); parts Ellipsis in the template.
  std::vector<std::pair<int, int>> sliced;
  // The op's arguments: x, the template (a tuple key: None at the indices' places), the indices.
  std::vector<graph::Arg> args(int x) const;
  static pybind11::object getter();  // getitem_at(x, template, *indices): x[key]
  static pybind11::object setter();  // setitem_at(x, template, *indices, v): x[key] = v
};

}  // namespace sot::translator
