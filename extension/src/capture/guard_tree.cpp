// Must come first (its own include block): defines Py_BUILD_CORE before Python.h.
#include "capture/frame_api.hpp"

#include "capture/guard_tree.hpp"

#include "capture/describe.hpp"
#include "core/array_fields.hpp"
#include "core/device_arrays.hpp"
#include "core/type_version.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

namespace py = pybind11;

namespace sot::capture {

namespace {

// What one evaluation of a tree carries from node to node.
struct EvalState {
  std::vector<Py_ssize_t> symbols;                  // shape symbols' sizes (-1: unbound)
  std::vector<std::pair<int, PyObject*>> distinct;  // kDistinct groups and values seen
};

std::string repr_of(PyObject* value) {
  return describe_value(value);
}

// The dimensions match the guard's shape, binding the shape symbols on first sight.
bool shape_matches(const GuardCheck& c, int ndim, const Py_ssize_t* shape,
                   std::vector<Py_ssize_t>* symbols) {
  if (ndim != c.length) {
    return false;
  }
  for (int d = 0; d < ndim; ++d) {
    const Py_ssize_t want = c.shape[static_cast<std::size_t>(d)];
    const Py_ssize_t size = shape[d];
    if (want >= 0) {
      if (size != want) {
        return false;
      }
    } else if (want != GuardCheck::kAnyDim) {
      const auto k = static_cast<std::size_t>(GuardCheck::symbol_of(want));
      if (size < 2 || symbols == nullptr || k >= symbols->size()) {
        return false;
      }
      Py_ssize_t& bound = (*symbols)[k];
      if (bound >= 0 && bound != size) {
        return false;
      }
      bound = size;
    }
  }
  return true;
}

// PyBuffer_IsContiguous(view, 'C') for an array's dimensions and strides: empty arrays are, and
// the strides of dimensions of length 1 do not count.
bool c_contiguous(int ndim, const Py_ssize_t* shape, const Py_ssize_t* strides,
                  Py_ssize_t itemsize) {
  if (itemsize == 0) {
    return true;
  }
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] == 0) {
      return true;
    }
  }
  Py_ssize_t expected = itemsize;
  for (int d = ndim - 1; d >= 0; --d) {
    if (shape[d] > 1 && strides[d] != expected) {
      return false;
    }
    expected *= shape[d];
  }
  return true;
}

// One item code with at most a byte-order prefix ("d", "<f", "?"): not a structured or sub-array
// format.
bool simple_format(const std::string& format) {
  return !format.empty() && format.size() <= 2 &&
         format.find_first_of("{}():T") == std::string::npos;
}

// numpy.ndarray, known once a buffer of that exact type has passed a check (borrowed: the type
// lives as long as NumPy, which is never unloaded).
PyTypeObject* g_ndarray = nullptr;

// The fast path for an exact ndarray whose dtype (descr) already passed this check's format test
// through the buffer protocol: read the array's own fields. 1: passes, 0: fails, -1: take the
// buffer path.
int array_fast_path(const GuardCheck& c, PyObject* value, std::vector<Py_ssize_t>* symbols) {
  // (An unaligned array exports another format, "=d" for "d": the buffer path decides for it.)
  if (Py_TYPE(value) != g_ndarray || g_ndarray == nullptr || !c.seen_descr ||
      array_fields(value)->descr != c.seen_descr.ptr() ||
      (array_fields(value)->flags & kArrayAligned) == 0) {
    return -1;
  }
  const ArrayFields* a = array_fields(value);
  bool ok = shape_matches(c, a->nd, a->dimensions, symbols) &&
            (!c.writeable || (a->flags & kArrayWriteable) != 0);
  if (ok && c.contiguous) {
    ok = c_contiguous(a->nd, a->dimensions, a->strides, c.seen_itemsize);
  }
  return ok ? 1 : 0;
}

