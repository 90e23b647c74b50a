#include "graph/backends/cpu/block_executor.hpp"

#include <algorithm>
#include <array>
#include <cfenv>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/array_fields.hpp"
#include "core/loaded_module.hpp"
#include "core/numpy_empty.hpp"
#include "graph/backends/cpu/block_parts.hpp"
#include "graph/backends/cpu/cpp_emitter.hpp"
#include "graph/backends/cpu/numpy_loops.hpp"
#include "graph/rules/fp_state.hpp"
#include "graph/rules/reductions.hpp"

namespace py = pybind11;

namespace sot::graph {

using namespace block;

namespace {

// Widens `domain` (of `nd` sizes, 1 where nothing was seen yet) by array `f`, right-aligned to it
// (a size of 1 broadcasts).
void broadcast_into(const ArrayFields* f, std::size_t nd, std::int64_t* domain) {
  const std::size_t off = nd - static_cast<std::size_t>(f->nd);
  for (int j = 0; j < f->nd; ++j) {
    if (f->dimensions[j] != 1) {
      domain[off + static_cast<std::size_t>(j)] = f->dimensions[j];
    }
  }
}

// True when NumPy's elementwise result of `f` is C-contiguous, as for a C-contiguous array: the
// strides of its axes longer than 1 are positive and never grow from an axis to the next (a slice
// like `u[1:-1, :-2]`). NumPy's iterator orders axes by their operands' strides (those of length-1
// axes ignored) and swaps two axes only where an operand's later axis has the larger stride;
// negative strides (which it may flip) are left to the op-by-op run.
bool c_ordered(const ArrayFields* f) {
  Py_ssize_t last = 0;
  for (int d = 0; d < f->nd; ++d) {
    if (f->dimensions[d] == 1) {
      continue;
    }
    const Py_ssize_t stride = f->strides[d];
    if (stride <= 0 || (last != 0 && stride > last)) {
      return false;
    }
    last = stride;
  }
  return true;
}

// Why converting a constant operand of a call to the dtype NumPy computes in warns (1e300 to
// float32: "overflow encountered in cast"), or "". NumPy converts it before its loop runs and
// reports at once, with no hardware flag left for a block to read, so such a kernel never runs in
// blocks: the call is tried on one-item arrays of its operands' dtypes under errstate "raise".
std::string constant_cast_warning(const kir::Kernel& k, const kir::Expr& e,
                                  const py::module_& numpy) {
  bool has_constant = false;
  py::list args;
  for (const int o : e.operands) {
    const kir::Expr& x = k.exprs[static_cast<std::size_t>(o)];
    if (x.kind == kir::Expr::Kind::kScalar) {
      const kir::Scalar& sc = k.scalars[static_cast<std::size_t>(x.scalar)];
      if (sc.value >= 0) {
        return {};  // a graph scalar: NumPy's own value at run time, not known here
      }
      has_constant = true;
      args.append(sc.constant);
    } else {
      args.append(numpy.attr("ones")(1, std::string(name(x.dtype))));
    }
  }
  if (!has_constant) {
    return {};
  }
  const py::object state = numpy.attr("errstate")(py::arg("all") = "raise");
  state.attr("__enter__")();
  std::string why;
  try {
    e.ufunc(*args);
  } catch (py::error_already_set& err) {
    const std::string text = py::str(err.value()).cast<std::string>();
    if (text.find("cast") != std::string::npos) {
      why = e.fn + ": converting a constant operand warns (" + text + ")";
    }
  }
  state.attr("__exit__")(py::none(), py::none(), py::none());
  return why;
}

}  // namespace

BlockKernel::BlockKernel(kir::Kernel kernel)
    : plan_(std::move(kernel)), native_(plan_.k), reduction_(plan_) {
  const py::module_ numpy = loaded_module("numpy");
  for (const kir::Expr& e : plan_.k.exprs) {
    if ((e.kind == kir::Expr::Kind::kCall || e.kind == kir::Expr::Kind::kSelect) &&
        disabled_.empty()) {
      disabled_ = constant_cast_warning(plan_.k, e, numpy);
    }
  }
  if (reduction_.active() && reduction_.buffer() < 0 && disabled_.empty()) {
    disabled_ = "a reduction whose result is not used";
  }
  const auto calls =
      std::count_if(plan_.k.exprs.begin(), plan_.k.exprs.end(),
                    [](const kir::Expr& e) { return e.kind == kir::Expr::Kind::kCall; });
  native_small_ = calls >= 2 && !reduction_.active();
}

BlockKernel::Outcome BlockKernel::replay(std::string why) {
  last_replay_ = std::move(why);
  return Outcome::kReplay;
}

// The common case of small arrays, decided before anything is built (a few hundred nanoseconds a
// group otherwise): with automatic blocks, a domain whose arrays fit in one block runs op by op
// (blocks would run the same loops with more overhead) unless tier B is ready and pays
// (native_pays).
bool BlockKernel::runs_op_by_op_at_once(const Frame& frame) {
  constexpr std::size_t kMaxDims = 32;
  const std::size_t nd = plan_.k.domain.size();
  if (cpu_options().block_elements.load() != 0 || nd > kMaxDims) {
    return false;
  }
  std::array<std::int64_t, kMaxDims> domain{};
  domain.fill(1);
  for (const kir::Buffer& buf : plan_.k.buffers) {
    if (buf.output) {
      continue;
    }
    PyObject* a = frame.get(buf.value);
    if (Py_TYPE(a) != reinterpret_cast<PyTypeObject*>(plan_.ndarray.ptr()) ||
        array_fields(a)->nd != static_cast<int>(buf.shape.size())) {
      return false;  // prepare() says why
    }
    broadcast_into(array_fields(a), nd, domain.data());
  }
  std::int64_t total = 1;
  for (std::size_t d = 0; d < nd; ++d) {
    total *= domain[d];
  }
  // (A compiled kernel not yet verified runs on tier A once: that run checks the dtypes.)
  const bool compiled = native() && native()->state() == NativeKernel::State::kReady;
  if (total == 0 || (compiled && native_pays(total)) ||
      total * plan_.bytes_per_element > kBlockBytes) {
    return false;
  }
  if (last_replay_ != "fits in one block") {
    last_replay_ = "fits in one block";
  }
  return true;
}

bool BlockKernel::prepare(Frame& frame, BlockRun& r) {
  const auto* ndarray = reinterpret_cast<PyTypeObject*>(plan_.ndarray.ptr());
  const std::size_t nd = plan_.k.domain.size();
  r.domain.assign(nd, 1);
  r.flat = true;
  r.rowwise = nd >= 2;
  r.arrays.assign(plan_.k.buffers.size(), nullptr);
  for (std::size_t b = 0; b < plan_.k.buffers.size(); ++b) {
    const kir::Buffer& buf = plan_.k.buffers[b];
    if (buf.output) {
      continue;
    }
    PyObject* a = frame.get(buf.value);
    if (Py_TYPE(a) != ndarray || array_fields(a)->nd != static_cast<int>(buf.shape.size())) {
      last_replay_ = "an input that is not an ndarray of the graph's rank";
      return false;
    }
    const ArrayFields* f = array_fields(a);
    const bool contiguous = f->nd < 2 || (f->flags & kArrayCContiguous) != 0;
    if (!contiguous && !c_ordered(f)) {
      last_replay_ = "an input whose strides are not in C order";
      return false;
    }
    broadcast_into(f, nd, r.domain.data());
    r.flat = r.flat && contiguous && static_cast<std::size_t>(f->nd) == nd;
    r.arrays[b] = a;
  }
  bool full = true;  // every input has the domain's shape
  for (std::size_t b = 0; b < plan_.k.buffers.size(); ++b) {
    if (r.arrays[b] != nullptr) {
      const ArrayFields* f = array_fields(r.arrays[b]);
      const std::size_t off = nd - static_cast<std::size_t>(f->nd);
      for (int d = 0; d < f->nd && full; ++d) {
        full = off == 0 && f->dimensions[d] == r.domain[off + static_cast<std::size_t>(d)];
      }
      r.rowwise = r.rowwise && NativeTier::contiguous_rows(plan_.k, b, f, r.domain.back());
    }
  }
  r.flat = r.flat && full;
  r.rows_ok = r.rowwise;
  r.rowwise = r.rowwise && !r.flat;
  for (const kir::Scalar& s : plan_.k.scalars) {
    r.scalars.push_back(s.value >= 0 ? frame.get(s.value) : s.constant.ptr());
  }
  return true;
}

bool BlockKernel::verify_call(const kir::Expr& e, std::vector<PyObject*>& args, PyObject* target) {
  PyObject* made = PyObject_Vectorcall(e.ufunc.ptr(), args.data(), args.size(), nullptr);
  if (made == nullptr) {
    return false;
  }
  const py::object result = py::reinterpret_steal<py::object>(made);
  const py::handle out(target);
  if (!py::hasattr(result, "dtype") || !result.attr("dtype").equal(out.attr("dtype"))) {
    disabled_ = e.fn + " made " + py::str(result.attr("dtype")).cast<std::string>() +
                ", the graph said " + std::string(name(e.dtype));
    return false;
  }
  loaded_module("numpy").attr("copyto")(out, result);
  return true;
}

namespace {

Geometry geometry(const std::vector<std::int64_t>& domain, std::int64_t block) {
  Geometry g;
  g.domain = domain;
  g.axis = domain.size() - 1;
  while (g.axis > 0 && g.inner * domain[g.axis] <= block) {
    g.inner *= domain[g.axis];
    --g.axis;
  }
  g.rows = std::max<std::int64_t>(1, block / std::max<std::int64_t>(1, g.inner));
  return g;
}

// The block of `array` (right-aligned to the domain; a size of 1 broadcasts) for the index
// `prefix` of the axes before g.axis and rows [start, stop) of g.axis (a new reference).
PyObject* block_view(PyObject* array, const Geometry& g, const std::vector<std::int64_t>& prefix,
                     std::int64_t start, std::int64_t stop) {
  const ArrayFields* f = array_fields(array);
  const auto nd = static_cast<std::size_t>(f->nd);
  const std::size_t off = g.domain.size() - nd;
  if (off > g.axis) {
    Py_INCREF(array);
    return array;  // only later axes: the whole array broadcasts against the block
  }
  py::tuple items(g.axis - off + 1);
  for (std::size_t d = off; d <= g.axis; ++d) {
    const bool one = f->dimensions[d - off] == 1;
    if (d < g.axis) {
      items[d - off] = index_object(one ? 0 : prefix[d]);
    } else {
      items[d - off] = one ? slice_object(0, 1) : slice_object(start, stop);
    }
  }
  return PyObject_GetItem(array, items.ptr());
}

// Sets this thread's NumPy buffer size to `size` (0: leaves it), as per thread as the error state.
bool same_buffer_size(std::int64_t size) {
  constexpr std::int64_t kDefault = 8192;
  if (size == 0 || size == kDefault) {
    return true;
  }
  try {
    loaded_module("numpy").attr("setbufsize")(size);
  } catch (py::error_already_set&) {
    return false;
  }
  return true;
}

}  // namespace

// A cast (`args`: the value) or a select (`args`: condition, x, y) into `target`, with
// numpy.copyto: false with an error set when it raises.
bool BlockKernel::copy_into(PyObject* target, const std::vector<PyObject*>& args) const {
  auto copy = [&](PyObject* from, PyObject* where) {
    PyObject* call[] = {target, from, plan_.unsafe.ptr(), where};
    PyObject* made = PyObject_Vectorcall(
        plan_.copyto.ptr(), call, 2,
        where != nullptr ? plan_.casting_where_kwnames.ptr() : plan_.casting_kwnames.ptr());
    Py_XDECREF(made);
    return made != nullptr;
  };
  if (args.size() == 1) {
    return copy(args[0], nullptr);
  }
  return copy(args[2], nullptr) && copy(args[1], args[0]);
}

bool BlockKernel::run_calls(const BlockRun& r, BlockWorker& w, const std::vector<PyObject*>& views,
                            const std::vector<PyObject*>& temps) {
  for (std::size_t i = 0; i < plan_.k.exprs.size(); ++i) {
    const kir::Expr& e = plan_.k.exprs[i];
    if (!e.elementwise()) {
      continue;
    }
    w.args.clear();
    for (const int o : e.operands) {
      const kir::Expr& operand = plan_.k.exprs[static_cast<std::size_t>(o)];
      w.args.push_back(operand.kind == kir::Expr::Kind::kScalar
                           ? r.scalars[static_cast<std::size_t>(operand.scalar)]
                           : plan_.operand(o, views, temps));
    }
    const BlockPlan::Target& t = plan_.targets[i];
    PyObject* target = t.store ? views[static_cast<std::size_t>(t.index)]
                               : temps[static_cast<std::size_t>(t.index)];
    clear_fe_flags();
    if (!verified_ && e.kind != kir::Expr::Kind::kCast) {
      // (A cast makes the dtype it is given; a select's first block is numpy.where's own.)
      if (!verify_call(e, w.args, target)) {
        return false;
      }
    } else if (e.kind != kir::Expr::Kind::kCall) {
      if (!copy_into(target, w.args)) {
        return false;
      }
    } else {
      const std::size_t nargs = w.args.size();
      w.args.push_back(target);
      PyObject* made =
          PyObject_Vectorcall(e.ufunc.ptr(), w.args.data(), nargs, plan_.out_kwnames.ptr());
      if (made == nullptr) {
        return false;
      }
      Py_DECREF(made);
    }
    const int raised = std::fetestexcept(numpy_fe_flags());
    w.flags |= raised;
    w.expr_flags[i] |= raised;
  }
  return true;
}

namespace {

// The views of a worker's temporaries shaped as a block of `rows` rows (made once per row count).
bool shaped_temps(BlockWorker& w, const Geometry& g, std::int64_t rows,
                  std::vector<PyObject*>& temps) {
  for (const auto& [n, made] : w.shaped) {
    if (n == rows) {
      for (std::size_t t = 0; t < made.size(); ++t) {
        temps[t] = made[t].ptr();
      }
      return true;
    }
  }
  py::tuple shape(g.domain.size() - g.axis);
  shape[0] = index_object(rows);
  for (std::size_t d = g.axis + 1; d < g.domain.size(); ++d) {
    shape[d - g.axis] = index_object(g.domain[d]);
  }
  std::vector<py::object> made;
  for (const py::object& flat : w.temps) {
    made.push_back(flat[slice_object(0, rows * g.inner)].attr("reshape")(shape));
  }
  for (std::size_t t = 0; t < made.size(); ++t) {
    temps[t] = made[t].ptr();
  }
  w.shaped.emplace_back(rows, std::move(made));
  return true;
}

}  // namespace

// Tier B for a block of a kernel ending in a reduction over the last axis: the compiled code on
// each of the block's rows into the reduced value's block (the scratch); reduce_block then reduces
// them with NumPy's reduce, as tier A does.
bool BlockKernel::native_rows(const BlockRun& r, const Geometry& g,
                              const std::vector<std::int64_t>& prefix, std::int64_t start,
                              std::int64_t stop, BlockWorker& w,
                              const std::vector<PyObject*>& views,
                              const std::vector<PyObject*>& temps) {
  if (g.axis + 1 >= g.domain.size()) {
    return run_calls(r, w, views, temps);  // (a row split across blocks)
  }
  const kir::Expr& red = plan_.k.exprs[static_cast<std::size_t>(reduction_.expr())];
  char* scratch = array_fields(plan_.operand(red.operands[0], views, temps))->data;
  return native_.rows_into(plan_.k, r, g, prefix, start, stop, w, scratch, reduction_.buffer());
}

// Runs blocks taken from `next` until none is left or one fails (`failed`): with the GIL held,
// which NumPy's loops release while they run.
bool BlockKernel::work(const BlockRun& r, const Geometry& g, BlockWorker& w,
                       std::atomic<std::int64_t>& next, std::atomic<bool>& failed) {
  for (std::size_t t = 0; t < plan_.temp_dtypes.size(); ++t) {
    w.temps.push_back(plan_.empty(index_object(r.block), plan_.temp_np_dtypes[t]));
  }
  w.expr_flags.assign(plan_.k.exprs.size(), 0);
  const std::int64_t per_prefix = (g.domain[g.axis] + g.rows - 1) / g.rows;
  std::vector<std::int64_t> prefix(g.axis, 0);
  std::vector<PyObject*> views(plan_.k.buffers.size(), nullptr);
  std::vector<PyObject*> temps(plan_.temp_dtypes.size(), nullptr);
  bool ok = true;
  while (ok && !failed.load(std::memory_order_relaxed)) {
    const std::int64_t i = next.fetch_add(1);
    if (i >= g.blocks) {
      break;
    }
    std::int64_t start = 0;
    std::int64_t stop = 0;
    std::vector<py::object> sliced;  // a flat range's temporaries
    if (g.ranges.empty()) {
      std::int64_t p = i / per_prefix;
      for (std::size_t d = g.axis; d-- > 0;) {
        prefix[d] = p % g.domain[d];
        p /= g.domain[d];
      }
      start = (i % per_prefix) * g.rows;
      stop = std::min(start + g.rows, g.domain[g.axis]);
      ok = shaped_temps(w, g, stop - start, temps);
    } else {
      std::tie(start, stop) = g.ranges[static_cast<std::size_t>(i)];
      for (std::size_t t = 0; t < temps.size(); ++t) {
        sliced.push_back(w.temps[t][slice_object(0, stop - start)]);
        temps[t] = sliced.back().ptr();
      }
    }
    for (std::size_t b = 0; b < views.size() && ok; ++b) {
      if (r.blockable[b]) {
        views[b] = block_view(r.blockable[b].ptr(), g, prefix, start, stop);
        ok = views[b] != nullptr;
      }
    }
    ok = ok && (r.native_rows ? native_rows(r, g, prefix, start, stop, w, views, temps)
                              : run_calls(r, w, views, temps));
    ok = ok && (!reduction_.active() || reduction_.reduce_block(plan_, r, g, i, w, views, temps));
    verified_ = verified_ || ok;
    for (PyObject*& v : views) {
      Py_CLEAR(v);
    }
  }
  if (!ok) {
    failed = true;
  }
  return ok;
}

bool BlockKernel::run_blocks(BlockRun& r) {
  Geometry g = geometry(r.domain, r.block);
  // (tier B for a reduction's blocks of whole rows; a row split across blocks runs tier A's calls)
  r.native_rows = reduction_.active() && !r.donated && g.axis + 1 < g.domain.size() &&
                  native_ready(r) && NativeTier::scalars(r);
  last_tier_ = r.native_rows ? 'B' : 'A';
  g.blocks = (g.domain[g.axis] + g.rows - 1) / g.rows;
  for (std::size_t d = 0; d < g.axis; ++d) {
    g.blocks *= g.domain[d];
  }
  if (g.blocks == 0) {
    return true;  // an empty domain: nothing to compute
  }
  if (reduction_.active() && reduction_.all()) {
    reduction_.plan_leaves(plan_, r, g);
  }
  std::atomic<std::int64_t> next{0};
  std::atomic<bool> failed{false};
  // The first run checks each call's dtype on its first block, on this thread alone.
  const std::int64_t threads =
      verified_ ? threads_for(g.blocks, elements(r.domain)) : std::int64_t{1};
  std::vector<int> helper_flags(static_cast<std::size_t>(threads), 0);
  std::vector<std::vector<int>> helper_expr_flags(static_cast<std::size_t>(threads));
  bool ok = true;
  on_threads(threads, true, [&](std::size_t t) {
    if (t == 0) {
      BlockWorker w;
      ok = work(r, g, w, next, failed);
      r.flags |= w.flags;
      r.expr_flags = std::move(w.expr_flags);
      return;
    }
    const PyGILState_STATE gil = PyGILState_Ensure();
    try {
      const IgnoreNumpyErrors quiet;  // the error state is per thread
      BlockWorker w;
      if (!quiet.ok() || !same_buffer_size(r.chunk)) {
        PyErr_Clear();  // this helper takes no block: the others run them all
      } else if (!work(r, g, w, next, failed)) {
        failed = true;
        PyErr_Clear();  // the group runs op by op (not after writing in place), and raises there
      }
      helper_flags[t] = w.flags;
      helper_expr_flags[t] = std::move(w.expr_flags);
    } catch (py::error_already_set&) {
      failed = true;  // (as a block that returned false: its error is dropped with the GIL held)
    }
    PyGILState_Release(gil);
  });
  for (const int f : helper_flags) {
    r.flags |= f;
  }
  for (const std::vector<int>& flags : helper_expr_flags) {
    for (std::size_t i = 0; i < flags.size() && i < r.expr_flags.size(); ++i) {
      r.expr_flags[i] |= flags[i];
    }
  }
  if (ok && failed.load()) {
    PyErr_SetString(PyExc_RuntimeError, "a block failed on another thread");
    return false;
  }
  return ok;
}

void BlockKernel::allocate(BlockRun& r) {
  r.made.assign(plan_.k.buffers.size(), py::object());
  r.blockable.assign(plan_.k.buffers.size(), py::object());
  if (reuse_.can_donate(verified_) && !native_ready(r)) {
    reuse_.donate(plan_, r, reduction_.buffer());
  }
  for (std::size_t b = 0; b < plan_.k.buffers.size(); ++b) {
    if (!plan_.k.buffers[b].output || static_cast<int>(b) == reduction_.buffer() || r.made[b]) {
      continue;  // an input, the reduction's (BlockReduction::allocate), or a dying input's array
    }
    r.made[b] = reuse_.take_spare(plan_, b, r.domain);
    if (!r.made[b] && r.pool != nullptr) {
      r.made[b] = py::reinterpret_steal<py::object>(r.pool->take(plan_.dtypes[b].ptr(), r.domain));
    }
    if (!r.made[b]) {
      r.made[b] = py::reinterpret_steal<py::object>(numpy_empty(r.domain, plan_.dtypes[b].ptr()));
      if (!r.made[b]) {
        throw py::error_already_set();
      }
    }
    r.arrays[b] = r.made[b].ptr();
  }
  for (std::size_t b = 0; b < plan_.k.buffers.size(); ++b) {
    if (static_cast<int>(b) != reduction_.buffer()) {
      const py::handle a(r.arrays[b]);
      r.blockable[b] = r.flat && r.domain.size() != 1 ? a.attr("reshape")(-1)
                                                      : py::reinterpret_borrow<py::object>(a);
    }
  }
  r.block = block_elements(r.domain);
  if (reduction_.active()) {
    reduction_.allocate(plan_, r);
  }
}

std::int64_t BlockKernel::block_elements(const std::vector<std::int64_t>& domain) const {
  std::int64_t block = cpu_options().block_elements.load();
  if (block <= 0) {
    block = std::clamp(kBlockBytes / std::max<std::int64_t>(1, plan_.bytes_per_element), kMinBlock,
                       kMaxBlock);
  }
  // Temporaries no larger than needed.
  block = std::min(block, std::max<std::int64_t>(elements(domain), 1));
  // Whole multiples of the SIMD width of any NumPy loop: every block but the last runs its loops'
  // vector paths on every element, and the last block's tail is eager NumPy's tail (a loop whose
  // vector and scalar paths round differently, such as complex multiply with FMA, gives the same
  // elements as one call over the whole array would).
  return (block + kBlockQuantum - 1) / kBlockQuantum * kBlockQuantum;
}

BlockKernel::Outcome BlockKernel::run(Frame& frame) {
  if (!disabled_.empty()) {
    return replay("disabled: " + disabled_);
  }
  last_in_place_ = false;
  if (runs_op_by_op_at_once(frame)) {
    return Outcome::kReplay;
  }
  if (in_place_after_library_ && !numpy_reports_fp_flags() &&
      frame.reuses_in_place(static_cast<std::size_t>(plan_.k.first_op))) {
    // NumPy 1.x (no kernel writes in place there): one op on a matmul's result that dies here
    // (`a @ b + c`) runs in place on this thread, as the reference program runs it. Blocks into a
    // new array on every core ran up to twice slower there: the BLAS's threads keep spinning on
    // the cores for a while after the call (OpenBLAS), and a new array moves a third more memory.
    return replay("one op on a dying matmul result: in place");
  }
  BlockRunLease lease;
  BlockRun& r = lease.get();
  r.pool = frame.pool();
  if (!prepare(frame, r)) {
    return Outcome::kReplay;
  }
  const std::int64_t total = elements(r.domain);
  if (total == 0) {
    // No element: no loop would run, but NumPy still converts the scalars (1e300 to float32
    // warns "overflow encountered in cast") - the ops run as they are.
    return replay("an empty domain");
  }
  // (A compiled kernel not yet verified runs on tier A once: that run checks the dtypes.)
  const bool compiled = native() && native()->state() == NativeKernel::State::kReady &&
                        native_.layout(r, reduction_.active()) && native_pays(total);
  if (cpu_options().block_elements.load() == 0 && !native_ready(r) && !compiled) {
    if (total * plan_.bytes_per_element <= kBlockBytes) {
      // Everything fits in cache at once: blocks would run the same loops with more overhead.
      return replay("fits in one block");
    }
  }
  try {
    if (reduction_.active() && !reduction_.plan(plan_, r, &last_replay_)) {
      return Outcome::kReplay;
    }
    allocate(r);
  } catch (py::error_already_set& e) {
    e.restore();
    return Outcome::kError;
  }
  if (r.flat && r.domain.size() != 1) {
    r.domain = {total};
  }
  bool ok = false;
  last_tier_ = 'A';
  // Tier B's flat run, outside NumPy's error state: it calls NumPy's loops directly, which never
  // read it, and takes its flags from its threads. (A donated run stays on tier A, whose flags are
  // per call; tier B may have become ready since.)
  bool native = false;
  try {
    native = !reduction_.active() && !r.donated && native_ready(r) && native_.run(plan_.k, r);
  } catch (py::error_already_set&) {
    native = false;  // tier A computes every output again
  }
  if (native) {
    last_tier_ = 'B';
    ok = true;
  } else {
    const IgnoreNumpyErrors quiet;
    if (!quiet.ok()) {
      return Outcome::kError;
    }
    try {
      ok = run_blocks(r) && (!reduction_.active() || reduction_.finish(plan_, r));
    } catch (py::error_already_set& e) {
      e.restore();
    }
  }
  last_in_place_ = r.donated;
  if (!ok) {
    if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt) != 0 || r.donated) {
      // (A donated run cannot go op by op: a dying input is partly overwritten.)
      if (PyErr_Occurred() == nullptr) {
        PyErr_SetString(PyExc_RuntimeError, "a fused group failed after writing in place");
      }
      return Outcome::kError;
    }
    PyErr_Clear();  // the group runs op by op, and raises there as eager NumPy does
    return replay(disabled_.empty() ? "an error in a block" : "disabled: " + disabled_);
  }
  try {
    if (reported_fe_flags(r.flags) != 0) {
      if (!r.donated) {
        return replay("a floating-point error the error state reports");
      }
      if (!report_flags_per_op(plan_.k, r)) {
        return Outcome::kError;
      }
    }
  } catch (py::error_already_set& e) {
    e.restore();
    return Outcome::kError;
  }
  for (std::size_t b = 0; b < plan_.k.buffers.size(); ++b) {
    if (plan_.k.buffers[b].output) {
      if (plan_.k.buffers[b].returned && static_cast<int>(b) != reduction_.buffer()) {
        // (An output the graph does not return is left to the ops after the group, which may
        // write into it once it dies - a spare held here would stop them.)
        reuse_.keep_spare(plan_, b, r.made[b]);
      }
      frame.set_owned(plan_.k.buffers[b].value, r.made[b].release().ptr());
    }
  }
  last_replay_.clear();
  return Outcome::kDone;
}

}  // namespace sot::graph
