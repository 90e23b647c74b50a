#include "graph/backends/cuda/late_scalars.hpp"

#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "graph/backends/cuda/device_copy.hpp"
#include "graph/backends/cuda/residency.hpp"
#include "graph/exec/program.hpp"
#include "graph/exec/value_home.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

// The error a step run ahead of where its loop ended stops with.
constexpr const char* kPastTheEnd = "sot: a step run ahead of the end of its loop";

PyTypeObject* g_type = nullptr;  // LateScalar (set by bind_late_scalar)

constexpr std::size_t kSlot = 8;    // bytes: any element the kernels make
constexpr std::size_t kPage = 512;  // slots taken at a time

// Page-locked slots of each device's, taken a page at a time and never given back (a few KiB):
// a slot given back while its copy is still queued is safe to hand out again, the next copy into
// it queued after that one, and read only after its own mark.
std::vector<void*>& free_slots(DeviceApi& device) {
  static auto* slots = new std::unordered_map<DeviceApi*, std::vector<void*>>();
  return (*slots)[&device];
}

void* take_slot(DeviceApi& device) {
  std::vector<void*>& slots = free_slots(device);
  if (slots.empty()) {
    std::string why;
    auto* page = static_cast<char*>(device.pinned_alloc(kSlot * kPage, &why));
    if (page == nullptr) {
      return nullptr;
    }
    for (std::size_t k = 0; k < kPage; ++k) {
      slots.push_back(page + (kPage - 1 - k) * kSlot);
    }
  }
  void* slot = slots.back();
  slots.pop_back();
  return slot;
}

// Reads device element `s` (after its run's flags, as read_element reads one): false with an
// error set.
bool read_late_element(LateScalar& s) {
  if (s.run != nullptr) {
    s.run->did_host_work();
    if (!s.run->check_flags_before_read()) {
      return false;
    }
  }
  DeviceApi& device = *s.device;
  std::uint64_t bits = 0;
  const auto item = static_cast<std::size_t>(itemsize(s.dtype));
  std::string why;
  const bool read = s.slot != nullptr
                        ? device.wait_mark(s.mark, &why) && (std::memcpy(&bits, s.slot, item), true)
                        : device.copy_to_host(&bits, s.address, item, &why);
  if (!read) {
    PyErr_Format(PyExc_RuntimeError, "sot: a scalar could not be copied from the device: %s",
                 why.c_str());
    return false;
  }
  try {
    s.value = numpy_scalar(&bits, s.dtype);
  } catch (py::error_already_set& e) {
    e.restore();
    return false;
  }
  s.block.reset();
  if (s.slot != nullptr) {  // (read: the slot and mark given back now)
    free_slots(device).push_back(s.slot);
    device.drop_mark(s.mark);
    s.slot = nullptr;
    s.mark = 0;
  }
  return true;
}

std::shared_ptr<LateScalar> late_of(const py::handle& self) {
  return py::cast<std::shared_ptr<LateScalar>>(self);
}

// The value of late scalar `self` (settled now where it is not yet).
py::object value_of(const py::handle& self) {
  const std::shared_ptr<LateScalar> s = late_of(self);
  if (!settle(*s)) {
    throw py::error_already_set();
  }
  return s->value;
}

// Whether `a` is a number a late step may take: a late scalar, a Python number, a NumPy float.
bool late_operand(PyObject* a, bool* late) {
  if (late_scalar_of(a) != nullptr) {
    *late = true;
    return true;
  }
  return is_python_scalar(a) || is_numpy_float(a);
}

}  // namespace

LateScalar::~LateScalar() {
  if (slot != nullptr) {
    free_slots(*device).push_back(slot);
  }
  if (mark != 0) {
    device->drop_mark(mark);
  }
}

LateScalar* late_scalar_of(PyObject* v) {
  if (g_type == nullptr || Py_TYPE(v) != g_type) {
    return nullptr;
  }
  return py::cast<LateScalar*>(py::handle(v));
}

py::object late_element(Residency& r, std::shared_ptr<DeviceBlock> block, std::uint64_t address,
                        DType dtype) {
  auto s = std::make_shared<LateScalar>();
  s->run = &r;
  s->address = address;
  s->dtype = dtype;
  DeviceApi& device = block->device;
  s->device = &device;
  s->block = std::move(block);
  // (the copy queued after the kernel that makes the element, a mark after it: reading it waits
  // for that kernel only, not for what the host queues meanwhile)
  s->slot = take_slot(device);
  std::string why;
  if (s->slot != nullptr &&
      (!device.queue_to_host(s->slot, address, static_cast<std::size_t>(itemsize(dtype)), &why) ||
       (s->mark = device.mark(&why)) == 0)) {
    free_slots(device).push_back(s->slot);  // (read by a copy out instead)
    s->slot = nullptr;
  }
  r.made_late(s, false);
  return py::cast(s);
}

