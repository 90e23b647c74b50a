// Which of two paths the calls of a native code take, where the native one may be the slower (a
// graph with no loop op, whose groups tier B compiles; a loop over arrays past kMostItems, where
// tier B's fused kernels and threads may pay more than tier C's pass per op): per size class (the
// most items of an array argument, in powers of two) a few calls of each path are timed and the
// faster is kept; the choice is timed again after 256, 1,024, 4,096... calls (tier B's kernels may
// have become ready since).
#pragma once

#include <pybind11/pybind11.h>

#include <array>
#include <cstddef>
#include <string>

#include "graph/exec/loop_code.hpp"

namespace sot::graph::whole {

class PathChoice {
 public:
  static constexpr int kSizes = 40;   // size classes: up to 2**39 items
  static constexpr int kSamples = 8;  // timed calls of each path in a round

  PathChoice();

  // The size class of a call's arguments (the most items of an array among them, in powers of
  // two), or -1 when that is past `most` items (most < 0: no limit).
  int size_class(PyObject* const* args, std::size_t nargs, long long most) const;

  // The route of a call of size class `size` (>= 0).
  LoopCode::Route route(int size);
  // The last routed call took `ns` nanoseconds, on the native path or not.
  void timed(bool native, long long ns);
  // "; arrays of up to 4095 items: native (12.00 us native, 30.00 us not)" per decided class.
  std::string describe() const;

 private:
  struct Size {
    long long best_native = -1;  // the fastest timed call of each path, ns (-1: none yet)
    long long best_other = -1;
    int samples = 0;           // timed calls in this round
    long long calls = 0;       // since the last round
    long long next_round = 0;  // calls before the next round
    bool native = false;       // the choice of the last round
    bool decided = false;
  };
  pybind11::object ndarray_;
  std::array<Size, kSizes> sizes_{};
  int last_ = -1;  // the size class of the last route()
};

}  // namespace sot::graph::whole
