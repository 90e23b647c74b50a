// The disk cache (disk_cache.hpp): its folder, keys and folders made on the way.
#include "graph/runtime/disk_cache.hpp"

#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace sot::graph {

std::string cache_key(const std::string& text) {
  std::uint64_t h = 14695981039346656037ULL;  // FNV-1a, 64 bits: stable across processes
  for (const unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

bool make_dirs(const std::string& path) {
  std::string partial;
  std::stringstream parts(path);
  std::string part;
  while (std::getline(parts, part, '/')) {
    partial += part + "/";
    if (!part.empty()) {
      ::mkdir(partial.c_str(), 0755);
    }
  }
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string kernel_cache_dir() {
  std::string base;
  if (const char* dir = std::getenv("SOT_CACHE_DIR"); dir != nullptr && *dir != '\0') {
    base = dir;
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    base = std::string(xdg) + "/xeus-sot";
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    base = std::string(home) + "/.cache/xeus-sot";
  } else {
    base = "/tmp/xeus-sot";
  }
  return base + "/kernels";
}

}  // namespace sot::graph
