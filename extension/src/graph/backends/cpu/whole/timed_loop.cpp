// Tier C's code of a loop over large arrays, run where timing says it pays (timed_loop.hpp).
#include "graph/backends/cpu/whole/timed_loop.hpp"

#include <utility>

#include "graph/backends/cpu/whole/whole_runner.hpp"

namespace sot::graph::whole {

TimedLoop::TimedLoop(std::shared_ptr<LoopCode> code, long long largest)
    : code_(std::move(code)), largest_(largest) {}

LoopCode::Route TimedLoop::route(PyObject* const* args, std::size_t nargs) {
  if (!code_->ready()) {
    return Route::kOther;
  }
  if (whole_options().hot_calls.load() == 0) {
    return Route::kNative;
  }
  return choice_.route(choice_.size_class(args, nargs, -1));
}

std::string TimedLoop::status() const {
  return code_->status() + "; arrays of " + std::to_string(largest_) +
         " items made: native where timing says it pays" + choice_.describe();
}

}  // namespace sot::graph::whole
