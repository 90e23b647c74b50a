// Memory planning across the groups of a run, and across runs: the large arrays a run lets go of
// (intermediates whose last reader has run, that nothing else holds) are kept by the compiled
// graph's pool instead of being freed, and a fused group's next output of the same dtype and shape
// takes one instead of a fresh allocation (whose page faults cost about as much as a pass over
// the memory). The pool keeps a few arrays and a bounded number of bytes; the oldest go first.
#pragma once

#include <Python.h>

#include <cstdint>
#include <deque>
#include <vector>

namespace sot::graph {

class BufferPool {
 public:
  BufferPool() = default;
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;
  BufferPool(BufferPool&&) = delete;
  BufferPool& operator=(BufferPool&&) = delete;

  // Takes over `array` (a reference given up): kept when it is a large exact ndarray that owns its
  // C-contiguous writeable data and that nothing else references (no variable, view, container
  // or weak reference); else released.
  void give(PyObject* array);
  // An array of dtype `descr` and shape `dims` (a new reference), or nullptr when none is kept.
  PyObject* take(PyObject* descr, const std::vector<std::int64_t>& dims);
  void clear();
  std::size_t size() const { return arrays_.size(); }

 private:
  struct Kept {
    PyObject* array;  // owned
    std::int64_t bytes;
  };
  std::deque<Kept> arrays_;  // oldest first
  std::int64_t bytes_ = 0;
};

}  // namespace sot::graph