// A device array (c.device), by its protocol: c's typestr and shape (strides of whole items, no
// mask: core::read_device_array).
bool device_array_matches(const GuardCheck& c, PyObject* value, std::vector<Py_ssize_t>* symbols) {
  core::DeviceArrayView view;
  std::string why;
  if (!core::read_device_array(value, &view, &why) || view.typestr != c.format) {
    return false;
  }
  const std::vector<Py_ssize_t> dims(view.shape.begin(), view.shape.end());
  return shape_matches(c, static_cast<int>(dims.size()), dims.data(), symbols);
}

bool array_matches(const GuardCheck& c, PyObject* value, std::vector<Py_ssize_t>* symbols) {
  if (c.device) {
    return device_array_matches(c, value, symbols);
  }
  const int fast = array_fast_path(c, value, symbols);
  if (fast >= 0) {
    return fast == 1;
  }
  if (PyObject_CheckBuffer(value) == 0) {
    return false;
  }
  Py_buffer view;
  if (PyObject_GetBuffer(value, &view, PyBUF_RECORDS_RO) != 0) {
    PyErr_Clear();
    return false;
  }
  const bool format_ok = view.format != nullptr && c.format == view.format;
  bool ok = format_ok && shape_matches(c, view.ndim, view.shape, symbols) &&
            (!c.writeable || view.readonly == 0);
  if (ok && c.contiguous) {
    ok = PyBuffer_IsContiguous(&view, 'C') != 0;
  }
  if (format_ok && simple_format(c.format) &&
      std::strcmp(Py_TYPE(value)->tp_name, "numpy.ndarray") == 0 &&
      (array_fields(value)->flags & kArrayAligned) != 0) {
    // Every aligned ndarray with this dtype object exports the same simple format (a structured
    // dtype's format changes when its fields are renamed): later checks read fields.
    g_ndarray = Py_TYPE(value);
    c.seen_descr = py::reinterpret_borrow<py::object>(array_fields(value)->descr);
    c.seen_itemsize = view.itemsize;
  }
  PyBuffer_Release(&view);
  return ok;
}

// Equal as constants: the same type throughout (1, 1.0 and True differ, and so do (1,) and
// (True,)), floats and complex numbers bit for bit (0.0 and -0.0 differ; a NaN equals only the same
// NaN). A translation made for one value is reused only for values it would fold the same way.
bool strictly_equal(PyObject* a, PyObject* b) {
  if (a == b) {
    return true;
  }
  if (Py_TYPE(a) != Py_TYPE(b)) {
    return false;
  }
  // Bit patterns, so that 0.0 and -0.0 differ and a NaN equals the same NaN.
  auto same_bits = [](double x, double y) {
    std::uint64_t bx = 0;
    std::uint64_t by = 0;
    std::memcpy(&bx, &x, sizeof bx);
    std::memcpy(&by, &y, sizeof by);
    return bx == by;
  };
  if (PyFloat_CheckExact(a)) {
    return same_bits(PyFloat_AS_DOUBLE(a), PyFloat_AS_DOUBLE(b));
  }
  if (PyComplex_CheckExact(a)) {
    const Py_complex x = PyComplex_AsCComplex(a);
    const Py_complex y = PyComplex_AsCComplex(b);
    return same_bits(x.real, y.real) && same_bits(x.imag, y.imag);
  }
  if (PyTuple_CheckExact(a)) {
    if (PyTuple_GET_SIZE(a) != PyTuple_GET_SIZE(b)) {
      return false;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a); ++i) {
      if (!strictly_equal(PyTuple_GET_ITEM(a, i), PyTuple_GET_ITEM(b, i))) {
        return false;
      }
    }
    return true;
  }
  if (PyFrozenSet_CheckExact(a) || PySlice_Check(a)) {
    return false;  // compared by identity only (their items could differ in type)
  }
  const int eq = PyObject_RichCompareBool(a, b, Py_EQ);
  if (eq < 0) {
    PyErr_Clear();
  }
  return eq == 1;
}

