#include "graph/backends/cpu/block_native.hpp"

#include <algorithm>
#include <atomic>
#include <cfenv>
#include <string>
#include <utility>
#include <vector>

#include "core/array_fields.hpp"
#include "core/loaded_module.hpp"
#include "graph/backends/cpu/block_parts.hpp"
#include "graph/backends/cpu/cpp_emitter.hpp"
#include "graph/backends/cpu/numpy_loops.hpp"
#include "graph/rules/fp_state.hpp"

namespace py = pybind11;

namespace sot::graph {

using namespace block;

NativeTier::NativeTier(const kir::Kernel& k) {
  if (!native_options().enabled.load()) {
    why_ = "tier B is off (SOT_CPU_TIER_B=0)";
    return;
  }
  if (const auto source = emit_cpp(k, &why_); source && find_loops(k, *source)) {
    native_ = native_kernel(*source);
  }
}

// The NumPy loops tier B's code calls (f[i] for source.loops[i]): false, with the reason in
// why_, when NumPy does not give one.
bool NativeTier::find_loops(const kir::Kernel& k, const NativeSource& source) {
  for (const LoopCall& call : source.loops) {
    const kir::Expr& e = k.exprs[static_cast<std::size_t>(call.expr)];
    const auto size = static_cast<long>(itemsize(e.dtype));
    std::vector<long> strides;
    std::vector<py::object> constants;
    for (std::size_t o = 0; o < call.scalar.size(); ++o) {
      strides.push_back(call.scalar[o] ? 0 : size);
      const kir::Expr& x = k.exprs[static_cast<std::size_t>(e.operands[o])];
      // (A scalar the graph computes is probed with a stand-in: its loop is the same for any.)
      const py::object& constant = k.scalars[static_cast<std::size_t>(x.scalar)].constant;
      constants.push_back(!call.scalar[o] ? py::object()
                          : constant      ? constant
                                          : py::object(py::float_(0.75)));
    }
    strides.push_back(size);
    NativeLoop loop{};
    py::object owner;
    if (!numpy_loop(e.ufunc, e.dtype, strides, constants, &loop, &owner, &why_)) {
      loops_.clear();
      loop_owners_.clear();
      return false;
    }
    loops_.push_back(loop);
    loop_owners_.push_back(std::move(owner));
  }
  return true;
}

bool NativeTier::loaded(bool verified) const {
  return verified && native_ && native_->state() == NativeKernel::State::kReady;
}

bool NativeTier::contiguous_rows(const kir::Kernel& k, std::size_t b, const ArrayFields* f,
                                 std::int64_t length) {
  if (f->nd == 0) {
    return false;
  }
  const int last = f->nd - 1;
  if (k.row_scalar(b)) {
    return f->dimensions[last] == 1;
  }
  return f->dimensions[last] == length &&
         (f->strides[last] == itemsize(k.buffers[b].dtype) || length == 1);
}

bool NativeTier::layout(const BlockRun& r, bool reduces) const {
  // Row by row only when rows are long enough for a call each to pay: a (524288, 8) k-means
  // distance matrix beside a column ran 2x slower called row by row than on tier A. (A kernel
  // calling NumPy's loops runs rows only when they are whole SIMD vectors: the loops then see
  // whole vectors, as in eager NumPy's call over the whole array, which has no tail.)
  const bool rows =
      r.domain.back() >= kMinNativeRow && (loops_.empty() || r.domain.back() % kBlockQuantum == 0);
  if (reduces) {
    return r.rows_ok && rows;  // whole rows, then NumPy's reduce
  }
  return r.flat || (r.rowwise && rows);
}

namespace {

// Tier B's pieces of work: `rows` whole rows of the domain (flattened to one row when flat) per
// piece, or a part of one row when a row is longer than a block.
struct NativeUnits {
  std::int64_t rows = 1;      // rows of the domain (the product of all but the last size)
  std::int64_t length = 0;    // elements per row
  std::int64_t per_unit = 1;  // rows per unit
  std::int64_t pieces = 1;    // units per row
  std::int64_t count = 0;

