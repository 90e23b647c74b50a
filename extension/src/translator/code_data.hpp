// The translator's data for one code object, kept in the code's capture cache: the shapes earlier
// translations saw (dynamic shapes), the resume functions made for it, and - for a resume
// function - the user function and offset it resumes.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include "capture/code_cache.hpp"

namespace sot::translator {

struct CodeData : capture::TranslatorData {
  pybind11::dict shapes;   // shapes seen by earlier translations (forgotten by capture.clear())
  pybind11::dict resumes;  // (index, stack size, NULL slots, live locals) -> resume function code
  pybind11::object resume_of = pybind11::none();  // a resume function's (user code, offset)

  void forget() override { shapes = pybind11::dict(); }
};

// The data of the code whose cache is `cache`, made on first use.
inline CodeData& code_data(capture::CodeCache* cache) {
  if (!cache->translator_data) {
    cache->translator_data = std::make_unique<CodeData>();
  }
  return static_cast<CodeData&>(*cache->translator_data);
}

}  // namespace sot::translator
