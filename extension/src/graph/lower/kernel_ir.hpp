// The kernel IR: what a fused group computes, independent of the machine that runs it. A kernel is
// one loop nest over an iteration domain (sizes static or runtime symbols), reading array buffers
// (right-aligned to the domain, broadcast where a size is 1, strides given at run time) and scalar
// parameters, computing typed scalar expressions (each the NumPy ufunc of a graph op, with the
// dtype NumPy gives it) and storing some of them into output buffers. Values that are not stored
// live in registers (CPU tier B, CUDA) or in cache-sized block temporaries (CPU tier A). The CPU
// backend runs kernels; the CUDA backend emits them as CUDA C++. A kernel may end in one reduction
// (graph/rules/reductions.hpp) of a value it computes, stored into an output of the reduced shape.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

#include "graph/ir/graph.hpp"
#include "graph/lower/fusion.hpp"
#include "graph/rules/reductions.hpp"

namespace sot::graph::kir {

struct Dim {
  std::int64_t size = 1;
  int symbol = -1;  // >= 0: a runtime size (the shape symbol s<symbol>)

  bool operator==(const Dim& o) const { return size == o.size && symbol == o.symbol; }
  bool operator!=(const Dim& o) const { return !(*this == o); }
};

// An array the kernel reads or writes, by the graph value it holds.
struct Buffer {
  int value = -1;
  DType dtype = DType::kFloat64;
  std::vector<Dim> shape;  // right-aligned to the domain
  bool output = false;
  // An output the graph returns (else it lives only in the run).
  bool returned = false;
};

// A value taken once per kernel run: a NumPy scalar or 0-d array from the graph (`value`), or a
// constant of the op (a Python or NumPy scalar).
struct Scalar {
  int value = -1;
  pybind11::object constant;
};

struct Expr {
  // kCast: `x.astype(dtype)` (unsafe casting), run as `numpy.copyto(out, x, casting="unsafe")`,
  // the same cast function astype calls. kSelect: `numpy.where(c, x, y)` (c boolean), run as
  // `copyto(out, y)` then `copyto(out, x, where=c)`, each cast to the result's dtype.
  enum class Kind : std::uint8_t { kLoad, kScalar, kCall, kCast, kSelect, kReduce };
  Kind kind = Kind::kCall;
  DType dtype = DType::kFloat64;  // kLoad, kCall, kCast (the dtype cast to), kSelect
  int buffer = -1;                // kLoad
  int scalar = -1;                // kScalar
  std::string fn;             // kCall, kReduce: the ufunc's name; kCast "astype", kSelect "where"
  pybind11::object ufunc;     // kCall, kReduce; kSelect: numpy.where (its first block)
  std::vector<int> operands;  // kCall, kCast, kSelect, kReduce: expression ids
  int op = -1;                // kCall, kCast, kSelect, kReduce: the graph op it computes
  int value = -1;             // kLoad, kCall, kCast, kSelect, kReduce: the graph value
  Reduction reduce;           // kReduce (`ufunc`: the ufunc whose reduce runs it)

  // A call, a cast or a select: an elementwise value the kernel computes.
  bool elementwise() const {
    return kind == Kind::kCall || kind == Kind::kCast || kind == Kind::kSelect;
  }
};

struct Store {
  int expr = -1;
  int buffer = -1;
};

struct Kernel {
  std::string name;  // "k0"
  std::vector<Dim> domain;
  std::vector<Buffer> buffers;  // inputs first, then outputs
  std::vector<Scalar> scalars;
  std::vector<Expr> exprs;  // in evaluation order; operands come before their users
  std::vector<Store> stores;
  int first_op = -1;  // the group's first and last op (slices moved ahead of it may lie between)
  int last_op = -1;

  // The kernel as text:
  //   kernel k0 over [s0, 1024]
  //     in  b0: float64[s0, 1024]  (%0)
  //     out b2: float64[s0, 1024]  (%5)
  //     e0 = load b0
  //     e2 = multiply(e0, 2.0) : float64
  //     store b2 <- e4
  std::string text() const;
  // The elementwise values it computes (calls, casts, selects).
  int calls() const;
  // The reduction the kernel ends in (-1: none).
  int reduction() const;
  // True when buffer `b` is broadcast along the domain's last axis: its last size is 1 and the
  // domain's a static size other than 1 (a `(rows, 1)` column beside `(rows, n)` arrays).
  bool row_scalar(std::size_t b) const;
};

// The kernel of fused group `g` of `graph`, called `name`.
Kernel lower(const Graph& graph, const Group& g, const std::string& name);

// What watches the kernels a backend lowers: the CUDA compile check (graph/backends/cuda/
// cuda_check.hpp) sets one while it is on, so that every kernel the CPU backend lowers is also
// emitted and compiled for a GPU, without the CPU backend knowing of CUDA. nullptr: none.
using Observer = void (*)(const Kernel&);
void set_observer(Observer fn);
Observer observer();

}  // namespace sot::graph::kir

namespace sot::graph {

// True when `value` is a float a double holds exactly: Python's, NumPy's float64 (a float
// subclass), float32 or float16 (not longdouble). The generated kernels (CPU tier B, CUDA) take
// such scalars as doubles (PyFloat_AsDouble).
bool exact_double_float(PyObject* value);

}  // namespace sot::graph
