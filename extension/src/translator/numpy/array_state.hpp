// The graph a translation captures NumPy operations into, shared by the frame and every call it
// inlines: the graph itself, the Variables of its inputs (arrays and NumPy scalars received from
// outside, loaded again by the generated code to call the compiled graph), and the NumPy facts the
// rules need (the promotion rules of the NumPy in use).
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/ir/graph.hpp"
#include "graph/rules/rules.hpp"
#include "translator/values/variable.hpp"

namespace sot::translator {

// A list made in the frame that the body of a `for` loop being captured appends to
// (control/loop_lists.cpp): the buffer of its appended items (`buf`: as many rows as the loop may
// append, `count`: one int64, the rows taken), both made before the loop.
struct ListBuffer {
  int buf = -1, count = -1;
  graph::ValueInfo item;       // every appended item's
  std::size_t before = 0;      // the list's items before the loop
  std::vector<VarPtr> pre;     // (after the loop) those items
  int per_step = 0;            // the appends a step may make (the rows: trips x per_step)
  int appends = 0;             // appends simulated in the body
  bool conditional = false;    // one of them in a way of an `if`
  std::vector<int> arrays;     // the arrays appended (made by the step: nothing writes them)
  const void* site = nullptr;  // the loop whose body appends
  std::int64_t length = -1;    // (after the loop) the list's length, where it is known
};

struct ArrayState {
  graph::Graph graph;
  std::vector<VarPtr> inputs;          // graph input k's Variable (received from outside)
  std::map<const Variable*, int> ids;  // input Variable -> its graph value
  graph::ScalarPromotion promotion = graph::ScalarPromotion::kValueBased;
  // NumPy's error state at translation raises (or calls) on some floating-point error: no op is
  // captured (it would raise where the graph runs, not where the frame did it).
  bool errors_raise = false;
  bool warnings_raise = false;  // warnings filters make a RuntimeWarning an error
  // NumPy 1.x: in its experimental "weak" state only ufuncs treat Python scalars as weak
  // (np.where takes them at their default dtypes).
  bool numpy1 = false;
  pybind11::object numpy;  // the numpy module

  // Dynamic shapes: a dimension of an input array that changed size since an earlier translation of
  // the same code becomes a shape symbol (dimensions of the same size share one, "duck sizing");
  // the guard then accepts any size >= 2 there. A symbol whose size the translation relies on (a
  // shape read as a Python value, an op whose rule needs sizes) is specialized: static again.
  struct InputMeta {
    std::string format;        // the buffer's element format, a device array's typestr (guard)
    graph::Shape shape;        // sizes at this translation
    std::vector<int> symbols;  // per dimension: a symbol, or -1
    bool array = false;        // an ndarray (not a NumPy scalar)
    bool device = false;       // a device array (__cuda_array_interface__)
    bool written = false;      // the graph writes into it (or a view of it): guarded writeable
  };
  std::vector<InputMeta> meta;  // by graph input
  // Input Variable `v` (received from outside) as a new graph input of `info`, named by its
  // tracker's `path`: its graph value.
  int add_input(const VarPtr& v, graph::ValueInfo info, const std::string& path, InputMeta m);
  // Per dimension of input `path`'s `shape`: its symbol (a dimension whose size changed since an
  // earlier translation), or -1; the history updated.
  std::vector<int> shape_symbols(const std::string& path, const graph::Shape& shape);
  std::vector<bool> specialized;  // by symbol
  std::map<std::int64_t, int> symbol_of_size;
  bool dynamic = true;     // config: dimensions may become symbols
  pybind11::dict history;  // the code's translator data (shapes seen before)
  // Sizes known only when the graph runs (the count of a boolean mask's true items): their symbols
  // are never specialized (nothing can guard them), and one symbol per mask value (x[m] and y[m]
  // have as many rows).
  std::vector<int> runtime;        // the symbols
  std::map<int, int> mask_symbol;  // mask value -> its count's symbol
  int count_symbol(int mask);
  // The lengths of slices made in loop bodies (L[i, :i], x[k + 1:]): a runtime symbol per slice
  // form - its start, stop and step as texts of constants and of the Python int ops that made them
  // (i + 1 twice is one form), over a dimension of a given size: slices of one form have as many
  // items. Forgotten with the largest value id the form names (forget_from).
  struct SliceSymbol {
    int symbol = -1;
    int max_id = -1;
  };
  std::map<std::string, SliceSymbol> slice_symbols;
  int slice_symbol(const std::string& form, int max_id);
  bool has_runtime(const graph::ValueInfo& info) const;
  // The symbols of `info` are static from now on.
  void specialize(const graph::ValueInfo& info);
  // `info` without the symbols that were specialized.
  graph::ValueInfo current(graph::ValueInfo info) const;

