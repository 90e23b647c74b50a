#include "graph/backends/cuda/residency.hpp"

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <unordered_set>
#include <utility>

#include "core/array_fields.hpp"
#include "core/call_options.hpp"
#include "core/device_arrays.hpp"
#include "core/loaded_module.hpp"
#include "graph/backends/cuda/cuda_kernel.hpp"
#include "graph/backends/cuda/device_copy.hpp"
#include "graph/backends/cuda/device_library.hpp"
#include "graph/backends/cuda/late_scalars.hpp"
#include "graph/backends/cuda/step_replay.hpp"
#include "graph/ir/subgraph.hpp"
#include "graph/rules/fp_state.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

struct Known {
  PyObject* ndarray = nullptr;
  PyObject* generic = nullptr;
  PyObject* getitem = nullptr;
  PyObject* setitem = nullptr;
  PyObject* attrgetter = nullptr;
};

const Known& known() {
  static const Known k = [] {
    Known out;
    out.ndarray = py::object(loaded_module("numpy").attr("ndarray")).release().ptr();
    out.generic = py::object(loaded_module("numpy").attr("generic")).release().ptr();
    const py::module_ op = loaded_module("operator");
    out.getitem = py::object(op.attr("getitem")).release().ptr();
    out.setitem = py::object(op.attr("setitem")).release().ptr();
    out.attrgetter = py::object(op.attr("attrgetter")).release().ptr();
    return out;
  }();
  return k;
}

// The bytes an ndarray's elements lie in, [low, high) (empty for no elements; all memory where
// its item size cannot be read).
struct ByteSpan {
  std::uintptr_t low = 0;
  std::uintptr_t high = 0;
  bool meets(const ByteSpan& o) const { return low < o.high && o.low < high; }
  static ByteSpan all() { return {0, std::numeric_limits<std::uintptr_t>::max()}; }
};

ByteSpan byte_span(PyObject* a) {
  const ArrayFields* f = array_fields(a);
  auto low = reinterpret_cast<std::intptr_t>(f->data);
  std::intptr_t high = low;
  for (int d = 0; d < f->nd; ++d) {
    if (f->dimensions[d] == 0) {
      return {};
    }
    const std::intptr_t reach = (f->dimensions[d] - 1) * f->strides[d];
    (reach < 0 ? low : high) += reach;
  }
  PyObject* item = PyObject_GetAttrString(a, "itemsize");
  const Py_ssize_t size = item != nullptr ? PyLong_AsSsize_t(item) : -1;
  Py_XDECREF(item);
  if (size < 0) {
    PyErr_Clear();
    return ByteSpan::all();
  }
  return {static_cast<std::uintptr_t>(low), static_cast<std::uintptr_t>(high + size)};
}

// What a run abandoned because its flag word said so raises, for its outermost run to catch.
PyObject* rerun_error() {
  static PyObject* type =
      PyErr_NewException("sot._sot.graph.DeviceRerun", PyExc_Exception, nullptr);
  return type;
}

// Whether `fn` is operator.attrgetter("T") (the graph's `x.T`: a device array's is a view there).
bool transposes(PyObject* fn) {
  static auto* seen = new std::unordered_map<PyObject*, bool>();  // (each held: its address kept)
  const auto found = seen->find(fn);
  if (found != seen->end()) {
    return found->second;
  }
  bool is_t = false;
  if (PyObject_IsInstance(fn, known().attrgetter) == 1) {
    const py::str text = py::repr(py::handle(fn));
    is_t = text.cast<std::string>() == "operator.attrgetter('T')";
  }
  PyErr_Clear();
  constexpr std::size_t kMostSeen = 4096;
  if (seen->size() < kMostSeen) {
    Py_INCREF(fn);
    seen->emplace(fn, is_t);
  }
  return is_t;
}

