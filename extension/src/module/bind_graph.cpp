// `sot._sot.graph`: NumPy's dtype promotion and shape rules as the graph IR implements them
// (checked against NumPy itself by the Python tests).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

#include "graph/backends/cpu/block_executor.hpp"
#include "graph/backends/cpu/cpu_threads.hpp"
#include "graph/backends/cpu/native_cache.hpp"
#include "graph/backends/cpu/whole/whole_runner.hpp"
#include "graph/backends/cuda/cuda_check.hpp"
#include "graph/backends/cuda/cuda_kernel.hpp"
#include "graph/backends/cuda/device_array.hpp"
#include "graph/backends/cuda/late_scalars.hpp"
#include "graph/backends/cuda/residency.hpp"
#include "graph/backends/cuda/step_replay.hpp"
#include "graph/exec/backend.hpp"
#include "graph/exec/cond_op.hpp"
#include "graph/exec/loop_op.hpp"
#include "graph/ir/dtype.hpp"
#include "graph/ir/graph.hpp"
#include "graph/ir/shape.hpp"
#include "graph/ir/subgraph.hpp"
#include "graph/runtime/cuda/cuda_driver.hpp"
#include "graph/runtime/cuda/nvrtc.hpp"
#include "graph/runtime/cuda/pinned_copies.hpp"
#include "graph/runtime/cuda/simulated_device.hpp"
#include "graph/runtime/disk_cache.hpp"
#include "module/bindings.hpp"

namespace py = pybind11;

