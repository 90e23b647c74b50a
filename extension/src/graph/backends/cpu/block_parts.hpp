// The parts of the CPU backend's block runner (BlockKernel, block_executor.hpp) that its classes
// share: a kernel's plan for blocks (made once), where blocks cut the domain, a run's state, a
// thread's state, the sizes blocks are chosen by, and small helpers. The runner is a class per
// concern, each in its own files: BlockKernel (block_executor: preparing a run, running its
// blocks), OutputReuse (block_reuse: output arrays reused, or written into dying inputs),
// BlockReduction (block_reductions: a kernel ending in a reduction), NativeTier (block_native: tier
// B, the compiled kernel's runs); the threads are cpu_threads.hpp's.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "graph/backends/cpu/cpu_options.hpp"
#include "graph/backends/cpu/cpu_threads.hpp"
#include "graph/exec/buffer_pool.hpp"
#include "graph/lower/kernel_ir.hpp"
#include "graph/rules/reductions.hpp"

namespace sot {
struct ArrayFields;
}  // namespace sot

namespace sot::graph {

namespace block {

// Outputs below this size are not kept for the next run (malloc serves them without page faults).
inline constexpr std::int64_t kMinSpareBytes = std::int64_t{1} << 20;

// A block's buffers (arrays, plus about one temporary per call) fill about this much memory.
inline constexpr std::int64_t kBlockBytes = std::int64_t{4} << 20;
inline constexpr std::int64_t kMinBlock = 4096;
inline constexpr std::int64_t kMaxBlock = std::int64_t{1} << 20;
inline constexpr std::int64_t kBlockQuantum = 64;
// The shortest rows tier B runs one call a row for.
inline constexpr std::int64_t kMinNativeRow = 64;
// The elements of `domain` (the product of its sizes).
std::int64_t elements(const std::vector<std::int64_t>& domain);
// A Python int, and slice(start, stop).
pybind11::object index_object(std::int64_t i);
pybind11::object slice_object(std::int64_t start, std::int64_t stop);

}  // namespace block

// Where blocks cut the domain: whole rows of axis `axis` (each of `inner` elements, the product of
// the later sizes), `rows` of them per block, for every index of the axes before it.
struct Geometry {
  std::vector<std::int64_t> domain;
  std::size_t axis = 0;
  std::int64_t inner = 1;
  std::int64_t rows = 1;
  std::int64_t blocks = 0;  // in all
  // A full reduction's blocks: ranges of the flat domain, the index of each one's first leaf, and
  // the leaves' length (0: a range is one leaf).
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
  std::vector<std::int64_t> first_leaf;
  std::int64_t leaf = 0;
};

// What a kernel's blocks need, decided once from the kernel: where each expression's result goes,
// the temporaries (one per value not stored, reused once its value is dead), the NumPy objects the
// runs call.
struct BlockPlan {
  struct Target {  // where a call expression's result goes in a block
    bool store = false;
    int index = -1;  // a buffer (store) or a temporary
  };

  explicit BlockPlan(kir::Kernel kernel);
  // The array expression `o` (an operand) is in: its buffer's block or its temporary.
  PyObject* operand(int o, const std::vector<PyObject*>& views,
                    const std::vector<PyObject*>& temps) const;

  kir::Kernel k;
  std::vector<Target> targets;           // per expression (calls, casts, selects)
  std::vector<DType> temp_dtypes;        // per temporary
  std::vector<pybind11::object> dtypes;  // numpy dtype per buffer
  std::vector<pybind11::object> temp_np_dtypes;
  std::vector<int> last_reader;  // per expression: the last expression reading it (-1: none)
  std::int64_t bytes_per_element = 0;
  pybind11::object ndarray;                // numpy.ndarray
  pybind11::object empty;                  // numpy.empty
  pybind11::object copyto;                 // numpy.copyto (casts, selects)
  pybind11::object out_kwnames;            // ("out",)
  pybind11::object casting_kwnames;        // ("casting",)
  pybind11::object casting_where_kwnames;  // ("casting", "where")
  pybind11::object unsafe;                 // "unsafe"
};

struct BlockRun {
  std::vector<PyObject*> arrays;       // per buffer: the array (inputs borrowed, outputs in `made`)
  std::vector<pybind11::object> made;  // the output arrays
  std::vector<pybind11::object>
      blockable;                   // per buffer: what blocks index (the array or a flat view)
  std::vector<PyObject*> scalars;  // per scalar (borrowed)
  std::vector<std::int64_t> domain;
  BufferPool* pool = nullptr;  // the compiled graph's, for the outputs
  bool flat = false;
  // Not flat, but every array has the domain's shape and contiguous rows (the last axis): tier B
  // runs row by row.
  bool rowwise = false;
  // Every input can be read row by row (rowwise, or, for a reduction's whole rows, even when flat).
  bool rows_ok = false;
  // A reduction kernel whose blocks run tier B's code, then NumPy's reduce (NativeTier::block),
  // with these scalar operands.
  bool native_rows = false;
  std::vector<double> native_scalars;
  std::int64_t block = 0;
  int flags = 0;  // the floating-point flags every worker raised
  // Outputs written into dying inputs: then a reported flag cannot make the group run op by op
  // (the inputs are gone) and is reported per op, from expr_flags.
  bool donated = false;
  std::vector<int> expr_flags;  // per expression: the flags its calls raised
  // A reduction over the last axis: the keepdims-shaped view of the result the blocks write.
  pybind11::object reduced;
  // A reduction: NumPy's buffer size (0: none read); a full one: NumPy's summation order and the
  // leaves' sums.
  SumOrder order = SumOrder::kUnknown;
  std::int64_t chunk = 0;
  pybind11::object sums;
  // Tier B's flat run: each buffer's array fields, and the calling thread's pointers and the
  // threads' flags.
  std::vector<const ArrayFields*> native_fields;
  std::vector<char*> native_ptrs;
  std::vector<int> native_flags;

  // Every field back to its default, its Python objects released (the GIL held); the vectors keep
  // their memory for the next run.
  void clear();
};

// A BlockRun for one run, taken from the calling thread's spares and given back cleared: a small
// run's dozen vectors cost more to allocate than its kernel takes. (One per run, never shared: a
// run that re-enters, through a warning filter calling translated code, takes another.)
class BlockRunLease {
 public:
  BlockRunLease();
  ~BlockRunLease();
  BlockRunLease(const BlockRunLease&) = delete;
  BlockRunLease& operator=(const BlockRunLease&) = delete;
  BlockRunLease(BlockRunLease&&) = delete;
  BlockRunLease& operator=(BlockRunLease&&) = delete;
  BlockRun& get() { return *run_; }

 private:
  std::unique_ptr<BlockRun> run_;
};

// What one thread needs to run blocks: its temporaries (flat, a block's capacity), their views by
// a block's row count, and its floating-point flags (the flags are per thread).
struct BlockWorker {
  std::vector<pybind11::object> temps;
  std::vector<std::pair<std::int64_t, std::vector<pybind11::object>>> shaped;
  std::vector<PyObject*> args;
  int flags = 0;
  std::vector<int> expr_flags;
};

}  // namespace sot::graph
