// The translator's values: each Variable is what the simulated frame knows about one Python value
// (a constant, an object known at translation time, a container built inside the frame), and its
// Tracker says where it came from, so that generated code can load it again and guards can check
// exactly what the translation relied on.
#pragma once

#include <pybind11/pybind11.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sot::translator {

class Variable;
using VarPtr = std::shared_ptr<Variable>;

struct Tracker {
  enum class Kind : std::uint8_t {
    kLocal,    // the frame's local `index` (localsplus) as it was at entry
    kGlobal,   // the global `key` (LOAD_GLOBAL semantics: globals, then builtins)
    kAttr,     // getattr(base, key)
    kItem,     // base[key]
    kCreated,  // made or folded inside the frame: rebuilt from its value or its parts
    kModule,   // sys.modules[key], as an import inside the frame found it (guards read it there;
               // generated code loads the module object, which they check it still is)
  };
  Kind kind = Kind::kCreated;
  int index = -1;        // kLocal
  bool deref = false;    // kLocal: the contents of a free variable's cell (loaded by LOAD_DEREF)
  pybind11::object key;  // kLocal, kGlobal, kAttr: the name; kItem: the key
  VarPtr base;           // kAttr, kItem

  // A value the frame received (a local at entry, a global, or reached from one): loadable by
  // generated code and checkable by guards.
  bool is_input() const { return kind != Kind::kCreated; }

  // getattr(base, name) and base[key].
  static Tracker attr(VarPtr base, pybind11::object name) {
    Tracker t;
    t.kind = Kind::kAttr;
    t.key = std::move(name);
    t.base = std::move(base);
    return t;
  }
  static Tracker item(VarPtr base, pybind11::object key) {
    Tracker t = attr(std::move(base), std::move(key));
    t.kind = Kind::kItem;
    return t;
  }
};

class Variable {
 public:
  enum class Kind : std::uint8_t {
    kConst,   // an immutable constant (None, bool, int, float, complex, str, bytes, Ellipsis,
              // range, slice, tuples and frozensets of them): `value`
    kObject,  // another object, known at translation time: `value` (functions, modules, classes,
              // instances, lists and dicts received from outside, ...)
    kTuple,   // a tuple built inside: `items`
    kList,    // a list built inside: `items`
    kNull,    // the NULL pushed for calls
    kIter,    // an iterator built inside (see IterKind), next at `position`; advanced in place
    kMethod,  // the method `value` (its name) of the list, dict or set built inside `items[0]`
    kCell,  // a cell: `items` holds its contents (empty: an empty cell). It is the frame's cell or
            // free slot `slot()`, a cell reached from outside (its tracker), or one made by an
            // inlined call (MAKE_CELL there)
    kFunction,  // a function made inside (MAKE_FUNCTION): `value` its code, `items` its closure
                // cells, `parts()` its defaults, keyword defaults and annotations (or nullptr)
    kDict,      // a dict built inside: `keys()` (constants) and `items` (the values), in order
    kSet,    // a set built inside: `keys()` (constants), in insertion order (never removed from),
             // and `snapshot()` the updates that made it (constant tuples and frozensets)
    kSuper,  // super(items[0], items[1]): a zero-argument super() of an inlined method
    kArray,  // a NumPy array or scalar the frame computed: value `graph_id()` of the frame's graph
             // (see ArrayState); its dtype and shape are known, its contents are not
    kInstance,    // an instance of a plain class made in the frame (instances.cpp): `cls()` the
                  // class, `keys()` the names of its attributes (in the order they were first set)
                  // and `items` their values; `value` is None (no object exists yet)
    kSlice,       // slice(start, stop, step) made in a loop body, a part a Python int of the graph
                  // whose range is known (L[i, :i]): `items` the three parts (constants or values)
    kListBuffer,  // a list made in the frame while the body of a loop that appends to it is
                  // captured (loop_lists.cpp): its items before the loop in `items`, the appended
                  // ones rows of a buffer of the graph; only append, len() and items read it
  };

