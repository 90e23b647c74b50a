// What a loop being captured as a loop op looks like to the translator (loop_capture.cpp for `for`
// loops, while_capture.cpp for `while` loops).
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bytecode/operands.hpp"
#include "translator/opcode_executor.hpp"

namespace sot::translator {

struct OpcodeExecutor::LoopSite {
  std::size_t for_pc = 0;          // the FOR_ITER (a while loop: the body's first instruction)
  std::size_t exit = 0;            // its exhausted target (a while loop: where its tests leave to)
  int var = -1;                    // the loop variable's slot (enumerate: the item's)
  int counter = -1;                // enumerate(...): the counter's slot; zip(a, b): b's item's
  std::size_t header = 1;          // the instructions after FOR_ITER that store the targets
  VarPtr var_after;                // its value after the loop when the body stores it (a constant)
  bool reads_var = false;          // the body reads the loop variable
  int index = -1;                  // then: the placeholder the body reads for it
  int counter_index = -1;          // the counter's placeholder (zip: b's index)
  std::int64_t counter_start = 0;  // and its value on the first step
  VarPtr second_rows;              // zip(a, b) with b an array: b (the counter indexes its rows)
  bool zip = false;                // zip(a, b): the first target takes a's item, the second b's
  bool short_loop = false;  // of kLoopUnrollMax steps or fewer: tried only for native element work
  std::int64_t start = 0, step = 1, last_index = 0;  // the variable's first and last values
  std::int64_t trips = 0;
  pybind11::object first, final;  // the range's first and last items
  // A range of ints known only where the graph runs (range_loops.cpp): its start and stop, values
  // of the graph (-1: a constant range); `start`, `last_index` and `trips` then bound its values.
  int start_value = -1, stop_value = -1;
  VarPtr rows;           // a loop over an array's rows: the array (else a range loop)
  std::set<int> stored;  // the slots the body stores
  // What the run looked like before the loop, to put back.
  std::vector<VarPtr> locals, stack;
  Mark mark;
  std::uint64_t serial = 0;                     // the last Variable made before the body
  std::size_t values = 0, ops = 0, inputs = 0;  // the graph before the body
  struct Carried {
    int slot = -1;
    int outer = -1;        // the value at the loop's entry
    int placeholder = -1;  // what the body reads for it
    int out = -1;          // the value at the end of a step (-1: unchanged)
  };
  std::vector<Carried> carried;
  std::vector<std::pair<int, int>> last;  // (slot, value at the end of the last step)
  // Locals unbound before the loop that each step leaves the same constant (an inner loop's
  // variable after it: `j` after `for j in range(1, m + 1)`), and that constant.
  std::vector<std::pair<int, VarPtr>> last_constants;
  // A while loop's locals unbound before it that nothing outside it reads (`x_new`): unbound after.
  std::vector<int> dead;
  std::vector<VarPtr> body_locals;  // the locals as the body starts
  std::string why;                  // why the loop was not captured
  // A `while` loop (while_capture.cpp): the step runs from `for_pc` (the body's first instruction)
  // to the jump back to it, `back`; the trip count is known only where the graph runs. A test of
  // the loop's condition goes on while the truth of `value` is `go_on_if`.
  struct Test {
    int value = -1;
    bool go_on_if = true;
  };
  bool is_while = false;
  std::size_t back = 0;
  std::size_t top = 0;  // the loop's first instruction: the body's, or its top's test that started
  std::vector<Test> entry_tests;  // the tests as the loop op is reached (the frame's values)
  std::vector<Test> step_tests;   // the tests at the end of each step (the body's values)
  bool in_tests = false;          // the step has passed its first test
  bool exit_returns = false;      // (an exit, below: a `return`)
  bool var_out = false;           // (an exit: the loop variable's last value an output)
  std::size_t test_pc = 0;        // the jump where the capture started, and its stack, to put back
  std::vector<VarPtr> test_stack;
  // A `for` loop's exit (loop_exits.cpp): an `if` in the body whose one way (at `exit_way`) leaves
  // the loop. Its test is the loop's step test; the rest of the step after it is a cond op whose
  // other way hands the values at the test on. A `break` goes on after the loop as its end does; a
  // `return` returns `exit_value` (at the test) where the last test left, else what the code after
  // the loop returns (a local or a constant: `after_slot`, or `after_constant`).
  std::size_t exit_way = static_cast<std::size_t>(-1);
  VarPtr exit_value;
  pybind11::object after_constant;
  std::vector<int> exit_values;  // the op's outputs after the last values
  int after_slot = -1;
  int exit_slot = -1;  // the local whose value after the loop `exit_value` is (-1: an output)
  // Lists made before the loop that the body appends to (loop_lists.cpp): what an attempt saw
  // (each list, its items' kind, the appends of a step; `ok`: items of one kind a buffer holds),
  // and the lists the next attempt keeps as buffers of the graph.
  struct Appended {
    VarPtr list;
    graph::ValueInfo item;
    int appends = 0;
    bool ok = true;
  };
  std::vector<Appended> appended, buffered;
  // Locals holding a Python float before the loop that a step makes a float64 NumPy scalar, where
  // nothing tells the two apart (loop_capture.cpp, promotes): found by an attempt, and those the
  // next attempt makes np.float64 at the loop's entry.
  std::vector<int> promotable, promote;
  // The ifs being captured as the body starts: an exit under more of them is inside an `if` of the
  // body (a `break` only; its test then an output of the cond ops around it).
  int body_conds = 0;

