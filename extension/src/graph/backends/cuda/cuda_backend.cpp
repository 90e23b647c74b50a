// The `cuda` backend: the `cpu` backend's fusion groups, each emitted as CUDA C++
// (cuda_emitter.hpp), compiled by NVRTC for the device's architecture and launched through the
// driver (cuda_device.hpp). NumPy arrays go in and come out: a group's inputs are copied to the
// device, its outputs back into new arrays. Everything that is not a fused group, and every group
// the emitter refuses, runs on the host as the reference program runs it. A run whose error flags
// the NumPy error state reports runs again on the host, which warns or raises exactly as eager
// NumPy; so does the first run of each group, whose result dtypes are then checked against the
// kernel's.
#include <cfenv>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/array_fields.hpp"
#include "core/loaded_module.hpp"
#include "graph/backends/cuda/cuda_emitter.hpp"
#include "graph/backends/cuda/cuda_launch.hpp"
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

// NumPy's floating-point flags (FE_*) from the kernel's flag word.
int fe_flags_of(unsigned word) {
  return ((word & kCudaDivide) != 0U ? FE_DIVBYZERO : 0) |
         ((word & kCudaOverflow) != 0U ? FE_OVERFLOW : 0) |
         ((word & kCudaInvalid) != 0U ? FE_INVALID : 0);
}

// A shape as the tuple of ints NumPy takes (built here: this file has no STL casters).
py::tuple shape_tuple(const std::vector<std::int64_t>& shape) {
  py::tuple t(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) {
    t[d] = py::int_(static_cast<long long>(shape[d]));
  }
  return t;
}

std::uint64_t double_bits(double v) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

// Device memory of one run, given back to the pool however the run ends.
class Staging {
 public:
  explicit Staging(DevicePool& pool) : pool_(pool) {}
  ~Staging() {
    for (const auto& [address, bytes] : blocks_) {
      pool_.give(address, bytes);
    }
  }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  Staging(Staging&&) = delete;
  Staging& operator=(Staging&&) = delete;

  std::uint64_t take(std::size_t bytes, std::string* why) {
    const std::uint64_t address = pool_.take(bytes, why);
    if (address != 0) {
      blocks_.emplace_back(address, bytes);
    }
    return address;
  }

 private:
  DevicePool& pool_;
  std::vector<std::pair<std::uint64_t, std::size_t>> blocks_;
};

// One fused group on the device.
class CudaGroup final : public GroupKernel {
 public:
  CudaGroup(const Graph& graph, kir::Kernel kernel, DeviceApi& device, DevicePool& pool)
      : k_(std::move(kernel)), device_(device), pool_(pool) {
    const py::module_ numpy = loaded_module("numpy");
    empty_ = numpy.attr("empty");
    contiguous_ = numpy.attr("ascontiguousarray");
    ndarray_ = numpy.attr("ndarray");
    for (const kir::Buffer& b : k_.buffers) {
      dtypes_.push_back(numpy.attr("dtype")(std::string(name(b.dtype))));
      scalar_.push_back(b.output && graph.value(b.value).info.scalar);
    }
    build();
  }

  ~CudaGroup() override {
    if (module_ != 0) {
      device_.unload_module(module_);
    }
  }
  CudaGroup(const CudaGroup&) = delete;
  CudaGroup& operator=(const CudaGroup&) = delete;
  CudaGroup(CudaGroup&&) = delete;
  CudaGroup& operator=(CudaGroup&&) = delete;

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
    entry["compile_seconds"] = compile_seconds_;
    entry["bytes_in"] = bytes_in_;  // what the device runs moved each way, and their launches
    entry["bytes_out"] = bytes_out_;
    entry["launches"] = launches_;
    entry["source"] = source_.code;
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
  void build() {
    const auto src = emit_cuda(k_, &why_);
    if (!src) {
      return;
    }
    source_ = *src;
    ModuleImage image;
    image.source = source_.code;
    if (device_.needs_binary()) {
      CudaBinary binary = compile_cuda(source_.code, device_.arch());
      compile_seconds_ = binary.seconds;
      if (!binary.ok) {
        why_ = "NVRTC: " + binary.error;
        return;
      }
      image.cubin = std::move(binary.cubin);
      image.ptx = std::move(binary.ptx);
    }
    module_ = device_.load_module(image, &why_);
    if (module_ == 0) {
      return;
    }
    std::vector<std::string> entries;
    if (!source_.reduces) {
      entries = {"_flat", "_strided"};
    } else if (source_.all_axes) {
      entries = {"_partial", "_total"};
    } else {
      entries = {"_rows"};
    }
    for (const std::string& e : entries) {
      const std::uint64_t fn = device_.function(module_, source_.name + e, &why_);
      if (fn == 0) {
        return;
      }
      functions_.emplace_back(source_.name + e, fn);
    }
  }

