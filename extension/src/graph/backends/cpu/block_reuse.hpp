// Output arrays of a block run (block_parts.hpp): an output of the last run that nobody holds any
// more is reused, and an output may be written into a dying input's array (donation).
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "graph/backends/cpu/block_parts.hpp"

namespace sot::graph {

class OutputReuse {
 public:
  // The graph values among the kernel's inputs that no op after the group reads (and the graph
  // does not return): an output may be written into one of them.
  void set_dying_inputs(const BlockPlan& p, const std::vector<int>& values);
  // An output array of the last run for output `b` of a run over `domain`, when nobody else holds
  // it any more (else none).
  pybind11::object take_spare(const BlockPlan& p, std::size_t b,
                              const std::vector<std::int64_t>& domain);
  // Keeps `made`, output `b` of this run, for the next (when large enough to pay).
  void keep_spare(const BlockPlan& p, std::size_t b, const pybind11::object& made);
  // True when outputs may be written into dying inputs (`verified`: the kernel's first run checked
  // its dtypes).
  bool can_donate(bool verified) const;
  // Writes outputs (but `skip`, a reduction's) into dying inputs' arrays where they are free.
  void donate(const BlockPlan& p, BlockRun& r, int skip);

 private:
  bool writable_alone(const BlockPlan& p, PyObject* a, std::size_t b,
                      const std::vector<std::int64_t>& domain) const;

  // Per output buffer: the array the last run returned, reused when nobody holds it any more.
  std::vector<pybind11::object> spares_;
  // Per buffer: the input buffers its output may be written into (see set_dying_inputs), and
  // whether the kernel may write in place at all (some output has a donor, every expression's
  // flags are reported as NumPy reports them).
  std::vector<std::vector<int>> donors_;
  bool donatable_ = false;
};

// After a donated run with a reported flag: each op's flags as NumPy reports them after its loop,
// in program order (false with an error set when a warning raises).
bool report_flags_per_op(const kir::Kernel& k, const BlockRun& r);

}  // namespace sot::graph