namespace sot::module {

namespace {

graph::DType dtype_arg(const std::string& n) {
  const auto t = graph::dtype_from_name(n);
  if (!t) {
    throw py::value_error("not a numeric dtype the graph knows: " + n);
  }
  return *t;
}

void bind_graph_rules(py::module_& g) {
  g.def(
      "dtypes",
      []() {
        std::vector<std::string> out;
        out.reserve(graph::kDTypeCount);
        for (int i = 0; i < graph::kDTypeCount; ++i) {
          out.emplace_back(graph::name(static_cast<graph::DType>(i)));
        }
        return out;
      },
      "The names of the numeric dtypes the graph knows.");
  g.def(
      "promote_types",
      [](const std::string& a, const std::string& b) {
        return std::string(graph::name(graph::promote_types(dtype_arg(a), dtype_arg(b))));
      },
      py::arg("a"), py::arg("b"), "np.promote_types(a, b), by name.");
  g.def(
      "result_type_with_scalar",
      [](const std::string& array, const py::object& scalar, bool weak) {
        graph::PyScalar s;
        if (!graph::python_scalar(scalar.ptr(), &s)) {
          throw py::type_error("not a Python bool, int, float or complex");
        }
        std::string error;
        const auto t = graph::result_type_with_scalar(
            dtype_arg(array), s,
            weak ? graph::ScalarPromotion::kWeak : graph::ScalarPromotion::kValueBased, &error);
        if (!t) {
          throw py::value_error(error);
        }
        return std::string(graph::name(*t));
      },
      py::arg("array"), py::arg("scalar"), py::arg("weak"),
      "np.result_type(<array of dtype array>, scalar): NumPy 1.x value-based (weak=False) or NEP "
      "50 "
      "(weak=True).");
}

void bind_backend_settings(py::module_& g) {
  g.def("backends", &graph::backend_names, "The names of the graph backends.");
  g.def(
      "tier_b",
      [](const py::object& enabled) {
        if (!enabled.is_none()) {
          graph::native_options().enabled = enabled.cast<bool>();
        }
        py::dict d;
        d["enabled"] = graph::native_options().enabled.load();
        d["cache_dir"] = graph::kernel_cache_dir();
        return d;
      },
      py::arg("enabled") = py::none(),
      "The CPU backend's tier B (kernels compiled to machine code): on or off (for kernels made "
      "from now on), and its disk cache's folder.");
  g.def(
      "tier_c",
      [](const py::object& mode) {
        graph::whole::WholeOptions& o = graph::whole::whole_options();
        if (!mode.is_none()) {
          const auto m = mode.cast<std::string>();
          if (m != "on" && m != "off" && m != "sync") {
            throw py::value_error("tier C's mode is 'on', 'off' or 'sync', not '" + m + "'");
          }
          o.enabled = m != "off";
          o.sync = m == "sync";
        }
        return !o.enabled.load() ? "off" : o.sync.load() ? "sync" : "on";
      },
      py::arg("mode") = py::none(),
      "The CPU backend's tier C (a loop op as one native function): 'on' (compiled in the "
      "background), 'sync' (compiled before the loop's first run) or 'off', for loops compiled "
      "from now on; returns the mode.");
  g.def(
      "tier_c_hot",
      [](const py::object& calls) {
        graph::whole::WholeOptions& o = graph::whole::whole_options();
        if (!calls.is_none()) {
          const auto n = calls.cast<long>();
          if (n < 0) {
            throw py::value_error("tier C's hot calls must be 0 or more, not " + std::to_string(n));
          }
          o.hot_calls = n;
        }
        return o.hot_calls.load();
      },
      py::arg("calls") = py::none(),
      "Calls on small arrays after which tier C makes a graph with no loop op native (where it "
      "then measures faster than tier B); 0: native from the first call, always. Returns it.");
  g.def(
      "cuda_check", [](bool on, const std::string& arch) { graph::set_cuda_check(on, arch); },
      py::arg("on"), py::arg("arch") = "sm_90",
      "While on, every kernel the cpu backend lowers is also emitted as CUDA C++ and compiled by "
      "NVRTC for `arch` (the CUDA backend's compile check); turning it on clears the record.");
  g.def("cuda_check_report", &graph::cuda_check_report, py::arg("sources") = false,
        "What the CUDA compile check recorded: kernels, emitted, compiled, not_emitted reasons, "
        "failures with their source and log, registers and spills.");
  g.def("cuda_check_take", &graph::cuda_check_take,
        "Every kernel the CUDA compile check saw since the last call (then forgotten): its text, "
        "why it was not emitted, its source, whether it compiled, registers, spills, log.");
  g.def("cuda_own_kernel_sources", &graph::own_kernel_sources,
        "The CUDA C++ of the cuda backend's own kernels made so far (copies, checks, reductions "
        "along an axis), as (name, source) pairs.");
  g.def("cuda_compile", &graph::cuda_compile, py::arg("source"), py::arg("arch") = "sm_90",
        "Compiles CUDA C++ with NVRTC as the CUDA backend does (or loads it from the disk cache).");
  g.def(
      "cuda_status",
      []() {
        const graph::CudaStatus& s = graph::cuda_status();
        py::dict d;
        d["available"] = s.available;
        d["reason"] = s.reason;
        d["driver_version"] = s.driver_version;
        py::list devices;
        for (const graph::CudaDevice& dev : s.devices) {
          py::dict x;
          x["ordinal"] = dev.ordinal;
          x["name"] = dev.name;
          x["arch"] = dev.arch();
          x["memory_bytes"] = dev.memory_bytes;
          x["multiprocessors"] = dev.multiprocessors;
          devices.append(x);
        }
        d["devices"] = devices;
        return d;
      },
      "The CUDA driver and devices as the CUDA backend finds them (the driver loaded at run time): "
      "available, or the reason (\"no CUDA device: ...\"), and each device's name, sm_XY, memory.");
}

// `name(on=None)`: the switch's setting before the call, set to `on` when given.
void bind_switch(py::module_& g, const char* name, std::atomic<bool>& flag, const char* doc) {
  g.def(
      name,
      [&flag](const py::object& on) {
        const bool was = flag.load();
        if (!on.is_none()) {
          flag.store(on.cast<bool>());
        }
        return was;
      },
      py::arg("on") = py::none(), doc);
}

// The device the cuda backend runs on, simulated or not: its counts, device arrays, timing.
void bind_cuda_device(py::module_& g) {
  bind_switch(g, "cuda_simulate", graph::cuda_simulate(),
              "Whether the cuda backend compiles new graphs for the simulated device "
              "(SOT_CUDA_SIMULATE=1); sets it when given. Returns the setting before the call.");
  graph::bind_device_array(g);
  graph::bind_late_scalar(g);
  bind_switch(g, "cuda_copy_stream", graph::cuda_copy_stream(),
              "Whether the cuda backend copies host arrays in on the device's copy stream, beside "
              "the kernels queued before (SOT_CUDA_COPY_STREAM=0: off); sets it when given. "
              "Returns the setting before the call.");
  bind_switch(g, "cuda_profile", graph::cuda_profile(),
              "Whether the cuda backend times each group's runs, on the host and on the device "
              "(marks around its launches; SOT_PROFILE); sets it when given. Returns the setting "
              "before.");
  bind_switch(g, "cuda_replay", graph::cuda_replay(),
              "Whether the cuda backend replays a loop's steps that repeat (their launches queued "
              "again without the body's graph call; SOT_CUDA_REPLAY); sets it when given. Returns "
              "the setting before.");
  g.def(
      "cuda_staging",
      [](const py::object& chunk_bytes) {
        std::atomic<std::size_t>& chunk = graph::cuda_staging_chunk();
        const std::size_t was = chunk.load();
        if (!chunk_bytes.is_none()) {
          const auto n = chunk_bytes.cast<long long>();
          if (n < 0) {
            throw py::value_error("chunk_bytes must be >= 0 (0: no staging)");
          }
          chunk.store(static_cast<std::size_t>(n));
        }
        return was;
      },
      py::arg("chunk_bytes") = py::none(),
      "The bytes of each of the two page-locked buffers the cuda backend copies host memory "
      "through, queued after the work before it (SOT_CUDA_STAGING; 0: straight copies that wait "
      "for the device); sets it when given. Returns the setting before.");
  g.def(
      "cuda_transfer_counts",
      [](bool reset) {
        graph::TransferCounts& c = graph::transfer_counts();
        py::dict out;
        out["arrays_in"] = c.arrays_in;
        out["bytes_in"] = c.bytes_in;
        out["arrays_out"] = c.arrays_out;
        out["bytes_out"] = c.bytes_out;
        if (reset) {
          c = graph::TransferCounts();
        }
        return out;
      },
      py::arg("reset") = false,
      "The arrays the cuda backend copied to the device and back (the residency's copies, not "
      "the groups' flag words), and their bytes, since the last reset.");
  g.def(
      "cuda_simulated_counts",
      [](bool reset) {
        graph::SimulatedDevice& d = graph::simulated_device();
        const graph::SimulatedCounts c = d.counts();
        py::dict out;
        out["allocs"] = c.allocs;
        out["frees"] = c.frees;
        out["to_device"] = c.to_device;
        out["to_device_bytes"] = c.to_device_bytes;
        out["to_host"] = c.to_host;
        out["to_host_bytes"] = c.to_host_bytes;
        out["zeroed"] = c.zeroed;
        out["launches"] = c.launches;
        out["gemms"] = c.gemms;
        out["graphs_made"] = c.graphs_made;
        out["graph_runs"] = c.graph_runs;
        out["synchronizations"] = c.synchronizations;
        out["staged_to_device"] = c.staged_to_device;
        out["staged_to_host"] = c.staged_to_host;
        out["mark_waits"] = c.mark_waits;
        out["staged_aside"] = c.staged_aside;
        out["overlapped"] = c.overlapped;
        out["stalls"] = c.stalls;
        out["modules"] = c.modules;
        out["bad_accesses"] = c.bad_accesses;
        out["live_bytes"] = d.live_bytes();
        if (reset) {
          d.reset_counts();
        }
        return out;
      },
      py::arg("reset") = false,
      "What the simulated CUDA device did: allocations, copies each way and their bytes, zeroings, "
      "launches, synchronisations, chunks queued through page-locked memory each way and waits "
      "for them, stalls (waits for all the work queued), modules loaded, accesses outside any "
      "allocation, and the bytes "
      "allocated now; with reset=True the counts start again from 0.");
}

}  // namespace

void bind_graph(py::module_& m) {
  py::module_ g = m.def_submodule("graph", "The graph IR's NumPy rules (dtypes, shapes).");
  graph::bind_subgraph_type(g);
  graph::bind_loop_type(g);
  graph::bind_cond_type(g);
  bind_graph_rules(g);
  bind_backend_settings(g);
  bind_cuda_device(g);
  g.def(
      "nvrtc_version",
      []() {
        std::string why;
        const std::string v = graph::nvrtc_version(&why);
        return v.empty() ? py::object(py::str(why)) : py::object(py::str(v));
      },
      "NVRTC's version, or why it cannot be loaded.");
  g.def(
      "wait_for_kernels",
      []() {
        py::gil_scoped_release release;
        return graph::wait_for_native_kernels();
      },
      "Blocks until no tier B kernel is compiling; returns how many were.");
  g.def(
      "cpu_options",
      [](const py::object& block_elements, const py::object& profile, const py::object& threads) {
        graph::CpuOptions& o = graph::cpu_options();
        if (!block_elements.is_none()) {
          const auto n = block_elements.cast<std::int64_t>();
          if (n < 0) {
            throw py::value_error("block_elements must be >= 0 (0: chosen from the cache size)");
          }
          o.block_elements = n;
        }
        if (!profile.is_none()) {
          o.profile = profile.cast<bool>();
        }
        if (!threads.is_none()) {
          const auto n = threads.cast<std::int64_t>();
          if (n < 0) {
            throw py::value_error("threads must be >= 0 (0: one per core)");
          }
          o.threads = n;
        }
        py::dict d;
        d["block_elements"] = o.block_elements.load();
        d["profile"] = o.profile.load();
        d["threads"] = o.threads.load();
        d["threads_used"] = graph::cpu_threads();
        d["thread_pool"] = graph::thread_pool_name();
        return d;
      },
      py::arg("block_elements") = py::none(), py::arg("profile") = py::none(),
      py::arg("threads") = py::none(),
      "The CPU backend's settings (those given are changed first): elements per block (0: chosen "
      "from the cache size), whether each group is timed, threads per kernel (0: one per core); "
      "threads_used and thread_pool (the library running them) are read only.");
  g.def(
      "broadcast_shapes",
      [](const graph::Shape& a, const graph::Shape& b) {
        std::string error;
        const auto s = graph::broadcast_shapes(a, b, &error);
        if (!s) {
          throw py::value_error(error);
        }
        return py::tuple(py::cast(*s));
      },
      py::arg("a"), py::arg("b"), "np.broadcast_shapes(a, b) for two shapes.");
  g.def(
      "reduced_shape",
      [](const graph::Shape& s, const py::object& axis, bool keepdims) {
        std::vector<int> axes;
        const bool all = axis.is_none();
        if (!all) {
          if (py::isinstance<py::int_>(axis)) {
            axes.push_back(axis.cast<int>());
          } else {
            axes = axis.cast<std::vector<int>>();
          }
        }
        std::string error;
        const auto normal = graph::normalize_axes(axes, all, static_cast<int>(s.size()), &error);
        if (!normal) {
          throw py::value_error(error);
        }
        return py::tuple(py::cast(graph::reduced_shape(s, *normal, keepdims)));
      },
      py::arg("shape"), py::arg("axis") = py::none(), py::arg("keepdims") = false,
      "The shape of a reduction over `axis` (None: all; an int or a tuple of ints).");
}

}  // namespace sot::module
