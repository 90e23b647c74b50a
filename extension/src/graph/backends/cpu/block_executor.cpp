#include "graph/backends/cpu/block_executor.hpp"

#include <algorithm>
#include <array>
#include <cfenv>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "core/array_fields.hpp"
#include "core/loaded_module.hpp"
#include "graph/exec/buffer_pool.hpp"
#include "graph/backends/cpu/cpp_emitter.hpp"
#include "graph/rules/fp_state.hpp"
#include "graph/backends/cpu/numpy_loops.hpp"
#include "graph/rules/reductions.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

// Outputs below this size are not kept for the next run (malloc serves them without page faults).
constexpr std::int64_t kMinSpareBytes = std::int64_t{1} << 20;

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

std::int64_t elements(const std::vector<std::int64_t>& domain) {
  std::int64_t n = 1;
  for (const std::int64_t size : domain) {
    n *= size;
  }
  return n;
}

// A block's buffers (arrays, plus about one temporary per call) fill about this much memory.
constexpr std::int64_t kBlockBytes = std::int64_t{4} << 20;
constexpr std::int64_t kMinBlock = 4096;
constexpr std::int64_t kMaxBlock = std::int64_t{1} << 20;
constexpr std::int64_t kBlockQuantum = 64;
// The shortest rows tier B runs one call a row for.
constexpr std::int64_t kMinNativeRow = 64;
// Elements each thread beyond the first must have: a thread costs about 35 us to start and join on
// the 2-core machine of docs/executor.md, the time of a few hundred thousand elements of a short
// chain, so smaller kernels run on the calling thread alone. (With a block size set, as in the
// tests, every block may go to another thread.)
constexpr std::int64_t kMinThreadElements = std::int64_t{1} << 17;

// The threads for `units` parts of a run over `elements` elements.
std::int64_t threads_for(std::int64_t units, std::int64_t elements) {
  std::int64_t n = std::min<std::int64_t>(cpu_threads(), units);
  if (cpu_options().block_elements.load() == 0) {
    n = std::min<std::int64_t>(n, std::max<std::int64_t>(1, elements / kMinThreadElements));
  }
  return std::max<std::int64_t>(n, 1);
}

py::object index_object(std::int64_t i) {
  return py::reinterpret_steal<py::object>(PyLong_FromLongLong(i));
}

py::object slice_object(std::int64_t start, std::int64_t stop) {
  return py::reinterpret_steal<py::object>(
      PySlice_New(index_object(start).ptr(), index_object(stop).ptr(), nullptr));
}

}  // namespace

CpuOptions& cpu_options() {
  static CpuOptions options;
  return options;
}

std::int64_t cpu_threads() {
  const std::int64_t n = cpu_options().threads.load();
  return n > 0 ? n : std::max<std::int64_t>(1, std::thread::hardware_concurrency());
}

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

struct BlockKernel::Run {
  std::vector<PyObject*> arrays;      // per buffer: the array (inputs borrowed, outputs in `made`)
  std::vector<py::object> made;       // the output arrays
  std::vector<py::object> blockable;  // per buffer: what blocks index (the array or a flat view)
  std::vector<PyObject*> scalars;     // per scalar (borrowed)
  std::vector<std::int64_t> domain;
  BufferPool* pool = nullptr;  // the compiled graph's, for the outputs
  bool flat = false;
  // Not flat, but every array has the domain's shape and contiguous rows (the last axis): tier B
  // runs row by row.
  bool rowwise = false;
  // Every input can be read row by row (rowwise, or, for a reduction's whole rows, even when flat).
  bool rows_ok = false;
  // A reduction kernel whose blocks run tier B's code, then NumPy's reduce (native_block), with
  // these scalar operands.
  bool native_rows = false;
  std::vector<double> native_scalars;
  std::int64_t block = 0;
  int flags = 0;  // the floating-point flags every worker raised
  // Outputs written into dying inputs: then a reported flag cannot make the group run op by op
  // (the inputs are gone) and is reported per op, from expr_flags.
  bool donated = false;
  std::vector<int> expr_flags;  // per expression: the flags its calls raised
  // A reduction over the last axis: the keepdims-shaped view of the result the blocks write.
  py::object reduced;
  // A reduction: NumPy's buffer size (0: none read); a full one: NumPy's summation order and the
  // leaves' sums.
  SumOrder order = SumOrder::kUnknown;
  std::int64_t chunk = 0;
  py::object sums;
};

