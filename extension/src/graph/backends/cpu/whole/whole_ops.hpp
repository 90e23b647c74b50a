// Tier C's handlers: one per op name, each writing the lines that compute one op of a body from
// its operands' expressions (whole_emitter.cpp resolves them), as CPython computes Python numbers
// and NumPy computes scalars and elements. The exactness rule of each class:
//   - Python ints: 64-bit ints, every +, -, * checked for overflow, // and % with Python's floor
//     rules; past 64 bits, a zero divisor, and the function gives up (the loop op's own path then
//     computes with Python's ints, or raises);
//   - Python floats: IEEE doubles, the operations CPython's float object makes (// and % as its
//     float_floor_div and float_rem); an int meets a float as CPython converts it (rounded to
//     nearest), compared with one only where the double holds it exactly (else give up);
//   - NumPy scalars: the operands cast to the result's dtype (the graph's rule for it) and the
//     IEEE operation in that type; an integer overflow gives up (NumPy warns), and a floating-point
//     flag an operation raises (overflow, division by zero, invalid) is seen by the runner, which
//     then gives up as well (NumPy warns there); each such value is kept computed (SOT_KEEP) even
//     where nothing reads it, so that its flags are raised;
//   - elements: x[i], x[i, j] read and written through the array's strides, the index wrapped as
//     Python's and checked (out of range: give up, the op's own path raises IndexError); a value
//     written is cast to the array's dtype only where that cast is exact or NumPy's C cast;
//   - views: A[i], L[i, :i], x[k + 1:] (ints and slices of Python ints, by Python's slice rules)
//     are the argument's data, shape and strides, copied from nothing;
//   - outer products: np.outer(a, b) of two vectors as NumPy computes it, a[:, None] * b[None, :]
//     by the rule of arrays made in the code below;
//   - dot products: `a @ b` and np.dot(a, b) of two vectors are NumPy's dot for them
//     (whole_blas.hpp: float64 through the BLAS NumPy calls, with its rule for when it does; int64
//     in order, an overflow gives up); vectors of other lengths give up (NumPy raises);
//   - arrays made in the code (a + b of rows and slices): each element as the scalar rule above
//     computes it in the result's dtype (NumPy's loop for these ufuncs computes in it too), shapes
//     broadcast as NumPy's (shapes that do not broadcast give up: NumPy raises); an in-place op
//     (x += y) only where the operands promote to the target's dtype (Python numbers aside: x +=
//     mask of an int64 x), computed into a new array first and copied (overlapping operands read as
//     NumPy's copies do);
//   - assignments of arrays (S[i] = row, x[a:b] = 0.0): the value broadcast to the view, cast only
//     as the element rule allows, copied first where it views an argument (overlap);
//   - sums: float64 vectors as NumPy's pairwise sum (0.0 plus DOUBLE_pairwise_sum, up to 8192
//     items: past them NumPy may sum buffered parts, so tier C gives up), int64 in order with an
//     overflow giving up (NumPy wraps); mean as that sum over the count; np.linalg.norm of a
//     float64 vector as NumPy's: sqrt of the vector's dot with itself, made contiguous first;
//   - copies: x.copy() C-ordered, np.copy(x) of a matrix only where x is C-ordered (else give up:
//     NumPy keeps x's layout);
//   - the ufuncs of floats tier C has no form of (exp, power, clip, ...) and np.arange: the rules
//   of
//     whole_ops_ufuncs.cpp.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/backends/cpu/cpp_emitter.hpp"
#include "graph/backends/cpu/whole/whole_types.hpp"
#include "graph/ir/graph.hpp"

namespace sot::graph::whole {

// An operand or result in the generated code: an expression, its kind, and for an array the
// function argument it views (-1: none).
struct Val {
  Val() = default;
  Val(std::string e, WType t, int a) : expr(std::move(e)), type(t), arg(a) {}

