#include "graph/backends/cpu/block_reductions.hpp"

#include <algorithm>
#include <cfenv>
#include <string>
#include <utility>
#include <vector>

#include "core/array_fields.hpp"
#include "core/loaded_module.hpp"
#include "graph/backends/cpu/block_parts.hpp"
#include "graph/rules/fp_state.hpp"
#include "graph/rules/reductions.hpp"

namespace py = pybind11;

namespace sot::graph {

using namespace block;

BlockReduction::BlockReduction(const BlockPlan& p) : expr_(p.k.reduction()) {
  if (expr_ < 0) {
    return;
  }
  const kir::Expr& e = p.k.exprs[static_cast<std::size_t>(expr_)];
  all_ = e.reduce.all;
  fn_ = e.ufunc.attr("reduce");
  kwnames_ = py::make_tuple("axis", "keepdims", "out");
  const BlockPlan::Target& t = p.targets[static_cast<std::size_t>(expr_)];
  buffer_ = t.store ? t.index : -1;
}

// Where a reduction can run in blocks: over the last axis, rows no longer than a block; over all
// axes, inputs of the domain's shape (flat ranges) and a summation order known for NumPy's
// buffer size.
bool BlockReduction::plan(const BlockPlan& p, BlockRun& r, std::string* why) const {
  const Reduction& red = p.k.exprs[static_cast<std::size_t>(expr_)].reduce;
  const py::module_ numpy = loaded_module("numpy");
  // (NumPy 1.x chunks every reduce row at the buffer size, a per-thread setting: see run_blocks.)
  r.chunk = numpy.attr("getbufsize")().cast<std::int64_t>();
  if (!red.all) {
    r.flat = false;  // blocks of whole rows
    if (r.domain.back() > kMaxBlock) {
      *why = "rows longer than a block";
      return false;
    }
    return true;
  }
  if (!r.flat) {
    *why = "a full reduction of broadcast inputs";
    return false;
  }
  r.order = numpy_sum_order(r.chunk, numpy);
  if (r.order == SumOrder::kUnknown) {
    *why = "NumPy's summation order for this buffer size is not known";
    return false;
  }
  return true;
}

void BlockReduction::allocate(const BlockPlan& p, BlockRun& r) const {
  const auto b = static_cast<std::size_t>(buffer_);
  const Reduction& red = p.k.exprs[static_cast<std::size_t>(expr_)].reduce;
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
  r.made[b] = p.empty(shape, p.dtypes[b]);
  r.reduced = r.made[b].attr("reshape")(kept);
  r.arrays[b] = r.reduced.ptr();
  r.blockable[b] = r.reduced;
  const std::int64_t row = r.domain.back();
  r.block = std::max(r.block, (row + kBlockQuantum - 1) / kBlockQuantum * kBlockQuantum);
}

// The ranges of a full sum's blocks (graph/rules/reductions.hpp): NumPy's chunks, `r.block` of them
// a block, or the pairwise subtrees no longer than a block, one a block; the leaves' sums in
// r.sums.
void BlockReduction::plan_leaves(const BlockPlan& p, BlockRun& r, Geometry& g) const {
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
  r.sums = p.empty(py::make_tuple(leaves, 1), p.dtypes[static_cast<std::size_t>(buffer_)]);
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
bool BlockReduction::reduce_block(const BlockPlan& p, const BlockRun& r, const Geometry& g,
                                  std::int64_t block, BlockWorker& w,
                                  const std::vector<PyObject*>& views,
                                  const std::vector<PyObject*>& temps) const {
  const kir::Expr& e = p.k.exprs[static_cast<std::size_t>(expr_)];
  PyObject* input = p.operand(e.operands[0], views, temps);
  clear_fe_flags();
  bool ok = true;
  if (!e.reduce.all) {
    ok = call_reduce(fn_, kwnames_, input, views[static_cast<std::size_t>(buffer_)]);
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
      ok = call_reduce(fn_, kwnames_, rows.ptr(), out.ptr());
    }
    if (ok && whole * leaf < n) {
      const py::object rows =
          in[slice_object(whole * leaf, n)].attr("reshape")(1, n - whole * leaf);
      const py::object out = r.sums[slice_object(first + whole, first + whole + 1)];
      ok = call_reduce(fn_, kwnames_, rows.ptr(), out.ptr());
    }
  }
  const int raised = std::fetestexcept(numpy_fe_flags());
  w.flags |= raised;
  w.expr_flags[static_cast<std::size_t>(expr_)] |= raised;
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
bool BlockReduction::finish(const BlockPlan& p, BlockRun& r) const {
  const kir::Expr& e = p.k.exprs[static_cast<std::size_t>(expr_)];
  const auto b = static_cast<std::size_t>(buffer_);
  const py::module_ numpy = loaded_module("numpy");
  clear_fe_flags();
  if (e.reduce.all) {
    const double total = e.dtype == DType::kFloat32
                             ? combined<float>(r.order, r.domain[0], r.block, r.sums)
                             : combined<double>(r.order, r.domain[0], r.block, r.sums);
    py::object value = p.dtypes[b].attr("type")(total);
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

}  // namespace sot::graph
