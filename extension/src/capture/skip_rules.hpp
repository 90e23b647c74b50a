// Which code the capture runtime never touches: modules (by name, with their submodules) and files
// (by path prefix), plus code marked "do not translate". The Python side sets the defaults (the
// standard library, site-/dist-packages, numpy, sot itself).
#pragma once

#include <Python.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sot::capture {

struct SkipRules {
  std::vector<std::string> modules;        // "numpy" skips numpy and numpy.*
  std::vector<std::string> path_prefixes;  // co_filename prefixes
  std::vector<std::string>
      allow_modules;  // captured even when a rule above would skip them (and submodules)
  // Translate the frames that create generators and coroutines too. Off by default: from 3.12 a
  // generator's gi_code is its frame's code, so a replacement would be visible to user code.
  bool generators = false;
  std::uint64_t generation = 1;  // bumped on every change; caches re-decide

  // Empty when `code` running in `globals` (both borrowed) may be captured, else the reason it is
  // skipped.
  std::string reason_to_skip(PyCodeObject* code, PyObject* globals) const;
};

SkipRules& skip_rules();

}  // namespace sot::capture
