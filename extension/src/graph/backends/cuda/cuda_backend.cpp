// The `cuda` backend: the `cpu` backend's fusion groups, each emitted as CUDA C++
// (cuda_emitter.hpp), compiled by NVRTC for the device's architecture and launched through the
// driver (cuda_device.hpp). The arrays a group makes stay on the device (DeviceArray values,
// device_array.hpp) and host arrays are copied in once per run: where each value lives during a run
// is the residency's (residency.hpp), which copies a value out only for a step on the host and for
// the run's results. Everything that is not a fused group, and every group the emitter refuses,
// runs on the host as the reference program runs it. A run whose error flags
// the NumPy error state reports runs again on the host, which warns or raises exactly as eager
// NumPy; so does the first run of each group, whose result dtypes are then checked against the
// kernel's.
#include <cfenv>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/device_arrays.hpp"
#include "core/loaded_module.hpp"
#include "graph/backends/cuda/cuda_emitter.hpp"
#include "graph/backends/cuda/cuda_kernel.hpp"
#include "graph/backends/cuda/cuda_launch.hpp"
#include "graph/backends/cuda/device_array.hpp"
#include "graph/backends/cuda/device_copy.hpp"
#include "graph/backends/cuda/late_scalars.hpp"
#include "graph/backends/cuda/residency.hpp"
#include "graph/exec/backend.hpp"
#include "graph/exec/grouped_runner.hpp"
#include "graph/exec/program.hpp"
#include "graph/lower/fusion.hpp"
#include "graph/lower/kernel_ir.hpp"
#include "graph/rules/fp_state.hpp"
#include "graph/runtime/cuda/cuda_device.hpp"
#include "graph/runtime/cuda/nvrtc.hpp"
#include "graph/runtime/cuda/simulated_device.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

std::uint64_t double_bits(double v) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

// One fused group on the device.
class CudaGroup final : public GroupKernel {
 public:
  CudaGroup(const Graph& graph, kir::Kernel kernel, DeviceApi& device,
            std::shared_ptr<DevicePool> pool)
      : k_(std::move(kernel)), device_(device), pool_(std::move(pool)), cuda_(k_, device) {
    const py::module_ numpy = loaded_module("numpy");
    contiguous_ = numpy.attr("ascontiguousarray");
    ndarray_ = numpy.attr("ndarray");
    for (const kir::Buffer& b : k_.buffers) {
      dtypes_.push_back(numpy.attr("dtype")(std::string(name(b.dtype))));
      scalar_.push_back(b.output && graph.value(b.value).info.scalar);
    }
    why_ = cuda_.why();
  }

  // The first run is the host's: its results' dtypes check the kernel's (check_host_run).
  bool wants_host_run() const override { return !verified_; }
  void check_host_run(const Frame& frame) override { verify(frame); }
  bool usable() const override { return why_.empty(); }
  std::string status() const override { return why_.empty() ? std::string("compiled") : why_; }
  std::string last_fallback() const override { return last_replay_; }
  const kir::Kernel& kernel() const override { return k_; }
  void describe(py::dict& entry, const Counts& counts) const override {
    entry["device_runs"] = counts.path_runs[0];
    entry["host_runs"] = counts.fallback_runs;
    entry["on_device"] = usable();
    entry["cuda"] = status();
    entry["compile_seconds"] = cuda_.compile_seconds();
    entry["bytes_in"] = bytes_in_;  // what the device runs moved each way, and their launches
    entry["bytes_out"] = bytes_out_;
    entry["launches"] = launches_;
    entry["device_seconds"] = device_seconds_;  // (timed under SOT_PROFILE)
    entry["source"] = cuda_.source().code;
  }

  // After the first run (on the host): the outputs' dtypes are the kernel's, or the group stays on
  // the host.
  void verify(const Frame& frame) {
    verified_ = true;
    for (std::size_t b = 0; b < k_.buffers.size(); ++b) {
      PyObject* v = frame.get(k_.buffers[b].value);
      if (!k_.buffers[b].output || v == nullptr) {
        continue;
      }
      const py::object dtype =
          py::reinterpret_steal<py::object>(PyObject_GetAttrString(v, "dtype"));
      if (!dtype || PyObject_RichCompareBool(dtype.ptr(), dtypes_[b].ptr(), Py_EQ) != 1) {
        PyErr_Clear();
        why_ = "a result of another dtype than the graph's";
        return;
      }
    }
  }

