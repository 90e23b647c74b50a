// The simulated CUDA device (simulated_device.hpp).
#include "graph/runtime/cuda/simulated_device.hpp"

#include <Python.h>

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <set>

#include "graph/runtime/cuda/simulated_fibers.hpp"
#include "graph/runtime/cuda/simulated_shim.hpp"
#include "graph/runtime/disk_cache.hpp"
#include "graph/runtime/host_compiler.hpp"

namespace sot::graph {

namespace {

constexpr std::size_t kAlign = 256;
constexpr unsigned kMaxBlock = 1024;  // threads a block (CUDA's limit)

// A device address as the host pointer it is.
void* host_pointer(std::uint64_t address) {
  return reinterpret_cast<void*>(address);  // NOLINT(*-reinterpret-cast,*-int-to-ptr)
}

// FNV-1a of some bytes.
std::uint64_t digest(const void* memory, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(memory);
  std::uint64_t h = 14695981039346656037ULL;
  for (std::size_t i = 0; i < bytes; ++i) {
    h = (h ^ p[i]) * 1099511628211ULL;
  }
  return h;
}

constexpr unsigned char kGarbage = 0xA5;  // what a buffer holds until a copy into it runs

}  // namespace

SimulatedDevice::~SimulatedDevice() {
  for (const auto& [address, bytes] : live_) {
    std::free(host_pointer(address));  // NOLINT(*-no-malloc)
  }
}

std::uint64_t SimulatedDevice::load_module(const ModuleImage& image, std::string* why) {
  const std::string code = simulated_host_program(image.source);
  std::string text = host_compiler();
  for (const std::string& f : simulated_host_flags()) {
    text += " " + f;
  }
  const std::string key = cache_key(text + "\n" + code);
  const std::string dir = kernel_cache_dir() + "/simulated";
  const std::string path = dir + "/" + key + ".so";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 &&
      !compile_shared_object(code, simulated_host_flags(), dir, key, why)) {
    *why = "simulated device: " + *why;
    return 0;
  }
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = ::dlerror();
    *why = "simulated device: cannot load " + path + ": " + (e != nullptr ? e : "");
    return 0;
  }
  const std::lock_guard<std::mutex> lock(mutex_);
  ++counts_.modules;
  modules_.push_back(handle);
  return modules_.size();
}

std::uint64_t SimulatedDevice::function(std::uint64_t module, const std::string& name,
                                        std::string* why) {
  const std::lock_guard<std::mutex> lock(mutex_);
  void* handle = module >= 1 && module <= modules_.size() ? modules_[module - 1] : nullptr;
  void* found = handle != nullptr ? ::dlsym(handle, ("sot_sim_" + name).c_str()) : nullptr;
  if (found == nullptr) {
    *why = "simulated device: no entry point " + name;
    return 0;
  }
  functions_.push_back(reinterpret_cast<Entry>(found));  // NOLINT(*-reinterpret-cast)
  return functions_.size();
}

void SimulatedDevice::unload_module(std::uint64_t module) {
  // (the module's code stays mapped: entry points taken from it may be called no more, and
  // dlclose of code whose thread-local variables live on is unsafe)
  const std::lock_guard<std::mutex> lock(mutex_);
  if (module >= 1 && module <= modules_.size()) {
    modules_[module - 1] = nullptr;
  }
}

std::uint64_t SimulatedDevice::alloc(std::size_t bytes, std::string* why) {
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded);  // NOLINT(*-no-malloc, *-owning-memory)
  if (p == nullptr) {
    *why = "simulated device: out of memory";
    return 0;
  }
  const auto address = reinterpret_cast<std::uint64_t>(p);  // NOLINT(*-reinterpret-cast)
  const std::lock_guard<std::mutex> lock(mutex_);
  live_[address] = bytes;
  ++counts_.allocs;
  return address;
}

