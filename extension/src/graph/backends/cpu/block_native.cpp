// Tier B of the block runner (block_parts.hpp): the compiled kernel (native_cache.hpp) run on flat
// ranges or row by row, with the NumPy loops its code calls.
#include "graph/backends/cpu/block_executor.hpp"

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

// The NumPy loops tier B's code calls (f[i] for source.loops[i]): false, with the reason in
// native_why_, when NumPy does not give one.
bool BlockKernel::find_loops(const NativeSource& source) {
  for (const LoopCall& call : source.loops) {
    const kir::Expr& e = k_.exprs[static_cast<std::size_t>(call.expr)];
    const auto size = static_cast<long>(itemsize(e.dtype));
    std::vector<long> strides;
    std::vector<py::object> constants;
    for (std::size_t o = 0; o < call.scalar.size(); ++o) {
      strides.push_back(call.scalar[o] ? 0 : size);
      const kir::Expr& x = k_.exprs[static_cast<std::size_t>(e.operands[o])];
      // (A scalar the graph computes is probed with a stand-in: its loop is the same for any.)
      const py::object& constant = k_.scalars[static_cast<std::size_t>(x.scalar)].constant;
      constants.push_back(!call.scalar[o] ? py::object()
                          : constant      ? constant
                                          : py::object(py::float_(0.75)));
    }
    strides.push_back(size);
    NativeLoop loop{};
    py::object owner;
    if (!numpy_loop(e.ufunc, e.dtype, strides, constants, &loop, &owner, &native_why_)) {
      loops_.clear();
      loop_owners_.clear();
      return false;
    }
    loops_.push_back(loop);
    loop_owners_.push_back(std::move(owner));
  }
  return true;
}

bool BlockKernel::native_loaded() const {
  return verified_ && native_ && native_->state() == NativeKernel::State::kReady;
}

// True when buffer `b`'s array `f` can be read row by row by tier B: its rows are the domain's
// (`length` elements, contiguous), or it is a column broadcast along them (one value a row).
bool BlockKernel::contiguous_rows(std::size_t b, const ArrayFields* f, std::int64_t length) const {
  if (f->nd == 0) {
    return false;
  }
  const int last = f->nd - 1;
  if (k_.row_scalar(b)) {
    return f->dimensions[last] == 1;
  }
  return f->dimensions[last] == length &&
         (f->strides[last] == itemsize(k_.buffers[b].dtype) || length == 1);
}

bool BlockKernel::native_layout(const Run& r) const {
  // Row by row only when rows are long enough for a call each to pay: a (524288, 8) k-means
  // distance matrix beside a column ran 2x slower called row by row than on tier A. (A kernel
  // calling NumPy's loops runs rows only when they are whole SIMD vectors: the loops then see
  // whole vectors, as in eager NumPy's call over the whole array, which has no tail.)
  const bool rows =
      r.domain.back() >= kMinNativeRow && (loops_.empty() || r.domain.back() % kBlockQuantum == 0);
  if (reduce_ >= 0) {
    return r.rows_ok && rows;  // whole rows, then NumPy's reduce
  }
  return r.flat || (r.rowwise && rows);
}