  // The loop variables of loop bodies being captured (loop_capture.cpp): graph values that are a
  // Python int when the body runs, from `lo` to `hi`. They only index arrays (x[i], x[i] = v);
  // anything else done with them is not an array operation (it breaks, and the loop unrolls).
  struct LoopIndex {
    std::int64_t lo = 0, hi = 0;
  };
  std::map<int, LoopIndex> loop_indices;
  bool is_loop_index(int id) const { return loop_indices.count(id) != 0; }
  // Such lists by Variable while the loop is captured, and after it by the graph value of the
  // Python list made from the buffer (len(), items and np.array() of it read the buffer).
  std::map<const Variable*, ListBuffer> list_buffers;
  std::map<int, ListBuffer> graph_lists;
  // The carried placeholders of loop bodies being captured: placeholder -> the frame's value it
  // stands for on the first step (a write into the placeholder may be a write into that value).
  std::map<int, int> carried_from;
  // Python ints made in the graph whose values lie in a known range (a loop variable plus or times
  // a constant): their array operations' dtypes can be told for every value (python_numbers.cpp).
  std::map<int, LoopIndex> int_ranges;
  // The range of the Python int `id` (a loop variable's or a known one), if any.
  std::optional<LoopIndex> int_range(int id) const;
  // Forgets what is known of values from `first` on (their ids are made again).
  void forget_from(std::size_t first);
  // A graph value no array operation takes: a loop index, or a Python number (ValueInfo::python).
  bool is_opaque(int id) const { return is_loop_index(id) || graph.value(id).info.python != 0; }

  // Where the graph stands, to undo an inlined call that cannot finish.
  struct Mark {
    std::size_t values = 0, ops = 0, inputs = 0;
  };
  Mark mark() const { return {graph.values().size(), graph.ops().size(), graph.inputs().size()}; }
  void rollback(const Mark& m);
  // Cuts the graph back to `m` after its ops from `m` on moved into a body graph (a loop or cond
  // op's; `before` is the graph as it was): the inputs found after `m` are added again and the
  // frame's input ids follow them. Per value id of `before`, its id now: itself below `m`, -1 for
  // what went into the body.
  std::vector<int> cut_back(const graph::Graph& before, const Mark& m);
};

// A ufunc the translator captures: its NumPy name, how its dtype follows from its inputs', and its
// number of inputs. nullptr for other names.
struct UfuncEntry {
  const char* name;
  graph::UfuncKind kind;
  int nin;
};
const UfuncEntry* find_ufunc(const std::string& name);

// Basic index items of a constant key (ints, slices, None, Ellipsis, tuples of them), or nullopt
// when the key is not a basic index (numpy_names.cpp).
std::optional<std::vector<graph::IndexItem>> index_items(const pybind11::object& key);

// str(o) as a std::string.
std::string str_of(const pybind11::handle& o);

// Adds the array guards of the inputs (shape symbols as the translation left them) to `guards`.
class GuardSet;
void add_array_guards(const ArrayState& arrays, GuardSet* guards);

// numpy, when the process has imported it (the translator never imports it), else None.
pybind11::object numpy_module();

}  // namespace sot::translator