void SimulatedDevice::free(std::uint64_t address) {
  const std::lock_guard<std::mutex> lock(mutex_);
  run_queued();
  const auto found = live_.find(address);
  if (found == live_.end()) {
    ++counts_.bad_accesses;
    return;
  }
  const std::size_t before = aside_.size();
  aside_.erase(std::remove_if(aside_.begin(), aside_.end(),
                              [&](const auto& a) {
                                return a.second.address >= address &&
                                       a.second.address < address + found->second;
                              }),
               aside_.end());
  counts_.bad_accesses += before - aside_.size();  // freed with copies aside nothing waited for
  last_use_.erase(address);
  live_.erase(found);
  ++counts_.frees;
  std::free(host_pointer(address));  // NOLINT(*-no-malloc)
}

bool SimulatedDevice::inside(std::uint64_t address, std::size_t bytes) const {
  auto it = live_.upper_bound(address);
  if (it == live_.begin()) {
    return false;
  }
  --it;
  return address >= it->first && address - it->first + bytes <= it->second;
}

bool SimulatedDevice::copy_to_device(std::uint64_t dst, const void* src, std::size_t bytes,
                                     std::string* why) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!inside(dst, bytes)) {
      ++counts_.bad_accesses;
      *why = "simulated device: a copy to memory outside any allocation";
      return false;
    }
    ++counts_.to_device;
    counts_.to_device_bytes += bytes;
  }
  const PinnedCopies::Outcome staged = copies_.to_device(dst, src, bytes, why);
  if (staged != PinnedCopies::Outcome::kStraight) {
    return staged == PinnedCopies::Outcome::kQueued;
  }
  const std::lock_guard<std::mutex> lock(mutex_);
  run_queued();
  std::memcpy(host_pointer(dst), src, bytes);
  return true;
}

bool SimulatedDevice::copy_to_host(void* dst, std::uint64_t src, std::size_t bytes,
                                   std::string* why) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!inside(src, bytes)) {
      ++counts_.bad_accesses;
      *why = "simulated device: a copy from memory outside any allocation";
      return false;
    }
    ++counts_.to_host;
    counts_.to_host_bytes += bytes;
    waited(work_);
  }
  const PinnedCopies::Outcome staged = copies_.to_host(dst, src, bytes, why);
  if (staged != PinnedCopies::Outcome::kStraight) {
    return staged == PinnedCopies::Outcome::kQueued;
  }
  const std::lock_guard<std::mutex> lock(mutex_);
  run_queued();
  std::memcpy(dst, host_pointer(src), bytes);
  return true;
}

bool SimulatedDevice::zero(std::uint64_t dst, std::size_t bytes, std::string* why) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (!inside(dst, bytes)) {
    ++counts_.bad_accesses;
    *why = "simulated device: zeroing memory outside any allocation";
    return false;
  }
  run_queued();
  std::memset(host_pointer(dst), 0, bytes);
  ++counts_.zeroed;
  return true;
}

bool SimulatedDevice::launch(std::uint64_t function, unsigned grid, unsigned block,
                             const std::vector<std::uint64_t>& args, std::string* why) {
  Entry entry = nullptr;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (function >= 1 && function <= functions_.size()) {
      entry = functions_[function - 1];
    }
    ++counts_.launches;
    ++work_;
    run_queued();
    note_uses(args);
  }
  if (entry == nullptr || grid == 0 || block == 0) {
    *why = "simulated device: a launch of no entry point or of an empty grid";
    return false;
  }
  if (block > kMaxBlock) {
    *why = "simulated device: a block of " + std::to_string(block) + " threads (CUDA's limit is " +
           std::to_string(kMaxBlock) + ")";
    return false;
  }
  const int failed = entry(args.data(), args.size(), grid, block, simulated_fibers());
  if (failed != 0) {
    *why = failed == 2
               ? "simulated device: some threads of a block ended while others waited at "
                 "__syncthreads (undefined in CUDA)"
               : "simulated device: no stacks for a block of " + std::to_string(block) + " threads";
    return false;
  }
  return true;
}

bool SimulatedDevice::synchronize(std::string* why) {
  (void)why;
  const std::lock_guard<std::mutex> lock(mutex_);
  run_aside(aside_queued_);  // (every stream)
  run_queued();
  ++counts_.synchronizations;
  waited(work_);
  return true;
}

