#include "graph/backends/cpu/block_reuse.hpp"

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

using block::kMinSpareBytes;

// An output array of the last run that nobody else holds any more (reference count 1: no user
// variable, no view, no container) and that is still as this kernel made it: C-contiguous,
// writeable, owning its data, with no weak reference, of the output's dtype and `domain`'s shape.
// Reusing it spares a fresh allocation's page faults (a new 64 MB array costs about as much as one
// pass over it).
py::object OutputReuse::take_spare(const BlockPlan& p, std::size_t b,
                                   const std::vector<std::int64_t>& domain) {
  if (spares_.size() <= b || !spares_[b]) {
    return {};
  }
  py::object spare = std::move(spares_[b]);
  return writable_alone(p, spare.ptr(), b, domain) ? spare : py::object();
}

// True when `a` may receive output `b` of a run over `domain`: only its holder references it (no
// user variable, view, container or weak reference - a weak reference would let its holder see
// the array change), it owns its data, and it is C-contiguous, writeable, of the output's dtype
// and of the domain's shape. (Only exact ndarrays reach here.)
bool OutputReuse::writable_alone(const BlockPlan& p, PyObject* a, std::size_t b,
                                 const std::vector<std::int64_t>& domain) const {
  const ArrayFields* f = array_fields(a);
  bool fits =
      Py_REFCNT(a) == 1 && f->weakreflist == nullptr && f->base == nullptr &&
      f->descr == p.dtypes[b].ptr() &&
      (f->flags & (kArrayCContiguous | kArrayWriteable)) == (kArrayCContiguous | kArrayWriteable) &&
      f->nd == static_cast<int>(domain.size());
  for (std::size_t d = 0; fits && d < domain.size(); ++d) {
    fits = f->dimensions[d] == domain[d];
  }
  return fits;
}

void OutputReuse::keep_spare(const BlockPlan& p, std::size_t b, const py::object& made) {
  spares_.resize(p.k.buffers.size());
  std::int64_t bytes = itemsize(p.k.buffers[b].dtype);
  const ArrayFields* f = array_fields(made.ptr());
  for (int d = 0; d < f->nd; ++d) {
    bytes *= f->dimensions[d];
  }
  spares_[b] = bytes >= kMinSpareBytes ? made : py::object();
}

void OutputReuse::set_dying_inputs(const BlockPlan& p, const std::vector<int>& values) {
  const kir::Kernel& k = p.k;
  donors_.assign(k.buffers.size(), {});
  std::vector<int> load(k.buffers.size(), -1);
  for (std::size_t i = 0; i < k.exprs.size(); ++i) {
    if (k.exprs[i].kind == kir::Expr::Kind::kLoad) {
      load[static_cast<std::size_t>(k.exprs[i].buffer)] = static_cast<int>(i);
    }
  }
  bool any = false;
  for (const kir::Store& st : k.stores) {
    const kir::Buffer& out = k.buffers[static_cast<std::size_t>(st.buffer)];
    for (std::size_t x = 0; x < k.buffers.size(); ++x) {
      const kir::Buffer& in = k.buffers[x];
      const int l = load[x];
      // An input of the output's dtype and the domain's shape that nothing in a block reads after
      // the output's value is computed (its call may read it: in place, element by element).
      if (!in.output && l >= 0 && in.dtype == out.dtype && in.shape == k.domain &&
          std::find(values.begin(), values.end(), in.value) != values.end() &&
          p.last_reader[static_cast<std::size_t>(l)] <= st.expr) {
        donors_[static_cast<std::size_t>(st.buffer)].push_back(static_cast<int>(x));
        any = true;
      }
    }
  }
  // Every expression's flags must be reported as NumPy reports them (see can_donate).
  donatable_ = any && std::all_of(k.exprs.begin(), k.exprs.end(), [](const kir::Expr& e) {
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
bool OutputReuse::can_donate(bool verified) const {
  return donatable_ && verified && numpy_reports_fp_flags();
}

// Writes outputs into dying inputs' arrays: as eager NumPy's elision of temporaries and the
// reference program do, the write in place moves a third less memory than a new array, and its
// lines are the ones just read (on this machine a 64 MB in-place pass ran 3.5x faster than one into
// another array). The input must be held by the run alone (reference count 1: no variable, view,
// container or weak reference) and own C-contiguous writeable data.
void OutputReuse::donate(const BlockPlan& p, BlockRun& r, int skip) {
  std::vector<bool> taken(p.k.buffers.size(), false);
  for (std::size_t b = 0; b < p.k.buffers.size(); ++b) {
    if (!p.k.buffers[b].output || static_cast<int>(b) == skip) {
      continue;
    }
    for (const int x : donors_[b]) {
      PyObject* a = r.arrays[static_cast<std::size_t>(x)];
      if (taken[static_cast<std::size_t>(x)] ||
          Py_TYPE(a) != reinterpret_cast<PyTypeObject*>(p.ndarray.ptr()) ||
          (array_fields(a)->flags & kArrayOwnData) == 0 || !writable_alone(p, a, b, r.domain)) {
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

// (eager NumPy's warnings, once per op, in order)
bool report_flags_per_op(const kir::Kernel& k, const BlockRun& r) {
  for (std::size_t i = 0; i < k.exprs.size() && i < r.expr_flags.size(); ++i) {
    // (NumPy names a reduce's errors "reduce": "overflow encountered in reduce".)
    const kir::Expr& e = k.exprs[i];
    const char* name = e.kind == kir::Expr::Kind::kReduce ? "reduce" : e.fn.c_str();
    if (r.expr_flags[i] != 0 && !report_fp_flags(name, r.expr_flags[i])) {
      return false;
    }
  }
  return true;
}

}  // namespace sot::graph