// Whether `v` is an ndarray a run made (C-contiguous, aligned, owning its memory: no view of the
// caller's).
bool fresh_array(PyObject* v) {
  if (Py_TYPE(v) != reinterpret_cast<PyTypeObject*>(known().ndarray)) {
    return false;
  }
  const ArrayFields* f = array_fields(v);
  constexpr int kNeeded = kArrayCContiguous | kArrayAligned;
  return (f->flags & kNeeded) == kNeeded && f->base == nullptr;
}

// The dtype of a native-order array the kernels know, or nullopt.
std::optional<DType> native_dtype(PyObject* a) {
  const py::object dtype = py::reinterpret_steal<py::object>(PyObject_GetAttrString(a, "dtype"));
  if (!dtype) {
    PyErr_Clear();
    return std::nullopt;
  }
  try {
    if (!dtype.attr("isnative").cast<bool>()) {
      return std::nullopt;
    }
    const auto t = dtype_from_name(dtype.attr("name").cast<std::string>());
    if (t && dtype.attr("itemsize").cast<int>() == itemsize(*t)) {
      return t;
    }
  } catch (py::error_already_set&) {
    PyErr_Clear();
  }
  return std::nullopt;
}

}  // namespace

Residency::Residency(DeviceApi& device, std::shared_ptr<DevicePool> pool)
    : device_(device), pool_(std::move(pool)) {}

Residency::~Residency() {
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  if (abandoned_) {
    // (nothing the device wrote reaches the host: the run runs again there; what it wrote into
    // blocks the caller holds is put back, before_write)
    put_back();
    for (const std::weak_ptr<DeviceBlock>& w : tracked_) {
      if (const auto b = w.lock(); b && !b->outlives_run) {
        b->host_valid = true;
      }
    }
  } else if (!flush()) {
    PyErr_WriteUnraisable(nullptr);
  }
  // (a block that outlives the run - a device array the caller holds - is tracked again by the
  // next run that gives it a host form: until then nothing keeps its two copies coherent)
  for (const std::weak_ptr<DeviceBlock>& w : tracked_) {
    if (const auto b = w.lock()) {
      b->tracked = false;
    }
  }
  if (!timings_.empty()) {
    std::string why;
    if (device_.synchronize(&why)) {
      settle_times();
    }
  }
  mirrors_.clear();
  for (const std::weak_ptr<LateScalar>& w : lates_) {
    if (const auto late = w.lock()) {
      late->run = nullptr;  // (read or run without the run from now on)
    }
  }
  late_steps_.clear();  // (dropped before the error is set again)
  lates_.clear();
  decide_ = nullptr;
  ahead_failure_.clear();
  if (flags_ != 0) {
    pool_->give(flags_, sizeof(unsigned));
  }
  PyErr_Restore(type, value, tb);
}

std::uint64_t Residency::flag_word(std::string* why) {
  if (flags_ == 0) {
    flags_ = pool_->take(sizeof(unsigned), why);
    if (flags_ != 0 && !device_.zero(flags_, sizeof(unsigned), why)) {
      pool_->give(flags_, sizeof(unsigned));
      flags_ = 0;
    }
  }
  return flags_;
}

bool Residency::check_flags() {
  if (!pending_) {
    return true;
  }
  pending_ = false;
  ++host_work_;
  unsigned word = 0;
  std::string why;
  const bool read =
      device_.synchronize(&why) && device_.copy_to_host(&word, flags_, sizeof word, &why);
  if (read) {
    settle_times();
  }
  if (read && reported_fe_flags(fe_flags_of(word)) == 0) {
    return true;
  }
  // (a device that failed to answer: the run goes to the host too)
  abandoned_ = true;
  PyErr_SetString(rerun_error(), read ? "a floating-point error the error state reports"
                                      : ("the device failed: " + why).c_str());
  return false;
}

bool Residency::check_flags_before_read() {
  if (optimistic_ && pending_ && ++unchecked_reads_ % kFlagBatch != 0) {
    return true;
  }
  return check_flags();
}

