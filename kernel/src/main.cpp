// The `xsot` kernel executable: embeds the Python it was configured with and serves the Jupyter
// protocol through xeus, with xeus-python's interpreter (subclassed in interpreter.hpp) running the
// cells.
#include <Python.h>
#include <pybind11/embed.h>

#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <utility>

#include "history_manager.hpp"
#include "interpreter.hpp"
#include "interrupt.hpp"
#include "xeus-python/xdebugger.hpp"
#include "xeus-python/xutils.hpp"
#include "xeus/xeus_context.hpp"
#include "xeus/xkernel.hpp"
#include "xeus/xkernel_configuration.hpp"
#include "xeus/xserver_shell_main.hpp"

namespace py = pybind11;

namespace {

// The folder holding the sot, sot_magics and xsot_kernel packages: $XSOT_PYTHONPATH, else the build
// tree's.
std::string python_package_dir() {
  const char* env = std::getenv("XSOT_PYTHONPATH");
  return (env != nullptr && *env != '\0') ? std::string(env) : std::string(XSOT_PYTHON_DIR);
}

void start_python(const char* argv0) {
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  // An absolute program name, the kernel environment's python: sys.prefix and site-packages become
  // the environment's, and sys.executable is that interpreter (the debugger and anything that
  // spawns sys.executable use it), not a pyenv shim found on PATH.
  PyStatus status = PyConfig_SetBytesString(&config, &config.program_name, XSOT_PYTHON_EXECUTABLE);
  if (PyStatus_Exception(status) != 0) {
    Py_ExitStatusException(status);
  }
  config.parse_argv = 0;
  // Only argv[0] goes into sys.argv: IPython parses sys.argv and would reject the kernel's own
  // options.
  const char* const python_argv[] = {argv0};
  py::initialize_interpreter(&config, 1, python_argv, false);
  py::module_::import("sys").attr("path").attr("insert")(0, python_package_dir());
}

}  // namespace

static int run_kernel(int argc, char* argv[]) {
  if (xpyt::extract_option("-v", "--version", argc, argv)) {
    std::cout << "xsot " << XSOT_VERSION << std::endl;
    return 0;
  }
  // Started by a Jupyter client: keep the kernel's own logging out of the client's terminal.
  if (std::getenv("JPY_PARENT_PID") != nullptr) {
    std::clog.setstate(std::ios_base::failbit);
  }

  // debugpy (the debugger) warns about frozen modules on every start; the kernel's users cannot act
  // on it.
  setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1", 0);
  start_python(argv[0]);
  // Python has installed its SIGINT handler; take it over before any thread exists.
  xsot::take_over_sigint();

  int exit_code = 0;
  {
    using context_type = xeus::xcontext_impl<zmq::context_t>;
    auto context = std::make_unique<context_type>();
    auto interpreter = std::make_unique<xsot::interpreter>();
    nl::json debugger_config;
    debugger_config["python"] = XSOT_PYTHON_EXECUTABLE;

    const std::string connection_file = xpyt::extract_parameter("-f", argc, argv);
    if (connection_file.empty()) {
      std::cerr
          << "usage: xsot -f CONNECTION_FILE   (started by Jupyter through the xsot kernelspec)\n";
      exit_code = 2;
    } else if (!std::ifstream(connection_file).good()) {
      std::cerr << "xsot: cannot read the connection file " << connection_file << "\n";
      exit_code = 2;
    } else {
      const xeus::xconfiguration config = xeus::load_configuration(connection_file);
      xeus::xkernel kernel(config, xeus::get_user_name(), std::move(context),
                           std::move(interpreter), xeus::make_xserver_shell_main,
                           xsot::make_ipython_history_manager(), nullptr,
                           xpyt::make_python_debugger, debugger_config);
      kernel.start();
    }
  }
  py::finalize_interpreter();
  return exit_code;
}

int main(int argc, char* argv[]) {
  try {
    return run_kernel(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "xsot: " << e.what() << std::endl;
  } catch (...) {
    std::cerr << "xsot: unknown error" << std::endl;
  }
  return 1;
}