bool BlockKernel::native_ready(const Run& r) const {
  return native_layout(r) && native_loaded();
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

// The run's scalar operands as tier B takes them (false: one it does not take).
bool BlockKernel::native_scalars(Run& r) const {
  r.native_scalars.clear();
  for (PyObject* value : r.scalars) {
    if (!native_scalar(value)) {
      return false;
    }
    r.native_scalars.push_back(PyFloat_AsDouble(value));
  }
  return true;
}

// Tier B for a block of a kernel ending in a reduction over the last axis: the compiled code on
// each of the block's rows (the reduced value's rows into the reduction's block temporary, the
// scratch), without the GIL; reduce_block then reduces them with NumPy's reduce, as tier A does.
bool BlockKernel::native_block(const Run& r, const Geometry& g,
                               const std::vector<std::int64_t>& prefix, std::int64_t start,
                               std::int64_t stop, Worker& w, const std::vector<PyObject*>& views,
                               const std::vector<PyObject*>& temps) {
  const std::size_t nd = g.domain.size();
  if (g.axis + 1 >= nd) {
    return run_calls(r, w, views, temps);  // (a row split across blocks)
  }
  const std::int64_t n = g.domain.back();
  const std::int64_t per = g.inner / std::max<std::int64_t>(n, 1);  // domain rows a g.axis row
  std::int64_t p = 0;
  for (std::size_t d = 0; d < g.axis; ++d) {
    p = p * g.domain[d] + prefix[d];
  }
  const std::int64_t first = (p * g.domain[g.axis] + start) * per;
  const std::int64_t count = (stop - start) * per;
  const kir::Expr& red = k_.exprs[static_cast<std::size_t>(reduce_)];
  const Target& t = targets_[static_cast<std::size_t>(red.operands[0])];
  char* scratch = array_fields(t.store ? views[static_cast<std::size_t>(t.index)]
                                       : temps[static_cast<std::size_t>(t.index)])
                      ->data;
  const std::int64_t row_bytes =
      n * itemsize(k_.exprs[static_cast<std::size_t>(red.operands[0])].dtype);
  std::vector<const ArrayFields*> fields(k_.buffers.size(), nullptr);
  for (std::size_t b = 0; b < k_.buffers.size(); ++b) {
    if (static_cast<int>(b) != reduce_buffer_) {
      fields[b] = array_fields(r.arrays[b]);
    }
  }
  std::vector<char*> ptrs(k_.buffers.size() + 1, nullptr);
  const NativeFn fn = native_->fn();
  int status = 0;
  int flags = 0;
  Py_BEGIN_ALLOW_THREADS;
  std::feclearexcept(FE_ALL_EXCEPT);
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

// Tier B: the compiled kernel on `cpu_threads()` threads, without the GIL, over contiguous ranges:
// blocks of the flat domain, or rows (parts of rows) of arrays whose rows are contiguous.
bool BlockKernel::run_native(Run& r) {
  std::vector<const ArrayFields*> fields(k_.buffers.size(), nullptr);
  std::vector<std::int64_t> size(k_.buffers.size(), 0);
  for (std::size_t b = 0; b < k_.buffers.size(); ++b) {
    fields[b] = array_fields(r.blockable[b].ptr());
    size[b] = itemsize(k_.buffers[b].dtype);
    const ArrayFields* f = fields[b];
    const bool ok = r.flat ? f->nd == 1 && (f->strides[0] == size[b] || f->dimensions[0] <= 1)
                           : contiguous_rows(b, f, r.domain.back());
    if (!ok) {
      return false;
    }
  }
  if (!native_scalars(r)) {
    return false;  // tier A
  }
  const std::vector<double>& scalars = r.native_scalars;
  const NativeUnits units(r.flat ? std::vector<std::int64_t>{r.domain[0]} : r.domain, r.block);
  const std::int64_t threads = threads_for(units.count, elements(r.domain));
  const NativeFn fn = native_->fn();
  std::atomic<std::int64_t> next{0};
  std::vector<int> flags(static_cast<std::size_t>(std::max<std::int64_t>(threads, 1)), 0);
  std::atomic<bool> failed{false};
  auto run_row = [&](std::vector<char*>& ptrs, std::int64_t row, std::int64_t start,
                     std::int64_t n) {
    for (std::size_t b = 0; b < fields.size(); ++b) {
      ptrs[b] = fields[b]->data + (r.flat ? 0 : row_offset(fields[b], r.domain, row)) +
                (k_.row_scalar(b) ? 0 : start * size[b]);
    }
    if (fn(ptrs.data(), scalars.data(), n, loops_.data()) != 0) {
      failed = true;
    }
  };
  auto work = [&](std::size_t t) {
    std::feclearexcept(FE_ALL_EXCEPT);
    std::vector<char*> ptrs(fields.size());
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
    flags[t] = std::fetestexcept(numpy_fe_flags());
  };
  Py_BEGIN_ALLOW_THREADS;
  on_threads(threads, false, work);
  Py_END_ALLOW_THREADS;
  if (failed.load()) {
    PyErr_Clear();  // a NumPy loop failed: tier A computes every output again
    return false;
  }
  for (const int f : flags) {
    r.flags |= f;
  }
  return true;
}

}  // namespace sot::graph
