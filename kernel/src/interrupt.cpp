#include "interrupt.hpp"

#include <Python.h>
#include <pthread.h>
#include <csignal>

namespace xsot {

namespace {

// The action SIGINT should have while a cell runs: Python's own handler, or whatever the user's
// code last installed through the `signal` module (refreshed at the end of every cell).
struct sigaction g_cell_action {};

sigset_t sigint_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  return set;
}

void ignore_sigint() {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;  // NOLINT(cppcoreguidelines-pro-type-union-access)
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGINT, &ignore, nullptr);
}

}  // namespace

void take_over_sigint() {
  sigaction(SIGINT, nullptr, &g_cell_action);
  ignore_sigint();
  const sigset_t set = sigint_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

CellInterruptScope::CellInterruptScope() {
  const sigset_t set = sigint_set();
  // Drop interrupts that arrived while idle: blocked signals stay pending even when ignored.
  const timespec no_wait{0, 0};
  while (sigtimedwait(&set, nullptr, &no_wait) == SIGINT) {
  }
  sigaction(SIGINT, &g_cell_action, nullptr);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

CellInterruptScope::~CellInterruptScope() {
  const sigset_t set = sigint_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  sigaction(SIGINT, nullptr, &g_cell_action);
  ignore_sigint();
  // An interrupt that came in after the cell's last bytecode is still flagged inside Python:
  // consume it now so that it does not raise in the next cell.
  PyGILState_STATE gil = PyGILState_Ensure();
  if (PyErr_CheckSignals() != 0) {
    PyErr_Clear();
  }
  PyGILState_Release(gil);
}

}  // namespace xsot