std::optional<py::object> element_now_or_late(Residency& r,
                                              const std::shared_ptr<DeviceBlock>& block,
                                              std::uint64_t address, DType dtype, bool late_ok) {
  if (late_ok && r.reads_late() && kind(dtype) == 'f') {
    return late_element(r, block, address, dtype);
  }
  return read_element(r, address, dtype);
}

py::object late_step(Residency& r, PyObject* fn, PyObject* const* args, std::size_t nargs) {
  auto s = std::make_shared<LateScalar>();
  s->run = &r;
  s->fn = py::reinterpret_borrow<py::object>(fn);
  for (std::size_t a = 0; a < nargs; ++a) {
    s->args.push_back(py::reinterpret_borrow<py::object>(args[a]));
  }
  r.made_late(s, true);
  return py::cast(s);
}

bool settle(LateScalar& s) {
  if (s.value) {
    return true;
  }
  if (!s.fn) {
    return read_late_element(s);
  }
  if (s.run != nullptr && !s.run->settle_late(&s)) {
    return false;
  }
  // (run by settle_late, or here: its run ended, or a settling in progress ran the steps before)
  return s.value ? true : run_late_step(s);
}

bool run_late_step(LateScalar& s) {
  // (fn and args kept: a nested settling, the loop's tests read in the middle, may run s first)
  const py::object fn = s.fn;
  const std::vector<py::object> args = s.args;
  std::vector<PyObject*> values;
  for (const py::object& a : args) {
    LateScalar* late = late_scalar_of(a.ptr());
    if (late != nullptr && !settle(*late)) {
      return false;
    }
    values.push_back(late != nullptr ? late->value.ptr() : a.ptr());
  }
  if (s.value) {
    return true;
  }
  const auto call = [&] {
    const ValueHomeScope host(nullptr);
    return PyObject_Vectorcall(fn.ptr(), values.data(), values.size(), nullptr);
  };
  // As run_step runs a scalar step: where NumPy flags nothing, its result (no warning, nothing
  // changed); else a host step under the caller's error state, the device's work seen first.
  PyObject* r = call_unflagged(call);
  if (r == nullptr) {
    if (s.run != nullptr && !s.run->before_host_step()) {
      return false;
    }
    if (s.value) {
      return true;  // (run meanwhile, where the loop's tests were read)
    }
    r = call();
    if (s.run != nullptr) {
      s.run->after_host_step(false);
    }
    if (r == nullptr) {
      return false;
    }
  }
  s.value = py::reinterpret_steal<py::object>(r);
  s.fn = py::object();
  s.args.clear();
  return true;
}

PyObject* Residency::settled(PyObject* v) {
  LateScalar* s = late_scalar_of(v);
  if (s == nullptr) {
    return v;
  }
  return settle(*s) ? s->value.ptr() : nullptr;
}

PyObject* Residency::defer(PyObject* fn, PyObject* const* args, std::size_t nargs) {
  if (!reads_late()) {
    return nullptr;
  }
  bool late = false;
  for (std::size_t a = 0; a < nargs; ++a) {
    if (!late_operand(args[a], &late)) {
      return nullptr;
    }
  }
  if (!late) {
    return nullptr;
  }
  if (!settle_some_late()) {
    return nullptr;  // (with the error of a step before: it comes first)
  }
  try {
    return late_step(*this, fn, args, nargs).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  }
}

void Residency::late_reads(int delta) {
  // (SOT_CUDA_RUN_AHEAD=0: every scalar read at once, each loop step's tests before the next step,
  // for comparisons)
  static const bool on = [] {
    const char* v = std::getenv("SOT_CUDA_RUN_AHEAD");
    return v == nullptr || std::string(v) != "0";
  }();
  late_depth_ += on ? delta : 0;
}

void Residency::made_late(const std::shared_ptr<LateScalar>& s, bool step) {
  ++lates_made_;
  constexpr std::size_t kPrune = 64;
  if (lates_.size() >= kPrune) {
    lates_.erase(std::remove_if(lates_.begin(), lates_.end(),
                                [](const std::weak_ptr<LateScalar>& w) { return w.expired(); }),
                 lates_.end());
  }
  lates_.push_back(s);
  if (step) {
    s->order = lates_made_;
    late_steps_.push_back(s);
  }
}

bool Residency::settle_some_late() {
  // (steps nothing reads, `r = s / d` in a loop whose tests are not late, run a batch at a time:
  // what they keep alive, device blocks and page-locked slots, stays bounded)
  constexpr std::size_t kMostPending = 64;
  return late_steps_.size() < kMostPending || settle_late(nullptr);
}

bool Residency::settle_late(const LateScalar* through) {
  if (settling_) {
    return true;
  }
  // (in a step run ahead: its loop's tests read first, which run the steps before them in order;
  // a step of the loop's tests that ran here, flagged, would read them in the middle of its run)
  if (!decide_ahead(nullptr)) {
    return false;
  }
  settling_ = true;
  bool ok = true;
  while (ok && !late_steps_.empty() &&
         (through == nullptr || late_steps_.front()->order <= through->order)) {
    const std::shared_ptr<LateScalar> s = late_steps_.front();
    late_steps_.pop_front();
    ok = s->value || run_late_step(*s);
  }
  settling_ = false;
  return ok;
}

