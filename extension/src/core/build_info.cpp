#include "core/build_info.hpp"

#include <Python.h>

namespace sot::core {

namespace {
std::string compiler_name() {
#if defined(__clang__)
  return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  return std::string("gcc ") + __VERSION__;
#else
  return "unknown";
#endif
}

constexpr bool kSanitized =
#if defined(__SANITIZE_ADDRESS__)
    true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    true;
#else
    false;
#endif
#else
    false;
#endif
}  // namespace

BuildInfo build_info() {
  return BuildInfo{SOT_VERSION, PY_VERSION, static_cast<unsigned long>(PY_VERSION_HEX),
                   compiler_name(), kSanitized};
}

bool runtime_matches_build() {
  // Py_Version (3.11+) is the running interpreter's PY_VERSION_HEX.
  const unsigned long running = Py_Version;
  const unsigned long built = static_cast<unsigned long>(PY_VERSION_HEX);
  return (running >> 16U) == (built >> 16U);
}

}  // namespace sot::core