namespace {

// A row-major rows x cols matrix over simulated memory as a NumPy array (a new reference; nullptr
// with an error set), and the bytes it spans.
PyObject* matrix_view(const GemmMatrix& g, char kind, std::int64_t rows, std::int64_t cols,
                      std::size_t* span) {
  const std::int64_t item = kind == 'd' ? 8 : 4;
  const std::int64_t outer = g.transposed ? cols : rows;
  const std::int64_t inner = g.transposed ? rows : cols;
  *span = static_cast<std::size_t>(((outer - 1) * g.ld + inner) * item);
  PyObject* numpy = PyImport_ImportModule("numpy");
  if (numpy == nullptr) {
    return nullptr;
  }
  PyObject* memory = PyMemoryView_FromMemory(
      reinterpret_cast<char*>(g.address),  // NOLINT(*-int-to-ptr): simulated memory is host memory
      static_cast<Py_ssize_t>(*span), PyBUF_WRITE);
  const long long row_stride = g.transposed ? item : g.ld * item;
  const long long col_stride = g.transposed ? g.ld * item : item;
  const char* dtype = kind == 'd' ? "float64" : "float32";
  PyObject* view = nullptr;
  if (memory != nullptr && g.dims == 0) {
    view = PyObject_CallMethod(numpy, "ndarray", "(()sOi())", dtype, memory, 0);
  } else if (memory != nullptr && g.dims == 1) {  // (a row's items, or a column's)
    view = PyObject_CallMethod(numpy, "ndarray", "((L)sOi(L))",
                               static_cast<long long>(rows == 1 ? cols : rows), dtype, memory, 0,
                               rows == 1 ? col_stride : row_stride);
  } else if (memory != nullptr) {
    view =
        PyObject_CallMethod(numpy, "ndarray", "((LL)sOi(LL))", static_cast<long long>(rows),
                            static_cast<long long>(cols), dtype, memory, 0, row_stride, col_stride);
  }
  Py_XDECREF(memory);
  Py_DECREF(numpy);
  return view;
}

}  // namespace

bool SimulatedDevice::gemm(char kind, std::int64_t m, std::int64_t n, std::int64_t k,
                           const GemmMatrix& a, const GemmMatrix& b, const GemmMatrix& c,
                           std::string* why) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    run_queued();
    ++counts_.gemms;  // (queued: counted whether or not it then fails)
    ++work_;
    note_uses({a.address, b.address, c.address});
  }
  std::size_t spans[3] = {0, 0, 0};
  PyObject* views[3] = {matrix_view(a, kind, m, k, &spans[0]),
                        matrix_view(b, kind, k, n, &spans[1]),
                        matrix_view(c, kind, m, n, &spans[2])};
  bool ok = views[0] != nullptr && views[1] != nullptr && views[2] != nullptr;
  const std::uint64_t addresses[3] = {a.address, b.address, c.address};
  for (int i = 0; ok && i < 3; ++i) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!inside(addresses[i], spans[i])) {
      ++counts_.bad_accesses;
      *why = "a matrix outside every live allocation";
      ok = false;
    }
  }
  if (ok) {
    // (as cuBLAS, quietly: the backend checks the result and runs NumPy's own where it is not
    // finite)
    PyObject* numpy = PyImport_ImportModule("numpy");
    PyObject* quiet =
        numpy != nullptr ? PyObject_CallMethod(numpy, "seterr", "s", "ignore") : nullptr;
    PyObject* matmul = quiet != nullptr ? PyObject_GetAttrString(numpy, "matmul") : nullptr;
    PyObject* args = matmul != nullptr ? PyTuple_Pack(3, views[0], views[1], views[2]) : nullptr;
    PyObject* r = args != nullptr ? PyObject_CallObject(matmul, args) : nullptr;
    ok = r != nullptr;
    Py_XDECREF(r);
    if (quiet != nullptr) {
      PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
      PyErr_Fetch(&type, &value, &tb);
      PyObject* seterr = PyObject_GetAttrString(numpy, "seterr");  // seterr(**before)
      PyObject* none = PyTuple_New(0);
      PyObject* back =
          seterr != nullptr && none != nullptr ? PyObject_Call(seterr, none, quiet) : nullptr;
      if (back == nullptr) {
        PyErr_Clear();
      }
      Py_XDECREF(back);
      Py_XDECREF(none);
      Py_XDECREF(seterr);
      PyErr_Restore(type, value, tb);
      Py_DECREF(quiet);
    }
    Py_XDECREF(args);
    Py_XDECREF(matmul);
    Py_XDECREF(numpy);
  }
  if (!ok && PyErr_Occurred() != nullptr) {
    *why = "NumPy's matmul failed";
    PyErr_Clear();
  }
  for (PyObject* v : views) {
    Py_XDECREF(v);
  }
  return ok;
}

