// Facts about this build of the core: versions and options, for `sot.build_info()` and bug reports.
#pragma once

#include <string>

namespace sot::core {

struct BuildInfo {
  std::string sot_version;     // project version, e.g. "0.1.0"
  std::string python_version;  // the Python headers this core was compiled against, e.g. "3.11.2"
  unsigned long python_hex;    // PY_VERSION_HEX of those headers
  std::string compiler;        // compiler name and version
  bool sanitized;              // built with ASan/UBSan
};

// The build facts of this core library.
BuildInfo build_info();

// True when the interpreter running now has the same major.minor version as the headers the core
// was built against. A mismatch means the wrong extension was loaded; the module refuses to import
// then.
bool runtime_matches_build();

}  // namespace sot::core