void Residency::time(std::uint64_t start, std::uint64_t end, double* seconds) {
  timings_.push_back(Timing{start, end, seconds});
}

void Residency::settle_times() {
  for (const Timing& t : timings_) {
    const double ms = device_.between(t.start, t.end);
    if (ms >= 0) {
      *t.seconds += ms / 1e3;
    }
    device_.drop_mark(t.start);
    device_.drop_mark(t.end);
  }
  timings_.clear();
}

LaunchFlags::LaunchFlags(Residency& r, Staging& staging, bool own, std::string* why)
    : r_(r), own_(own || !r.optimistic()) {
  if (!own_) {
    address_ = r.flag_word(why);
    return;
  }
  address_ = staging.take(sizeof(unsigned), why);
  if (address_ != 0 && !r.device().zero(address_, sizeof(unsigned), why)) {
    address_ = 0;
  }
}

std::optional<unsigned> LaunchFlags::settle(std::string* why) {
  if (!own_) {
    r_.queued();
    return 0U;
  }
  unsigned word = 0;
  if (!r_.device().synchronize(why) ||
      !r_.device().copy_to_host(&word, address_, sizeof word, why)) {
    return std::nullopt;
  }
  r_.settle_times();
  return word;
}

std::atomic<bool>& cuda_profile() {
  static std::atomic<bool> on{false};
  return on;
}

bool Residency::leave_optimism() {
  // (the caller may see something next: the steps run ahead decided, the late steps run first)
  if (!decide_ahead(nullptr) || !settle_late(nullptr) || !check_flags()) {
    return false;
  }
  optimistic_ = false;
  return true;
}

int Residency::rerun_now() {
  PyErr_Clear();
  PyErr_SetString(rerun_error(), "a floating-point error the error state reports");
  return -1;
}

bool Residency::rerun_on_host() {
  if (!abandoned_ && !late_steps_.empty()) {
    PyObject *type = nullptr, *value = nullptr, *trace = nullptr;
    PyErr_Fetch(&type, &value, &trace);
    ahead_ = false;  // (no step is run ahead any more: every step left came before the failure)
    if (settle_late(nullptr)) {
      PyErr_Restore(type, value, trace);
    } else {
      Py_XDECREF(type), Py_XDECREF(value), Py_XDECREF(trace);
    }
  }
  if (!abandoned_ || PyErr_ExceptionMatches(rerun_error()) == 0) {
    return false;
  }
  PyErr_Clear();
  return true;
}

bool Residency::takes_as_is(PyObject* fn, PyObject* first) {
  if (subgraph_of(py::handle(fn)) != nullptr) {
    return true;
  }
  if (first == nullptr || device_value_of(first) == nullptr) {
    return false;
  }
  const Known& k = known();
  return fn == k.getitem || fn == k.setitem || transposes(fn);
}

PyObject* Residency::host_form(PyObject* v) {
  DeviceValue* d = device_value_of(v);
  if (d == nullptr) {
    PyObject* h = settled(v);  // (a late scalar: its value)
    Py_XINCREF(h);
    return h;
  }
  ++host_work_;
  if (!leave_optimism()) {
    return nullptr;
  }
  PyObject* h = host_array(*d);
  if (h != nullptr) {
    track(d->block);
  }
  return h;
}

PyObject* Residency::try_run(PyObject* fn, PyObject* const* args, std::size_t nargs,
                             PyObject* kwnames) {
  PyObject* result = run_library_op(*this, fn, args, nargs, kwnames);
  library_steps_ += result != nullptr ? 1 : 0;
  return result;
}

std::unique_ptr<StepRecord> Residency::record_steps() {
  return record_device_steps(*this);
}

