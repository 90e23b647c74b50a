// Advanced indexing captured into the graph (array_indexing.cpp): x[mask] with a boolean array
// (its count of true items a size known only when the graph runs: a shape symbol nothing
// specializes), x[idx] with an integer array, a NumPy integer or a list of ints built in the
// frame, the same after full slices (x[:, mask], x[:, :, idx]), several integer indices at once
// (x[rows, cols], x[np.arange(n), y], x[i, idx]: broadcast together, NumPy's IndexError where the
// graph runs), and the stores x[key] = v. The
// key's value goes into the op as a graph value (after full slices: a tuple value made by an
// index_key op), so the op indexes as the user's code did.
#pragma once

#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <vector>

#include "graph/ir/graph.hpp"
#include "translator/opcode_executor.hpp"

namespace sot::translator {

struct OpcodeExecutor::AdvancedIndex {
  // `key` indexing `x` (an array value): `advanced` says whether it is an index modelled here
  // (else the caller's basic indexing goes on).
  AdvancedIndex(OpcodeExecutor& executor, const VarPtr& x, const VarPtr& key);
  bool advanced = false;
  VarPtr get();                   // x[key]
  void set(const VarPtr& value);  // x[key] = value

  // The checks of a store of `value` into an array of `target`'s dtype (basic stores too): a
  // graph break for what NumPy rejects, or may raise on where the graph runs.
  static void check_store(OpcodeExecutor& ex, const graph::ValueInfo& target,
                          const ArrayOperand& value);

 private:
  enum class Kind : std::uint8_t { kMask, kArray, kInteger, kList, kTuple };
  OpcodeExecutor& ex;
  VarPtr array;
  int x = -1;
  int leading = 0;  // full slices before the index
  Kind kind = Kind::kArray;
  int index = -1;           // kMask, kArray, kInteger: the index's graph value
  pybind11::list ints;      // kList
  std::vector<int> parts;   // kTuple: x[i, j, ...], each an integer array, NumPy integer or int
  bool mask_first = false;  // kTuple: x[mask, i, ...]
  std::string why;

  bool take_tuple(const std::vector<VarPtr>& items);  // (kTuple: false when not one)

  graph::ValueInfo region();  // what x[key] is
  std::optional<graph::ValueInfo> tuple_region();
  std::optional<graph::ValueInfo> mask_tuple_region(const graph::ValueInfo& in);
  bool constant_in_bounds(const graph::ValueInfo& in, int part, std::size_t d);
  graph::Arg key_arg();  // the key as the op's argument
};

}  // namespace sot::translator