// What one thread needs to run blocks: its temporaries (flat, a block's capacity), their views by
// a block's row count, and its floating-point flags (the flags are per thread).
struct BlockKernel::Worker {
  std::vector<py::object> temps;
  std::vector<std::pair<std::int64_t, std::vector<py::object>>> shaped;
  std::vector<PyObject*> args;
  int flags = 0;
  std::vector<int> expr_flags;
};

namespace {

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

BlockKernel::BlockKernel(kir::Kernel kernel) : k_(std::move(kernel)) {
  if (native_options().enabled.load()) {
    if (const auto source = emit_cpp(k_, &native_why_); source && find_loops(*source)) {
      native_ = native_kernel(*source);
    }
  } else {
    native_why_ = "tier B is off (SOT_CPU_TIER_B=0)";
  }
  const py::module_ numpy = loaded_module("numpy");
  ndarray_ = numpy.attr("ndarray");
  empty_ = numpy.attr("empty");
  copyto_ = numpy.attr("copyto");
  out_kwnames_ = py::make_tuple("out");
  casting_kwnames_ = py::make_tuple("casting");
  casting_where_kwnames_ = py::make_tuple("casting", "where");
  unsafe_ = py::str("unsafe");
  for (const kir::Expr& e : k_.exprs) {
    if ((e.kind == kir::Expr::Kind::kCall || e.kind == kir::Expr::Kind::kSelect) &&
        disabled_.empty()) {
      disabled_ = constant_cast_warning(k_, e, numpy);
    }
  }
  for (const kir::Buffer& b : k_.buffers) {
    dtypes_.push_back(numpy.attr("dtype")(std::string(name(b.dtype))));
    bytes_per_element_ += itemsize(b.dtype);
  }
  // The last expression that reads each one, then one temporary per value not stored, reused once
  // its value is dead (a ufunc or a cast may write into its own operand, a select may not).
  last_reader_.assign(k_.exprs.size(), -1);
  for (std::size_t i = 0; i < k_.exprs.size(); ++i) {
    for (const int o : k_.exprs[i].operands) {
      last_reader_[static_cast<std::size_t>(o)] = static_cast<int>(i);
    }
  }
  targets_.assign(k_.exprs.size(), Target{});
  for (const kir::Store& st : k_.stores) {
    targets_[static_cast<std::size_t>(st.expr)] = Target{true, st.buffer};
  }
  std::vector<int> owner_of_temp;
  for (std::size_t i = 0; i < k_.exprs.size(); ++i) {
    const kir::Expr& e = k_.exprs[i];
    if (!e.elementwise() || targets_[i].store) {
      continue;
    }
    int chosen = -1;
    for (std::size_t t = 0; t < owner_of_temp.size() && chosen < 0; ++t) {
      // A ufunc or a cast may write into its own operand; a select writes its result in two
      // steps, so not into an operand it reads.
      const int owner = owner_of_temp[t];
      const int dies = last_reader_[static_cast<std::size_t>(owner)];
      if (temp_dtypes_[t] == e.dtype &&
          (dies < static_cast<int>(i) ||
           (dies == static_cast<int>(i) && e.kind != kir::Expr::Kind::kSelect))) {
        chosen = static_cast<int>(t);
      }
    }
    if (chosen < 0) {
      chosen = static_cast<int>(temp_dtypes_.size());
      temp_dtypes_.push_back(e.dtype);
      temp_np_dtypes_.push_back(numpy.attr("dtype")(std::string(name(e.dtype))));
      owner_of_temp.push_back(-1);
      bytes_per_element_ += itemsize(e.dtype);
    }
    owner_of_temp[static_cast<std::size_t>(chosen)] = static_cast<int>(i);
    targets_[i] = Target{false, chosen};
  }
  reduce_ = k_.reduction();
  if (reduce_ >= 0) {
    const kir::Expr& e = k_.exprs[static_cast<std::size_t>(reduce_)];
    reduce_fn_ = e.ufunc.attr("reduce");
    reduce_kwnames_ = py::make_tuple("axis", "keepdims", "out");
    const Target& t = targets_[static_cast<std::size_t>(reduce_)];
    reduce_buffer_ = t.store ? t.index : -1;
    if (reduce_buffer_ < 0 && disabled_.empty()) {
      disabled_ = "a reduction whose result is not used";
    }
  }
}

BlockKernel::Outcome BlockKernel::replay(std::string why) {
  last_replay_ = std::move(why);
  return Outcome::kReplay;
}

// The common case of small arrays, decided before anything is built (a few hundred nanoseconds a
// group otherwise): with automatic blocks, a domain whose arrays fit in one block runs op by op
// (blocks would run the same loops with more overhead) unless tier B is ready, and a domain of
// fewer than kMinBlock elements runs op by op even then (a few NumPy calls on a few thousand
// elements cost less than preparing the compiled kernel's run).
bool BlockKernel::runs_op_by_op_at_once(const Frame& frame) {
  constexpr std::size_t kMaxDims = 32;
  const std::size_t nd = k_.domain.size();
  if (cpu_options().block_elements.load() != 0 || nd > kMaxDims) {
    return false;
  }
  std::array<std::int64_t, kMaxDims> domain{};
  domain.fill(1);
  for (const kir::Buffer& buf : k_.buffers) {
    if (buf.output) {
      continue;
    }
    PyObject* a = frame.get(buf.value);
    if (Py_TYPE(a) != reinterpret_cast<PyTypeObject*>(ndarray_.ptr()) ||
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
  const bool compiled = native_ && native_->state() == NativeKernel::State::kReady;
  if (total == 0 || (compiled && total >= kMinBlock) || total * bytes_per_element_ > kBlockBytes) {
    return false;
  }
  if (last_replay_ != "fits in one block") {
    last_replay_ = "fits in one block";
  }
  return true;
}

bool BlockKernel::prepare(Frame& frame, Run& r) {
  const auto* ndarray = reinterpret_cast<PyTypeObject*>(ndarray_.ptr());
  const std::size_t nd = k_.domain.size();
  r.domain.assign(nd, 1);
  r.flat = true;
  r.rowwise = nd >= 2;
  r.arrays.assign(k_.buffers.size(), nullptr);
  for (std::size_t b = 0; b < k_.buffers.size(); ++b) {
    const kir::Buffer& buf = k_.buffers[b];
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
  for (std::size_t b = 0; b < k_.buffers.size(); ++b) {
    if (r.arrays[b] != nullptr) {
      const ArrayFields* f = array_fields(r.arrays[b]);
      const std::size_t off = nd - static_cast<std::size_t>(f->nd);
      for (int d = 0; d < f->nd && full; ++d) {
        full = off == 0 && f->dimensions[d] == r.domain[off + static_cast<std::size_t>(d)];
      }
      r.rowwise = r.rowwise && contiguous_rows(b, f, r.domain.back());
    }
  }
  r.flat = r.flat && full;
  r.rows_ok = r.rowwise;
  r.rowwise = r.rowwise && !r.flat;
  for (const kir::Scalar& s : k_.scalars) {
    r.scalars.push_back(s.value >= 0 ? frame.get(s.value) : s.constant.ptr());
  }
  return true;
}

// An output array of the last run that nobody else holds any more (reference count 1: no user
// variable, no view, no container) and that is still as this kernel made it: C-contiguous,
// writeable, owning its data, with no weak reference, of the output's dtype and `domain`'s shape.
// Reusing it spares a fresh allocation's page faults (a new 64 MB array costs about as much as one
// pass over it).
py::object BlockKernel::take_spare(std::size_t b, const std::vector<std::int64_t>& domain) {
  if (spares_.size() <= b || !spares_[b]) {
    return {};
  }
  py::object spare = std::move(spares_[b]);
  return writable_alone(spare.ptr(), b, domain) ? spare : py::object();
}

// True when `a` may receive output `b` of a run over `domain`: only its holder references it (no
// user variable, view, container or weak reference - a weak reference would let its holder see
// the array change), it owns its data, and it is C-contiguous, writeable, of the output's dtype
// and of the domain's shape. (Only exact ndarrays reach here.)
bool BlockKernel::writable_alone(PyObject* a, std::size_t b,
                                 const std::vector<std::int64_t>& domain) const {
  const ArrayFields* f = array_fields(a);
  bool fits =
      Py_REFCNT(a) == 1 && f->weakreflist == nullptr && f->base == nullptr &&
      f->descr == dtypes_[b].ptr() &&
      (f->flags & (kArrayCContiguous | kArrayWriteable)) == (kArrayCContiguous | kArrayWriteable) &&
      f->nd == static_cast<int>(domain.size());
  for (std::size_t d = 0; fits && d < domain.size(); ++d) {
    fits = f->dimensions[d] == domain[d];
  }
  return fits;
}

void BlockKernel::keep_spare(std::size_t b, const py::object& made) {
  spares_.resize(k_.buffers.size());
  std::int64_t bytes = itemsize(k_.buffers[b].dtype);
  const ArrayFields* f = array_fields(made.ptr());
  for (int d = 0; d < f->nd; ++d) {
    bytes *= f->dimensions[d];
  }
  spares_[b] = bytes >= kMinSpareBytes ? made : py::object();
}

void BlockKernel::set_dying_inputs(const std::vector<int>& values) {
  donors_.assign(k_.buffers.size(), {});
  std::vector<int> load(k_.buffers.size(), -1);
  for (std::size_t i = 0; i < k_.exprs.size(); ++i) {
    if (k_.exprs[i].kind == kir::Expr::Kind::kLoad) {
      load[static_cast<std::size_t>(k_.exprs[i].buffer)] = static_cast<int>(i);
    }
  }
  bool any = false;
  for (const kir::Store& st : k_.stores) {
    const kir::Buffer& out = k_.buffers[static_cast<std::size_t>(st.buffer)];
    for (std::size_t x = 0; x < k_.buffers.size(); ++x) {
      const kir::Buffer& in = k_.buffers[x];
      const int l = load[x];
      // An input of the output's dtype and the domain's shape that nothing in a block reads after
      // the output's value is computed (its call may read it: in place, element by element).
      if (!in.output && l >= 0 && in.dtype == out.dtype && in.shape == k_.domain &&
          std::find(values.begin(), values.end(), in.value) != values.end() &&
          last_reader_[static_cast<std::size_t>(l)] <= st.expr) {
        donors_[static_cast<std::size_t>(st.buffer)].push_back(static_cast<int>(x));
        any = true;
      }
    }
  }
  // Every expression's flags must be reported as NumPy reports them (see can_donate).
  donatable_ = any && std::all_of(k_.exprs.begin(), k_.exprs.end(), [](const kir::Expr& e) {
                 return e.kind == kir::Expr::Kind::kLoad || e.kind == kir::Expr::Kind::kScalar ||
                        e.kind == kir::Expr::Kind::kCall ||
                        (e.kind == kir::Expr::Kind::kReduce && !e.reduce.all &&
                         e.reduce.fn != Reduction::Fn::kMean);
               });
}

// Donation needs NumPy to report a flag per op (the inputs are gone when a flag is reported) and
// every expression's flags to be reported as NumPy reports them: calls under their ufunc's name,
// reductions over the last axis (but mean, whose division NumPy reports apart) under "reduce".
// (The kernel's part is decided once, by set_dying_inputs: donatable_.)
bool BlockKernel::can_donate() const {
  return donatable_ && verified_ && numpy_reports_fp_flags();
}

// Writes outputs into dying inputs' arrays: as eager NumPy's elision of temporaries and the
// reference program do, the write in place moves a third less memory than a new array, and its
// lines are the ones just read (on this machine a 64 MB in-place pass ran 3.5x faster than one into
// another array). The input must be held by the run alone (reference count 1: no variable, view,
// container or weak reference) and own C-contiguous writeable data.
void BlockKernel::donate(Run& r) {
  std::vector<bool> taken(k_.buffers.size(), false);
  for (std::size_t b = 0; b < k_.buffers.size(); ++b) {
    if (!k_.buffers[b].output || static_cast<int>(b) == reduce_buffer_) {
      continue;
    }
    for (const int x : donors_[b]) {
      PyObject* a = r.arrays[static_cast<std::size_t>(x)];
      if (taken[static_cast<std::size_t>(x)] ||
          Py_TYPE(a) != reinterpret_cast<PyTypeObject*>(ndarray_.ptr()) ||
          (array_fields(a)->flags & kArrayOwnData) == 0 || !writable_alone(a, b, r.domain)) {
        continue;
      }
      taken[static_cast<std::size_t>(x)] = true;
      if (b < spares_.size() && spares_[b] && r.pool != nullptr) {
        // The last run's output, unused now: to the pool, for another group's output to take
        // (else that group allocates a new array every run).
        r.pool->give(spares_[b].release().ptr());
      }
      r.made[b] = py::reinterpret_borrow<py::object>(a);
      r.arrays[b] = a;
      r.donated = true;
      break;
    }
  }
}

// After a donated run with a reported flag: each op's flags as NumPy reports them after its loop,
// in program order (eager NumPy's warnings, once per op, in order).
bool BlockKernel::report_flags_per_op(const Run& r) const {
  for (std::size_t i = 0; i < k_.exprs.size() && i < r.expr_flags.size(); ++i) {
    // (NumPy names a reduce's errors "reduce": "overflow encountered in reduce".)
    const kir::Expr& e = k_.exprs[i];
    const char* name = e.kind == kir::Expr::Kind::kReduce ? "reduce" : e.fn.c_str();
    if (r.expr_flags[i] != 0 && !report_fp_flags(name, r.expr_flags[i])) {
      return false;
    }
  }
  return true;
}

void BlockKernel::allocate(Run& r) {
  py::tuple shape(r.domain.size());
  for (std::size_t d = 0; d < r.domain.size(); ++d) {
    shape[d] = index_object(r.domain[d]);
  }
  r.made.assign(k_.buffers.size(), py::object());
  r.blockable.assign(k_.buffers.size(), py::object());
  if (can_donate() && !native_ready(r)) {
    donate(r);
  }
  for (std::size_t b = 0; b < k_.buffers.size(); ++b) {
    if (!k_.buffers[b].output || static_cast<int>(b) == reduce_buffer_ || r.made[b]) {
      continue;  // an input, allocate_reduction's, or a dying input's array
    }
    r.made[b] = take_spare(b, r.domain);
    if (!r.made[b] && r.pool != nullptr) {
      r.made[b] = py::reinterpret_steal<py::object>(r.pool->take(dtypes_[b].ptr(), r.domain));
    }
    if (!r.made[b]) {
      r.made[b] = empty_(shape, dtypes_[b]);
    }
    r.arrays[b] = r.made[b].ptr();
  }
  for (std::size_t b = 0; b < k_.buffers.size(); ++b) {
    if (static_cast<int>(b) != reduce_buffer_) {
      const py::handle a(r.arrays[b]);
      r.blockable[b] = r.flat && r.domain.size() != 1 ? a.attr("reshape")(-1)
                                                      : py::reinterpret_borrow<py::object>(a);
    }
  }
  r.block = block_elements(r.domain);
  if (reduce_ >= 0) {
    allocate_reduction(r);
  }
}

// Where a reduction can run in blocks: over the last axis, rows no longer than a block; over all
// axes, inputs of the domain's shape (flat ranges) and a summation order known for NumPy's
// buffer size.
bool BlockKernel::plan_reduction(Run& r) {
  const Reduction& red = k_.exprs[static_cast<std::size_t>(reduce_)].reduce;
  const py::module_ numpy = loaded_module("numpy");
  // (NumPy 1.x chunks every reduce row at the buffer size, a per-thread setting: see run_blocks.)
  r.chunk = numpy.attr("getbufsize")().cast<std::int64_t>();
  if (!red.all) {
    r.flat = false;  // blocks of whole rows
    if (r.domain.back() > kMaxBlock) {
      last_replay_ = "rows longer than a block";
      return false;
    }
    return true;
  }
  if (!r.flat) {
    last_replay_ = "a full reduction of broadcast inputs";
    return false;
  }
  r.order = numpy_sum_order(r.chunk, numpy);
  if (r.order == SumOrder::kUnknown) {
    last_replay_ = "NumPy's summation order for this buffer size is not known";
    return false;
  }
  return true;
}

void BlockKernel::allocate_reduction(Run& r) {
  const auto b = static_cast<std::size_t>(reduce_buffer_);
  const Reduction& red = k_.exprs[static_cast<std::size_t>(reduce_)].reduce;
  if (red.all) {
    r.arrays[b] = nullptr;  // a scalar, made by finish_reduction
    if (r.order == SumOrder::kChunked) {
      r.block = std::max(r.chunk, r.block / r.chunk * r.chunk);
    } else {
      r.block = std::max(r.block, kPairwiseLeaf);  // NumPy sums up to 128 elements unsplit
    }
    return;
  }
  const std::size_t nd = r.domain.size();
  py::tuple kept(nd);
  py::tuple shape(red.keepdims ? nd : nd - 1);
  for (std::size_t d = 0; d + 1 < nd; ++d) {
    kept[d] = index_object(r.domain[d]);
    shape[d] = index_object(r.domain[d]);
  }
  kept[nd - 1] = index_object(1);
  if (red.keepdims) {
    shape[nd - 1] = index_object(1);
  }
  r.made[b] = empty_(shape, dtypes_[b]);
  r.reduced = r.made[b].attr("reshape")(kept);
  r.arrays[b] = r.reduced.ptr();
  r.blockable[b] = r.reduced;
  const std::int64_t row = r.domain.back();
  r.block = std::max(r.block, (row + kBlockQuantum - 1) / kBlockQuantum * kBlockQuantum);
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

// The ranges of a full sum's blocks (graph/rules/reductions.hpp): NumPy's chunks, `r.block` of them a
// block, or the pairwise subtrees no longer than a block, one a block; the leaves' sums in r.sums.
void BlockKernel::plan_leaves(Run& r, Geometry& g) const {
  const std::int64_t total = r.domain[0];
  std::int64_t leaves = 0;
  if (r.order == SumOrder::kChunked) {
    g.leaf = r.chunk;
    for (std::int64_t start = 0; start < total; start += r.block) {
      g.ranges.emplace_back(start, std::min(total, start + r.block));
      g.first_leaf.push_back(start / r.chunk);
    }
    leaves = (total + r.chunk - 1) / r.chunk;
  } else {
    g.ranges = sum_leaves(r.order, total, r.block, r.chunk);
    for (std::size_t i = 0; i < g.ranges.size(); ++i) {
      g.first_leaf.push_back(static_cast<std::int64_t>(i));
    }
    leaves = static_cast<std::int64_t>(g.ranges.size());
  }
  g.blocks = static_cast<std::int64_t>(g.ranges.size());
  r.sums = empty_(py::make_tuple(leaves, 1), dtypes_[static_cast<std::size_t>(reduce_buffer_)]);
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
    PyObject* call[] = {target, from, unsafe_.ptr(), where};
    PyObject* made = PyObject_Vectorcall(
        copyto_.ptr(), call, 2,
        where != nullptr ? casting_where_kwnames_.ptr() : casting_kwnames_.ptr());
    Py_XDECREF(made);
    return made != nullptr;
  };
  if (args.size() == 1) {
    return copy(args[0], nullptr);
  }
  return copy(args[2], nullptr) && copy(args[1], args[0]);
}

bool BlockKernel::run_calls(const Run& r, Worker& w, const std::vector<PyObject*>& views,
                            const std::vector<PyObject*>& temps) {
  for (std::size_t i = 0; i < k_.exprs.size(); ++i) {
    const kir::Expr& e = k_.exprs[i];
    if (!e.elementwise()) {
      continue;
    }
    w.args.clear();
    for (const int o : e.operands) {
      const kir::Expr& operand = k_.exprs[static_cast<std::size_t>(o)];
      if (operand.kind == kir::Expr::Kind::kLoad) {
        w.args.push_back(views[static_cast<std::size_t>(operand.buffer)]);
      } else if (operand.kind == kir::Expr::Kind::kScalar) {
        w.args.push_back(r.scalars[static_cast<std::size_t>(operand.scalar)]);
      } else {
        const Target& t = targets_[static_cast<std::size_t>(o)];
        w.args.push_back(t.store ? views[static_cast<std::size_t>(t.index)]
                                 : temps[static_cast<std::size_t>(t.index)]);
      }
    }
    const Target& t = targets_[i];
    PyObject* target = t.store ? views[static_cast<std::size_t>(t.index)]
                               : temps[static_cast<std::size_t>(t.index)];
    std::feclearexcept(FE_ALL_EXCEPT);
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
      PyObject* made = PyObject_Vectorcall(e.ufunc.ptr(), w.args.data(), nargs, out_kwnames_.ptr());
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
bool shaped_temps(BlockKernel::Worker& w, const Geometry& g, std::int64_t rows,
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

// Runs blocks taken from `next` until none is left or one fails (`failed`): with the GIL held,
// which NumPy's loops release while they run.
bool BlockKernel::work(const Run& r, const Geometry& g, Worker& w, std::atomic<std::int64_t>& next,
                       std::atomic<bool>& failed) {
  for (std::size_t t = 0; t < temp_dtypes_.size(); ++t) {
    w.temps.push_back(empty_(index_object(r.block), temp_np_dtypes_[t]));
  }
  w.expr_flags.assign(k_.exprs.size(), 0);
  const std::int64_t per_prefix = (g.domain[g.axis] + g.rows - 1) / g.rows;
  std::vector<std::int64_t> prefix(g.axis, 0);
  std::vector<PyObject*> views(k_.buffers.size(), nullptr);
  std::vector<PyObject*> temps(temp_dtypes_.size(), nullptr);
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
    ok = ok && (r.native_rows ? native_block(r, g, prefix, start, stop, w, views, temps)
                              : run_calls(r, w, views, temps));
    ok = ok && (reduce_ < 0 || reduce_block(r, g, i, w, views, temps));
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

namespace {

// ufunc.reduce(input, axis=-1, keepdims=True, out=out): false with an error set when it raises.
bool call_reduce(const py::object& reduce, const py::object& kwnames, PyObject* input,
                 PyObject* out) {
  const py::object axis = index_object(-1);
  PyObject* args[] = {input, axis.ptr(), Py_True, out};
  PyObject* made = PyObject_Vectorcall(reduce.ptr(), args, 1, kwnames.ptr());
  Py_XDECREF(made);
  return made != nullptr;
}

}  // namespace

// Reduces block `block`: its rows into the output's rows, or its flat range's leaves (graph/
// reductions.hpp) into their sums, each leaf a row of NumPy's reduce.
bool BlockKernel::reduce_block(const Run& r, const Geometry& g, std::int64_t block, Worker& w,
                               const std::vector<PyObject*>& views,
                               const std::vector<PyObject*>& temps) {
  const kir::Expr& e = k_.exprs[static_cast<std::size_t>(reduce_)];
  const Target& t = targets_[static_cast<std::size_t>(e.operands[0])];
  PyObject* input =
      t.store ? views[static_cast<std::size_t>(t.index)] : temps[static_cast<std::size_t>(t.index)];
  std::feclearexcept(FE_ALL_EXCEPT);
  bool ok = true;
  if (!e.reduce.all) {
    ok = call_reduce(reduce_fn_, reduce_kwnames_, input,
                     views[static_cast<std::size_t>(reduce_buffer_)]);
  } else {
    const auto& [start, stop] = g.ranges[static_cast<std::size_t>(block)];
    const std::int64_t n = stop - start;
    const std::int64_t leaf = g.leaf > 0 ? g.leaf : n;
    const std::int64_t whole = n / leaf;
    const std::int64_t first = g.first_leaf[static_cast<std::size_t>(block)];
    const py::handle in(input);
    if (whole > 0) {
      const py::object rows = in[slice_object(0, whole * leaf)].attr("reshape")(whole, leaf);
      const py::object out = r.sums[slice_object(first, first + whole)];
      ok = call_reduce(reduce_fn_, reduce_kwnames_, rows.ptr(), out.ptr());
    }
    if (ok && whole * leaf < n) {
      const py::object rows =
          in[slice_object(whole * leaf, n)].attr("reshape")(1, n - whole * leaf);
      const py::object out = r.sums[slice_object(first + whole, first + whole + 1)];
      ok = call_reduce(reduce_fn_, reduce_kwnames_, rows.ptr(), out.ptr());
    }
  }
  const int raised = std::fetestexcept(numpy_fe_flags());
  w.flags |= raised;
  w.expr_flags[static_cast<std::size_t>(reduce_)] |= raised;
  return ok;
}

namespace {

// A full sum from its leaves' sums (`sums`: one per row), in `T`.
template <typename T>
double combined(SumOrder order, std::int64_t n, std::int64_t block, const py::object& sums) {
  const ArrayFields* f = array_fields(sums.ptr());
  const T* data = reinterpret_cast<const T*>(f->data);
  const std::vector<T> leaves(data, data + f->dimensions[0]);
  return static_cast<double>(combine_sums<T>(order, n, block, leaves));
}

}  // namespace

// After the blocks: a full sum combined from its leaves (a NumPy scalar), and a mean divided by
// its count as NumPy's mean divides (an array by numpy.intp in place; a scalar by a numpy.intp,
// converted back to its type).
bool BlockKernel::finish_reduction(Run& r) {
  const kir::Expr& e = k_.exprs[static_cast<std::size_t>(reduce_)];
  const auto b = static_cast<std::size_t>(reduce_buffer_);
  const py::module_ numpy = loaded_module("numpy");
  std::feclearexcept(FE_ALL_EXCEPT);
  if (e.reduce.all) {
    const double total = e.dtype == DType::kFloat32
                             ? combined<float>(r.order, r.domain[0], r.block, r.sums)
                             : combined<double>(r.order, r.domain[0], r.block, r.sums);
    py::object value = dtypes_[b].attr("type")(total);
    if (e.reduce.fn == Reduction::Fn::kMean) {
      const py::object count = numpy.attr("intp")(r.domain[0]);
      value = value.attr("dtype").attr("type")(value.attr("__truediv__")(count));
    }
    r.made[b] = value;
  } else if (e.reduce.fn == Reduction::Fn::kMean) {
    const py::object count = numpy.attr("intp")(r.domain.back());
    numpy.attr("true_divide")(r.made[b], count, py::arg("out") = r.made[b],
                              py::arg("casting") = "unsafe");
  }
  r.flags |= std::fetestexcept(numpy_fe_flags());
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
  std::vector<std::thread> helpers;
  for (std::int64_t t = 1; t < threads; ++t) {
    helpers.emplace_back(work, static_cast<std::size_t>(t));
  }
  work(0);
  for (std::thread& h : helpers) {
    h.join();
  }
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

bool BlockKernel::run_blocks(Run& r) {
  last_tier_ = 'A';
  // (A donated run stays on tier A, whose flags are per call; tier B may have become ready since.)
  if (reduce_ < 0 && !r.donated && native_ready(r) && run_native(r)) {
    last_tier_ = 'B';
    return true;
  }
  Geometry g = geometry(r.domain, r.block);
  // (tier B for a reduction's blocks of whole rows; a row split across blocks runs tier A's calls)
  r.native_rows = reduce_ >= 0 && !r.donated && g.axis + 1 < g.domain.size() && native_ready(r) &&
                  native_scalars(r);
  last_tier_ = r.native_rows ? 'B' : 'A';
  g.blocks = (g.domain[g.axis] + g.rows - 1) / g.rows;
  for (std::size_t d = 0; d < g.axis; ++d) {
    g.blocks *= g.domain[d];
  }
  if (g.blocks == 0) {
    return true;  // an empty domain: nothing to compute
  }
  if (reduce_ >= 0 && k_.exprs[static_cast<std::size_t>(reduce_)].reduce.all) {
    plan_leaves(r, g);
  }
  std::atomic<std::int64_t> next{0};
  std::atomic<bool> failed{false};
  // The first run checks each call's dtype on its first block, on this thread alone.
  const std::int64_t threads =
      verified_ ? threads_for(g.blocks, elements(r.domain)) : std::int64_t{1};
  std::vector<std::thread> helpers;
  std::vector<int> helper_flags(static_cast<std::size_t>(threads), 0);
  std::vector<std::vector<int>> helper_expr_flags(static_cast<std::size_t>(threads));
  for (std::int64_t t = 1; t < threads; ++t) {
    helpers.emplace_back([&, t] {
      const PyGILState_STATE gil = PyGILState_Ensure();
      {
        const IgnoreNumpyErrors quiet;  // the error state is per thread
        Worker w;
        if (!quiet.ok() || !same_buffer_size(r.chunk)) {
          PyErr_Clear();  // this helper takes no block: the others run them all
        } else if (!work(r, g, w, next, failed)) {
          failed = true;
          PyErr_Clear();  // the group runs op by op (not after writing in place), and raises there
        }
        helper_flags[static_cast<std::size_t>(t)] = w.flags;
        helper_expr_flags[static_cast<std::size_t>(t)] = std::move(w.expr_flags);
      }
      PyGILState_Release(gil);
    });
  }
  Worker w;
  const bool ok = work(r, g, w, next, failed);
  r.flags |= w.flags;
  r.expr_flags = std::move(w.expr_flags);
  if (!helpers.empty()) {
    Py_BEGIN_ALLOW_THREADS;
    for (std::thread& h : helpers) {
      h.join();
    }
    Py_END_ALLOW_THREADS;
  }
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

std::int64_t BlockKernel::block_elements(const std::vector<std::int64_t>& domain) const {
  std::int64_t block = cpu_options().block_elements.load();
  if (block <= 0) {
    block = std::clamp(kBlockBytes / std::max<std::int64_t>(1, bytes_per_element_), kMinBlock,
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
      frame.reuses_in_place(static_cast<std::size_t>(k_.first_op))) {
    // NumPy 1.x (no kernel writes in place there): one op on a matmul's result that dies here
    // (`a @ b + c`) runs in place on this thread, as the reference program runs it. Blocks into a
    // new array on every core ran up to twice slower there: the BLAS's threads keep spinning on
    // the cores for a while after the call (OpenBLAS), and a new array moves a third more memory.
    return replay("one op on a dying matmul result: in place");
  }
  Run r;
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
  const bool compiled = native_ && native_->state() == NativeKernel::State::kReady &&
                        native_layout(r) && total >= kMinBlock;
  if (cpu_options().block_elements.load() == 0 && !native_ready(r) && !compiled) {
    if (total * bytes_per_element_ <= kBlockBytes) {
      // Everything fits in cache at once: blocks would run the same loops with more overhead.
      return replay("fits in one block");
    }
  }
  try {
    if (reduce_ >= 0 && !plan_reduction(r)) {
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
  {
    const IgnoreNumpyErrors quiet;
    if (!quiet.ok()) {
      return Outcome::kError;
    }
    try {
      ok = run_blocks(r) && (reduce_ < 0 || finish_reduction(r));
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
      if (!report_flags_per_op(r)) {
        return Outcome::kError;
      }
    }
  } catch (py::error_already_set& e) {
    e.restore();
    return Outcome::kError;
  }
  for (std::size_t b = 0; b < k_.buffers.size(); ++b) {
    if (k_.buffers[b].output) {
      if (k_.buffers[b].returned && static_cast<int>(b) != reduce_buffer_) {
        // (An output the graph does not return is left to the ops after the group, which may
        // write into it once it dies - a spare held here would stop them.)
        keep_spare(b, r.made[b]);
      }
      frame.set_owned(k_.buffers[b].value, r.made[b].release().ptr());
    }
  }
  last_replay_.clear();
  return Outcome::kDone;
}

}  // namespace sot::graph