  // What a kIter iterates over.
  enum class IterKind : std::uint8_t {
    kConstSeq,   // the constant sequence `value` (a tuple, str, bytes or range)
    kItems,      // the Variables `snapshot()` (a tuple built inside, or an input's items)
    kList,       // the list built inside `items[0]`, read live as CPython's list iterator does
    kReversed,   // reversed(): the list `items[0]` from index `start()` down, read live
    kEnumerate,  // enumerate(`items[0]`, start())
    kZip,        // zip(*`items`)
    kDictView,   // iter(d.`value`()) of the dict `items[0]`: `snapshot()` taken at version
                 // `seen_version()` (a later change of the dict makes the next step fail)
    kMap,        // map(`items[0]`, *`items[1:]`): the function called inline on each step
    kFilter,     // filter(`items[0]`, `items[1]`): the function (or None: truth) on each item
  };

  Variable(Kind kind, pybind11::object value, Tracker tracker)
      : kind_(kind), value_(std::move(value)), tracker_(std::move(tracker)), serial_(++serials_) {}

  // Variables are numbered as they are made: one made after another has a larger serial (a loop
  // body's changes to Variables made before it are told apart from its own values).
  std::uint64_t serial() const { return serial_; }
  static std::uint64_t last_serial() { return serials_; }

  static VarPtr constant(pybind11::object value, Tracker tracker = {});
  static VarPtr object(pybind11::object value, Tracker tracker);
  static VarPtr null();
  static VarPtr tuple(std::vector<VarPtr> items);
  // A slice of `parts` (start, stop, step: constants, None included, or Python ints of the graph).
  static VarPtr slice(std::vector<VarPtr> parts);
  static VarPtr list(std::vector<VarPtr> items);
  static VarPtr iter(pybind11::object sequence, Py_ssize_t position);
  // An iterator of `kind` over `parts` (see IterKind).
  static VarPtr iterator(IterKind kind, std::vector<VarPtr> parts, pybind11::object value = {});
  static VarPtr dict(std::vector<pybind11::object> keys, std::vector<VarPtr> values);
  static VarPtr set(std::vector<pybind11::object> keys);
  static VarPtr method(VarPtr self, pybind11::object name);
  // An instance of the class `cls` (a Variable of the class object), with no attributes yet.
  static VarPtr instance(VarPtr cls);
  // A cell holding `contents` (nullptr: empty); `slot` >= 0 for the frame's own cell or free slot;
  // `outside`: a cell object that exists outside the translation (a free variable's, a function's
  // closure, a resume function's argument), which other code may share.
  static VarPtr cell(VarPtr contents, int slot, bool outside, Tracker tracker = {});
  static VarPtr function(pybind11::object code, std::vector<VarPtr> closure);
  // The graph value `id` (see ArrayState), described as `text` ("float64[3, 4]").
  static VarPtr array(int id, std::string text);
  // The Variable for a value received from outside: a constant when its type is one of the
  // immutable constant types (exactly), else an object.
  static VarPtr from_input(pybind11::handle value, Tracker tracker);
  static bool is_constant_value(pybind11::handle value);

  Kind kind() const { return kind_; }
  const pybind11::object& value() const { return value_; }
  const Tracker& tracker() const { return tracker_; }
  std::vector<VarPtr>& items() { return items_; }
  const std::vector<VarPtr>& items() const { return items_; }
  Py_ssize_t position() const { return position_; }
  void set_position(Py_ssize_t p) { position_ = p; }

  bool is_const() const { return kind_ == Kind::kConst; }
  // Mutable (or compared by identity) and made inside: generated code must build it exactly once.
  bool is_mutable_created() const {
    return (kind_ == Kind::kList || kind_ == Kind::kListBuffer || kind_ == Kind::kFunction ||
            kind_ == Kind::kDict || kind_ == Kind::kSet || kind_ == Kind::kIter ||
            kind_ == Kind::kArray || kind_ == Kind::kInstance ||
            (kind_ == Kind::kCell && slot_ < 0)) &&
           !tracker_.is_input();
  }

