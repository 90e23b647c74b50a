#include "graph/backends/cuda/cuda_check.hpp"

#include <map>
#include <string>
#include <vector>

#include "graph/backends/cuda/cuda_emitter.hpp"
#include "graph/runtime/cuda/nvrtc.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

struct Failure {
  std::string kernel;
  std::string source;
  std::string log;
};

// One kernel's outcome, for cuda_check_take().
struct Entry {
  std::string kernel;
  std::string why;  // not emitted: why
  std::string source;
  bool ok = false;  // compiled
  int registers = 0;
  int spill_bytes = 0;
  std::string log;
};

struct CheckState {
  bool on = false;
  std::string arch = "sm_90";
  long kernels = 0;
  long emitted = 0;
  long compiled = 0;
  long from_disk = 0;
  int max_registers = 0;
  std::map<std::string, long> not_emitted;
  std::vector<Failure> failed;
  std::vector<std::pair<std::string, int>> spilling;
  std::vector<double> seconds;
  std::map<std::string, Entry> seen;  // each distinct source's outcome
  std::vector<Entry> taken;           // every kernel since the last cuda_check_take()
};

CheckState& state() {
  static CheckState s;
  return s;
}

}  // namespace

void set_cuda_check(bool on, const std::string& arch) {
  CheckState& s = state();
  s = CheckState();
  s.on = on;
  s.arch = arch;
  kir::set_observer(on ? &cuda_check_kernel : nullptr);
}

void cuda_check_kernel(const kir::Kernel& k) {
  CheckState& s = state();
  ++s.kernels;
  Entry entry;
  entry.kernel = k.text();
  const auto source = emit_cuda(k, &entry.why);
  if (!source) {
    ++s.not_emitted[entry.why];
    s.taken.push_back(entry);
    return;
  }
  ++s.emitted;
  entry.source = source->code;
  const auto found = s.seen.find(source->code);
  if (found != s.seen.end()) {
    // the same source compiled before: its outcome (a failure is recorded once)
    s.compiled += found->second.ok ? 1 : 0;
    entry.ok = found->second.ok;
    entry.registers = found->second.registers;
    entry.spill_bytes = found->second.spill_bytes;
    entry.log = found->second.log;
    s.taken.push_back(entry);
    return;
  }
  const CudaBinary b = compile_cuda(source->code, s.arch);
  entry.ok = b.ok;
  entry.log = b.ok ? b.log : b.error;
  entry.registers = b.registers;
  entry.spill_bytes = b.spill_bytes;
  s.seen[source->code] = entry;
  s.taken.push_back(entry);
  if (!b.ok) {
    s.failed.push_back(Failure{entry.kernel, source->code, b.error});
    return;
  }
  ++s.compiled;
  s.from_disk += b.from_disk ? 1 : 0;
  if (!b.from_disk) {
    s.seconds.push_back(b.seconds);
  }
  s.max_registers = std::max(s.max_registers, b.registers);
  if (b.spill_bytes > 0) {
    s.spilling.emplace_back(entry.kernel, b.spill_bytes);
  }
}

py::list cuda_check_take() {
  py::list out;
  for (const Entry& e : state().taken) {
    py::dict d;
    d["kernel"] = e.kernel;
    d["why"] = e.why;
    d["source"] = e.source;
    d["ok"] = e.ok;
    d["registers"] = e.registers;
    d["spill_bytes"] = e.spill_bytes;
    d["log"] = e.log;
    out.append(d);
  }
  state().taken.clear();
  return out;
}

py::dict cuda_compile(const std::string& source, const std::string& arch) {
  const CudaBinary b = compile_cuda(source, arch);
  py::dict d;
  d["ok"] = b.ok;
  d["error"] = b.error;
  d["log"] = b.log;
  d["registers"] = b.registers;
  d["spill_bytes"] = b.spill_bytes;
  d["from_disk"] = b.from_disk;
  d["seconds"] = b.seconds;
  d["cubin_bytes"] = b.cubin.size();
  d["ptx"] = b.ptx;
  return d;
}

py::dict cuda_check_report(bool sources) {
  const CheckState& s = state();
  py::dict out;
  out["enabled"] = s.on;
  out["arch"] = s.arch;
  out["kernels"] = s.kernels;
  out["emitted"] = s.emitted;
  out["compiled"] = s.compiled;
  out["sources"] = s.seen.size();
  out["from_disk"] = s.from_disk;
  out["max_registers"] = s.max_registers;
  py::dict not_emitted;
  for (const auto& [why, n] : s.not_emitted) {
    not_emitted[py::str(why)] = n;
  }
  out["not_emitted"] = not_emitted;
  py::list failed;
  for (const Failure& f : s.failed) {
    py::dict d;
    d["kernel"] = f.kernel;
    d["source"] = f.source;
    d["log"] = f.log;
    failed.append(d);
  }
  out["failed"] = failed;
  py::list spilling;
  for (const auto& [kernel, bytes] : s.spilling) {
    py::dict d;
    d["kernel"] = kernel;
    d["bytes"] = bytes;
    spilling.append(d);
  }
  out["spilling"] = spilling;
  py::list seconds;
  for (const double t : s.seconds) {
    seconds.append(t);
  }
  out["compile_seconds"] = seconds;
  std::string why;
  out["nvrtc"] = nvrtc_version(&why);
  if (sources) {
    py::list texts;
    for (const auto& seen : s.seen) {
      texts.append(seen.first);
    }
    out["source_texts"] = texts;
  }
  return out;
}

}  // namespace sot::graph
