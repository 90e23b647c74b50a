#include "graph/backends/cuda/cuda_check.hpp"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "graph/backends/cuda/cuda_emitter.hpp"
#include "graph/runtime/cuda/nvrtc.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

// A distinct source's outcome; `done` once the worker compiled it.
struct Outcome {
  std::string source;
  std::string kernel;  // the first kernel that emitted it
  bool done = false;
  bool ok = false;
  std::string log;  // the compile log (ok), or why not
  int registers = 0;
  int spill_bytes = 0;
  bool from_disk = false;
  double seconds = 0;
};

// One kernel, for cuda_check_take().
struct Entry {
  std::string kernel;
  std::string why;  // not emitted: why
  int source = -1;  // emitted: its source's outcome
};

// What the check recorded. Sources compile on a worker thread while the tests go on (NVRTC takes
// 0.1-0.6 s a source); cuda_check_take() and the report wait for it. A forked child (the tests run
// some programs in one) checks nothing: only the worker's process has the worker, and a child's
// kernels never reach the report. Made once and never destroyed: the worker may still be compiling
// as the process exits.
struct CheckState {
  std::mutex mu;
  std::condition_variable cv;
  bool on = false;
  std::string arch = "sm_90";
  long kernels = 0;
  std::map<std::string, long> not_emitted;
  std::map<std::string, int> ids;  // source -> its outcome
  std::vector<Outcome> outcomes;
  std::vector<int> emitted;  // every emitted kernel's source
  std::vector<Entry> taken;  // every kernel since the last cuda_check_take()
  std::deque<int> queue;     // sources to compile
  bool busy = false;         // the worker is compiling one
  pid_t owner = 0;           // the process whose worker runs (0: none started)
};

CheckState& state() {
  static auto* s = new CheckState();
  return *s;
}

void compile_worker() {
  CheckState& s = state();
  std::unique_lock<std::mutex> lock(s.mu);
  for (;;) {
    s.cv.wait(lock, [&] { return !s.queue.empty(); });
    const int id = s.queue.front();
    s.queue.pop_front();
    s.busy = true;
    const std::string source = s.outcomes[static_cast<std::size_t>(id)].source;
    const std::string arch = s.arch;
    lock.unlock();
    const CudaBinary b = compile_cuda(source, arch);
    lock.lock();
    Outcome& o = s.outcomes[static_cast<std::size_t>(id)];
    o.done = true;
    o.ok = b.ok;
    o.log = b.ok ? b.log : b.error;
    o.registers = b.registers;
    o.spill_bytes = b.spill_bytes;
    o.from_disk = b.from_disk;
    o.seconds = b.seconds;
    s.busy = false;
    s.cv.notify_all();
  }
}

bool in_child(const CheckState& s) {
  return s.owner != 0 && s.owner != ::getpid();
}

// What was recorded, once every queued source is compiled (waited for with the GIL released, and
// copied before it is taken again: the worker never takes the GIL). `take`: the kernels since the
// last take are handed over.
struct Snapshot {
  bool on = false;
  std::string arch;
  long kernels = 0;
  std::map<std::string, long> not_emitted;
  std::vector<Outcome> outcomes;
  std::vector<int> emitted;
  std::vector<Entry> taken;
};

Snapshot snapshot(CheckState& s, bool take) {
  Snapshot out;
  const py::gil_scoped_release released;
  std::unique_lock<std::mutex> lock(s.mu);
  s.cv.wait(lock, [&] { return s.queue.empty() && !s.busy; });
  out.on = s.on;
  out.arch = s.arch;
  out.kernels = s.kernels;
  out.not_emitted = s.not_emitted;
  out.outcomes = s.outcomes;
  out.emitted = s.emitted;
  if (take) {
    out.taken.swap(s.taken);
  }
  return out;
}

}  // namespace

void set_cuda_check(bool on, const std::string& arch) {
  CheckState& s = state();
  if (in_child(s)) {
    return;
  }
  {
    const py::gil_scoped_release released;
    std::unique_lock<std::mutex> lock(s.mu);
    s.cv.wait(lock, [&] { return s.queue.empty() && !s.busy; });
    s.on = on;
    s.arch = arch;
    s.kernels = 0;
    s.not_emitted.clear();
    s.ids.clear();
    s.outcomes.clear();
    s.emitted.clear();
    s.taken.clear();
  }
  kir::set_observer(on ? &cuda_check_kernel : nullptr);
}

