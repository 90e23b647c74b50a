// Guards in C++: a tree of value accessors (a local, a global, a builtin, then attributes and
// items) with checks at each node. Guards sharing a prefix (the same local, the same attribute of
// it) evaluate it once. Locals are read straight from the frame's localsplus.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sot::capture {

// Where a guard reads its values from: a frame about to run, or plain dicts (for tests and tools).
class ValueSource {
 public:
  virtual ~ValueSource() = default;
  ValueSource() = default;
  ValueSource(const ValueSource&) = delete;
  ValueSource& operator=(const ValueSource&) = delete;
  ValueSource(ValueSource&&) = delete;
  ValueSource& operator=(ValueSource&&) = delete;
  // Borrowed references, or nullptr when missing (no Python error set).
  virtual PyObject* local(int index, PyObject* name) const = 0;
  virtual PyObject* global(PyObject* name) const = 0;
  virtual PyObject* builtin(PyObject* name) const = 0;
};

struct GuardCheck {
  enum class Kind {
    kType,          // type(v) is T
    kId,            // v is O (holds O alive)
    kEquals,        // v == constant (int, float, str, bytes, bool, None, tuples of them)
    kLen,           // len(v) == n
    kDictKeys,      // list(v.keys()) == keys, in order
    kDictVersion,   // a dict whose version tag is unchanged (no mutation since the guard was made)
    kArray,         // buffer meta: format, ndim, shape, C-contiguous when required
    kAbsent,        // there is no such value (a global that must not exist, so that a builtin of
                    // that name is what LOAD_GLOBAL finds)
    kTypeVersion,   // type(v) is T and T's version tag is unchanged (neither T nor a base changed
                    // since: attribute lookups through T find what they found)
    kClassVersion,  // v is the class T and T's version tag is unchanged (what a lookup through T
                    // finds - its methods, __init__, descriptors - is what the translation saw)
    kDistinct,      // v is not the value of the other node holding a kDistinct check of the same
                    // `group` (two values received from outside that must not be one object)
  };
  // kArray shape entries: a size (>= 0), kAnyDim, or symbol(k): a dynamic dimension of at least 2,
  // equal to every other dimension with the same symbol in the tree (bound on first sight).
  static constexpr Py_ssize_t kAnyDim = -1;
  static constexpr Py_ssize_t symbol(int k) { return -2 - k; }
  static constexpr int symbol_of(Py_ssize_t dim) { return static_cast<int>(-2 - dim); }
  Kind kind = Kind::kType;
  pybind11::object expected;      // type, object, constant, keys tuple, or format string
  Py_ssize_t length = 0;          // kLen, kArray (ndim)
  std::vector<Py_ssize_t> shape;  // kArray
  std::string format;             // kArray: the buffer's element format, e.g. "d"
  bool contiguous = false;        // kArray
  bool writeable =
      false;  // kArray: writeable (the graph writes into it: a read-only one would raise there)
  bool device = false;  // kArray: a device array by __cuda_array_interface__ (format: its typestr)
  // kArray: the dtype object of an ndarray that passed the format test, and its item size (later
  // ndarrays with the same dtype object are checked from their fields, without the buffer).
  mutable pybind11::object seen_descr;
  mutable Py_ssize_t seen_itemsize = 0;
  std::uint64_t version = 0;  // kDictVersion, kTypeVersion
  // kId: `expected` is a weak reference to the object (the guard does not keep it alive; once it
  // is gone the check fails).
  bool weak = false;
  int group = -1;  // kDistinct: the pair's id; `format` holds the other value's path

  // kId: refer to `expected` weakly when it can be (no error left set either way).
  void make_weak();
  // kId: the object (new reference; nullptr once a weakly held one is gone).
  PyObject* target() const;

  // Never leaves a Python error set. `symbols` holds the sizes bound to shape symbols so far in
  // this evaluation (-1: unbound); a kArray check binds and compares them. A kDistinct check passes
  // here: GuardTree::check compares the values of its pair.
  bool passes(PyObject* value, std::vector<Py_ssize_t>* symbols) const;
  std::string describe() const;
};

struct GuardNode {
  // kCall (a root): the value is key() - process state a translation relied on (NumPy's error
  // state), read by a callable that is cheap and never raises.
  enum class Access { kLocal, kGlobal, kBuiltin, kAttr, kItem, kCall };
  Access access = Access::kLocal;
  int local_index = -1;  // kLocal: localsplus index
  pybind11::object key;  // name (local/global/builtin/attr) or item key
  std::string path;      // readable, e.g. "x.weight[0]"
  std::vector<GuardCheck> checks;
  std::vector<std::unique_ptr<GuardNode>> children;

  GuardNode* child(Access access, int local_index, const pybind11::object& key,
                   const std::string& path);
};

class GuardTree {
 public:
  // The node for a local (by localsplus index and name), global or builtin; created on first use.
  GuardNode* local(int index, const pybind11::object& name);
  GuardNode* global(const pybind11::object& name);
  GuardNode* builtin(const pybind11::object& name);
  // The node for fn() (`path` names it in messages).
  GuardNode* call(const pybind11::object& fn, const std::string& path);

  // True when every check passes. On failure, `failure` (if given) says which check failed on which
  // value.
  bool check(const ValueSource& source, std::string* failure) const;
  std::size_t size() const;  // number of checks
  // The id of the shape symbol called `name` (e.g. "s0"), made on first use; ids are 0..n-1.
  int symbol_id(const std::string& name);
  // A new pair id for two kDistinct checks.
  int distinct_group() { return distinct_groups_++; }
  const std::vector<std::string>& symbols() const { return symbols_; }
  std::string describe() const;

 private:
  GuardNode* root(GuardNode::Access access, int index, const pybind11::object& name,
                  const std::string& path);
  std::vector<std::unique_ptr<GuardNode>> roots_;
  std::vector<std::string> symbols_;
  int distinct_groups_ = 0;
};

}  // namespace sot::capture
