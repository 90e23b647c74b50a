// SIGINT handling for the kernel: interrupting a running cell raises KeyboardInterrupt in it, and
// the kernel stays alive.
//
// Jupyter interrupts a kernel by sending SIGINT to its process. xeus's server threads must never
// receive it, and an interrupt that arrives while the kernel is idle must be dropped rather than
// surface in the next cell. So: Python installs its own SIGINT handler at start-up;
// take_over_sigint() remembers it, ignores SIGINT and blocks it on the main thread before any other
// thread exists (threads inherit the mask). A CellInterruptScope discards any SIGINT left pending
// while idle (Linux keeps a blocked signal pending even when it is ignored), then unblocks SIGINT
// on the main thread and puts Python's handler back for the length of one cell.
#pragma once

namespace xsot {

// Takes SIGINT over: remembers its current action (Python's handler) for cells, ignores it while
// idle and blocks it on the calling thread. Call once on the main thread after Python is
// initialised and before any other thread is created (threads inherit the mask).
void take_over_sigint();

// For the length of a cell: SIGINT is delivered to the main thread and raises KeyboardInterrupt
// there.
class CellInterruptScope {
 public:
  CellInterruptScope();
  ~CellInterruptScope();
  CellInterruptScope(const CellInterruptScope&) = delete;
  CellInterruptScope& operator=(const CellInterruptScope&) = delete;
  CellInterruptScope(CellInterruptScope&&) = delete;
  CellInterruptScope& operator=(CellInterruptScope&&) = delete;
};

}  // namespace xsot
