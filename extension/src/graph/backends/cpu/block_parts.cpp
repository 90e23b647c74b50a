#include "graph/backends/cpu/block_parts.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/loaded_module.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace block {

std::int64_t elements(const std::vector<std::int64_t>& domain) {
  std::int64_t n = 1;
  for (const std::int64_t size : domain) {
    n *= size;
  }
  return n;
}

py::object index_object(std::int64_t i) {
  return py::reinterpret_steal<py::object>(PyLong_FromLongLong(i));
}

py::object slice_object(std::int64_t start, std::int64_t stop) {
  return py::reinterpret_steal<py::object>(
      PySlice_New(index_object(start).ptr(), index_object(stop).ptr(), nullptr));
}

}  // namespace block

BlockPlan::BlockPlan(kir::Kernel kernel) : k(std::move(kernel)) {
  const py::module_ numpy = loaded_module("numpy");
  ndarray = numpy.attr("ndarray");
  empty = numpy.attr("empty");
  copyto = numpy.attr("copyto");
  out_kwnames = py::make_tuple("out");
  casting_kwnames = py::make_tuple("casting");
  casting_where_kwnames = py::make_tuple("casting", "where");
  unsafe = py::str("unsafe");
  for (const kir::Buffer& b : k.buffers) {
    dtypes.push_back(numpy.attr("dtype")(std::string(name(b.dtype))));
    bytes_per_element += itemsize(b.dtype);
  }
  // The last expression that reads each one, then one temporary per value not stored, reused once
  // its value is dead (a ufunc or a cast may write into its own operand, a select may not).
  last_reader.assign(k.exprs.size(), -1);
  for (std::size_t i = 0; i < k.exprs.size(); ++i) {
    for (const int o : k.exprs[i].operands) {
      last_reader[static_cast<std::size_t>(o)] = static_cast<int>(i);
    }
  }
  targets.assign(k.exprs.size(), Target{});
  for (const kir::Store& st : k.stores) {
    targets[static_cast<std::size_t>(st.expr)] = Target{true, st.buffer};
  }
  std::vector<int> owner_of_temp;
  for (std::size_t i = 0; i < k.exprs.size(); ++i) {
    const kir::Expr& e = k.exprs[i];
    if (!e.elementwise() || targets[i].store) {
      continue;
    }
    int chosen = -1;
    for (std::size_t t = 0; t < owner_of_temp.size() && chosen < 0; ++t) {
      // A ufunc or a cast may write into its own operand; a select writes its result in two
      // steps, so not into an operand it reads.
      const int owner = owner_of_temp[t];
      const int dies = last_reader[static_cast<std::size_t>(owner)];
      if (temp_dtypes[t] == e.dtype &&
          (dies < static_cast<int>(i) ||
           (dies == static_cast<int>(i) && e.kind != kir::Expr::Kind::kSelect))) {
        chosen = static_cast<int>(t);
      }
    }
    if (chosen < 0) {
      chosen = static_cast<int>(temp_dtypes.size());
      temp_dtypes.push_back(e.dtype);
      temp_np_dtypes.push_back(numpy.attr("dtype")(std::string(name(e.dtype))));
      owner_of_temp.push_back(-1);
      bytes_per_element += itemsize(e.dtype);
    }
    owner_of_temp[static_cast<std::size_t>(chosen)] = static_cast<int>(i);
    targets[i] = Target{false, chosen};
  }
}

PyObject* BlockPlan::operand(int o, const std::vector<PyObject*>& views,
                             const std::vector<PyObject*>& temps) const {
  const kir::Expr& x = k.exprs[static_cast<std::size_t>(o)];
  if (x.kind == kir::Expr::Kind::kLoad) {
    return views[static_cast<std::size_t>(x.buffer)];
  }
  const Target& t = targets[static_cast<std::size_t>(o)];
  return t.store ? views[static_cast<std::size_t>(t.index)]
                 : temps[static_cast<std::size_t>(t.index)];
}

void BlockRun::clear() {
  BlockRun fresh;
  auto keep = [](auto& used, auto& into) {
    used.clear();
    into.swap(used);
  };
  keep(arrays, fresh.arrays);
  keep(made, fresh.made);
  keep(blockable, fresh.blockable);
  keep(scalars, fresh.scalars);
  keep(domain, fresh.domain);
  keep(native_scalars, fresh.native_scalars);
  keep(expr_flags, fresh.expr_flags);
  keep(native_fields, fresh.native_fields);
  keep(native_ptrs, fresh.native_ptrs);
  keep(native_flags, fresh.native_flags);
  *this = std::move(fresh);
}

namespace {

// The calling thread's BlockRuns not in use (cleared: they hold no Python object, so the thread's
// exit frees them without the GIL).
std::vector<std::unique_ptr<BlockRun>>& spare_runs() {
  thread_local std::vector<std::unique_ptr<BlockRun>> spares;
  return spares;
}

}  // namespace

BlockRunLease::BlockRunLease() {
  std::vector<std::unique_ptr<BlockRun>>& spares = spare_runs();
  if (spares.empty()) {
    run_ = std::make_unique<BlockRun>();
  } else {
    run_ = std::move(spares.back());
    spares.pop_back();
  }
}

BlockRunLease::~BlockRunLease() {
  constexpr std::size_t kMaxSpares = 4;
  run_->clear();
  std::vector<std::unique_ptr<BlockRun>>& spares = spare_runs();
  if (spares.size() < kMaxSpares) {
    spares.push_back(std::move(run_));
  }
}

}  // namespace sot::graph