std::uint64_t SimulatedDevice::mark(std::string* why) {
  (void)why;
  const std::lock_guard<std::mutex> lock(mutex_);
  const std::uint64_t id = next_mark_++;
  mark_work_[id] = work_;
  marks_[id] = std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
                   .count();
  return id;
}

double SimulatedDevice::between(std::uint64_t start, std::uint64_t end) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto a = marks_.find(start);
  const auto b = marks_.find(end);
  if (a == marks_.end() || b == marks_.end()) {
    return -1.0;
  }
  return static_cast<double>(b->second - a->second) / 1e6;
}

void SimulatedDevice::drop_mark(std::uint64_t mark) {
  const std::lock_guard<std::mutex> lock(mutex_);
  marks_.erase(mark);
  mark_work_.erase(mark);
  aside_marks_.erase(mark);
}

bool SimulatedDevice::wait_mark(std::uint64_t mark, std::string* why) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (marks_.count(mark) == 0) {
    ++counts_.bad_accesses;
    *why = "simulated device: a wait for a mark that is not there";
    return false;
  }
  ++counts_.mark_waits;
  if (const auto aside = aside_marks_.find(mark); aside != aside_marks_.end()) {
    run_aside(aside->second);  // (a mark of the copy stream: the kernels' work is not waited for)
    return true;
  }
  run_queued();
  waited(mark_work_[mark]);
  return true;
}

void* SimulatedDevice::pinned_alloc(std::size_t bytes, std::string* why) {
  void* p = std::malloc(std::max<std::size_t>(bytes, 1));  // NOLINT(*-no-malloc, *-owning-memory)
  if (p == nullptr) {
    *why = "simulated device: out of page-locked memory";
    return nullptr;
  }
  const std::lock_guard<std::mutex> lock(mutex_);
  pinned_[p] = bytes;
  return p;
}

void SimulatedDevice::pinned_free(void* memory) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto found = pinned_.find(memory);
  if (found == pinned_.end()) {
    ++counts_.bad_accesses;
    return;
  }
  const auto* start = static_cast<const char*>(memory);
  for (const Queued& q : queued_) {
    const auto* p = static_cast<const char*>(q.pinned);
    if (p >= start && p < start + found->second) {
      ++counts_.bad_accesses;  // given back with a copy still queued on it
    }
  }
  const std::size_t before = aside_.size();
  aside_.erase(std::remove_if(aside_.begin(), aside_.end(),
                              [&](const auto& a) {
                                const auto* p = static_cast<const char*>(a.second.pinned);
                                return p >= start && p < start + found->second;
                              }),
               aside_.end());
  counts_.bad_accesses += before - aside_.size();
  run_queued();
  pinned_.erase(found);
  std::free(memory);  // NOLINT(*-no-malloc)
}

bool SimulatedDevice::inside_pinned(const void* memory, std::size_t bytes) const {
  auto it = pinned_.upper_bound(memory);
  if (it == pinned_.begin()) {
    return false;
  }
  --it;
  const auto* start = static_cast<const char*>(it->first);
  const auto* p = static_cast<const char*>(memory);
  return p >= start && static_cast<std::size_t>(p - start) + bytes <= it->second;
}