  Outcome run(Frame& frame) override {
    try {
      return run_on_device(frame);
    } catch (py::error_already_set& e) {
      e.restore();
      return Outcome::kError;
    } catch (const std::exception& e) {
      // A failure of this file's own (not the user's code): the group runs on the host from now on.
      PyErr_Clear();
      return give_up(std::string("the device run failed: ") + e.what());
    }
  }

 private:
  Outcome replay(std::string why) {
    last_replay_ = std::move(why);
    return Outcome::kReplay;
  }

  // A device failure: this group runs on the host from now on.
  Outcome give_up(const std::string& why) {
    why_ = why;
    return replay(why);
  }

  // The run's domain: the inputs' shapes broadcast, with the kernel's static sizes.
  bool domain_of(const std::vector<DeviceValue>& values, std::vector<std::int64_t>* domain) const {
    const std::size_t rank = k_.domain.size();
    domain->assign(rank, 1);
    std::vector<bool> known(rank, false);
    for (std::size_t b = 0; b < values.size(); ++b) {
      if (k_.buffers[b].output) {
        continue;
      }
      const std::vector<std::int64_t>& shape = values[b].shape;
      if (shape.size() > rank) {
        return false;
      }
      const std::size_t offset = rank - shape.size();
      for (std::size_t d = 0; d < shape.size(); ++d) {
        const std::int64_t n = shape[d];
        const std::size_t at = offset + d;
        if (n != 1) {
          if (known[at] && (*domain)[at] != n) {
            return false;
          }
          (*domain)[at] = n;
          known[at] = true;
        }
      }
    }
    for (std::size_t d = 0; d < rank; ++d) {
      const kir::Dim& want = k_.domain[d];
      if (want.symbol < 0 && (*domain)[d] != want.size) {
        return false;
      }
    }
    return true;
  }

  // The shape of output buffer `b` over `domain`.
  std::vector<std::int64_t> output_shape(std::size_t b,
                                         const std::vector<std::int64_t>& domain) const {
    const int r = k_.reduction();
    for (const kir::Store& st : k_.stores) {
      if (static_cast<std::size_t>(st.buffer) != b || st.expr != r || r < 0) {
        continue;
      }
      const Reduction& red = k_.exprs[static_cast<std::size_t>(r)].reduce;
      if (red.all) {
        return red.keepdims ? std::vector<std::int64_t>(domain.size(), 1)
                            : std::vector<std::int64_t>{};
      }
      std::vector<std::int64_t> shape(domain.begin(), domain.end() - 1);
      if (red.keepdims) {
        shape.push_back(1);
      }
      return shape;
    }
    return domain;
  }

  // The scalars' bits as the code reads them (false: one is not a number of the kind it expects).
  // The kernel's late scalars (a while loop's late test value: late_scalars.hpp) read or run;
  // false with an error set.
  bool settle_scalars(const Frame& frame) const {
    for (const kir::Scalar& s : k_.scalars) {
      LateScalar* late = s.value >= 0 ? late_scalar_of(frame.get(s.value)) : nullptr;
      if (late != nullptr && !settle(*late)) {
        return false;
      }
    }
    return true;
  }