  // Where the code after a `for` loop starts (FOR_ITER's exhausted way, past the iterator's pop).
  std::size_t after_loop() const { return exit + bytecode::operand::for_iter_exit_skip(); }
};

// Two values of the graph a loop step or an if's two ways may hand on as one: the same dtype, shape
// and kind (a Python number stays one).
inline bool same_array_info(const graph::ValueInfo& a, const graph::ValueInfo& b) {
  return !a.is_tuple() && !b.is_tuple() && a.dtype == b.dtype && a.scalar == b.scalar &&
         a.python == b.python && a.shape == b.shape && a.symbols == b.symbols;
}

// The same constant, as a later step would see it: None, a bool, an int or a str equal and of one
// type; floats bit for bit (0.0 and -0.0 differ, a NaN is itself).
inline bool same_constant(const pybind11::object& a, const pybind11::object& b) {
  PyObject* x = a.ptr();
  PyObject* y = b.ptr();
  if (x == y) {
    return true;
  }
  if (Py_TYPE(x) != Py_TYPE(y)) {
    return false;
  }
  if (PyFloat_CheckExact(x)) {
    const double u = PyFloat_AS_DOUBLE(x);
    const double v = PyFloat_AS_DOUBLE(y);
    std::uint64_t ubits = 0;
    std::uint64_t vbits = 0;
    std::memcpy(&ubits, &u, sizeof ubits);
    std::memcpy(&vbits, &v, sizeof vbits);
    return ubits == vbits;
  }
  if (!PyLong_CheckExact(x) && !PyUnicode_CheckExact(x)) {
    return false;  // (bools and None are singletons: the same object, above)
  }
  const int eq = PyObject_RichCompareBool(x, y, Py_EQ);
  PyErr_Clear();
  return eq == 1;
}

// `*at` set to `value` for a scope, then back to what it was however the scope ends.
template <typename T>
class ScopedSet {
 public:
  ScopedSet(T* at, T value) : at_(at), was_(*at) { *at_ = value; }
  ~ScopedSet() { *at_ = was_; }
  ScopedSet(const ScopedSet&) = delete;
  ScopedSet& operator=(const ScopedSet&) = delete;
  ScopedSet(ScopedSet&&) = delete;
  ScopedSet& operator=(ScopedSet&&) = delete;

 private:
  T* at_;
  T was_;
};

// Restores the count of loop bodies (or ifs) being captured however the capture ends.
class LoopDepth {
 public:
  explicit LoopDepth(int* depth) : depth_(depth) { ++*depth_; }
  ~LoopDepth() { --*depth_; }
  LoopDepth(const LoopDepth&) = delete;
  LoopDepth& operator=(const LoopDepth&) = delete;
  LoopDepth(LoopDepth&&) = delete;
  LoopDepth& operator=(LoopDepth&&) = delete;

 private:
  int* depth_;
};

}  // namespace sot::translator