  NativeUnits(const std::vector<std::int64_t>& domain, std::int64_t block) {
    length = domain.back();
    for (std::size_t d = 0; d + 1 < domain.size(); ++d) {
      rows *= domain[d];
    }
    if (length >= block) {
      pieces = (length + block - 1) / block;
      count = rows * pieces;
    } else {
      per_unit = std::max<std::int64_t>(1, block / std::max<std::int64_t>(length, 1));
      count = (rows + per_unit - 1) / per_unit;
    }
  }
};

// True when tier B may take `value` as a scalar operand: a float (Python's, NumPy's float64), a
// NumPy float32 or float16, each exact as a double (the graph's dtypes, checked when the kernel was
// emitted, say NumPy computes in the kernel's type), or a Python int a double holds exactly.
bool native_scalar(PyObject* value) {
  if (exact_double_float(value)) {
    return true;
  }
  if (!PyLong_CheckExact(value)) {
    return false;
  }
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
  constexpr long long kExact = 1LL << 53;
  return overflow == 0 && v <= kExact && v >= -kExact;
}

// The byte offset of row `row` (an index over all of `domain`'s axes but the last) of an array
// right-aligned to the domain and broadcast where its size is 1.
std::int64_t row_offset(const ArrayFields* f, const std::vector<std::int64_t>& domain,
                        std::int64_t row) {
  std::int64_t offset = 0;
  const auto off = static_cast<std::int64_t>(domain.size()) - f->nd;
  for (auto d = static_cast<std::int64_t>(domain.size()) - 1; d-- > 0;) {
    const std::int64_t size = domain[static_cast<std::size_t>(d)];
    const std::int64_t mine = d - off;
    if (mine >= 0 && f->dimensions[mine] != 1) {
      offset += (row % size) * f->strides[mine];
    }
    row /= size;
  }
  return offset;
}

}  // namespace

bool NativeTier::scalars(BlockRun& r) {
  r.native_scalars.clear();
  for (PyObject* value : r.scalars) {
    if (!native_scalar(value)) {
      return false;
    }
    r.native_scalars.push_back(PyFloat_AsDouble(value));
  }
  return true;
}

bool NativeTier::rows_into(const kir::Kernel& k, const BlockRun& r, const Geometry& g,
                           const std::vector<std::int64_t>& prefix, std::int64_t start,
                           std::int64_t stop, BlockWorker& w, char* scratch,
                           int reduce_buffer) const {
  const std::int64_t n = g.domain.back();
  const std::int64_t per = g.inner / std::max<std::int64_t>(n, 1);  // domain rows a g.axis row
  std::int64_t p = 0;
  for (std::size_t d = 0; d < g.axis; ++d) {
    p = p * g.domain[d] + prefix[d];
  }
  const std::int64_t first = (p * g.domain[g.axis] + start) * per;
  const std::int64_t count = (stop - start) * per;
  const kir::Expr& red = k.exprs[static_cast<std::size_t>(k.reduction())];
  const std::int64_t row_bytes =
      n * itemsize(k.exprs[static_cast<std::size_t>(red.operands[0])].dtype);
  std::vector<const ArrayFields*> fields(k.buffers.size(), nullptr);
  for (std::size_t b = 0; b < k.buffers.size(); ++b) {
    if (static_cast<int>(b) != reduce_buffer) {
      fields[b] = array_fields(r.arrays[b]);
    }
  }
  std::vector<char*> ptrs(k.buffers.size() + 1, nullptr);
  const NativeFn fn = native_->fn();
  int status = 0;
  int flags = 0;
  Py_BEGIN_ALLOW_THREADS;
  clear_fe_flags();
  for (std::int64_t q = 0; q < count && status == 0; ++q) {
    for (std::size_t b = 0; b < fields.size(); ++b) {
      ptrs[b] = fields[b] != nullptr ? fields[b]->data + row_offset(fields[b], g.domain, first + q)
                                     : nullptr;
    }
    ptrs.back() = scratch + q * row_bytes;
    status = fn(ptrs.data(), r.native_scalars.data(), n, loops_.data());
  }
  flags = std::fetestexcept(numpy_fe_flags());
  Py_END_ALLOW_THREADS;
  w.flags |= flags;
  if (status != 0) {
    PyErr_SetString(PyExc_RuntimeError, "a NumPy loop failed in a compiled kernel");
    return false;
  }
  return true;
}

// Over contiguous ranges: blocks of the flat domain, or rows (parts of rows) of arrays whose rows
// are contiguous.
bool NativeTier::run(const kir::Kernel& k, BlockRun& r) const {
  std::vector<const ArrayFields*>& fields = r.native_fields;
  fields.assign(k.buffers.size(), nullptr);
  for (std::size_t b = 0; b < k.buffers.size(); ++b) {
    fields[b] = array_fields(r.blockable[b].ptr());
    const ArrayFields* f = fields[b];
    const bool ok = r.flat ? f->nd == 1 && (f->strides[0] == itemsize(k.buffers[b].dtype) ||
                                            f->dimensions[0] <= 1)
                           : contiguous_rows(k, b, f, r.domain.back());
    if (!ok) {
      return false;
    }
  }
  if (!scalars(r)) {
    return false;  // tier A
  }
  const std::vector<double>& scalars = r.native_scalars;
  // (a flat run's domain is one axis: BlockKernel::run)
  const NativeUnits units(r.domain, r.block);
  const std::int64_t threads = threads_for(units.count, elements(r.domain));
  const NativeFn fn = native_->fn();
  std::atomic<std::int64_t> next{0};
  r.native_flags.assign(static_cast<std::size_t>(std::max<std::int64_t>(threads, 1)), 0);
  std::atomic<bool> failed{false};
  auto run_row = [&](std::vector<char*>& ptrs, std::int64_t row, std::int64_t start,
                     std::int64_t n) {
    for (std::size_t b = 0; b < fields.size(); ++b) {
      ptrs[b] = fields[b]->data + (r.flat ? 0 : row_offset(fields[b], r.domain, row)) +
                (k.row_scalar(b) ? 0 : start * itemsize(k.buffers[b].dtype));
    }
    if (fn(ptrs.data(), scalars.data(), n, loops_.data()) != 0) {
      failed = true;
    }
  };
  auto work = [&](std::size_t t) {
    clear_fe_flags();
    std::vector<char*> own;
    std::vector<char*>& ptrs = t == 0 ? r.native_ptrs : own;  // (the calling thread's are kept)
    ptrs.assign(fields.size(), nullptr);
    for (std::int64_t i = next.fetch_add(1); i < units.count; i = next.fetch_add(1)) {
      if (units.pieces > 1) {
        const std::int64_t start = (i % units.pieces) * r.block;
        run_row(ptrs, i / units.pieces, start, std::min(r.block, units.length - start));
        continue;
      }
      const std::int64_t last = std::min(units.rows, (i + 1) * units.per_unit);
      for (std::int64_t row = i * units.per_unit; row < last; ++row) {
        run_row(ptrs, row, 0, units.length);
      }
    }
    r.native_flags[t] = std::fetestexcept(numpy_fe_flags());
  };
  if (threads <= 1 && elements(r.domain) < kMinThreadElements) {
    work(0);  // a small run, on this thread with the GIL held: letting go of it costs more
  } else {
    Py_BEGIN_ALLOW_THREADS;
    on_threads(threads, false, work);
    Py_END_ALLOW_THREADS;
  }
  if (failed.load()) {
    PyErr_Clear();  // a NumPy loop failed: tier A computes every output again
    return false;
  }
  for (const int f : r.native_flags) {
    r.flags |= f;
  }
  return true;
}

}  // namespace sot::graph
