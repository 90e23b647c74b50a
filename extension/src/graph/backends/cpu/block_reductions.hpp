// A kernel ending in a reduction (block_parts.hpp; graph/rules/reductions.hpp): over the last axis
// each block's whole rows reduced by NumPy into the output's rows, or over all axes the leaves of
// NumPy's summation order, combined after the blocks.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

#include "graph/backends/cpu/block_parts.hpp"

namespace sot::graph {

class BlockReduction {
 public:
  explicit BlockReduction(const BlockPlan& p);

  // True when the kernel ends in a reduction.
  bool active() const { return expr_ >= 0; }
  // The reduction's expression and the buffer it is stored in (-1: none).
  int expr() const { return expr_; }
  int buffer() const { return buffer_; }
  // Over all axes (else the last).
  bool all() const { return all_; }
  // Where the run's blocks can reduce (false, with the reason in `why`, when they cannot).
  bool plan(const BlockPlan& p, BlockRun& r, std::string* why) const;
  // The output (or a full reduction's leaves) and the block size the reduction needs.
  void allocate(const BlockPlan& p, BlockRun& r) const;
  // A full reduction's blocks: ranges of the flat domain, one or more leaves each.
  void plan_leaves(const BlockPlan& p, BlockRun& r, Geometry& g) const;
  // Reduces block `block` (false with an error set when NumPy raises).
  bool reduce_block(const BlockPlan& p, const BlockRun& r, const Geometry& g, std::int64_t block,
                    BlockWorker& w, const std::vector<PyObject*>& views,
                    const std::vector<PyObject*>& temps) const;
  // After the blocks: a full sum from its leaves, a mean divided by its count.
  bool finish(const BlockPlan& p, BlockRun& r) const;

 private:
  int expr_ = -1;
  int buffer_ = -1;
  bool all_ = false;
  pybind11::object fn_;       // ufunc.reduce
  pybind11::object kwnames_;  // ("axis", "keepdims", "out")
};

}  // namespace sot::graph
