// The xsot interpreter: xeus-python's IPython-based interpreter with the fixes and additions
// xeus-sot needs.
#pragma once

#include <string>

#include "xeus-python/xinterpreter.hpp"

namespace xsot {

class interpreter final : public xpyt::interpreter {
 public:
  interpreter() = default;

 private:
  // Builds the IPython shell from xsot_kernel.shell (class names in `ename`, sot and its magics
  // loaded).
  void instanciate_ipython_shell() override;
  void configure_impl() override;
  // Runs a cell with SIGINT routed to it (see interrupt.hpp).
  nl::json execute_request_impl(int execution_counter, const std::string& code, bool silent,
                                bool store_history, nl::json user_expressions,
                                bool allow_stdin) override;
  // Names xeus-sot and reports the version of the Python actually running.
  nl::json kernel_info_request_impl() override;
};

}  // namespace xsot