void Residency::after_host_step(bool mutates, PyObject* written) {
  ++host_work_;
  if (!mutates) {
    return;
  }
  // (an exact ndarray written: only blocks whose host memory meets its bytes changed; a subclass
  // may write other arrays, as a masked array its mask)
  const ByteSpan span =
      written != nullptr && Py_TYPE(written) == reinterpret_cast<PyTypeObject*>(known().ndarray)
          ? byte_span(written)
          : ByteSpan::all();
  for (const std::weak_ptr<DeviceBlock>& w : tracked_) {
    if (const auto b = w.lock();
        b && b->origin != nullptr && b->host_valid && span.meets(byte_span(b->origin))) {
      b->device_valid = false;  // (the device copy is read again when a kernel needs it)
    }
  }
  write_back_externals();
}

void Residency::write_back_externals() {
  // The caller's memory is the device's: written through at once (two of the caller's arrays may
  // share memory, and each is read on the device as it is).
  if (externals_.empty()) {
    return;
  }
  for (const std::weak_ptr<DeviceBlock>& w : tracked_) {
    if (const auto b = w.lock(); b && b->owner != nullptr && !b->device_valid && b->host_valid) {
      std::string why;
      if (b->readonly) {
        b->device_valid = true;  // (NumPy refused every write to its host copy too)
      } else if (!make_device_current(*b, &why)) {
        PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                         "sot: a device array's host copy could not be written back: %s",
                         why.c_str());
      }
    }
  }
}

std::shared_ptr<DeviceValue> Residency::mirror(PyObject* a) {
  if (Py_TYPE(a) != reinterpret_cast<PyTypeObject*>(known().ndarray)) {
    return nullptr;
  }
  const auto found = mirrors_.find(a);
  if (found != mirrors_.end()) {
    return found->second;
  }
  // The origin of a block the device made (a host step read it): that block, not a second one.
  if (const auto made = origins_.find(a); made != origins_.end()) {
    if (auto block = made->second.lock()) {
      return whole_value(std::move(block));
    }
    origins_.erase(made);
  }
  const ArrayFields* f = array_fields(a);
  constexpr int kNeeded = kArrayCContiguous | kArrayAligned;
  if ((f->flags & kNeeded) != kNeeded) {
    return nullptr;
  }
  const std::optional<DType> t = native_dtype(a);
  if (!t) {
    return nullptr;
  }
  auto block = std::make_shared<DeviceBlock>(
      device_, pool_, std::vector<std::int64_t>(f->dimensions, f->dimensions + f->nd), *t);
  if (block->bytes == 0 || overlaps_an_origin(f->data, block->bytes)) {
    return nullptr;  // (two device copies of one memory could not both be current)
  }
  Py_INCREF(a);
  block->origin = a;
  block->host_valid = true;
  track(block);
  auto value = whole_value(std::move(block));
  mirrors_.emplace(a, value);
  return value;
}

bool Residency::overlaps_an_origin(const char* data, std::size_t bytes) const {
  for (const std::weak_ptr<DeviceBlock>& w : tracked_) {
    const auto b = w.lock();
    if (b && b->origin != nullptr) {
      const char* start = array_fields(b->origin)->data;
      if (data < start + b->bytes && start < data + bytes) {
        return true;
      }
    }
  }
  return false;
}

void Residency::wrote(DeviceBlock& block) {
  block.device_valid = true;
  if (block.origin != nullptr || block.host_valid) {
    block.host_valid = false;
    dirty_ = true;
  }
  if (block.owner == nullptr) {
    return;
  }
  // (the caller's arrays may share memory: none of their host copies is trusted after a write)
  for (const std::weak_ptr<DeviceBlock>& w : tracked_) {
    if (const auto b = w.lock(); b && b->owner != nullptr && b->origin != nullptr) {
      b->host_valid = false;
      dirty_ = true;
    }
  }
}

void Residency::track(const std::shared_ptr<DeviceBlock>& block) {
  if (!block->tracked) {
    block->tracked = true;
    tracked_.push_back(block);
    if (block->origin != nullptr && mirrors_.count(block->origin) == 0) {
      origins_[block->origin] = block;
    }
  }
}