  bool scalar_bits(const Frame& frame, std::vector<std::uint64_t>* bits) const {
    for (std::size_t i = 0; i < k_.scalars.size(); ++i) {
      const kir::Scalar& s = k_.scalars[i];
      PyObject* v = s.value >= 0 ? frame.get(s.value) : s.constant.ptr();
      if (const LateScalar* late = late_scalar_of(v)) {
        v = late->value.ptr();  // (settled: settle_scalars)
      }
      const char kind = cuda_.source().scalar_kinds[i];
      if (kind == 'f') {
        const double d = PyFloat_AsDouble(v);
        if (d == -1.0 && PyErr_Occurred() != nullptr) {
          PyErr_Clear();
          return false;
        }
        bits->push_back(double_bits(d));
        continue;
      }
      if (PyBool_Check(v) || std::strcmp(Py_TYPE(v)->tp_name, "numpy.bool") == 0 ||
          std::strcmp(Py_TYPE(v)->tp_name, "numpy.bool_") == 0) {
        const int truth = PyObject_IsTrue(v);  // (NumPy 2's bool has no __index__)
        if (truth < 0) {
          PyErr_Clear();
          return false;
        }
        bits->push_back(static_cast<std::uint64_t>(truth));
        continue;
      }
      const py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(v));
      if (!index) {
        PyErr_Clear();
        return false;
      }
      const unsigned long long u =
          kind == 'u' ? PyLong_AsUnsignedLongLong(index.ptr())
                      : static_cast<unsigned long long>(PyLong_AsLongLong(index.ptr()));
      if (PyErr_Occurred() != nullptr) {
        PyErr_Clear();
        return false;
      }
      bits->push_back(u);
    }
    return true;
  }

  enum class Taken : std::uint8_t { kOk, kElsewhere, kFailed, kError };

  // Input buffer `b` on the device as `out`: a device array as it is, a host array through its
  // mirror (copied in once per run), any other ndarray copied in for this run. kElsewhere and
  // kFailed say why; kError has a Python error set.
  Taken take_input(Residency& r, std::size_t b, PyObject* v, DeviceValue* out, std::string* why) {
    if (const DeviceValue* d = device_value_of(v)) {
      if (&d->block->device != &device_) {
        *why = "an array on another device";
        return Taken::kElsewhere;
      }
      if (d->dtype() != k_.buffers[b].dtype) {
        *why = "an input of another dtype";
        return Taken::kElsewhere;
      }
      *out = *d;
      return make_device_current(*out->block, why) ? Taken::kOk : Taken::kFailed;
    }
    if (Py_TYPE(v) != reinterpret_cast<PyTypeObject*>(ndarray_.ptr())) {
      *why = "an input that is not an ndarray (a subclass keeps its own behaviour)";
      return Taken::kElsewhere;
    }
    const py::object dtype = py::reinterpret_steal<py::object>(PyObject_GetAttrString(v, "dtype"));
    if (!dtype || PyObject_RichCompareBool(dtype.ptr(), dtypes_[b].ptr(), Py_EQ) != 1) {
      PyErr_Clear();
      *why = "an input of another dtype";
      return Taken::kElsewhere;
    }
    if (const auto m = r.mirror(v)) {
      *out = *m;
      return make_device_current(*out->block, why) ? Taken::kOk : Taken::kFailed;
    }
    if (!r.flush()) {  // (the array may be a view of one the device wrote)
      return Taken::kError;
    }
    const py::object host = contiguous_(py::handle(v));
    auto block = upload_copy(device_, pool_, host.ptr(), k_.buffers[b].dtype, why);
    if (!block) {
      return Taken::kFailed;
    }
    *out = *whole_value(std::move(block));
    return Taken::kOk;
  }

  Outcome run_on_device(Frame& frame) {
    if (!why_.empty()) {
      return replay(why_);
    }
    if (order_on_host_) {
      return replay(kOrderOnHost);
    }
    Residency* r = current_residency();
    if (r == nullptr) {
      return replay("no residency for the run");
    }
    const std::size_t nb = k_.buffers.size();
    std::vector<DeviceValue> values(nb);
    std::string why;
    for (std::size_t b = 0; b < nb; ++b) {
      if (k_.buffers[b].output) {
        continue;
      }
      const std::uint64_t before = transfer_counts().bytes_in;
      const Taken taken = take_input(*r, b, frame.get(k_.buffers[b].value), &values[b], &why);
      bytes_in_ += transfer_counts().bytes_in - before;
      switch (taken) {
        case Taken::kOk:
          break;
        case Taken::kElsewhere:
          return replay(why);
        case Taken::kFailed:
          return give_up(why);
        case Taken::kError:
          return Outcome::kError;
      }
    }
    std::vector<std::int64_t> domain;
    if (!domain_of(values, &domain)) {
      return replay("inputs whose shapes are not the kernel's domain");
    }
    std::vector<std::uint64_t> bits;
    if (!settle_scalars(frame)) {
      return Outcome::kError;
    }
    if (!scalar_bits(frame, &bits)) {
      return replay("a scalar the kernel cannot take");
    }
    for (std::size_t b = 0; b < nb; ++b) {
      if (!k_.buffers[b].output) {
        continue;
      }
      auto block = std::make_shared<DeviceBlock>(device_, pool_, output_shape(b, domain),
                                                 k_.buffers[b].dtype);
      if (!make_device_current(*block, &why)) {
        return replay(why);
      }
      values[b] = *whole_value(std::move(block));
    }
    // Optimistic (residency.hpp): the run's flag word, read when the run ends or leaves the
    // device; else a word of this run's, read now.
    // A float max or min over rows reads a word of its own each run: where a row's result is a
    // zero or a NaN (kCudaOrder), the host gives the group's results, this run and every later
    // one (a read: the step is not replayed).
    const bool order_dependent = cuda_.source().order_dependent;
    if (order_dependent) {
      r->did_host_work();
    }
    Staging staging(*pool_);
    LaunchFlags flags(*r, staging, order_dependent, &why);
    if (flags.address() == 0) {
      return replay("device memory: " + why);
    }
    std::vector<DeviceArray> arrays;
    arrays.reserve(values.size());
    for (const DeviceValue& v : values) {
      arrays.push_back(v.launch_array());
    }
    const bool timed = cuda_profile().load();
    const std::uint64_t start = timed ? device_.mark(&why) : 0;
    const CudaKernel::Launched launched =
        cuda_.launch(k_, domain, arrays, bits, flags.address(), staging, &launches_, &why);
    if (start != 0) {
      const std::uint64_t end = device_.mark(&why);
      if (end != 0) {
        r->time(start, end, &device_seconds_);
      } else {
        device_.drop_mark(start);
      }
    }
    switch (launched) {
      case CudaKernel::Launched::kQueued:
        break;
      case CudaKernel::Launched::kElsewhere:
        return replay(why);
      case CudaKernel::Launched::kFailed:
        return give_up(why);
    }
    const std::optional<unsigned> word = flags.settle(&why);
    if (!word) {
      return give_up(why);
    }
    if (flags.own()) {
      bytes_out_ += sizeof *word;
    }
    if (reported_fe_flags(fe_flags_of(*word)) != 0) {
      return replay("a floating-point error the error state reports");
    }
    if ((*word & kCudaOrder) != 0U) {
      order_on_host_ = true;
      return replay(kOrderOnHost);
    }
    return finish(frame, values, *r);
  }

  // The outputs into the frame: arrays as device arrays, a full reduction's result as the NumPy
  // scalar it is (copied out now: Python code reads it).
  Outcome finish(Frame& frame, const std::vector<DeviceValue>& values, Residency& r) {
    std::vector<std::pair<int, py::object>> made;
    for (std::size_t b = 0; b < values.size(); ++b) {
      if (!k_.buffers[b].output) {
        continue;
      }
      const DeviceValue& v = values[b];
      if (!scalar_[b]) {
        made.emplace_back(k_.buffers[b].value, wrap(std::make_shared<DeviceValue>(v)));
        continue;
      }
      std::optional<py::object> out;
      const std::uint64_t address = v.block->address + static_cast<std::uint64_t>(v.offset);
      try {
        out = element_now_or_late(r, v.block, address, v.dtype(), true);
      } catch (py::error_already_set& e) {
        e.restore();
        return Outcome::kError;
      }
      if (!out) {
        return give_up("a scalar's copy out failed");
      }
      bytes_out_ += static_cast<std::uint64_t>(itemsize(v.dtype()));
      made.emplace_back(k_.buffers[b].value, std::move(*out));
    }
    for (auto& [value, out] : made) {
      frame.set_owned(value, out.release().ptr());
    }
    return Outcome::kDone;
  }

  kir::Kernel k_;
  DeviceApi& device_;
  std::shared_ptr<DevicePool> pool_;
  CudaKernel cuda_;
  std::vector<py::object> dtypes_;
  std::vector<bool> scalar_;  // per buffer: an output the graph holds as a NumPy scalar
  py::object contiguous_;
  py::object ndarray_;
  std::string why_;
  std::string last_replay_;
  std::uint64_t bytes_in_ = 0;  // copied to the device for this group's runs, and back
  std::uint64_t bytes_out_ = 0;
  bool order_on_host_ = false;  // a row's max or min was a zero or a NaN: the host's from then on
  static constexpr const char* kOrderOnHost =
      "a max or min over rows came out a zero or a NaN (+0.0 or -0.0, and which NaN, depend on "
      "NumPy's order of comparisons)";
  std::uint64_t launches_ = 0;
  double device_seconds_ = 0;  // the device's time of the timed runs
  bool verified_ = false;
};

