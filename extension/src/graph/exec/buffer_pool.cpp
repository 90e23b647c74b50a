#include "graph/exec/buffer_pool.hpp"

#include <algorithm>

#include "core/array_fields.hpp"
#include "core/loaded_module.hpp"

namespace sot::graph {

namespace {

// Arrays below this size are left to malloc (which serves them without page faults).
constexpr std::int64_t kMinBytes = std::int64_t{1} << 20;
constexpr std::size_t kMaxArrays = 4;
constexpr std::int64_t kMaxBytes = std::int64_t{512} << 20;

std::int64_t bytes_of(PyObject* a) {
  PyObject* nbytes = PyObject_GetAttrString(a, "nbytes");
  const std::int64_t bytes = nbytes != nullptr ? PyLong_AsLongLong(nbytes) : 0;
  Py_XDECREF(nbytes);
  PyErr_Clear();
  return bytes;
}

// The array's size in bytes when it may be kept (0: it may not).
std::int64_t keepable_bytes(PyObject* a) {
  static PyObject* const ndarray =
      pybind11::object(loaded_module("numpy").attr("ndarray")).release().ptr();
  if (Py_TYPE(a) != reinterpret_cast<PyTypeObject*>(ndarray) || Py_REFCNT(a) != 1) {
    return 0;
  }
  const ArrayFields* f = array_fields(a);
  constexpr int kNeeded = kArrayCContiguous | kArrayOwnData | kArrayWriteable;
  if (f->base != nullptr || f->weakreflist != nullptr || (f->flags & kNeeded) != kNeeded) {
    return 0;
  }
  // Small arrays (most) are told apart without asking for nbytes: no item is wider than 64 bytes.
  constexpr std::int64_t kWidestItem = 64;
  std::int64_t elements = 1;
  for (int d = 0; d < f->nd; ++d) {
    elements *= f->dimensions[d];
  }
  if (elements * kWidestItem < kMinBytes) {
    return 0;
  }
  const std::int64_t bytes = bytes_of(a);
  return bytes >= kMinBytes ? bytes : 0;
}

}  // namespace

BufferPool::~BufferPool() {
  clear();
}

void BufferPool::give(PyObject* array) {
  const std::int64_t bytes = keepable_bytes(array);
  if (bytes == 0 || bytes > kMaxBytes) {
    Py_DECREF(array);
    return;
  }
  arrays_.push_back(Kept{array, bytes});
  bytes_ += bytes;
  while (arrays_.size() > kMaxArrays || bytes_ > kMaxBytes) {
    const Kept oldest = arrays_.front();
    arrays_.pop_front();
    bytes_ -= oldest.bytes;
    Py_DECREF(oldest.array);
  }
}

PyObject* BufferPool::take(PyObject* descr, const std::vector<std::int64_t>& dims) {
  // Newest first: the array released last is the likeliest to be still in cache.
  for (auto it = arrays_.end(); it != arrays_.begin();) {
    --it;
    const ArrayFields* f = array_fields(it->array);
    bool fits = f->descr == descr && f->nd == static_cast<int>(dims.size());
    for (std::size_t d = 0; fits && d < dims.size(); ++d) {
      fits = f->dimensions[d] == dims[d];
    }
    // (Still alone: a pooled array is referenced by the pool only.)
    if (fits && Py_REFCNT(it->array) == 1) {
      PyObject* a = it->array;
      bytes_ -= it->bytes;
      arrays_.erase(it);
      return a;
    }
  }
  return nullptr;
}

void BufferPool::clear() {
  while (!arrays_.empty()) {
    PyObject* a = arrays_.front().array;
    arrays_.pop_front();
    Py_DECREF(a);
  }
  bytes_ = 0;
}

}  // namespace sot::graph
