// A loop op's whole run as native code: what a backend may give a loop op (the cpu backend's tier
// C, graph/backends/cpu/whole/) so that its steps cost their arithmetic and not a graph call each
// from Python objects. The loop op runs it when it is ready; where it gives up (a Python int past
// 64 bits, a floating-point flag NumPy would warn of, an index out of range, arguments of other
// kinds), every array it wrote is put back as it was and the loop op runs its own path, which
// computes (or raises) as plain Python does.
#pragma once

#include <Python.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace sot::graph {

class LoopCode {
 public:
  enum class Outcome : std::uint8_t { kDone, kGaveUp, kError };
  // Which path a call takes: the native code or the graph's other one, and whether the caller
  // times it (and says how long it took through timed()).
  enum class Route : std::uint8_t { kNative, kNativeTimed, kOther, kOtherTimed };

  LoopCode() = default;
  virtual ~LoopCode() = default;
  LoopCode(const LoopCode&) = delete;
  LoopCode& operator=(const LoopCode&) = delete;
  LoopCode(LoopCode&&) = delete;
  LoopCode& operator=(LoopCode&&) = delete;

  // Compiled and not given up on.
  virtual bool ready() const = 0;
  // False when there is no native code at all (status() says why).
  virtual bool emitted() const { return true; }
  // True once it will never be ready again (its compile failed, or it gave up too often).
  virtual bool retired() const = 0;
  // The whole loop on the op's arguments: kDone with `*result` the op's tuple (a new reference),
  // kGaveUp with nothing changed, kError with a Python error set (a signal handler raised).
  virtual Outcome run(PyObject* const* args, std::size_t nargs, PyObject** result) = 0;
  // The path of a call on `args` (by default native whenever ready). Code that may run slower
  // than the other path (a graph with no loop op, whose groups tier B compiles) asks for some
  // calls of both to be timed and picks the faster.
  virtual Route route(PyObject* const* args, std::size_t nargs) {
    (void)args;
    (void)nargs;
    return ready() ? Route::kNative : Route::kOther;
  }
  // A timed call of the last route() took `ns` nanoseconds, on the native path or not.
  virtual void timed(bool native, long long ns) {
    (void)native;
    (void)ns;
  }
  // "ready (compiled in 0.21 s)", "compiling", "gave up 3 times (int overflow in add, line 4)".
  virtual std::string status() const = 0;
  // How many runs were native, and how many gave up.
  virtual long runs() const = 0;
  virtual long gave_up() const = 0;
};

// A call on `args` by the route `code` gives it: the native code (its tuple handed to
// `finish(tuple)`, which returns the call's result) or `other()`, the graph's other path, which
// also runs where the native code gives up; timed where the route says.
template <typename Finish, typename Other>
PyObject* run_routed(LoopCode& code, PyObject* const* args, std::size_t nargs, const Finish& finish,
                     const Other& other) {
  using Clock = std::chrono::steady_clock;
  using Route = LoopCode::Route;
  const auto since = [](Clock::time_point start) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
  };
  const Route route = code.route(args, nargs);
  const bool timed = route == Route::kNativeTimed || route == Route::kOtherTimed;
  const auto start = timed ? Clock::now() : Clock::time_point();
  bool gave_up = false;
  if (route == Route::kNative || route == Route::kNativeTimed) {
    PyObject* result = nullptr;
    switch (code.run(args, nargs, &result)) {
      case LoopCode::Outcome::kDone:
        if (timed) {
          code.timed(true, since(start));
        }
        return finish(result);
      case LoopCode::Outcome::kError:
        return nullptr;
      case LoopCode::Outcome::kGaveUp:
        gave_up = true;
        break;
    }
  }
  PyObject* result = other();
  if (timed && !gave_up && result != nullptr) {
    code.timed(false, since(start));
  }
  return result;
}

}  // namespace sot::graph
