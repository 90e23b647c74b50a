// Must come first (its own include block): defines Py_BUILD_CORE before Python.h.
#include "capture/frame_api.hpp"

#include "bytecode/bytecode.hpp"
#include "capture/translator.hpp"

namespace sot::capture {

Translation RoundTripTranslator::translate(const FrameInfo& frame) {
  pybind11::object code = bytecode::roundtrip(reinterpret_cast<PyObject*>(frame.code));
  ++translated;
  if (keep_originals_) {
    originals_.push_back(
        pybind11::reinterpret_borrow<pybind11::object>(reinterpret_cast<PyObject*>(frame.code)));
  }
  return Translation::translated(std::move(code), pybind11::none());
}

}  // namespace sot::capture
