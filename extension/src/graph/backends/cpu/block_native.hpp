// Tier B of the block runner (block_parts.hpp): the compiled kernel (native_cache.hpp) run on flat
// ranges or row by row, with the NumPy loops its code calls.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/backends/cpu/block_parts.hpp"
#include "graph/backends/cpu/native_cache.hpp"

namespace sot {
struct ArrayFields;
}  // namespace sot

namespace sot::graph {

class NativeTier {
 public:
  // Emits the kernel's C++ and starts its compile (unless tier B is off or the kernel is not
  // emitted: the reason in why()).
  explicit NativeTier(const kir::Kernel& k);

  // Compiled, loaded and verified (`verified`: the kernel's first run checked its dtypes).
  bool loaded(bool verified) const;
  // True when a run's arrays are laid out as tier B reads them (flat, or contiguous rows).
  bool layout(const BlockRun& r, bool reduces) const;
  bool ready(const BlockRun& r, bool reduces, bool verified) const {
    return layout(r, reduces) && loaded(verified);
  }
  // True when buffer `b`'s array `f` can be read row by row: its rows are the domain's (`length`
  // elements, contiguous), or it is a column broadcast along them.
  static bool contiguous_rows(const kir::Kernel& k, std::size_t b, const ArrayFields* f,
                              std::int64_t length);
  // The run's scalar operands as tier B takes them (false: one it does not take).
  static bool scalars(BlockRun& r);
  // The whole run on the pool's threads, without the GIL (false: tier A runs it).
  bool run(const kir::Kernel& k, BlockRun& r) const;
  // A block of whole rows of a kernel ending in a reduction over the last axis: the compiled code
  // on each row into `scratch`'s rows, then NumPy's reduce (false with an error set).
  bool rows_into(const kir::Kernel& k, const BlockRun& r, const Geometry& g,
                 const std::vector<std::int64_t>& prefix, std::int64_t start, std::int64_t stop,
                 BlockWorker& w, char* scratch, int reduce_buffer) const;

  const std::shared_ptr<NativeKernel>& kernel() const { return native_; }
  const std::string& why() const { return why_; }

 private:
  bool find_loops(const kir::Kernel& k, const NativeSource& source);

  std::shared_ptr<NativeKernel> native_;
  std::vector<NativeLoop> loops_;              // the NumPy loops the compiled kernel calls
  std::vector<pybind11::object> loop_owners_;  // what keeps them alive
  std::string why_;
};

}  // namespace sot::graph
