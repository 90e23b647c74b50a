#include "capture/describe.hpp"

namespace sot::capture {

namespace {

constexpr Py_ssize_t kMaxReprLength = 200;  // str and bytes items of a tuple shown by repr
constexpr std::size_t kMaxIntBits = 256;

bool safe_repr(PyObject* v, int depth) {
  if ((PyUnicode_CheckExact(v) && PyUnicode_GET_LENGTH(v) > kMaxReprLength) ||
      (PyBytes_CheckExact(v) && PyBytes_GET_SIZE(v) > kMaxReprLength) ||
      (PyLong_CheckExact(v) && _PyLong_NumBits(v) > kMaxIntBits)) {
    return false;  // (its repr would take long to make)
  }
  if (v == Py_None || v == Py_Ellipsis || PyBool_Check(v) || PyLong_CheckExact(v) ||
      PyFloat_CheckExact(v) || PyComplex_CheckExact(v) || PyUnicode_CheckExact(v) ||
      PyBytes_CheckExact(v) || PyRange_Check(v)) {
    return true;
  }
  constexpr int kMaxDepth = 4;
  constexpr Py_ssize_t kMaxItems = 16;
  if (depth < kMaxDepth && PyTuple_CheckExact(v) && PyTuple_GET_SIZE(v) <= kMaxItems) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(v); ++i) {
      if (!safe_repr(PyTuple_GET_ITEM(v, i), depth + 1)) {
        return false;
      }
    }
    return true;
  }
  if (depth < kMaxDepth && PySlice_Check(v)) {
    auto* s = reinterpret_cast<PySliceObject*>(v);
    return safe_repr(s->start, depth + 1) && safe_repr(s->stop, depth + 1) &&
           safe_repr(s->step, depth + 1);
  }
  return false;
}

std::string utf8(PyObject* s) {
  if (s == nullptr || !PyUnicode_Check(s)) {
    return "?";
  }
  const char* text = PyUnicode_AsUTF8(s);
  if (text == nullptr) {
    PyErr_Clear();
    return "?";
  }
  return text;
}

// `text` cut to at most `n` bytes, not inside a UTF-8 sequence.
std::string cut_utf8(const std::string& text, std::size_t n) {
  if (text.size() <= n) {
    return text;
  }
  constexpr unsigned char kContinuationMask = 0xC0;
  constexpr unsigned char kContinuation = 0x80;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & kContinuationMask) == kContinuation) {
    --n;
  }
  return text.substr(0, n) + "...";
}

// A short text for a value whose repr would be long to make (a huge str, bytes or int), else
// empty: the time to describe a value must not grow with it (guard failures describe values).
std::string describe_large(PyObject* v, std::size_t max_length) {
  const auto limit = static_cast<Py_ssize_t>(max_length);
  if (PyUnicode_CheckExact(v) && PyUnicode_GET_LENGTH(v) > limit) {
    PyObject* head = PyUnicode_Substring(v, 0, limit);
    PyObject* r = head != nullptr ? PyObject_Repr(head) : nullptr;
    std::string out = r != nullptr ? utf8(r) : "?";
    Py_XDECREF(r);
    Py_XDECREF(head);
    PyErr_Clear();
    return out + "... (str of " + std::to_string(PyUnicode_GET_LENGTH(v)) + ")";
  }
  if (PyBytes_CheckExact(v) && PyBytes_GET_SIZE(v) > limit) {
    return "<bytes of " + std::to_string(PyBytes_GET_SIZE(v)) + ">";
  }
  if (PyLong_CheckExact(v) && _PyLong_NumBits(v) > kMaxIntBits) {
    return "<int of " + std::to_string(_PyLong_NumBits(v)) + " bits>";
  }
  return {};
}

}  // namespace

std::string describe_value(PyObject* v, std::size_t max_length) {
  if (v == nullptr) {
    return "<missing>";
  }
  std::string out = describe_large(v, max_length);
  if (!out.empty()) {
    return out;
  }
  if (safe_repr(v, 0)) {
    PyObject* r = PyObject_Repr(v);
    if (r == nullptr) {  // e.g. an int past sys.get_int_max_str_digits()
      PyErr_Clear();
      out = "<" + std::string(Py_TYPE(v)->tp_name) + " too large to show>";
    } else {
      out = utf8(r);
      Py_DECREF(r);
    }
  } else if (PyFunction_Check(v)) {
    out = "<function " + utf8(reinterpret_cast<PyFunctionObject*>(v)->func_qualname) + ">";
  } else if (PyCFunction_Check(v)) {
    const char* name = reinterpret_cast<PyCFunctionObject*>(v)->m_ml->ml_name;
    PyObject* self = PyCFunction_GET_SELF(v);
    out = (self == nullptr || PyModule_Check(self))
              ? "<built-in function " + std::string(name) + ">"
              : "<built-in method " + std::string(name) + " of " + Py_TYPE(self)->tp_name + ">";
  } else if (PyModule_CheckExact(v)) {
    PyObject* name = PyModule_GetNameObject(v);
    out = "<module " + (name != nullptr ? utf8(name) : std::string("?")) + ">";
    Py_XDECREF(name);
    PyErr_Clear();
  } else if (PyType_Check(v)) {
    out = "<class " + std::string(reinterpret_cast<PyTypeObject*>(v)->tp_name) + ">";
  } else if (PyTuple_CheckExact(v)) {
    out = "<tuple of " + std::to_string(PyTuple_GET_SIZE(v)) + ">";
  } else if (PyList_CheckExact(v)) {
    out = "<list of " + std::to_string(PyList_GET_SIZE(v)) + ">";
  } else if (PyDict_CheckExact(v)) {
    out = "<dict of " + std::to_string(PyDict_Size(v)) + ">";
  } else {
    out = "<" + std::string(Py_TYPE(v)->tp_name) + " object>";
  }
  return cut_utf8(out, max_length);
}

}  // namespace sot::capture