// "format d shape (3, 4) C-contiguous" for a buffer, else its repr.
std::string buffer_text(PyObject* value) {
  Py_buffer view;
  if (PyObject_CheckBuffer(value) == 0 || PyObject_GetBuffer(value, &view, PyBUF_RECORDS_RO) != 0) {
    PyErr_Clear();
    return repr_of(value);
  }
  std::string s =
      "array format " + std::string(view.format != nullptr ? view.format : "?") + " shape (";
  for (int d = 0; d < view.ndim; ++d) {
    s += (d > 0 ? ", " : "") + std::to_string(view.shape[d]);
  }
  s += view.ndim == 1 ? ",)" : ")";
  if (PyBuffer_IsContiguous(&view, 'C') != 0) {
    s += " C-contiguous";
  }
  PyBuffer_Release(&view);
  return s;
}

// The value of `node` reached from `parent` (new reference or nullptr, no error set).
PyObject* fetch(const GuardNode& node, const ValueSource& source, PyObject* parent) {
  PyObject* value = nullptr;
  switch (node.access) {
    case GuardNode::Access::kLocal:
      value = source.local(node.local_index, node.key.ptr());
      Py_XINCREF(value);
      return value;
    case GuardNode::Access::kGlobal:
      value = source.global(node.key.ptr());
      Py_XINCREF(value);
      return value;
    case GuardNode::Access::kBuiltin:
      value = source.builtin(node.key.ptr());
      Py_XINCREF(value);
      return value;
    case GuardNode::Access::kAttr:
      value = PyObject_GetAttr(parent, node.key.ptr());
      break;
    case GuardNode::Access::kItem:
      value = PyObject_GetItem(parent, node.key.ptr());
      break;
    case GuardNode::Access::kCall:
      value = PyObject_CallNoArgs(node.key.ptr());
      break;
  }
  if (value == nullptr) {
    PyErr_Clear();
  }
  return value;
}

// kDistinct: the value is not the one its pair's other member had (`seen`: group and address of
// each member evaluated so far). Addresses are compared after the values are released: a value
// alive only while it was checked may share an address with a later one, which fails the guard (a
// cache miss, never a wrong hit); an object that is the value of both places stays alive between.
bool distinct_passes(const GuardCheck& c, PyObject* value,
                     std::vector<std::pair<int, PyObject*>>* seen) {
  for (const auto& [group, object] : *seen) {
    if (group == c.group && object == value) {
      return false;
    }
  }
  seen->emplace_back(c.group, value);
  return true;
}

bool check_node(const GuardNode& node, const ValueSource& source, PyObject* parent,
                EvalState* state, std::string* failure) {
  PyObject* value = fetch(node, source, parent);  // new reference or nullptr
  const bool must_be_absent =
      !node.checks.empty() && node.checks.front().kind == GuardCheck::Kind::kAbsent;
  if (value == nullptr && must_be_absent) {
    return true;
  }
  if (value == nullptr) {
    if (failure != nullptr) {
      *failure = node.path + " is missing";
    }
    return false;
  }
  bool ok = true;
  for (const GuardCheck& c : node.checks) {
    if (c.kind == GuardCheck::Kind::kDistinct ? !distinct_passes(c, value, &state->distinct)
                                              : !c.passes(value, &state->symbols)) {
      if (failure != nullptr) {
        *failure = node.path + ": expected " + c.describe() + ", got " +
                   (c.kind == GuardCheck::Kind::kArray ? buffer_text(value) : repr_of(value));
      }
      ok = false;
      break;
    }
  }
  for (std::size_t i = 0; ok && i < node.children.size(); ++i) {
    ok = check_node(*node.children[i], source, value, state, failure);
  }
  Py_DECREF(value);
  return ok;
}

std::size_t count_checks(const GuardNode& node) {
  std::size_t n = node.checks.size();
  for (const auto& c : node.children) {
    n += count_checks(*c);
  }
  return n;
}

