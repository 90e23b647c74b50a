// A NumPy function or ndarray method call being captured (array_functions.cpp): the op that
// repeats it, its arguments bound to the function's parameters, and the readers of those
// parameters the rules use. Each function's rule is a member, registered by name (numpy_rules.cpp).
// A new NumPy function: its parameters in signatures() (array_functions.cpp), a rule member here
// and in numpy_rules.cpp, a row in rules().
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/ir/graph.hpp"
#include "graph/rules/rules.hpp"
#include "translator/numpy/array_state.hpp"
#include "translator/opcode_executor.hpp"

namespace sot::translator {

// Readers of static arguments (array_functions.cpp).
std::optional<std::vector<int>> ints_of(const pybind11::object& v);
std::optional<graph::DType> dtype_of_spec(const pybind11::object& np, const pybind11::object& spec);
graph::ValueInfo array_of(graph::DType t, graph::Shape shape);
graph::DType python_default(const graph::PyScalar& s);
// fn(*args, **kwargs) with NumPy's floating-point errors and every warning ignored; a null
// object and `error` ("LinAlgError: Singular matrix") when it raises (numpy_probe.cpp).
pybind11::object quiet_call(const pybind11::object& np, const pybind11::object& fn,
                            const pybind11::tuple& args, const pybind11::dict& kwargs,
                            std::string* error);

struct OpcodeExecutor::NumpyCall {
  NumpyCall(OpcodeExecutor& executor, const std::string& function, const VarPtr& callable,
            const std::vector<VarPtr>& positional,
            const std::vector<std::pair<std::string, VarPtr>>& keywords, const VarPtr& receiver);

  OpcodeExecutor& ex;  // the executor capturing it
  const std::string& name;
  const std::vector<VarPtr>& args;
  const std::vector<std::pair<std::string, VarPtr>>& kwargs;
  const VarPtr& self;  // the array of a method call, else nullptr
  ArrayState& st;
  pybind11::object np;
  std::string shown;  // np.<name> or ndarray.<name>, for reasons
  graph::Op g;        // the op: the same callable, the same arguments, arrays as graph values
  std::vector<const char*> params;
  std::map<std::string, VarPtr> bound;
  bool symbolic = false;  // the rule carries shape symbols through (else sizes are specialized)
  std::string why;

  [[noreturn]] void refuse(const std::string& reason) const;
  // A list of at most 32 Python ints and floats received from outside: guarded by its type,
  // length and items' values, a copy of it (null otherwise).
  pybind11::object guarded_numbers(const VarPtr& v) const;
  // np.add(x, y), np.exp(x) with out= at most: the result, or nullptr when `name` is no ufunc.
  VarPtr ufunc();
  VarPtr einsum();
  // Binds the arguments to the parameters the rules read.
  void bind();
  // A list or tuple of arrays and NumPy scalars the frame made, given for a parameter NumPy turns
  // into an array (np.mean(flow), flow a list of NumPy scalars): that array, made by an np.array
  // op, takes its place in the op and for the rule (the call's result is the same).
  void stack_sequences();
  // A list a loop appended to given for `param`: true, *v its np.array (or a refusal).
  bool list_param(const std::string& param, bool listed, VarPtr* v);
  bool stackable(const VarPtr& v, const graph::Arg& given) const;

  graph::Operand operand_of(const VarPtr& v) const;  // an operand of a ufunc-like function
  // The same with its sizes specialized (for a rule whose result's shape carries no symbols).
  graph::Operand static_operand(const VarPtr& v) const;
  VarPtr get(const char* p) const;                 // a bound parameter, or nullptr
  pybind11::object value_of(const char* p) const;  // a static argument (None when absent)
  graph::ValueInfo array_param(const char* p) const;
  std::optional<graph::DType> dtype_param(const char* p) const;
  bool axes_param(const char* p, std::vector<int>* axes) const;  // false: None
  bool bool_param(const char* p) const;
  // A Python int (not a bool) of at most 2**30 in size; `fallback` when absent or None.
  std::int64_t int_param(const char* p, std::int64_t fallback) const;
  graph::Shape shape_param(const char* p) const;
  void no_out() const;
  VarPtr result(std::optional<graph::ValueInfo> info);

  // The running NumPy asked (numpy_probe.cpp): the call repeated on samples of its arrays (their
  // dtypes and kinds, every size cut to at most `cap`), refused when that raises; and the dtype
  // and kind of such a result `r` as a value of `shape`.
  pybind11::object probe(std::int64_t cap = 1) const;
  graph::ValueInfo probed(const pybind11::handle& r, graph::Shape shape) const;
  // The call may raise `error` on some data (a singular matrix, an index out of bounds) where the
  // graph runs: refused while side effects wait to be replayed after the graph.
  void raises_on_data(const std::string& error) const;
  // The instruction after the call unpacks its result into `n` values.
  bool unpacked_next(std::size_t n) const;
  // A call of several results (`sample`: the probe's): one op making them, one op per item of
  // shape `shapes[i]`, as a tuple. `counted[i]`, when given and not -1: item i's first dimension
  // is a size known only when the graph runs, that shape symbol (a mask's count) or kOwnCount (a
  // new one), with `shapes[i][0]` (at least 2) as its size here.
  static constexpr int kOwnCount = -2;
  VarPtr results(const pybind11::object& sample, const std::vector<graph::Shape>& shapes,
                 const std::vector<int>& counted = {});