bool SimulatedDevice::queue_to_device(std::uint64_t dst, const void* pinned, std::size_t bytes,
                                      std::string* why) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (!inside(dst, bytes) || !inside_pinned(pinned, bytes)) {
    ++counts_.bad_accesses;
    *why = "simulated device: a queued copy outside any allocation";
    return false;
  }
  queued_.push_back(Queued{true, dst, const_cast<void*>(pinned),  // NOLINT(*-const-cast)
                           bytes, digest(pinned, bytes)});
  ++counts_.staged_to_device;
  return true;
}

bool SimulatedDevice::queue_to_host(void* pinned, std::uint64_t src, std::size_t bytes,
                                    std::string* why) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (!inside(src, bytes) || !inside_pinned(pinned, bytes)) {
    ++counts_.bad_accesses;
    *why = "simulated device: a queued copy outside any allocation";
    return false;
  }
  std::memset(pinned, kGarbage, bytes);
  queued_.push_back(Queued{false, src, pinned, bytes, 0});
  ++counts_.staged_to_host;
  return true;
}

void SimulatedDevice::run_queued() {
  run_aside(kernels_wait_aside_);
  for (const Queued& q : queued_) {
    if (!q.to_device) {
      std::memcpy(q.pinned, host_pointer(q.address), q.bytes);
      continue;
    }
    if (digest(q.pinned, q.bytes) != q.digest) {
      ++counts_.bad_accesses;  // the host wrote the buffer before the copy from it ran
    }
    std::memcpy(host_pointer(q.address), q.pinned, q.bytes);
  }
  queued_.clear();
}

std::uint64_t SimulatedDevice::make_graph(const std::vector<GraphLaunch>& launches,
                                          std::string* why) {
  if (launches.empty()) {
    *why = "simulated device: an empty graph";
    return 0;
  }
  const std::lock_guard<std::mutex> lock(mutex_);
  ++counts_.graphs_made;
  const std::uint64_t id = next_graph_++;
  graphs_[id] = launches;
  return id;
}

bool SimulatedDevice::run_graph(std::uint64_t graph, std::string* why) {
  std::vector<GraphLaunch> launches;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto found = graphs_.find(graph);
    if (found == graphs_.end()) {
      ++counts_.bad_accesses;
      *why = "simulated device: a run of a graph that is not there";
      return false;
    }
    ++counts_.graph_runs;
    ++work_;
    launches = found->second;
  }
  for (const GraphLaunch& l : launches) {
    if (!launch(l.function, l.grid, l.block, l.args, why)) {
      return false;
    }
  }
  return true;
}

void SimulatedDevice::drop_graph(std::uint64_t graph) {
  const std::lock_guard<std::mutex> lock(mutex_);
  graphs_.erase(graph);
}

SimulatedCounts SimulatedDevice::counts() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

void SimulatedDevice::waited(std::uint64_t work) {
  done_work_ = std::max(done_work_, work);
  if (work == work_ && work_ > idle_at_) {
    ++counts_.stalls;
    idle_at_ = work_;
  }
}

bool SimulatedDevice::copies_aside() const {
  return cuda_copy_stream().load() &&
         const_cast<PinnedCopies&>(copies_).staging();  // NOLINT(*-const-cast)
}

std::uint64_t SimulatedDevice::alloc_aside(std::size_t bytes, std::string* why) {
  return alloc(bytes, why);  // (memory is ordered for every stream here)
}

bool SimulatedDevice::copy_to_device_aside(std::uint64_t dst, const void* src, std::size_t bytes,
                                           std::string* why) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!inside(dst, bytes)) {
      ++counts_.bad_accesses;
      *why = "simulated device: a copy to memory outside any allocation";
      return false;
    }
    ++counts_.to_device;
    counts_.to_device_bytes += bytes;
  }
  return copies_.to_device_aside(dst, src, bytes, why);
}