  std::uint64_t function(const std::string& entry) const {
    for (const auto& [name, fn] : functions_) {
      if (name == entry) {
        return fn;
      }
    }
    return 0;
  }

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
  bool domain_of(const std::vector<py::object>& host, std::vector<std::int64_t>* domain) const {
    const std::size_t rank = k_.domain.size();
    domain->assign(rank, 1);
    std::vector<bool> known(rank, false);
    for (std::size_t b = 0; b < host.size(); ++b) {
      if (!host[b]) {
        continue;
      }
      const ArrayFields* f = array_fields(host[b].ptr());
      if (static_cast<std::size_t>(f->nd) > rank) {
        return false;
      }
      const std::size_t offset = rank - static_cast<std::size_t>(f->nd);
      for (int d = 0; d < f->nd; ++d) {
        const std::int64_t n = f->dimensions[d];
        const std::size_t at = offset + static_cast<std::size_t>(d);
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

  static std::vector<std::int64_t> c_strides(const std::vector<std::int64_t>& shape,
                                             std::int64_t itemsize) {
    std::vector<std::int64_t> strides(shape.size(), 0);
    std::int64_t s = itemsize;
    for (std::size_t d = shape.size(); d-- > 0;) {
      strides[d] = s;
      s *= shape[d];
    }
    return strides;
  }

  // The scalars' bits as the code reads them (false: one is not a number of the kind it expects).
  bool scalar_bits(const Frame& frame, std::vector<std::uint64_t>* bits) const {
    for (std::size_t i = 0; i < k_.scalars.size(); ++i) {
      const kir::Scalar& s = k_.scalars[i];
      PyObject* v = s.value >= 0 ? frame.get(s.value) : s.constant.ptr();
      const char kind = source_.scalar_kinds[i];
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

  Outcome run_on_device(Frame& frame) {
    if (!why_.empty()) {
      return replay(why_);
    }
    const std::size_t nb = k_.buffers.size();
    std::vector<py::object> host(nb);
    for (std::size_t b = 0; b < nb; ++b) {
      if (k_.buffers[b].output) {
        continue;
      }
      PyObject* v = frame.get(k_.buffers[b].value);
      if (Py_TYPE(v) != reinterpret_cast<PyTypeObject*>(ndarray_.ptr())) {
        return replay("an input that is not an ndarray (a subclass keeps its own behaviour)");
      }
      const py::object dtype =
          py::reinterpret_steal<py::object>(PyObject_GetAttrString(v, "dtype"));
      if (!dtype || PyObject_RichCompareBool(dtype.ptr(), dtypes_[b].ptr(), Py_EQ) != 1) {
        PyErr_Clear();
        return replay("an input of another dtype");
      }
      host[b] = contiguous_(py::handle(v));
    }
    std::vector<std::int64_t> domain;
    if (!domain_of(host, &domain)) {
      return replay("inputs whose shapes are not the kernel's domain");
    }
    std::vector<std::uint64_t> bits;
    if (!scalar_bits(frame, &bits)) {
      return replay("a scalar the kernel cannot take");
    }
    Staging staging(pool_);
    std::string why;
    std::vector<DeviceArray> arrays(nb);
    std::vector<std::size_t> bytes(nb, 0);
    for (std::size_t b = 0; b < nb; ++b) {
      const std::int64_t item = itemsize(k_.buffers[b].dtype);
      if (host[b]) {
        const ArrayFields* f = array_fields(host[b].ptr());
        arrays[b].shape.assign(f->dimensions, f->dimensions + f->nd);
      } else {
        arrays[b].shape = output_shape(b, domain);
      }
      arrays[b].strides = c_strides(arrays[b].shape, item);
      std::int64_t n = 1;
      for (const std::int64_t d : arrays[b].shape) {
        n *= d;
      }
      bytes[b] = static_cast<std::size_t>(n * item);
      arrays[b].address = staging.take(bytes[b], &why);
      if (arrays[b].address == 0) {
        return replay("device memory: " + why);
      }
      if (host[b]) {
        if (!device_.copy_to_device(arrays[b].address, array_fields(host[b].ptr())->data, bytes[b],
                                    &why)) {
          return give_up(why);
        }
        bytes_in_ += bytes[b];
      }
    }
    const std::uint64_t flags = staging.take(sizeof(unsigned), &why);
    if (flags == 0) {
      return replay("device memory: " + why);
    }
    if (!device_.zero(flags, sizeof(unsigned), &why)) {
      return give_up(why);
    }
    auto launch =
        plan_launch(k_, source_, domain, arrays, bits, flags, 0, device_.multiprocessors(), &why);
    if (!launch) {
      return replay(why);
    }
    if (launch->partial_bytes > 0) {
      const std::uint64_t partial = staging.take(launch->partial_bytes, &why);
      if (partial == 0) {
        return replay("device memory: " + why);
      }
      launch->args[CudaArgsLayout{nb, domain.size(), bits.size()}.partial()] = partial;
    }
    launches_ += launch->second.empty() ? 1 : 2;
    if (!device_.launch(function(launch->entry), launch->grid, launch->block, launch->args, &why) ||
        (!launch->second.empty() &&
         !device_.launch(function(launch->second), 1, launch->block, launch->args, &why)) ||
        !device_.synchronize(&why)) {
      return give_up(why);
    }
    unsigned word = 0;
    if (!device_.copy_to_host(&word, flags, sizeof word, &why)) {
      return give_up(why);
    }
    bytes_out_ += sizeof word;
    if (reported_fe_flags(fe_flags_of(word)) != 0) {
      return replay("a floating-point error the error state reports");
    }
    return finish(frame, arrays, bytes, host);
  }

  // The outputs into new host arrays, into the frame.
  Outcome finish(Frame& frame, const std::vector<DeviceArray>& arrays,
                 const std::vector<std::size_t>& bytes, const std::vector<py::object>& host) {
    std::vector<std::pair<int, py::object>> made;
    for (std::size_t b = 0; b < arrays.size(); ++b) {
      if (host[b] || !k_.buffers[b].output) {
        continue;
      }
      py::object out = empty_(shape_tuple(arrays[b].shape), dtypes_[b]);
      std::string why;
      if (!device_.copy_to_host(array_fields(out.ptr())->data, arrays[b].address, bytes[b], &why)) {
        return give_up(why);
      }
      bytes_out_ += bytes[b];
      if (scalar_[b]) {
        out = out[py::tuple()];  // a full reduction's NumPy scalar
      }
      made.emplace_back(k_.buffers[b].value, std::move(out));
    }
    for (auto& [value, out] : made) {
      frame.set_owned(value, out.release().ptr());
    }
    return Outcome::kDone;
  }

  kir::Kernel k_;
  DeviceApi& device_;
  DevicePool& pool_;
  CudaSource source_;
  std::uint64_t module_ = 0;
  std::vector<std::pair<std::string, std::uint64_t>> functions_;
  std::vector<py::object> dtypes_;
  std::vector<bool> scalar_;  // per buffer: an output the graph holds as a NumPy scalar
  py::object empty_;
  py::object contiguous_;
  py::object ndarray_;
  std::string why_;
  std::string last_replay_;
  double compile_seconds_ = 0;
  std::uint64_t bytes_in_ = 0;  // copied to the device by this group's runs, and back
  std::uint64_t bytes_out_ = 0;
  std::uint64_t launches_ = 0;
  bool verified_ = false;
};

class CudaGroups final : public GroupBackend {
 public:
  explicit CudaGroups(DeviceApi& device) : device_(device), pool_(device) {}

  const Names& names() const override {
    static const Names n{"cuda", "on the device", {"device"}, "host", "cuda"};
    return n;
  }

  std::unique_ptr<GroupKernel> make_kernel(const Graph& graph, const Group& g, kir::Kernel kernel,
                                           const Program& program) override {
    (void)g;
    (void)program;
    return std::make_unique<CudaGroup>(graph, std::move(kernel), device_, pool_);
  }

  void describe(py::dict& plan) const override { plan["pooled_bytes"] = pool_.kept_bytes(); }

 private:
  DeviceApi& device_;
  DevicePool pool_;
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
