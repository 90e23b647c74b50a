// Scalars read late: a while loop's test without a wait each step. While a while loop's body that
// may run a step ahead is running (loop_op.cpp, ValueHome::late_reads) and the run is optimistic,
// a full reduction's float result is not copied out as the NumPy scalar it is at once: its copy
// out is queued into page-locked memory with a mark after it, and the value is read when
// something needs it (a late scalar, the Python type sot._sot.graph.LateScalar). A scalar step on
// late scalars and numbers (`np.sqrt(err)`, `err > tol`) is kept as a late scalar too and runs
// when the residency settles it, as run_step runs such steps: under errstate(all="raise") and,
// where NumPy flags an error, again as a host step under the caller's error state. The residency
// settles every late step, in the order made, before anything the caller could see (a host step,
// the run's outputs) and when a late value is read, so their warnings and errors come where
// NumPy's do. So the loop reads its tests while the device runs the next step
// (Residency::ahead_begin): a step the loop never reaches is dropped, its late steps never run.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "graph/backends/cuda/device_array.hpp"

namespace sot::graph {

class Residency;

struct LateScalar {
  LateScalar() = default;
  ~LateScalar();  // (its page-locked slot and mark given back)
  LateScalar(const LateScalar&) = delete;
  LateScalar& operator=(const LateScalar&) = delete;
  LateScalar(LateScalar&&) = delete;
  LateScalar& operator=(LateScalar&&) = delete;

  Residency* run = nullptr;  // the run that made it (nullptr once it ended or dropped it)
  // A device element: `address` in `block`, of `dtype`; copied into `slot` (page-locked, 8
  // bytes) before `mark`, or read by a copy out where no slot could be had.
  std::shared_ptr<DeviceBlock> block;  // (until read)
  DeviceApi* device = nullptr;
  std::uint64_t address = 0;
  DType dtype = DType::kFloat64;
  void* slot = nullptr;
  std::uint64_t mark = 0;
  // Or a scalar step: fn(*args), an argument a late scalar or a number.
  pybind11::object fn;
  std::vector<pybind11::object> args;
  pybind11::object value;   // once read or run
  std::uint64_t order = 0;  // a step's place among its run's late scalars
};

// The late scalar `v` is, or nullptr.
LateScalar* late_scalar_of(PyObject* v);
// Device element `address` of `block` as a late scalar of run `r`'s: its copy out queued now.
// Throws pybind11::error_already_set.
pybind11::object late_element(Residency& r, std::shared_ptr<DeviceBlock> block,
                              std::uint64_t address, DType dtype);
// Device element `address` of `block` as a value: a late scalar (late_element) where `late_ok`,
// the run reads late (a while loop's body that may run ahead) and it is a float; else read now
// (device_copy.hpp's read_element: nullopt where the copy failed). Throws
// pybind11::error_already_set.
std::optional<pybind11::object> element_now_or_late(Residency& r,
                                                    const std::shared_ptr<DeviceBlock>& block,
                                                    std::uint64_t address, DType dtype,
                                                    bool late_ok);
// Step fn(*args) as a late scalar of `r`'s (args: `nargs` numbers or late scalars, one at least
// late). Throws pybind11::error_already_set.
pybind11::object late_step(Residency& r, PyObject* fn, PyObject* const* args, std::size_t nargs);
// Reads or runs `s` (its run's earlier late steps first): false with an error set.
bool settle(LateScalar& s);
// Runs step `s` itself (its arguments settled): false with an error set.
bool run_late_step(LateScalar& s);
// Registers the Python type (at module import).
void bind_late_scalar(pybind11::module_& m);

}  // namespace sot::graph