void cuda_check_kernel(const kir::Kernel& k) {
  CheckState& s = state();
  if (in_child(s)) {
    return;
  }
  Entry entry;
  entry.kernel = k.text();
  const auto source = emit_cuda(k, &entry.why);
  const std::lock_guard<std::mutex> lock(s.mu);
  ++s.kernels;
  if (!source) {
    ++s.not_emitted[entry.why];
    s.taken.push_back(std::move(entry));
    return;
  }
  const auto [it, fresh] = s.ids.emplace(source->code, static_cast<int>(s.outcomes.size()));
  if (fresh) {
    Outcome o;
    o.source = source->code;
    o.kernel = entry.kernel;
    s.outcomes.push_back(std::move(o));
    s.queue.push_back(it->second);
    if (s.owner == 0) {
      s.owner = ::getpid();
      std::thread(compile_worker).detach();
    }
    s.cv.notify_all();
  }
  entry.source = it->second;
  s.emitted.push_back(it->second);
  s.taken.push_back(std::move(entry));
}

py::list cuda_check_take() {
  CheckState& s = state();
  py::list out;
  if (in_child(s)) {
    return out;
  }
  const Snapshot snap = snapshot(s, true);
  const std::vector<Outcome>& outcomes = snap.outcomes;
  for (const Entry& e : snap.taken) {
    const Outcome* o = e.source >= 0 ? &outcomes[static_cast<std::size_t>(e.source)] : nullptr;
    py::dict d;
    d["kernel"] = e.kernel;
    d["why"] = e.why;
    d["source"] = o != nullptr ? o->source : std::string();
    d["ok"] = o != nullptr && o->ok;
    d["registers"] = o != nullptr ? o->registers : 0;
    d["spill_bytes"] = o != nullptr ? o->spill_bytes : 0;
    d["log"] = o != nullptr ? o->log : std::string();
    out.append(d);
  }
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
  CheckState& s = state();
  py::dict out;
  const Snapshot snap = in_child(s) ? Snapshot{} : snapshot(s, false);
  out["enabled"] = snap.on;
  out["arch"] = snap.arch;
  out["kernels"] = snap.kernels;
  out["emitted"] = snap.emitted.size();
  long compiled = 0;
  for (const int id : snap.emitted) {
    compiled += snap.outcomes[static_cast<std::size_t>(id)].ok ? 1 : 0;
  }
  out["compiled"] = compiled;
  out["sources"] = snap.outcomes.size();
  py::dict not_emitted;
  for (const auto& [why, n] : snap.not_emitted) {
    not_emitted[py::str(why)] = n;
  }
  out["not_emitted"] = not_emitted;
  py::list failed;
  py::list spilling;
  py::list seconds;
  py::list texts;
  long from_disk = 0;
  int max_registers = 0;
  for (const Outcome& o : snap.outcomes) {
    if (sources) {
      texts.append(o.source);
    }
    if (!o.ok) {
      py::dict d;
      d["kernel"] = o.kernel;
      d["source"] = o.source;
      d["log"] = o.log;
      failed.append(d);
      continue;
    }
    from_disk += o.from_disk ? 1 : 0;
    if (!o.from_disk) {
      seconds.append(o.seconds);
    }
    max_registers = std::max(max_registers, o.registers);
    if (o.spill_bytes > 0) {
      py::dict d;
      d["kernel"] = o.kernel;
      d["bytes"] = o.spill_bytes;
      spilling.append(d);
    }
  }
  out["failed"] = failed;
  out["spilling"] = spilling;
  out["compile_seconds"] = seconds;
  out["from_disk"] = from_disk;
  out["max_registers"] = max_registers;
  std::string why;
  out["nvrtc"] = nvrtc_version(&why);
  if (sources) {
    out["source_texts"] = texts;
  }
  return out;
}

}  // namespace sot::graph
