#include "graph/runtime/cuda/nvrtc.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "graph/runtime/disk_cache.hpp"

namespace sot::graph {

namespace {

// The NVRTC entry points used (the C API's signatures; nvrtcProgram is an opaque pointer).
struct NvrtcApi {
  using Program = void*;
  int (*version)(int*, int*) = nullptr;
  int (*create)(Program*, const char*, const char*, int, const char* const*,
                const char* const*) = nullptr;
  int (*destroy)(Program*) = nullptr;
  int (*compile)(Program, int, const char* const*) = nullptr;
  int (*log_size)(Program, std::size_t*) = nullptr;
  int (*log)(Program, char*) = nullptr;
  int (*cubin_size)(Program, std::size_t*) = nullptr;
  int (*cubin)(Program, char*) = nullptr;
  int (*ptx_size)(Program, std::size_t*) = nullptr;
  int (*ptx)(Program, char*) = nullptr;
  const char* (*error_string)(int) = nullptr;
  std::string version_text;
  std::string error;  // why it is not loaded
};

std::vector<std::string> library_candidates() {
  std::vector<std::string> out;
  if (const char* path = std::getenv("SOT_NVRTC"); path != nullptr && *path != '\0') {
    out.emplace_back(path);
    return out;
  }
  out = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"};
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home != '\0') {
    out.push_back(std::string(home) + "/lib64/libnvrtc.so");
  }
  out.emplace_back("/usr/local/cuda/lib64/libnvrtc.so");
  return out;
}

template <typename F>
bool bind(void* lib, const char* name, F* fn) {
  *fn = reinterpret_cast<F>(dlsym(lib, name));  // NOLINT(*-reinterpret-cast): dlsym's result
  return *fn != nullptr;
}

NvrtcApi load_api() {
  NvrtcApi api;
  void* lib = nullptr;
  std::string tried;
  for (const std::string& name : library_candidates()) {
    lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) {
      break;
    }
    tried += (tried.empty() ? "" : ", ") + name;
  }
  if (lib == nullptr) {
    api.error = "NVRTC not found (tried " + tried + "; set SOT_NVRTC to the library's path)";
    return api;
  }
  const bool ok =
      bind(lib, "nvrtcVersion", &api.version) && bind(lib, "nvrtcCreateProgram", &api.create) &&
      bind(lib, "nvrtcDestroyProgram", &api.destroy) &&
      bind(lib, "nvrtcCompileProgram", &api.compile) &&
      bind(lib, "nvrtcGetProgramLogSize", &api.log_size) &&
      bind(lib, "nvrtcGetProgramLog", &api.log) &&
      bind(lib, "nvrtcGetCUBINSize", &api.cubin_size) && bind(lib, "nvrtcGetCUBIN", &api.cubin) &&
      bind(lib, "nvrtcGetPTXSize", &api.ptx_size) && bind(lib, "nvrtcGetPTX", &api.ptx) &&
      bind(lib, "nvrtcGetErrorString", &api.error_string);
  if (!ok) {
    api.error = "the NVRTC library lacks an entry point";
    api.version = nullptr;
    return api;
  }
  int major = 0;
  int minor = 0;
  api.version(&major, &minor);
  api.version_text = std::to_string(major) + "." + std::to_string(minor);
  return api;  // (the library stays loaded for the life of the process)
}

const NvrtcApi& api() {
  static const NvrtcApi loaded = load_api();
  return loaded;
}

std::vector<std::string> option_list(const std::string& arch) {
  return {"--gpu-architecture=" + arch, "--fmad=false", "--std=c++17", "--ptxas-options=-v",
          "-DNDEBUG"};
}

// One compile of `source` with `options`: the program's output through `get`, its log in `log`.
bool run_nvrtc(const std::string& source, const std::vector<std::string>& options, bool cubin,
               std::string* out, std::string* log) {
  const NvrtcApi& a = api();
  NvrtcApi::Program prog = nullptr;
  if (a.create(&prog, source.c_str(), "kernel.cu", 0, nullptr, nullptr) != 0) {
    *log = "nvrtcCreateProgram failed";
    return false;
  }
  std::vector<const char*> argv;
  argv.reserve(options.size());
  for (const std::string& o : options) {
    argv.push_back(o.c_str());
  }
  const int status = a.compile(prog, static_cast<int>(argv.size()), argv.data());
  std::size_t size = 0;
  a.log_size(prog, &size);
  std::string text(size, '\0');
  if (size > 0) {
    a.log(prog, text.data());
    text.resize(size - 1);  // (the size counts the terminating NUL)
  }
  *log = text;
  bool ok = status == 0;
  if (!ok) {
    *log = std::string(a.error_string(status)) + "\n" + text;
  } else {
    size = 0;
    ok = (cubin ? a.cubin_size(prog, &size) : a.ptx_size(prog, &size)) == 0;
    out->assign(size, '\0');
    ok = ok && (cubin ? a.cubin(prog, out->data()) : a.ptx(prog, out->data())) == 0;
  }
  a.destroy(&prog);
  return ok;
}

