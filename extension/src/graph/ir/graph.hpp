// The graph IR: array values with dtype and shape, and the operations that make them, in program
// order. An operation names what computes it (`fn`, the NumPy function, operator or method the
// user's code called) and its arguments (graph values, lists of them, or constants), so that the
// reference backend runs exactly what eager NumPy would run; `name` is its stable op name for the
// text and JSON forms. Operations that change an array in place (`x += y`, `x[i] = v`) keep their
// order and are never removed; their result is the changed array itself.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graph/ir/dtype.hpp"
#include "graph/ir/shape.hpp"

namespace sot::graph {

// What the translator knows of an array value without running anything.
struct ValueInfo {
  DType dtype = DType::kFloat64;
  Shape shape;
  // A NumPy scalar (np.float64(...), a full reduction's result, x[i] of a 1-d x), not an ndarray
  // (a 0-d array is an ndarray with an empty shape).
  bool scalar = false;
  // Per dimension: the shape symbol it is (-1: a static size; see the guards' dynamic dimensions).
  std::vector<int> symbols;
  // >= 0: not an array but a tuple of that many values (np.linalg.qr's, svd's, eigh's results, a
  // loop op's); only ops taking one item of it read it (dtype and shape then mean nothing).
  int parts = -1;
  bool is_tuple() const { return parts >= 0; }
  // Not NumPy's: a Python number made from one where the graph runs, int() ('i') or float() ('f')
  // of a NumPy scalar, a str ('s') formatted from one, a bool ('b') comparing them, or a list
  // ('l') of a loop's appended items (translator/control/loop_lists.cpp); no array operation
  // reads it.
  char python = 0;

  int ndim() const { return static_cast<int>(shape.size()); }
  // "float64[2, 3]", "float32 scalar", "int64[s0, 3]", "tuple of 2".
  std::string text() const;
};

// An argument of an operation: a graph value, a list or tuple of them, or a constant.
struct Arg {
  enum class Kind : std::uint8_t { kValue, kList, kTuple, kConst };
  Kind kind = Kind::kConst;
  int value = -1;             // kValue
  std::vector<int> values;    // kList, kTuple
  pybind11::object constant;  // kConst
  static Arg of(int v);
  static Arg constant_of(pybind11::object c);
  static Arg sequence(std::vector<int> vs, bool tuple);
};

struct Op {
  std::string name;     // stable op name: "add", "sum", "reshape", "getitem", "iadd", "setitem"
  pybind11::object fn;  // what runs it: fn(*args, **kwargs)
  std::vector<Arg> args;
  std::vector<std::pair<std::string, Arg>> kwargs;
  int result = -1;
  bool mutates = false;  // changes args[0] (an array) in place; the result is args[0]'s array
  bool view = false;     // the result may share memory with args[0]
  int line = -1;         // the user's source line
};

struct Value {
  enum class Source : std::uint8_t { kInput, kConst, kOp };
  Source source = Source::kOp;
  ValueInfo info;
  int op = -1;                // kOp: the index of the op that makes it
  int input = -1;             // kInput: position among the graph's inputs
  pybind11::object constant;  // kConst
  std::string name;           // kInput: where it comes from ("x", "self.w")
};

// An op that runs even when nothing needs its result: it changes an array in place, or it computes
// (and so may raise or warn); views and new arrays do not.
bool runs_for_effect(const Op& op);

class Graph {
 public:
  int add_input(ValueInfo info, std::string name);
  int add_constant(pybind11::object value, ValueInfo info);
  // A value that stands for one not made yet (a loop-carried value while the loop's body is
  // captured): an input of no position, replaced before the graph is used.
  int add_placeholder(ValueInfo info, std::string name);
  // Appends `op` and returns the id of its result (a new value described by `info`).
  int add_op(Op op, ValueInfo info);

  const std::vector<Value>& values() const { return values_; }
  const std::vector<Op>& ops() const { return ops_; }
  const std::vector<int>& inputs() const { return inputs_; }
  const Value& value(int id) const { return values_[static_cast<std::size_t>(id)]; }
  ValueInfo& info(int id) { return values_[static_cast<std::size_t>(id)].info; }
  bool empty() const { return ops_.empty(); }
  bool has_mutation() const;
  // True when an op must run even if no output needs it (see graph::runs_for_effect).
  bool runs_for_effect() const;
  // Drops every value, op and input made after the first `values`, `ops` and `inputs`.
  void truncate(std::size_t values, std::size_t ops, std::size_t inputs);

  // A graph with only what `outputs` and the in-place operations need (dead-code elimination),
  // duplicates of pure operations merged (common subexpressions; not when the graph changes
  // arrays in place or both copies are outputs: they are distinct arrays), and operations on
  // constants only computed now (folding). `outputs` is rewritten to the new ids.
  Graph optimized(std::vector<int>* outputs) const;

  // Readable text: one line per input and op, e.g.
  //   %2 = add(%0, %1) : float64[4, 3]
  std::string text(const std::vector<int>& outputs) const;
  // {"inputs": [...], "ops": [{"id", "op", "args", "kwargs", "dtype", "shape", ...}], "outputs"}.
  pybind11::dict json(const std::vector<int>& outputs) const;
  // How many ops of each name ({"add": 2, ...}).
  pybind11::dict op_counts() const;

 private:
  std::vector<Value> values_;
  std::vector<Op> ops_;
  std::vector<int> inputs_;
};

// A Python bool, int, float or complex (exact types) as a PyScalar; false for anything else.
bool python_scalar(PyObject* value, PyScalar* out);

// "np.add", "operator.iadd", "ndarray.reshape": a readable name of what an op calls.
std::string callable_name(const pybind11::handle& fn);

}  // namespace sot::graph