bool Residency::flush() {
  if (!dirty_) {
    return true;
  }
  if (!leave_optimism()) {
    return false;
  }
  std::vector<std::weak_ptr<DeviceBlock>> live;
  bool ok = true;
  for (const std::weak_ptr<DeviceBlock>& w : tracked_) {
    const auto b = w.lock();
    if (!b) {
      continue;
    }
    live.push_back(b);
    if (ok && b->origin != nullptr && !b->host_valid) {
      ok = make_host_current(*b);
    }
  }
  tracked_ = std::move(live);
  dirty_ = !ok;
  return ok;
}

PyObject* Residency::take_external(PyObject* v) {
  for (const auto& [wrapper, owner] : externals_) {
    if (owner.ptr() == v) {
      Py_INCREF(wrapper);
      return wrapper;
    }
  }
  std::string why;
  const std::shared_ptr<DeviceValue> value = external_value(device_, pool_, v, &why);
  if (!value) {
    return nullptr;  // (the run's host steps take it as it is)
  }
  try {
    py::object wrapper = wrap(value);
    externals_.emplace(wrapper.ptr(), py::reinterpret_borrow<py::object>(v));
    if (!as_cupy_ && std::string(Py_TYPE(v)->tp_name).rfind("cupy.", 0) == 0) {
      as_cupy_ = loaded_module("cupy").attr("asarray");
    }
    return wrapper.release().ptr();
  } catch (py::error_already_set&) {
    PyErr_Clear();
    return nullptr;
  }
}

void Residency::mirror_inputs(Frame& frame, bool outermost) {
  for (const int id : frame.program().inputs) {
    PyObject* v = frame.get(id);
    if (v == nullptr) {
      continue;
    }
    if (outermost) {
      given_.insert(v);
    }
    if (DeviceValue* d = device_value_of(v)) {
      if (outermost) {  // (a body's device arrays are the run's own)
        d->block->outlives_run = true;
        device_inputs_ = true;
        ++inputs_on_device_;
      }
      continue;
    }
    if (outermost && Py_TYPE(v) != reinterpret_cast<PyTypeObject*>(known().ndarray) &&
        core::may_be_device_array(v)) {
      if (PyObject* wrapper = take_external(v)) {
        frame.set_owned(id, wrapper);
        device_inputs_ = true;
        ++inputs_on_device_;
      }
      continue;
    }
    if (auto m = mirror(v)) {
      try {
        frame.set_owned(id, wrap(m).release().ptr());
      } catch (py::error_already_set&) {
        PyErr_Clear();  // (the input stays the host array it is)
      }
    }
  }
}

PyObject* Residency::output(PyObject* v) {
  v = settled(v);  // (a late scalar: its value, settled by finish)
  if (v == nullptr) {
    return nullptr;
  }
  if (as_cupy_ && PyObject_IsInstance(v, known().generic) == 1) {
    // (a NumPy scalar, a reduction's: CuPy gives a 0-d array, on the device)
    ++results_on_device_;
    Py_INCREF(v);
    return as_callers_kind(v);
  }
  PyErr_Clear();
  if (device_value_of(v) == nullptr) {
    if (device_results() && fresh_array(v) && given_.count(v) == 0) {
      return device_copy(v);  // (made on the host: the first run of a group, a host step)
    }
    Py_INCREF(v);
    return v;
  }
  const DeviceBlock& b = *device_value_of(v)->block;
  if (!device_results() || (b.origin != nullptr && mirrors_.count(b.origin) != 0)) {
    return host_form(v);  // (a view of the caller's host array stays one)
  }
  ++results_on_device_;
  if (const auto found = externals_.find(v); found != externals_.end()) {
    return py::object(found->second).release().ptr();  // (the caller's own array, whole)
  }
  if (!leave_optimism()) {  // (the caller may read it at once)
    return nullptr;
  }
  Py_INCREF(v);
  return as_callers_kind(v);
}