void describe_node(const GuardNode& node, std::string* out) {
  for (const GuardCheck& c : node.checks) {
    *out += node.path + ": " + c.describe() + "\n";
  }
  for (const auto& c : node.children) {
    describe_node(*c, out);
  }
}

}  // namespace

bool GuardCheck::passes(PyObject* value, std::vector<Py_ssize_t>* symbols) const {
  switch (kind) {
    case Kind::kType:
      return reinterpret_cast<PyObject*>(Py_TYPE(value)) == expected.ptr();
    case Kind::kId: {
      PyObject* t = target();
      Py_XDECREF(t);  // (only its address is compared)
      return t != nullptr && value == t;
    }
    case Kind::kEquals:
      return strictly_equal(value, expected.ptr());
    case Kind::kLen: {
      const Py_ssize_t n = PyObject_Length(value);
      if (n < 0) {
        PyErr_Clear();
        return false;
      }
      return n == length;
    }
    case Kind::kDictKeys: {
      if (!PyDict_Check(value) || PyDict_Size(value) != PyTuple_GET_SIZE(expected.ptr())) {
        return false;
      }
      Py_ssize_t pos = 0;
      Py_ssize_t i = 0;
      PyObject* key = nullptr;
      PyObject* item = nullptr;
      while (PyDict_Next(value, &pos, &key, &item)) {
        const int eq = PyObject_RichCompareBool(key, PyTuple_GET_ITEM(expected.ptr(), i++), Py_EQ);
        if (eq != 1) {
          PyErr_Clear();
          return false;
        }
      }
      return true;
    }
    case Kind::kDictVersion:
      return PyDict_Check(value) && frame::dict_version(value) == version;
    case Kind::kArray:
      return array_matches(*this, value, symbols);
    case Kind::kAbsent:
      return false;  // only reached when the value exists
    case Kind::kTypeVersion: {
      auto* type = reinterpret_cast<PyTypeObject*>(expected.ptr());
      return Py_TYPE(value) == type && version != 0 && type->tp_version_tag == version &&
             core::has_valid_version_tag(type);
    }
    case Kind::kClassVersion: {
      auto* type = reinterpret_cast<PyTypeObject*>(expected.ptr());
      return value == expected.ptr() && version != 0 && type->tp_version_tag == version &&
             core::has_valid_version_tag(type);
    }
    case Kind::kDistinct:
      return true;  // (compared across nodes by GuardTree::check)
  }
  return false;
}

std::string GuardCheck::describe() const {
  switch (kind) {
    case Kind::kType:
      return "type " + std::string(reinterpret_cast<PyTypeObject*>(expected.ptr())->tp_name);
    case Kind::kId: {
      PyObject* t = target();
      const std::string text = t != nullptr ? repr_of(t) : "<gone>";
      Py_XDECREF(t);
      return "the object " + text;
    }
    case Kind::kEquals:
      return "== " + repr_of(expected.ptr());
    case Kind::kLen:
      return "len " + std::to_string(length);
    case Kind::kDictKeys:
      return "keys " + repr_of(expected.ptr());
    case Kind::kDictVersion:
      return "a dict unchanged since version " + std::to_string(version);
    case Kind::kArray: {
      std::string s = "array format " + format + " shape (";
      for (std::size_t d = 0; d < shape.size(); ++d) {
        const Py_ssize_t dim = shape[d];
        s +=
            (d > 0 ? ", " : "") + (dim >= 0         ? std::to_string(dim)
                                   : dim == kAnyDim ? std::string("?")
                                                    : "s" + std::to_string(symbol_of(dim)) + ">=2");
      }
      return (device ? "device " : "") + s + (shape.size() == 1 ? ",)" : ")") +
             (contiguous ? " C-contiguous" : "") + (writeable ? " writeable" : "");
    }
    case Kind::kAbsent:
      return "no such value";
    case Kind::kTypeVersion:
      return "type " + std::string(reinterpret_cast<PyTypeObject*>(expected.ptr())->tp_name) +
             " at version " + std::to_string(version);
    case Kind::kClassVersion:
      return "the class " + std::string(reinterpret_cast<PyTypeObject*>(expected.ptr())->tp_name) +
             " at version " + std::to_string(version);
    case Kind::kDistinct:
      return "not the object at " + format;
  }
  return "?";
}