  // The state that changes in place (lists, dicts, sets, cells, iterators), saved so that an
  // inlined call that cannot finish is undone.
  struct State {
    std::vector<VarPtr> items;
    std::vector<pybind11::object> keys;
    std::vector<VarPtr> snapshot;
    Py_ssize_t position = 0;
    std::uint64_t version = 0;
    Kind kind = Kind::kConst;  // (a list becomes another kind in a loop body: loop_lists.cpp)
    int slot = -1;
    std::string text;
  };
  State save() const {
    return State{items_, keys_, snapshot_, position_, version_, kind_, slot_, text_};
  }
  void restore(State s) {
    items_ = std::move(s.items);
    keys_ = std::move(s.keys);
    snapshot_ = std::move(s.snapshot);
    position_ = s.position;
    version_ = s.version;
    kind_ = s.kind;
    slot_ = s.slot;
    text_ = std::move(s.text);
  }
  // A list made in the frame as the loop that appends to it is captured: kListBuffer while its
  // body is, then the graph value `id` (a Python list made where the graph runs, `text`) after it.
  // The caller logs the state first (OpcodeExecutor::mutate).
  void buffer_list() { kind_ = Kind::kListBuffer; }
  void unbuffer_list() { kind_ = Kind::kList; }
  void list_in_graph(int id, std::string text) {
    kind_ = Kind::kArray;
    slot_ = id;
    text_ = std::move(text);
    items_.clear();
  }
  // kList, kDict, kSet: changed once more (dict iterators made before fail).
  void bump() { ++version_; }
  std::uint64_t version() const { return version_; }

  // kDict, kSet: the keys (constants).
  std::vector<pybind11::object>& keys() { return keys_; }
  const std::vector<pybind11::object>& keys() const { return keys_; }
  // kDict: the index of `key` among keys(), or -1 (-2: the comparison raised).
  Py_ssize_t find_key(const pybind11::handle& key) const;

  // kIter.
  IterKind iter_kind() const { return iter_kind_; }
  std::vector<VarPtr>& snapshot() { return snapshot_; }
  const std::vector<VarPtr>& snapshot() const { return snapshot_; }
  Py_ssize_t start() const { return start_; }
  void set_start(Py_ssize_t s) { start_ = s; }
  std::uint64_t seen_version() const { return seen_version_; }
  void set_seen_version(std::uint64_t v) { seen_version_ = v; }

  // kCell: the slot of the frame (of the translated code, not of an inlined call) that holds it,
  // or -1; its contents (nullptr: empty) and what they were when the translation first saw it.
  int slot() const { return slot_; }
  bool outside() const { return outside_; }
  VarPtr contents() const { return items_.empty() ? nullptr : items_[0]; }
  void set_contents(VarPtr v) {
    items_.clear();
    if (v) {
      items_.push_back(std::move(v));
    }
  }
  const VarPtr& initial_contents() const { return initial_; }
  // kInstance: the class.
  const VarPtr& cls() const { return initial_; }
  // kFunction: the globals it was made with when they are another module's (see FrameInputs), or
  // nullptr (the translated frame's).
  VarPtr& globals() { return initial_; }
  const VarPtr& globals() const { return initial_; }

  // kArray: its value in the graph.
  int graph_id() const { return slot_; }

  // kFunction: its defaults (a tuple), keyword defaults (a dict) and annotations, or nullptr.
  enum Part : std::uint8_t { kDefaults = 0, kKwDefaults = 1, kAnnotations = 2 };
  VarPtr& part(Part p) { return parts_[p]; }
  const VarPtr& part(Part p) const { return parts_[p]; }

  // "int 3", "list of 2", "object <function f>" (for reasons and logs).
  std::string describe() const;

 private:
  Kind kind_;
  pybind11::object value_;
  Tracker tracker_;
  std::vector<VarPtr> items_;
  Py_ssize_t position_ = 0;
  int slot_ = -1;
  bool outside_ = false;
  std::vector<pybind11::object> keys_;
  std::uint64_t version_ = 0;
  IterKind iter_kind_ = IterKind::kConstSeq;
  std::vector<VarPtr> snapshot_;
  Py_ssize_t start_ = 0;
  std::uint64_t seen_version_ = 0;
  VarPtr initial_;
  std::array<VarPtr, 3> parts_;
  std::string text_;  // kArray
  std::uint64_t serial_ = 0;
  static inline std::uint64_t serials_ = 0;  // (translation runs under the GIL)
};

// "x", "globals()['np']", "x.attr[0]": where a tracked value comes from.
std::string tracker_path(const Tracker& tracker, const pybind11::tuple& localsplus_names);

}  // namespace sot::translator
