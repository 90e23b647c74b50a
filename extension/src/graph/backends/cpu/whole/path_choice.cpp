// Two paths chosen by timing (path_choice.hpp).
#include "graph/backends/cpu/whole/path_choice.hpp"

#include <algorithm>
#include <cstdio>

#include "core/array_fields.hpp"
#include "core/loaded_module.hpp"

namespace sot::graph::whole {

PathChoice::PathChoice() : ndarray_(loaded_module("numpy").attr("ndarray")) {}

int PathChoice::size_class(PyObject* const* args, std::size_t nargs, long long most) const {
  auto* const ndarray = reinterpret_cast<PyTypeObject*>(ndarray_.ptr());
  long long largest = 0;
  for (std::size_t k = 0; k < nargs; ++k) {
    if (PyObject_TypeCheck(args[k], ndarray) == 0) {
      continue;
    }
    const ArrayFields* f = array_fields(args[k]);
    long long n = 1;
    for (int d = 0; d < f->nd; ++d) {
      n *= f->dimensions[d];
    }
    largest = std::max(largest, n);
  }
  if (most >= 0 && largest > most) {
    return -1;
  }
  int size = 0;
  while (largest > 0 && size < kSizes - 1) {
    largest >>= 1;
    ++size;
  }
  return size;
}

LoopCode::Route PathChoice::route(int size) {
  Size& s = sizes_[static_cast<std::size_t>(size)];
  last_ = size;
  if (s.decided) {
    if (++s.calls < s.next_round) {
      return s.native ? LoopCode::Route::kNative : LoopCode::Route::kOther;
    }
    s.decided = false;  // (a new round)
    s.samples = 0;
    s.best_native = -1;
    s.best_other = -1;
  }
  return s.samples % 2 == 0 ? LoopCode::Route::kNativeTimed : LoopCode::Route::kOtherTimed;
}

void PathChoice::timed(bool native, long long ns) {
  if (last_ < 0) {
    return;
  }
  Size& s = sizes_[static_cast<std::size_t>(last_)];
  long long& best = native ? s.best_native : s.best_other;
  best = best < 0 ? ns : std::min(best, ns);
  if (++s.samples < 2 * kSamples) {
    return;
  }
  s.native = s.best_native <= s.best_other;
  s.decided = true;
  s.calls = 0;
  s.next_round = s.next_round == 0 ? 256 : s.next_round * 4;
}

std::string PathChoice::describe() const {
  std::string s;
  for (int k = 0; k < kSizes; ++k) {
    const Size& size = sizes_[static_cast<std::size_t>(k)];
    if (!size.decided) {
      continue;
    }
    char text[128];
    std::snprintf(
        text, sizeof text, "; arrays of up to %lld items: %s (%.2f us native, %.2f us not)",
        (1LL << k) - 1, size.native ? "native" : "not native",
        static_cast<double>(size.best_native) * 1e-3, static_cast<double>(size.best_other) * 1e-3);
    s += text;
  }
  return s;
}

}  // namespace sot::graph::whole
