// Where a run's values live when not all of them are host objects: the cuda backend keeps the
// arrays its kernels make on the device (graph/backends/cuda/residency.hpp), as objects that are
// not NumPy arrays. A Frame made while a home is current (a thread's, set for the run) asks it,
// for each step it runs on the host, for the host form of every value the step reads; steps that
// take such values as they are (the loop and cond ops, whose graphs run in the same home; a slice
// of a device array) get them unchanged.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace sot::graph {

// The steps of one loop as its home sees them (LoopBody::run_steps): a step whose work is all in
// the home (kernels queued on a device, nothing on the host) and repeats the previous step's
// exactly, on the very same values, need not make its graph call again: the home queues the same
// work again (a replay) for each step left.
class StepRecord {
 public:
  StepRecord() = default;
  virtual ~StepRecord() = default;
  StepRecord(const StepRecord&) = delete;
  StepRecord& operator=(const StepRecord&) = delete;
  StepRecord(StepRecord&&) = delete;
  StepRecord& operator=(StepRecord&&) = delete;

  // Before a step's graph call.
  virtual void begin() = 0;
  // After it; `same_values`: the step's outputs are its carried inputs and the previous step's
  // outputs, the very objects; `carried_in` and `outputs` (borrowed) the step's carried inputs
  // and its outputs (the carried ones first). True when the steps left may be replayed.
  virtual bool end(bool same_values, const std::vector<PyObject*>& carried_in,
                   const std::vector<PyObject*>& outputs) = 0;
  // After replays: the step's outputs (the carried values, then the last values) as the last
  // replayed step leaves them, or empty where they are the last graph call's outputs.
  virtual std::vector<pybind11::object> carried_after() { return {}; }
  // The work of steps queued again instead of their graph calls, at most `left` steps (the steps
  // the loop has left): how many (at least 1), or 0 with an error set.
  virtual std::int64_t replay(std::int64_t left) = 0;
};

class ValueHome {
 public:
  ValueHome() = default;
  virtual ~ValueHome() = default;
  ValueHome(const ValueHome&) = delete;
  ValueHome& operator=(const ValueHome&) = delete;
  ValueHome(ValueHome&&) = delete;
  ValueHome& operator=(ValueHome&&) = delete;

  // Whether a step calling `fn` with first argument `first` (nullptr: none) takes the home's
  // values as they are.
  virtual bool takes_as_is(PyObject* fn, PyObject* first) = 0;
  // Whether `v` is one of the home's values (an array that is not a host object).
  virtual bool holds(PyObject* v) = 0;
  // The host form of `v`: a new reference (v itself when it is a host object), or nullptr with an
  // error set.
  virtual PyObject* host_form(PyObject* v) = 0;
  // Runs a step calling `fn` with `args` (the frame's values as they are: `nargs` positional,
  // then one per name of `kwnames`, a tuple or nullptr) in the home when it can (a matrix product
  // or a reduction of device arrays on the device): a new reference; nullptr with no error set
  // when it leaves the step to the host, with one set when the step raised.
  virtual PyObject* try_run(PyObject* fn, PyObject* const* args, std::size_t nargs,
                            PyObject* kwnames) {
    (void)fn, (void)args, (void)nargs, (void)kwnames;
    return nullptr;
  }
  // A record of a loop's steps, or nullptr where the home replays none.
  virtual std::unique_ptr<StepRecord> record_steps() { return nullptr; }
  // A loop op's steps begin (+1) or end (-1): what runs between repeats, so a value moved into
  // the home for one step is there for the next (loop_op.cpp tells; the home may weigh it).
  virtual void loop_steps(int delta) { (void)delta; }
  // The value of late value `v` (borrowed: `v` keeps it), or `v` itself where it is not one;
  // nullptr with an error set. A step that takes the home's values as they are gets these.
  virtual PyObject* settled(PyObject* v) { return v; }
  // A while loop's steps that may run one ahead begin (+1) or end (-1) (loop_op.cpp): meanwhile
  // the home may give scalars late (a full reduction's result as a value read when needed).
  virtual void late_reads(int delta) { (void)delta; }
  // A scalar step (`fn`, a ufunc or operator of numbers, called with `nargs` arguments as they
  // are, no keywords, changing nothing) on late values kept to run when its value is needed, as a
  // late value itself: a new reference; nullptr with no error set where it runs now.
  virtual PyObject* defer(PyObject* fn, PyObject* const* args, std::size_t nargs) {
    (void)fn, (void)args, (void)nargs;
    return nullptr;
  }
  // A while loop's next step run before its tests (`tests`, borrowed) are read (run ahead):
  // `decide` reads them (1: the loop goes on, 0: it ends, -1: an error set). ahead_begin says
  // whether the home runs the next step so (where a test is a late value; false: read the tests
  // first). Where that step is about to do anything the caller could see, the home calls `decide`
  // first and, where the loop ends, fails the step with an error of its own. ahead_end, after the
  // step (its error, if any, still set): the answer, `decide` called now where it was not (1: the
  // step stands, its error with it; 0: the step is dropped, no error set; -1: an error set).
  virtual bool ahead_begin(const std::vector<PyObject*>& tests,
                           const std::function<int()>& decide) {
    (void)tests, (void)decide;
    return false;
  }
  virtual int ahead_end() { return -1; }
  // Before a step runs on the host (its arguments' host forms taken): every host array shows
  // what the device wrote. False with an error set.
  virtual bool before_host_step() = 0;
  // After a step ran on the host: `mutates` when it may have changed an array in place;
  // `written`, where known, the one array it changed (no memory outside it was written).
  virtual void after_host_step(bool mutates, PyObject* written = nullptr) = 0;
};

// The home of the frames the calling thread makes now (nullptr: all values are host objects).
ValueHome* current_value_home();

// Makes `home` current for its lifetime, the previous one current again after.
class ValueHomeScope {
 public:
  explicit ValueHomeScope(ValueHome* home);
  ~ValueHomeScope();
  ValueHomeScope(const ValueHomeScope&) = delete;
  ValueHomeScope& operator=(const ValueHomeScope&) = delete;
  ValueHomeScope(ValueHomeScope&&) = delete;
  ValueHomeScope& operator=(ValueHomeScope&&) = delete;

 private:
  ValueHome* previous_;
};

}  // namespace sot::graph
