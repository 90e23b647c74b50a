// Must come first (its own include block): defines Py_BUILD_CORE before Python.h.
#include "capture/frame_api.hpp"

#include "capture/code_cache.hpp"

#include <utility>

namespace sot::capture {

namespace {

constexpr std::size_t kMaxReasons = 16;

// Called by CPython when a code object with a cache is freed (GIL held).
void free_cache(void* extra) {
  delete static_cast<CodeCache*>(extra);
}

Py_ssize_t extra_index() {
  static const Py_ssize_t index = frame::request_code_extra_index(free_cache);
  return index;
}

}  // namespace

void CodeCache::record(std::string reason) {
  reasons.push_back(std::move(reason));
  while (reasons.size() > kMaxReasons) {
    reasons.pop_front();
  }
}

CodeCache* existing_cache(PyObject* code) {
  void* extra = nullptr;
  if (extra_index() < 0 || frame::get_code_extra(code, extra_index(), &extra) != 0) {
    PyErr_Clear();
    return nullptr;
  }
  return static_cast<CodeCache*>(extra);
}

CodeCache* cache_for(PyObject* code) {
  if (extra_index() < 0) {
    PyErr_SetString(PyExc_RuntimeError, "sot: no code-extra slot is left for the capture cache");
    return nullptr;
  }
  void* extra = nullptr;
  if (frame::get_code_extra(code, extra_index(), &extra) != 0) {
    return nullptr;
  }
  if (extra == nullptr) {
    auto* cache = new CodeCache();  // owned by the code object from here on (freed by free_cache)
    if (frame::set_code_extra(code, extra_index(), cache) != 0) {
      delete cache;
      return nullptr;
    }
    extra = cache;
  }
  return static_cast<CodeCache*>(extra);
}

}  // namespace sot::capture