PyObject* Residency::device_copy(PyObject* a) {
  const std::optional<DType> t = native_dtype(a);
  std::string why;
  auto block = t ? upload_copy(device_, pool_, a, *t, &why) : nullptr;
  if (!block) {
    Py_INCREF(a);  // (a dtype the device does not hold: the host array it is)
    return a;
  }
  ++results_on_device_;
  return as_callers_kind(wrap_new(whole_value(std::move(block))));
}

PyObject* Residency::as_callers_kind(PyObject* d) {
  if (d == nullptr || !as_cupy_) {
    return d;
  }
  PyObject* out = PyObject_CallOneArg(as_cupy_.ptr(), d);
  Py_DECREF(d);
  return out;
}

bool Residency::device_results() const {
  return device_inputs_ || core::device_results_wanted();
}

PyObject* Residency::finish(PyObject* outputs, std::size_t count) {
  if (outputs == nullptr || !settle_late(nullptr) || !check_flags() || !flush()) {
    Py_XDECREF(outputs);
    return nullptr;
  }
  const bool device_mode = device_results();
  if (count == 1) {
    if (device_value_of(outputs) == nullptr && late_scalar_of(outputs) == nullptr && !device_mode) {
      return outputs;
    }
    PyObject* h = output(outputs);
    Py_DECREF(outputs);
    return h;
  }
  // (several outputs: the exact tuple the frame made)
  const Py_ssize_t n = PyTuple_GET_SIZE(outputs);
  bool any = false;
  for (Py_ssize_t i = 0; i < n && !any; ++i) {
    PyObject* v = PyTuple_GET_ITEM(outputs, i);
    any = device_mode || device_value_of(v) != nullptr || late_scalar_of(v) != nullptr;
  }
  if (!any) {
    return outputs;
  }
  PyObject* out = PyTuple_New(n);
  for (Py_ssize_t i = 0; out != nullptr && i < n; ++i) {
    PyObject* h = output(PyTuple_GET_ITEM(outputs, i));
    if (h == nullptr) {
      Py_CLEAR(out);
      break;
    }
    PyTuple_SET_ITEM(out, i, h);
  }
  Py_DECREF(outputs);
  return out;
}

Residency* current_residency() {
  return dynamic_cast<Residency*>(current_value_home());
}

bool Residency::before_write(const std::shared_ptr<DeviceBlock>& block) {
  if (!decide_ahead(block.get())) {
    return false;
  }
  // (a block the caller may see: the late steps before the write run first, so that an error of
  // theirs comes before it, as in NumPy)
  if ((block->outlives_run || block->origin != nullptr) && !settle_late(nullptr)) {
    return false;
  }
  if (!block->outlives_run || !optimistic_ || backups_.count(block.get()) != 0) {
    return true;
  }
  // A copy on the device to put back if the run is abandoned (no wait: the run stays optimistic);
  // where none can be made, the flags are read now.
  std::string why;
  auto backup =
      whole_value(std::make_shared<DeviceBlock>(device_, pool_, block->shape, block->dtype));
  if (!make_device_current(*block, &why) || !make_device_current(*backup->block, &why) ||
      !launch_copy(*this, *backup, *whole_value(block), &why)) {
    return leave_optimism();
  }
  backups_.emplace(block.get(), Backup{block, std::move(backup)});
  return true;
}

void Residency::put_back() {
  std::string why;
  for (const auto& [address, b] : backups_) {
    if (!launch_copy(*this, *whole_value(b.block), *b.copy, &why)) {
      PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                       "sot: a device array written by an abandoned run could not be restored: %s",
                       why.c_str());
    }
  }
  if (!backups_.empty() && !device_.synchronize(&why)) {
    PyErr_WarnFormat(PyExc_RuntimeWarning, 1, "sot: the device did not synchronise: %s",
                     why.c_str());
  }
  backups_.clear();
}

}  // namespace sot::graph
