// The PEP 523 frame-evaluation hook: per-thread, nestable capture scopes with a callback that may
// replace a frame's code; a per-code cache of replacements with guards; pass-through for everything
// else.
//
// Running a replacement: the frame has not started yet and the replacement keeps its localsplus
// layout, so the runtime swaps the code object into the frame in place and lets CPython's evaluator
// run it. Frame ownership is then exactly CPython's own on every version. A replacement that needs
// a larger frame than the original is not run (a fallback with its reason).
#pragma once

#include <pybind11/pybind11.h>

namespace sot::capture {

// Pushes a capture scope on this thread: frames it calls (not skipped) go to `callback(code,
// locals)`, which returns None (run the original) or (code, guard) where guard is None or
// callable(locals) -> bool.
void enable(pybind11::object callback);
// Pops this thread's innermost scope. Returns false when there was none.
bool disable();
// Capture scopes open on this thread.
int depth();
// Entries of the per-code caches allowed before the original code runs with a "recompile limit"
// reason.
void set_cache_limit(int limit);
int cache_limit();
// Failed translations of one code object before the runtime stops asking the translator about it
// (its cached entries still run; a miss runs the original code). Cleared with the cache.
void set_failure_limit(int limit);
int failure_limit();
// Strict mode (SOT_STRICT=1): a translation failure raises in the frame instead of running the
// original code.
void set_strict(bool strict);
bool strict();
// Adaptive hits (SOT_ADAPTIVE, on by default): an entry's transformed code is timed against the
// original code now and then, and the faster runs its hits (capture/entry_timing.hpp).
void set_adaptive(bool adaptive);
bool adaptive();

}  // namespace sot::capture