  using Rule = VarPtr (NumpyCall::*)();
  static const std::map<std::string, Rule>& rules();
  VarPtr reduction();    // sum, prod, mean, max, min, argmax, argmin, any, all, var, std
  VarPtr cumulative();   // cumsum, cumprod
  VarPtr dot();          // dot
  VarPtr reshape();      // reshape
  VarPtr transpose();    // transpose
  VarPtr swapaxes();     // swapaxes
  VarPtr moveaxis();     // moveaxis
  VarPtr expand_dims();  // expand_dims
  VarPtr squeeze();      // squeeze
  VarPtr join();         // concatenate, stack, hstack, vstack, column_stack
  std::optional<graph::ValueInfo> stacked(const std::vector<graph::ValueInfo>& in);  // h/vstack
  VarPtr split();                                                                    // split
  VarPtr where();                                                                    // where
  VarPtr clip();                                                                     // clip
  VarPtr copy_like();     // copy, ravel, flatten
  VarPtr astype();        // astype
  VarPtr round_();        // round
  VarPtr filled();        // zeros, ones, empty
  VarPtr full();          // full
  VarPtr like();          // zeros_like, ones_like, empty_like, full_like
  VarPtr arange();        // arange
  VarPtr linspace();      // linspace
  VarPtr eye();           // eye
  VarPtr broadcast_to();  // broadcast_to
  // numpy_rules_order.cpp
  VarPtr outer();                     // outer
  VarPtr ufunc_outer();               // <ufunc>.outer
  VarPtr ufunc_reduce();              // <ufunc>.reduce, <ufunc>.accumulate
  VarPtr flip();                      // flip, fliplr, flipud
  VarPtr roll();                      // roll
  VarPtr triangle();                  // tril, triu
  VarPtr sort();                      // sort, argsort, ndarray.sort (in place), ndarray.argsort
  VarPtr take_along_axis();           // take_along_axis
  pybind11::object ufunc_of() const;  // the ufunc of a <ufunc>.<method> call
  // numpy_rules_linalg.cpp
  VarPtr linalg_square();  // linalg.inv, linalg.det, linalg.cholesky
  VarPtr linalg_solve();   // linalg.solve
  VarPtr linalg_factor();  // linalg.qr, linalg.svd, linalg.eigh
  VarPtr linalg_norm();    // linalg.norm
  VarPtr cov();            // cov
  VarPtr histogram();      // histogram
  // numpy_rules_matrix.cpp
  VarPtr diag();          // diag
  VarPtr trace();         // trace
  VarPtr vander();        // vander
  VarPtr polyval();       // polyval
  VarPtr linalg_lstsq();  // linalg.lstsq
  // numpy_rules_tiling.cpp
  VarPtr repeat();    // repeat, ndarray.repeat
  VarPtr tile();      // tile
  VarPtr diff();      // diff
  VarPtr average();   // average
  VarPtr append();    // append
  VarPtr pad();       // pad
  VarPtr kron();      // kron
  VarPtr gradient();  // gradient
  // numpy_rules_stats.cpp
  VarPtr count_nonzero();  // count_nonzero
  VarPtr statistic();      // median, percentile, quantile, nansum, nanmean, nanmax, nanmin, nanstd,
                           // nanvar, nanmedian
  // numpy_rules_signal.cpp
  VarPtr hanning();   // hanning
  VarPtr rfft();      // fft.rfft
  VarPtr rfftfreq();  // fft.rfftfreq
  VarPtr insert();    // insert
  VarPtr convolve();  // convolve, correlate
  VarPtr interp();    // interp
  // numpy_rules_build.cpp
  VarPtr array();                                       // array
  VarPtr literal_array(const pybind11::object& items);  // array of numbers the frame built
  VarPtr asarray();                                     // asarray
  // numpy_rules_search.cpp
  VarPtr searchsorted();             // searchsorted, ndarray.searchsorted
  VarPtr digitize();                 // digitize
  VarPtr isclose();                  // isclose
  VarPtr indices();                  // indices
  VarPtr nonzero();                  // nonzero, ndarray.nonzero
  VarPtr nonzero_of(const char* p);  // (also np.where of one argument)
  VarPtr flatnonzero();              // flatnonzero
};

}  // namespace sot::translator