// What the outermost runs of one compiled graph copied each way (arrays only).
struct RunTransfers {
  std::uint64_t runs = 0;
  TransferCounts moved;
  std::uint64_t inputs_on_device = 0;   // the caller's device arrays, used in place
  std::uint64_t results_on_device = 0;  // results handed back as device arrays
  std::uint64_t library_steps = 0;      // products and reductions run on the device
  std::uint64_t replayed_steps = 0;     // loop steps replayed (step_replay.hpp)
};

// A run's residency, current while the run's frames are made and run; counts what it moved.
class ResidentRun final : public GroupBackend::RunScope {
 public:
  ResidentRun(DeviceApi& device, std::shared_ptr<DevicePool> pool, RunTransfers& totals)
      : residency_(device, std::move(pool)),
        current_(&residency_),
        totals_(totals),
        before_(transfer_counts()) {}
  ~ResidentRun() override {
    const TransferCounts& now = transfer_counts();
    ++totals_.runs;
    totals_.moved.arrays_in += now.arrays_in - before_.arrays_in;
    totals_.moved.bytes_in += now.bytes_in - before_.bytes_in;
    totals_.moved.arrays_out += now.arrays_out - before_.arrays_out;
    totals_.moved.bytes_out += now.bytes_out - before_.bytes_out;
    totals_.inputs_on_device += residency_.inputs_on_device();
    totals_.results_on_device += residency_.results_on_device();
    totals_.library_steps += residency_.library_steps();
    totals_.replayed_steps += residency_.replayed_steps();
  }
  ResidentRun(const ResidentRun&) = delete;
  ResidentRun& operator=(const ResidentRun&) = delete;
  ResidentRun(ResidentRun&&) = delete;
  ResidentRun& operator=(ResidentRun&&) = delete;