// The decimal number that ends just before `end` in `text` (spaces skipped), or -1.
long long number_before(const std::string& text, std::size_t end) {
  while (end > 0 && text[end - 1] == ' ') {
    --end;
  }
  std::size_t start = end;
  while (start > 0 && std::isdigit(static_cast<unsigned char>(text[start - 1])) != 0) {
    --start;
  }
  return start == end ? -1 : std::stoll(text.substr(start, end - start));
}

// Each number written just before `word` in `text`.
std::vector<long long> numbers_before(const std::string& text, const std::string& word) {
  std::vector<long long> out;
  for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    if (const long long n = number_before(text, at); n >= 0) {
      out.push_back(n);
    }
  }
  return out;
}

// ptxas's report: the largest "Used N registers" and the sum of the spill stores and loads.
// (Parsed by hand: std::regex depends on the C++ library's locale facets, which crashed where an
// extension built on the GPU machine met another copy of them.)
void read_resources(const std::string& log, CudaBinary* b) {
  for (const long long n : numbers_before(log, " registers")) {
    b->registers = std::max(b->registers, static_cast<int>(n));
  }
  for (const char* word : {" bytes spill stores", " bytes spill loads"}) {
    for (const long long n : numbers_before(log, word)) {
      b->spill_bytes += static_cast<int>(n);
    }
  }
}

bool read_file(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return false;
  }
  std::stringstream s;
  s << in.rdbuf();
  *out = s.str();
  return true;
}

// Written under a name of this process, then renamed into place (another process may be writing
// the same entry).
void write_file(const std::string& path, const std::string& data) {
  const std::string tmp = path + ".tmp" + std::to_string(static_cast<long long>(getpid()));
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out) {
      std::remove(tmp.c_str());
      return;
    }
  }
  std::rename(tmp.c_str(), path.c_str());
}

}  // namespace

std::string nvrtc_version(std::string* why) {
  const NvrtcApi& a = api();
  if (a.version == nullptr) {
    *why = a.error;
    return {};
  }
  return a.version_text;
}

std::string nvrtc_options(const std::string& arch) {
  std::string out;
  for (const std::string& o : option_list(arch)) {
    out += (out.empty() ? "" : " ") + o;
  }
  return out;
}

CudaBinary compile_cuda(const std::string& source, const std::string& arch) {
  CudaBinary b;
  std::string why;
  const std::string version = nvrtc_version(&why);
  if (version.empty()) {
    b.error = why;
    return b;
  }
  static std::mutex mutex;  // (NVRTC programs are independent; the cache files are not)
  const std::lock_guard<std::mutex> lock(mutex);
  const std::string dir = kernel_cache_dir() + "/cuda";
  const std::string stem =
      dir + "/" + cache_key("nvrtc " + version + "\n" + nvrtc_options(arch) + "\n" + source);
  if (read_file(stem + ".cubin", &b.cubin) && read_file(stem + ".ptx", &b.ptx) &&
      read_file(stem + ".log", &b.log)) {
    b.ok = b.from_disk = true;
    read_resources(b.log, &b);
    return b;
  }
  const auto start = std::chrono::steady_clock::now();
  std::string ptx_log;
  const std::string virtual_arch = "compute_" + arch.substr(arch.find('_') + 1);
  if (!run_nvrtc(source, option_list(arch), true, &b.cubin, &b.log)) {
    b.error = b.log;
    return b;
  }
  if (!run_nvrtc(source, option_list(virtual_arch), false, &b.ptx, &ptx_log)) {
    b.error = ptx_log;
    return b;
  }
  b.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  b.ok = true;
  read_resources(b.log, &b);
  if (make_dirs(dir)) {
    write_file(stem + ".log", b.log);
    write_file(stem + ".ptx", b.ptx);
    write_file(stem + ".cubin", b.cubin);
  }
  return b;
}

}  // namespace sot::graph
