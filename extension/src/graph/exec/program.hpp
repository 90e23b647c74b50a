// A graph made ready to run op by op as eager NumPy would: one step per op (the op's own function
// and arguments, results freed as soon as nothing needs them, a dead intermediate reused as a
// ufunc's `out=`), the value table of one run (`Frame`), and the Python type of a compiled graph,
// which any backend fills with its own `Runner`. The reference backend runs every step; the CPU
// backend runs fused groups instead and falls back to these steps where it must behave exactly
// as eager NumPy (floating-point errors reported, layouts it does not handle).
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/exec/buffer_pool.hpp"
#include "graph/exec/value_home.hpp"
#include "graph/ir/graph.hpp"

namespace sot::graph {

struct Program {
  struct Slot {  // one argument: a value's id, a list/tuple of ids, or a constant
    Arg::Kind kind = Arg::Kind::kConst;
    int value = -1;
    std::vector<int> values;
    pybind11::object constant;
  };
  struct Step {
    pybind11::object fn;
    std::vector<Slot> args;  // positional, then keyword values
    std::size_t nargs = 0;
    pybind11::object kwnames;  // tuple or None
    int result = -1;
    bool mutates = false;
    // It changes args[0]'s array alone (a setitem, an in-place operator, x.sort(); not a loop or
    // cond op, nor a ufunc's out=): run on the host, it writes no memory outside that array.
    bool writes_first = false;
    std::string text;  // "%3 = add(%1, %2)" for messages
    ValueInfo info;
    // Results no later step (nor the outputs) needs: freed after this one.
    std::vector<int> release;
    // A ufunc step may write its result into an argument's array, as eager NumPy's elision of
    // temporaries does: the position of a dead intermediate of the result's dtype and shape (-1:
    // none). Used only when, at run time, nothing else holds that array.
    int reuse = -1;
    pybind11::object reuse_fn;  // the ufunc that computes the step with `out=`
  };
  std::size_t nvalues = 0;
  std::vector<int> inputs;
  std::vector<std::pair<int, pybind11::object>> constants;
  std::vector<Step> steps;
  std::vector<int> outputs;
  std::vector<bool> copy_output;  // an array constant returned: a fresh copy each call
  // The last step that reads each value (-1: none; -2: a graph output, kept to the end).
  std::vector<int> last_use;
  bool check = false;
  pybind11::object ndarray;      // numpy.ndarray
  pybind11::object out_kwnames;  // ("out",)
};

// `call()` under NumPy's errstate(all="raise"): its result where NumPy flagged no floating-point
// error (the result the caller's error state gives too, and no warning), else nullptr with no
// error set (whatever it raised). Scalar steps on NumPy scalars run so first (program.cpp,
// late_scalars.cpp).
PyObject* call_unflagged(const std::function<PyObject*()>& call);
// Whether `a` is None or a Python bool, int, float or complex (exactly: no subclass).
bool is_python_scalar(PyObject* a);
// Whether `a` is a NumPy scalar of a floating type: such steps on it and Python numbers alone
// run under call_unflagged first.
bool is_numpy_float(PyObject* a);

// The program of `graph`: a step per op, in order.
std::unique_ptr<Program> build_program(const Graph& graph, const std::vector<int>& outputs,
                                       bool check);

// The value table of one run: inputs and constants borrowed, results owned and released as the
// program says.
class Frame {
 public:
  Frame(const Program& program, PyObject* const* argv);
  ~Frame();
  Frame(const Frame&) = delete;
  Frame& operator=(const Frame&) = delete;
  Frame(Frame&&) = delete;
  Frame& operator=(Frame&&) = delete;

  const Program& program() const { return p_; }
  PyObject* get(int id) const { return slots_[static_cast<std::size_t>(id)]; }
  // Stores a new reference as value `id`'s.
  void set_owned(int id, PyObject* value);
  // From now on, where each value lives is noted in `lived` (one per value: 1 a value of the
  // frame's home, 2 a host object; the last one set), the values set so far first.
  void note_homes(std::vector<unsigned char>* lived);
  // Frees the results step `k` is the last to need (into the pool, when there is one).
  void release_after(std::size_t k);
  // Where released arrays go, for later outputs to take (graph/exec/buffer_pool.hpp); none by
  // default.
  void set_pool(BufferPool* pool) { pool_ = pool; }
  BufferPool* pool() const { return pool_; }
  // True when step `k`, run now, writes its result into a dying argument's array (Step::reuse).
  bool reuses_in_place(std::size_t k) const;
  // Runs step `k` as eager NumPy would; false with a Python error set when it raises. With
  // `release` false the results it is the last to need stay (the caller calls release_after(k)).
  bool run_step(std::size_t k, bool release = true);
  // The outputs: one value, a tuple of several, or None (a new reference; nullptr on error).
  PyObject* outputs();

  // A run's tables, taken from the calling thread's spares and given back (cleared) by the
  // destructor: a small graph's call, or a loop step, spent more allocating them than running.
  struct Tables {
    std::vector<PyObject*> slots;
    std::vector<unsigned char> owned;
    std::vector<PyObject*> args;
  };

 private:
  // The home that step `s` reads host forms from (nullptr: none, or the step takes its values as
  // they are).
  ValueHome* home_for(const Program::Step& s) const;
  // Step `k` run by `home` itself: 1 done, 0 not (the host runs it), -1 an error is set.
  int run_in_home(std::size_t k, ValueHome* home, bool release);
  // Step `k` (a scalar step of numbers) kept by `home` to run late (ValueHome::defer): as
  // run_in_home.
  int defer_in_home(std::size_t k, ValueHome* home, bool release);
  // The step's arguments into args_ (host forms from `home`; the new references into `temps`);
  // false with an error set.
  bool gather(const Program::Step& s, ValueHome* home, std::vector<PyObject*>* temps);
  static std::unique_ptr<Tables> take_tables();
  static void give_tables(std::unique_ptr<Tables> tables);

  const Program& p_;
  std::unique_ptr<Tables> tables_;
  std::vector<PyObject*>& slots_;
  std::vector<unsigned char>& owned_;
  void release(PyObject* value);

  std::vector<PyObject*>& args_;
  BufferPool* pool_ = nullptr;
  ValueHome* home_;  // the thread's when the frame was made (graph/exec/value_home.hpp)
  std::vector<unsigned char>* lived_ = nullptr;  // (note_homes)
  void note_home(std::size_t i);
};

// Checks the number of inputs a compiled graph was called with (false with TypeError set).
bool check_input_count(const Program& program, std::size_t nargs);

// What a backend puts in a compiled graph.
class Runner {
 public:
  Runner() = default;
  virtual ~Runner() = default;
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;
  Runner(Runner&&) = delete;
  Runner& operator=(Runner&&) = delete;

  // Runs the graph on `argv` (borrowed): a new reference, or nullptr with an error set.
  virtual PyObject* run(PyObject* const* argv, std::size_t nargs) = 0;
  // "<sot compiled graph 3-op: 3 ops, 2 inputs, 1 outputs (numpy)>"
  virtual std::string repr() const = 0;
  // What the compiled graph did and how (the CPU backend: its groups, tiers and times).
  virtual pybind11::dict plan() const { return {}; }
};

// A Python callable (vectorcall) that runs `runner`; `plan()` and `repr()` come from it.
pybind11::object make_compiled(std::unique_ptr<Runner> runner);

}  // namespace sot::graph
