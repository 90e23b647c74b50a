// The system C++ compiler (host_compiler.hpp).
#include "graph/runtime/host_compiler.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "graph/runtime/disk_cache.hpp"

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, for posix_spawn

namespace sot::graph {

namespace {

// Runs the compiler; its output (errors) goes to `log`. True on success.
bool run_compiler(const std::vector<std::string>& flags, const std::string& source,
                  const std::string& object, const std::string& log) {
  std::vector<std::string> argv_text = {host_compiler()};
  argv_text.insert(argv_text.end(), flags.begin(), flags.end());
  argv_text.insert(argv_text.end(), {source, "-o", object});
  std::vector<char*> argv;
  argv.reserve(argv_text.size() + 1);
  for (std::string& a : argv_text) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    return false;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      return false;
    }
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

std::string host_compiler() {
  const char* cxx = std::getenv("SOT_CXX");
  return cxx != nullptr && *cxx != '\0' ? cxx : "c++";
}

bool compile_shared_object(const std::string& code, const std::vector<std::string>& flags,
                           const std::string& dir, const std::string& key_hex, std::string* why) {
  if (!make_dirs(dir)) {
    *why = "cannot make the kernel cache folder " + dir;
    return false;
  }
  const std::string stem = dir + "/" + key_hex + "." + std::to_string(::getpid());
  std::ofstream(stem + ".cpp") << code;
  if (!run_compiler(flags, stem + ".cpp", stem + ".so", stem + ".log")) {
    std::ifstream log(stem + ".log");
    *why = "compiler failed: " + std::string(std::istreambuf_iterator<char>(log), {});
    return false;
  }
  std::rename((stem + ".cpp").c_str(), (dir + "/" + key_hex + ".cpp").c_str());
  std::rename((stem + ".so").c_str(), (dir + "/" + key_hex + ".so").c_str());
  std::remove((stem + ".log").c_str());
  return true;
}

}  // namespace sot::graph
