// The interface between the capture runtime and whatever translates frames: the C++ translator
// implements it directly; a Python callback is adapted to it (for tests and tools).
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace sot::capture {

class ValueSource;

// A frame about to run, as a translator sees it. Everything is borrowed and valid only during the
// call to Translator::translate.
struct FrameInfo {
  PyCodeObject* code = nullptr;
  PyObject* globals = nullptr;
  PyObject* builtins = nullptr;
  const ValueSource* values = nullptr;  // locals by localsplus index, globals, builtins
};

struct Translation {
  enum class Outcome : std::uint8_t {
    kTranslated,  // run `code` now, and later whenever `guard` passes
    kDeclined,    // run the original code (not a failure: nothing worth translating)
    kFailed,      // run the original code and record `reason` (raises it under strict mode)
  };
  Outcome outcome = Outcome::kDeclined;
  pybind11::object code;   // kTranslated: the replacement, same localsplus layout
  pybind11::object guard;  // kTranslated: a GuardTree, callable(locals: dict) -> bool, or None
  std::string reason;      // kDeclined / kFailed: why

  static Translation translated(pybind11::object code, pybind11::object guard) {
    Translation t;
    t.outcome = Outcome::kTranslated;
    t.code = std::move(code);
    t.guard = std::move(guard);
    return t;
  }
  static Translation declined(std::string why) {
    Translation t;
    t.reason = std::move(why);
    return t;
  }
  static Translation failed(std::string why) {
    Translation t;
    t.outcome = Outcome::kFailed;
    t.reason = std::move(why);
    return t;
  }
};

class Translator {
 public:
  Translator() = default;
  virtual ~Translator() = default;
  Translator(const Translator&) = delete;
  Translator& operator=(const Translator&) = delete;
  Translator(Translator&&) = delete;
  Translator& operator=(Translator&&) = delete;

  // Called with the GIL held and capture off on this thread (frames it runs pass through). A
  // Python error left set, a py::error_already_set or any std::exception becomes a kFailed
  // translation with the error's text as the reason.
  virtual Translation translate(const FrameInfo& frame) = 0;
};

// Pushes a capture scope on this thread whose frames go to `translator`.
void enable(std::shared_ptr<Translator> translator);

// A translator that replaces every frame's code by its round trip through the bytecode layer
// (decode, then assemble): byte-identical code in a new code object. For tests of the runtime.
class RoundTripTranslator final : public Translator {
 public:
  explicit RoundTripTranslator(bool keep_originals = false) : keep_originals_(keep_originals) {}
  Translation translate(const FrameInfo& frame) override;
  std::uint64_t translated = 0;  // frames translated so far
  // The code objects translated, in order (strong references), when made with keep_originals.
  const std::vector<pybind11::object>& originals() const { return originals_; }

 private:
  bool keep_originals_;
  std::vector<pybind11::object> originals_;
};

}  // namespace sot::capture