  std::string expr;
  WType type;
  int arg = -1;
  // A slice of an index key (x[a:b], L[i, :i]): the expressions of its start, stop and step, ""
  // for None (`expr` is then empty).
  std::vector<std::string> slice;
  bool is_slice() const { return !slice.empty(); }
  // An array made by this op alone (C-ordered, in the arena, no view of another): what a carried
  // array may be on each step.
  bool fresh = false;
  // Not fresh, but either a fresh array or else the array this expression names, as it is: a cond
  // op's array whose one way hands on a loop's carried array unchanged (an exit's step).
  std::string fresh_or;
  // A loop's last value that no op reads: nothing is kept for it, and the loop hands on None.
  bool absent = false;
  // A loop's carried array that its steps hand on as another of them (a pointer to one of the
  // loop's arguments: the runner hands on that argument).
  bool passed_on = false;
  // A None item of an index key (np.newaxis): a new dimension of one item.
  bool newaxis = false;
  // At run time one of the function's array arguments as it is, or an array the code made itself
  // (C-ordered, in the arena, no view of another): what a whole graph may return (fresh ones too).
  bool whole = false;
  // A whole graph's array result that the step itself hands on (its slot written there).
  bool handed_out = false;
  // A fresh array that NumPy too makes C-ordered (np.zeros; np.zeros_like of a C-ordered one): a
  // whole graph may return it whatever its dimensions.
  bool c_order = false;
  // Laid out as NumPy sees a C-ordered array: its strides positive and each dimension of several
  // items stepping over those after it (a C-ordered array, a slice of one with positive steps).
  // NumPy makes an elementwise op of such operands C-ordered too (its K order).
  bool c_like = false;
  bool laid_c() const { return c_order || c_like; }
  // A matrix that may be laid out F-ordered, as NumPy lays it: a transpose (x.T of two
  // dimensions), or an elementwise result of one, which NumPy makes F-ordered where its operands'
  // strides say so (elementwise() lays it out so too; neither fresh nor C-ordered then).
  bool may_be_f = false;
};

// Whether every array among `args` is laid out as C order (Val::c_like): an elementwise result of
// them is C-ordered in NumPy.
bool all_laid_c(const std::vector<Val>& args);

// The NumPy loops the generated code calls (`env->loops[k]`: whole_ops_ufuncs.cpp), and what keeps
// each alive (NumPy's capsule of its context and data).
struct UfuncLoops {
  std::vector<NativeLoop> loops;
  std::vector<pybind11::object> owners;
};

struct OpCtx {
  const Op* op = nullptr;
  const Graph* graph = nullptr;  // the graph of `op` (for the rules that read other values)
  UfuncLoops* loops = nullptr;   // where a handler adds a NumPy loop the code calls
  std::vector<Val> args;         // the op's operands (a tuple argument's items in turn)
  WType result;                  // the kind of the op's result
  std::string name;              // the variable the handler declares for the result
  int give_up = 0;               // the op's number for SOT_GIVE_UP
  std::vector<std::string> lines;
  // An element's checks that need not stop the loop at once (no early exit: the loop stays
  // vectorizable): `flag |= ...` in `lines`; elementwise() declares the flag (unsigned, 0) before
  // its loops and gives up after them where it is set. Empty: the op has none.
  std::string deferred;
  std::string why;  // set when the handler refuses the op
  Val out;          // what the result is (`name` of `result`, or an alias: setitem's array)
  std::vector<int> written;  // the arguments the op writes into
  bool makes_array = false;  // the op's lines take an array from the arena (sot_alloc)
  long long size_hint =
      -1;  // the result's items at most, as the translation sized it (-1: not known)
};

using Handler = bool (*)(OpCtx& c);

// For the handler files: the line that gives up at the op, a refusal (false, `why` set), and the
// result declared as `value`.
std::string give_up(const OpCtx& c);

// Emits what makes an elementwise result of `operands` (of `rank` dimensions, broadcast to the
// declared `shape`) laid out as NumPy's: tier C makes it C-ordered, NumPy in its K order, which
// follows the operands' strides. Where their layouts are not known as C order here, the code gives
// up at run time unless NumPy's result is C-ordered (sot_c_result): a matrix NumPy lays out
// otherwise (`2.0 * X.T`, F-ordered there) would hold NumPy's values in other strides, and a sum
// over an axis or a matrix product of it, working in the order of its strides, would round
// otherwise. The result is then C-ordered in both (Val::c_order).
void laid_c_result(OpCtx& c, const std::vector<Val>& operands, int rank, const std::string& shape);
// For an elementwise result of two dimensions among whose operands is a matrix that may be
// F-ordered (Val::may_be_f): declares `name`_f, whether NumPy lays the result out F-ordered (it
// is not C-ordered: with two dimensions, the other order), where laid_c_result would give up.
void laid_c_or_f_result(OpCtx& c, const std::vector<Val>& operands, const std::string& shape);
// The parts joined (a line built in a loop, without temporaries).
std::string cat(std::initializer_list<std::string_view> parts);
bool refuse(OpCtx& c, const std::string& why);
void declare(OpCtx& c, const std::string& value);

// whole_ops_views.cpp: a getitem whose result is an array (a view), a transpose (a view), a matmul
// of two vectors.
bool array_view(OpCtx& c);
bool transpose_view(OpCtx& c);
bool matmul_vectors(OpCtx& c);
bool dot_vectors(OpCtx& c);

// whole_ops_gather.cpp: x[idx] of a vector of ints, a new array of the items it picks.
bool gather_rows(OpCtx& c);

// whole_ops_counts.cpp: np.count_nonzero(x) over all of x (a Python int or an int64 scalar).
bool count_nonzero_op(OpCtx& c);

// whole_ops_linalg.cpp: np.linalg.solve(A, b) of a float64 matrix and vector (NumPy's own loop).
bool solve_op(OpCtx& c);

// whole_ops_arrays.cpp: an elementwise op whose result is an array (each element by `scalar`, the
// op's handler of NumPy scalars), an assignment into a view of an array (x[i] = row, x[a:b] = v),
// the sum, mean, max, min and norm of a vector, the copy of an array, a float64 matrix times a
// vector (NumPy's gemv), the outer product of two vectors.
bool elementwise(OpCtx& c, Handler scalar);
bool store(OpCtx& c);
// np.max(x) / np.min(x) of a vector (scalar_max/scalar_min's one-operand form).
bool vector_extreme(OpCtx& c, bool greatest);
bool sum_vector(OpCtx& c);
bool mean_vector(OpCtx& c);
bool copy_array(OpCtx& c);
bool norm_vector(OpCtx& c);
bool matrix_vector(OpCtx& c);
bool sum_over_axis(OpCtx& c);   // (x.sum(axis=k) of a float64 array: NumPy's order)
bool outer_vectors(OpCtx& c);   // (np.outer of two vectors: a column times a row, elementwise)
bool astype_element(OpCtx& c);  // (one element of x.astype(t): elementwise() makes the array)
// np.zeros, np.ones, np.empty, np.full of Python int sizes, and their _like forms.
bool filled_array(OpCtx& c);
bool filled_op(const std::string& name);

// whole_ops_ufuncs.cpp: an op of a float ufunc tier C has no form of (exp, power, clip, ...)
// through NumPy's own loop; np.arange of Python ints.
bool ufunc_loop(OpCtx& c);
bool arange_op(OpCtx& c);

// Operand `v` (a number) cast to dtype `t` as NumPy casts it into its loop, into `expr`, with the
// lines that give up where that cast is not exact (a Python int past a float's exact ints, or out
// of a narrower int's range). False when `v` is not a number tier C casts so.
bool operand_as(OpCtx& c, const Val& v, DType t, std::string* expr);
// The line that gives up where Python float `v` cast to float32 becomes an infinity (NumPy warns
// "overflow encountered in cast", before its loop); nothing for other operands and dtypes.
void float_cast_fits(OpCtx& c, const Val& v, DType t);

// whole_results.cpp: a whole graph's array result `v`, output `k` - one of the arguments (`arrays`:
// each argument's name, "" where it is not an array) handed on as it is, or a new array the
// runner makes (env->out_array) that the array the code made is copied into: the lines that write
// its slot, or none and `why`. `handed`: the results handed out before it (their names), `v`'s
// added; `give_up`: the number of its SOT_GIVE_UP.
std::vector<std::string> hand_out_lines(std::size_t k, const Val& v,
                                        const std::vector<std::string>& arrays,
                                        std::vector<std::string>* handed, int give_up,
                                        std::string* why);

// Whether NumPy op `name` is elementwise (its handler computes one element: elementwise() makes
// arrays of it).
bool elementwise_op(const std::string& name);

// The handler of op `name` whose result is a Python number (`python`) or NumPy's, or nullptr.
Handler handler_for(const std::string& name, bool python);

}  // namespace sot::graph::whole
