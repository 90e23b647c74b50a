#include "interpreter.hpp"

#include <Python.h>

#include <iostream>
#include <utility>

#include "interrupt.hpp"

namespace py = pybind11;

namespace xsot {

void interpreter::instanciate_ipython_shell() {
  m_ipython_shell_app = py::module_::import("xsot_kernel.shell").attr("XSotShellApp")();
}

void interpreter::configure_impl() {
  xpyt::interpreter::configure_impl();
  py::gil_scoped_acquire gil;
  try {
    py::module_::import("xsot_kernel").attr("on_kernel_start")(m_ipython_shell);
  } catch (const py::error_already_set& e) {
    // The kernel stays usable as a plain Python kernel; the user sees why sot is missing.
    std::cerr << "xsot: could not load sot into the kernel: " << e.what() << std::endl;
  }
}

nl::json interpreter::execute_request_impl(int execution_counter, const std::string& code,
                                           bool silent, bool store_history,
                                           nl::json user_expressions, bool allow_stdin) {
  CellInterruptScope interrupt_scope;
  return xpyt::interpreter::execute_request_impl(execution_counter, code, silent, store_history,
                                                 std::move(user_expressions), allow_stdin);
}

nl::json interpreter::kernel_info_request_impl() {
  nl::json info = xpyt::interpreter::kernel_info_request_impl();
  // Py_GetVersion() is "3.11.2 (main, ...) [GCC ...]": the running interpreter, not the one
  // xeus-python was built against.
  const std::string full_version = Py_GetVersion();
  const std::string version = full_version.substr(0, full_version.find(' '));
  info["implementation"] = "xeus-sot";
  info["implementation_version"] = XSOT_VERSION;
  info["language_info"]["version"] = version;
  info["banner"] = "xeus-sot " XSOT_VERSION
                   ": a Jupyter kernel with a symbolic opcode translator for NumPy code\n"
                   "Python " +
                   full_version +
                   "\nRun a cell under %%sot to see its graphs, graph breaks and bytecode.";
  info["help_links"] = nl::json::array();
  return info;
}

}  // namespace xsot