  void start(Frame& frame) override { residency_.mirror_inputs(frame, true); }
  PyObject* finish(PyObject* outputs, std::size_t count) override {
    return residency_.finish(outputs, count);
  }
  bool rerun_on_host() override { return residency_.rerun_on_host(); }

 private:
  Residency residency_;
  ValueHomeScope current_;  // (made current after the residency, and undone before it ends)
  RunTransfers& totals_;
  TransferCounts before_;
};

// A loop body's run (a cond way's), in the residency of the run around it: its inputs mirrored too
// (a host array the body slices and assigns into stays on the device across the steps).
class NestedRun final : public GroupBackend::RunScope {
 public:
  explicit NestedRun(Residency& residency) : residency_(residency) {}
  void start(Frame& frame) override { residency_.mirror_inputs(frame, false); }

 private:
  Residency& residency_;
};

class CudaGroups final : public GroupBackend {
 public:
  explicit CudaGroups(DeviceApi& device) : device_(device), pool_(device_pool(device)) {}

  const Names& names() const override {
    static const Names n{"cuda", "on the device", {"device"}, "host", "cuda"};
    return n;
  }

  bool profile() const override { return cuda_profile().load(); }

  std::unique_ptr<RunScope> open_run() override {
    Residency* r = current_residency();
    if (r != nullptr && &r->device() == &device_) {
      return std::make_unique<NestedRun>(*r);
    }
    return std::make_unique<ResidentRun>(device_, pool_, transfers_);
  }

  std::unique_ptr<RunScope> open_host_run(PyObject* const* argv, std::size_t nargs) override {
    if (current_residency() != nullptr) {
      return nullptr;  // (a graph run by the host run of another: its frames have its home)
    }
    for (std::size_t i = 0; i < nargs; ++i) {
      if (core::may_be_device_array(argv[i])) {
        return std::make_unique<ResidentRun>(device_, pool_, transfers_);
      }
    }
    return nullptr;
  }

  std::unique_ptr<GroupKernel> make_kernel(const Graph& graph, const Group& g, kir::Kernel kernel,
                                           const Program& program) override {
    (void)g;
    (void)program;
    return std::make_unique<CudaGroup>(graph, std::move(kernel), device_, pool_);
  }

  void describe(py::dict& plan) const override {
    plan["pooled_bytes"] = pool_->kept_bytes();
    py::dict resident;  // what the runs copied each way (the arrays; the rest stayed on the device)
    resident["runs"] = transfers_.runs;
    resident["arrays_in"] = transfers_.moved.arrays_in;
    resident["bytes_in"] = transfers_.moved.bytes_in;
    resident["arrays_out"] = transfers_.moved.arrays_out;
    resident["bytes_out"] = transfers_.moved.bytes_out;
    resident["inputs_on_device"] = transfers_.inputs_on_device;
    resident["results_on_device"] = transfers_.results_on_device;
    resident["library_steps"] = transfers_.library_steps;
    resident["replayed_steps"] = transfers_.replayed_steps;
    plan["resident"] = resident;
  }

 private:
  DeviceApi& device_;
  std::shared_ptr<DevicePool> pool_;
  RunTransfers transfers_;
};

class CudaBackend final : public Backend {
 public:
  std::string name() const override { return "cuda"; }

  py::object compile(const Graph& graph, const std::vector<int>& outputs, bool check) override {
    std::string why;
    DeviceApi* device = cuda_simulate().load() ? &simulated_device() : cuda_device(&why);
    if (device == nullptr) {
      throw BackendError(why + " (backend 'cuda')");
    }
    return make_compiled(std::make_unique<GroupedRunner>(build_program(graph, outputs, check),
                                                         graph, outputs,
                                                         std::make_unique<CudaGroups>(*device)));
  }
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend() {
  return std::make_unique<CudaBackend>();
}

}  // namespace sot::graph