bool SimulatedDevice::queue_to_device_aside(std::uint64_t dst, const void* pinned,
                                            std::size_t bytes, std::string* why) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto a = allocation_of(dst);
  if (a == live_.end() || dst - a->first + bytes > a->second || !inside_pinned(pinned, bytes)) {
    ++counts_.bad_accesses;
    *why = "simulated device: a copy aside outside any allocation";
    return false;
  }
  if (const auto used = last_use_.find(a->first);
      used != last_use_.end() && used->second > done_work_) {
    ++counts_.bad_accesses;  // a kernel not known done may still use the memory
  }
  aside_.emplace_back(++aside_queued_,
                      Queued{true, dst, const_cast<void*>(pinned),  // NOLINT(*-const-cast)
                             bytes, digest(pinned, bytes)});
  ++counts_.staged_to_device;
  ++counts_.staged_aside;
  if (work_ > done_work_) {
    ++counts_.overlapped;
  }
  return true;
}

std::uint64_t SimulatedDevice::mark_aside(std::string* why) {
  const std::uint64_t id = mark(why);
  const std::lock_guard<std::mutex> lock(mutex_);
  mark_work_.erase(id);
  aside_marks_[id] = aside_queued_;
  return id;
}

bool SimulatedDevice::wait_aside(std::uint64_t mark, std::string* why) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto found = aside_marks_.find(mark);
  if (found == aside_marks_.end()) {
    ++counts_.bad_accesses;
    *why = "simulated device: a wait for a copy-stream mark that is not there";
    return false;
  }
  kernels_wait_aside_ = std::max(kernels_wait_aside_, found->second);
  return true;
}

std::uint64_t SimulatedDevice::work_queued() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return work_;
}

std::uint64_t SimulatedDevice::work_done() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return done_work_;
}

void SimulatedDevice::run_aside(std::uint64_t serial) {
  std::size_t ran = 0;
  for (; ran < aside_.size() && aside_[ran].first <= serial; ++ran) {
    const Queued& q = aside_[ran].second;
    if (digest(q.pinned, q.bytes) != q.digest) {
      ++counts_.bad_accesses;  // the host wrote the buffer before the copy from it ran
    }
    std::memcpy(host_pointer(q.address), q.pinned, q.bytes);
  }
  aside_.erase(aside_.begin(), aside_.begin() + static_cast<std::ptrdiff_t>(ran));
}

std::map<std::uint64_t, std::size_t>::const_iterator SimulatedDevice::allocation_of(
    std::uint64_t address) const {
  auto it = live_.upper_bound(address);
  if (it == live_.begin()) {
    return live_.end();
  }
  --it;
  return address - it->first < std::max<std::size_t>(it->second, 1) ? it : live_.end();
}

void SimulatedDevice::note_uses(const std::vector<std::uint64_t>& words) {
  std::set<std::uint64_t> used;
  for (const std::uint64_t w : words) {
    if (const auto a = allocation_of(w); a != live_.end()) {
      used.insert(a->first);
    }
  }
  for (const std::uint64_t a : used) {
    last_use_[a] = work_;
    const std::size_t bytes = live_.at(a);
    for (const auto& [serial, q] : aside_) {
      if (q.address >= a && q.address < a + bytes) {
        ++counts_.bad_accesses;  // a kernel on memory whose copy aside it did not wait for
        break;
      }
    }
  }
}

void SimulatedDevice::reset_counts() {
  const std::lock_guard<std::mutex> lock(mutex_);
  counts_ = SimulatedCounts{};
}

std::size_t SimulatedDevice::live_bytes() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::size_t total = 0;
  for (const auto& [address, bytes] : live_) {
    total += bytes;
  }
  return total;
}

std::atomic<bool>& cuda_simulate() {
  static std::atomic<bool> on{[] {
    const char* v = std::getenv("SOT_CUDA_SIMULATE");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }()};
  return on;
}

SimulatedDevice& simulated_device() {
  static auto* device = new SimulatedDevice();  // NOLINT(*-owning-memory): lives for the process
  return *device;
}

}  // namespace sot::graph