namespace {

// The node in `nodes` reached by (access, index, key), created with `path` on first use.
GuardNode* find_or_add(std::vector<std::unique_ptr<GuardNode>>& nodes, GuardNode::Access access,
                       int index, const py::object& key, const std::string& path) {
  for (const auto& n : nodes) {
    if (n->access == access && n->local_index == index &&
        Py_TYPE(n->key.ptr()) == Py_TYPE(key.ptr()) && n->key.equal(key)) {
      return n.get();
    }
  }
  auto node = std::make_unique<GuardNode>();
  node->access = access;
  node->local_index = index;
  node->key = key;
  node->path = path;
  nodes.push_back(std::move(node));
  return nodes.back().get();
}

}  // namespace

void GuardCheck::make_weak() {
  PyObject* ref = PyWeakref_NewRef(expected.ptr(), nullptr);
  if (ref == nullptr) {
    PyErr_Clear();  // (not weakly referenceable: held strongly)
    return;
  }
  expected = py::reinterpret_steal<py::object>(ref);
  weak = true;
}

PyObject* GuardCheck::target() const {
  if (!weak) {
    Py_INCREF(expected.ptr());
    return expected.ptr();
  }
  PyObject* t = PyObject_CallNoArgs(expected.ptr());  // the object, or None once it is gone
  if (t == Py_None) {
    Py_DECREF(t);
    return nullptr;
  }
  if (t == nullptr) {
    PyErr_Clear();
  }
  return t;
}

GuardNode* GuardNode::child(Access a, int index, const py::object& k, const std::string& p) {
  return find_or_add(children, a, index, k, p);
}

GuardNode* GuardTree::root(GuardNode::Access access, int index, const py::object& name,
                           const std::string& path) {
  return find_or_add(roots_, access, index, name, path);
}

GuardNode* GuardTree::local(int index, const py::object& name) {
  return root(GuardNode::Access::kLocal, index, name, py::str(name).cast<std::string>());
}
GuardNode* GuardTree::global(const py::object& name) {
  return root(GuardNode::Access::kGlobal, -1, name,
              "globals()[" + py::repr(name).cast<std::string>() + "]");
}
GuardNode* GuardTree::builtin(const py::object& name) {
  return root(GuardNode::Access::kBuiltin, -1, name,
              "builtins." + py::str(name).cast<std::string>());
}

GuardNode* GuardTree::call(const py::object& fn, const std::string& path) {
  return root(GuardNode::Access::kCall, -1, fn, path);
}

bool GuardTree::check(const ValueSource& source, std::string* failure) const {
  EvalState state;
  state.symbols.assign(symbols_.size(), -1);
  for (const auto& r : roots_) {
    if (!check_node(*r, source, nullptr, &state, failure)) {
      return false;
    }
  }
  return true;
}

int GuardTree::symbol_id(const std::string& name) {
  for (std::size_t k = 0; k < symbols_.size(); ++k) {
    if (symbols_[k] == name) {
      return static_cast<int>(k);
    }
  }
  symbols_.push_back(name);
  return static_cast<int>(symbols_.size() - 1);
}

std::size_t GuardTree::size() const {
  std::size_t n = 0;
  for (const auto& r : roots_) {
    n += count_checks(*r);
  }
  return n;
}

std::string GuardTree::describe() const {
  std::string out;
  for (const auto& r : roots_) {
    describe_node(*r, &out);
  }
  return out;
}

}  // namespace sot::capture
