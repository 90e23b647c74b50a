// Output arrays of a block run (block_parts.hpp): an output of the last run that nobody holds any
// more is reused, and an output may be written into a dying input's array (donation).
#include "graph/backends/cpu/block_executor.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/array_fields.hpp"
#include "core/loaded_module.hpp"
#include "graph/backends/cpu/block_parts.hpp"
#include "graph/rules/fp_state.hpp"

namespace py = pybind11;

namespace sot::graph {

using namespace block;

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

}  // namespace sot::graph