bool Residency::ahead_begin(const std::vector<PyObject*>& tests,
                            const std::function<int()>& decide) {
  if (ahead_ || !optimistic_ || abandoned_ ||
      std::none_of(tests.begin(), tests.end(),
                   [](PyObject* t) { return late_scalar_of(t) != nullptr; })) {
    return false;
  }
  ahead_ = true;
  ahead_answer_ = kUndecided;
  decide_ = decide;
  ahead_lates_ = lates_made_;
  ahead_blocks_ = next_block_serial();
  return true;
}

bool Residency::decide_ahead(const DeviceBlock* block) {
  if (ahead_ && (ahead_answer_ == 0 || ahead_answer_ == -1)) {
    // (the step goes no further however often it tries: the first error may have been swallowed)
    ahead_failure_.restore(kPastTheEnd);
    return false;
  }
  if (!ahead_ || ahead_answer_ != kUndecided) {
    return true;  // (no step run ahead, its tests read, or being read now)
  }
  if (block != nullptr && block->serial >= ahead_blocks_ && block->origin == nullptr &&
      !block->outlives_run) {
    return true;  // (a block the step made itself: nothing else sees it)
  }
  ahead_answer_ = kDeciding;
  ahead_answer_ = decide_();
  if (ahead_answer_ == 0) {
    PyErr_SetString(PyExc_RuntimeError, kPastTheEnd);
  }
  if (ahead_answer_ != 1) {
    ahead_failure_.keep();
  }
  return ahead_answer_ == 1;
}

int Residency::ahead_end() {
  int answer = ahead_answer_;
  const bool interrupted =
      PyErr_Occurred() != nullptr && PyErr_ExceptionMatches(PyExc_KeyboardInterrupt) != 0;
  if (abandoned_ || interrupted) {
    // (the flags said an error, maybe of the step run ahead: the whole run goes to the host, its
    // tests not read here, so nothing of theirs is said twice; an interrupt stands)
    answer = interrupted ? -1 : rerun_now();
  } else if (answer == kUndecided) {
    PyObject *type = nullptr, *value = nullptr, *trace = nullptr;
    PyErr_Fetch(&type, &value, &trace);  // (the step's error: its own where the loop goes on)
    ahead_answer_ = kDeciding;
    answer = decide_();
    if (answer == 1) {
      PyErr_Restore(type, value, trace);
    } else {
      Py_XDECREF(type), Py_XDECREF(value), Py_XDECREF(trace);
    }
    if (abandoned_ && answer != -1) {
      answer = rerun_now();
    }
  } else if (answer == 0) {
    PyErr_Clear();  // (ours: decide_ahead stopped the step where the loop ended)
  } else if (answer == -1) {
    PyErr_Clear();
    ahead_failure_.restore(kPastTheEnd);  // (the tests' own error, whatever the step did after)
  }
  ahead_ = false;
  decide_ = nullptr;
  ahead_failure_.clear();
  if (answer != 1) {
    // (the step's late steps never run: the loop never reached it)
    while (!late_steps_.empty() && late_steps_.back()->order > ahead_lates_) {
      late_steps_.back()->run = nullptr;
      late_steps_.pop_back();
    }
  }
  return answer;
}

void bind_late_scalar(py::module_& m) {
  py::class_<LateScalar, std::shared_ptr<LateScalar>> cls(
      m, "LateScalar",
      "A NumPy scalar a cuda run reads late (a while loop's test read while the device runs the "
      "next step): any use reads it.");
  cls.def("__float__", [](const py::object& self) { return py::float_(value_of(self)); })
      .def("__int__", [](const py::object& self) { return py::int_(value_of(self)); })
      .def("__index__",
           [](const py::object& self) {
             PyObject* i = PyNumber_Index(value_of(self).ptr());
             if (i == nullptr) {
               throw py::error_already_set();
             }
             return py::reinterpret_steal<py::object>(i);
           })
      .def("__bool__", [](const py::object& self) { return py::bool_(value_of(self)); })
      .def("__getattr__",
           [](const py::object& self, const std::string& name) -> py::object {
             // (a probe for a protocol, `hasattr(v, "__array_interface__")`, reads nothing)
             if (name.rfind("__", 0) == 0) {
               throw py::attribute_error(name);
             }
             return value_of(self).attr(name.c_str());
           })
      .def("__repr__", [](const py::object& self) {
        return "LateScalar(" + py::repr(value_of(self)).cast<std::string>() + ")";
      });
  g_type = reinterpret_cast<PyTypeObject*>(cls.ptr());
}

}  // namespace sot::graph
