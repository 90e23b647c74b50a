// Must come first (its own include block): defines Py_BUILD_CORE before Python.h.
#include "capture/frame_api.hpp"

#include "capture/eval_hook.hpp"

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "bytecode/version.hpp"
#include "capture/code_cache.hpp"
#include "capture/entry_timing.hpp"
#include "capture/guard_tree.hpp"
#include "capture/skip_rules.hpp"
#include "capture/strict_raise.hpp"
#include "capture/translator.hpp"

namespace py = pybind11;

namespace sot::capture {

namespace {

// This thread's capture scopes, innermost last. Allocated on a thread's first scope and freed when
// its last scope closes, so nothing Python-owned is destroyed at thread exit without the GIL (a
// thread that ends with scopes open leaks them).
struct ThreadState {
  std::vector<std::shared_ptr<Translator>> scopes;
  int busy = 0;  // > 0 while the runtime's own work (translators, Python guards) runs: its frames
                 // pass through
  std::uint64_t passes = 0;  // frames of codes given up on or skipped, passed through
  std::uint64_t work = 0;    // hits, translations asked for
};
// This thread's state while it has a scope open (or runtime work under way), else null. The state
// itself lives as long as the thread, so a scope opened per call allocates nothing.
thread_local ThreadState* t_state = nullptr;

// Allocated once per thread and never freed: a thread that ends inside a scope must not destroy
// its translators (Python objects) without the GIL, perhaps after the interpreter is gone.
ThreadState* thread_state() {
  thread_local ThreadState* storage =
      new ThreadState();  // NOLINT(cppcoreguidelines-owning-memory): kept for the thread's life
  return storage;
}

constexpr std::uint64_t kGuardSample = 32;  // after the first 32, one cache lookup in 32 is timed

int g_open_scopes = 0;  // over all threads (changed with the GIL held)
_PyFrameEvalFunction g_previous = nullptr;
int g_cache_limit = 8;
// Misses at the entry limit after which a code whose entries miss more than they hit is abandoned
// (CodeCache::abandoned): at about 0.4 us a miss (eight guard trees checked), a helper called with
// a new constant on every call ran 9x its plain time.
constexpr std::uint64_t kAbandonMisses = 64;
int g_failure_limit = 2;
bool g_strict = false;
// Quiet runs (QuietRuns). While a hook is set, CPython makes every call between Python frames a C
// call (it inlines them only without one): about 16 ns a call here, which a loop run as is pays on
// every call of a helper the hook only passes through (a one-line helper given up on, called
// 100,000 times from a loop: 1.39x plain). A code whose last kQuietStreak runs each passed at
// least kQuietPasses frames through and did nothing else beneath (no hit, no translation) runs
// with the hook off; one run in kQuietProbe has it on again. With the hook off, every frame
// beneath runs its original code: what the hook would have run. Not under strict mode (its
// failures must raise).
constexpr std::uint64_t kQuietPasses = 64;
constexpr std::uint32_t kQuietStreak = 2;
constexpr std::uint32_t kQuietProbe = 32;
// The hook is off for a quiet run (a scope opened meanwhile sets it again).
bool g_unhooked = false;
bool g_adaptive = true;  // hits timed against the original code (EntryTiming)

PyObject* pass_through(PyThreadState* ts, _PyInterpreterFrame* f, int throw_flag) {
  return g_previous != nullptr ? g_previous(ts, f, throw_flag)
                               : _PyEval_EvalFrameDefault(ts, f, throw_flag);
}

// The frame's variables by name (a new dict), read from localsplus without creating a frame object.
py::dict frame_locals(const ValueSource& values, PyCodeObject* co) {
  py::dict out;
  const auto* kinds =
      reinterpret_cast<const unsigned char*>(PyBytes_AS_STRING(co->co_localspluskinds));
  for (int i = 0; i < co->co_nlocalsplus; ++i) {
    if ((kinds[i] & bytecode::version::kFastHidden) != 0) {
      continue;
    }
    PyObject* value = values.local(i, nullptr);  // borrowed
    if (value != nullptr) {
      out[py::handle(PyTuple_GET_ITEM(co->co_localsplusnames, i))] = py::handle(value);
    }
  }
  return out;
}

// Why `replacement` cannot run in the frame of `original`, or empty.
std::string incompatibility(PyCodeObject* original, PyObject* replacement) {
  if (!PyCode_Check(replacement)) {
    return "the callback returned " + std::string(Py_TYPE(replacement)->tp_name) +
           ", not a code object";
  }
  auto* rep = reinterpret_cast<PyCodeObject*>(replacement);
  if (rep->co_nlocalsplus != original->co_nlocalsplus ||
      rep->co_nfreevars != original->co_nfreevars ||
      PyObject_RichCompareBool(rep->co_localsplusnames, original->co_localsplusnames, Py_EQ) != 1 ||
      PyObject_RichCompareBool(rep->co_localspluskinds, original->co_localspluskinds, Py_EQ) != 1) {
    PyErr_Clear();
    return "the transformed code changes the localsplus layout";
  }
  // A generator's frame is copied into a generator object sized for the original code: no growing
  // it.
  if (rep->co_stacksize > original->co_stacksize &&
      (original->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)) != 0) {
    return "the transformed generator needs a larger frame (stack of " +
           std::to_string(rep->co_stacksize) + " > " + std::to_string(original->co_stacksize) + ")";
  }
  if (rep->co_argcount != original->co_argcount ||
      rep->co_kwonlyargcount != original->co_kwonlyargcount ||
      ((rep->co_flags ^ original->co_flags) &
       (CO_VARARGS | CO_VARKEYWORDS | CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR |
        CO_ITERABLE_COROUTINE)) != 0) {
    return "the transformed code changes the signature or the kind of function";
  }
  return {};
}

std::string exception_text(PyObject* value, const std::string& prefix) {
  std::string text = prefix;
  if (value != nullptr) {
    PyObject* repr = PyObject_Repr(value);
    if (repr != nullptr) {
      const char* utf8 = PyUnicode_AsUTF8(repr);
      text += ": " + std::string(utf8 != nullptr ? utf8 : "?");
      Py_DECREF(repr);
    }
    PyErr_Clear();
  }
  return text;
}

std::string current_exception_text() {
  PyObject* type = nullptr;
  PyObject* value = nullptr;
  PyObject* tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  std::string text = exception_text(value, "translator raised");
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  return text;
}

// Guard values read from a frame that has not started.
class FrameValues final : public ValueSource {
 public:
  FrameValues(_PyInterpreterFrame* f, PyCodeObject* co) : f_(f), co_(co) {}
  PyObject* local(int index, PyObject* /*name*/) const override {
    return (index >= 0 && index < co_->co_nlocalsplus) ? frame::local_value(f_, co_, index)
                                                       : nullptr;
  }
  PyObject* global(PyObject* name) const override { return lookup(f_->f_globals, name); }
  PyObject* builtin(PyObject* name) const override { return lookup(f_->f_builtins, name); }

 private:
  static PyObject* lookup(PyObject* dict, PyObject* name) {
    if (dict == nullptr || !PyDict_Check(dict)) {
      return nullptr;
    }
    PyObject* value = PyDict_GetItemWithError(dict, name);  // borrowed
    if (value == nullptr) {
      PyErr_Clear();
    }
    return value;
  }
  _PyInterpreterFrame* f_;
  PyCodeObject* co_;
};

// A Python callback(code, locals) -> None | (code, guard) as a Translator.
class CallbackTranslator final : public Translator {
 public:
  explicit CallbackTranslator(py::object callback) : callback_(std::move(callback)) {}
  Translation translate(const FrameInfo& frame) override {
    const py::dict locals = frame_locals(*frame.values, frame.code);
    PyObject* answer = PyObject_CallFunctionObjArgs(
        callback_.ptr(), reinterpret_cast<PyObject*>(frame.code), locals.ptr(), nullptr);
    if (answer == nullptr) {
      return Translation::failed(current_exception_text());
    }
    const auto result = py::reinterpret_steal<py::object>(answer);
    if (result.is_none()) {
      return Translation::declined({});
    }
    if (!PyTuple_Check(result.ptr()) || PyTuple_GET_SIZE(result.ptr()) != 2) {
      return Translation::failed("the callback must return None or (code, guard)");
    }
    return Translation::translated(
        py::reinterpret_borrow<py::object>(PyTuple_GET_ITEM(result.ptr(), 0)),
        py::reinterpret_borrow<py::object>(PyTuple_GET_ITEM(result.ptr(), 1)));
  }

 private:
  py::object callback_;
};

// The original code runs in the frame after a failure, or under strict mode code that raises
// `reason`.
PyObject* run_original(PyThreadState* ts, _PyInterpreterFrame* f, int throw_flag,
                       const std::string& reason) {
  if (g_strict) {
    try {
      const py::object raiser = raising_code(frame::code(f), reason);
      frame::swap_code(f, reinterpret_cast<PyCodeObject*>(raiser.ptr()));
    } catch (const std::exception&) {
      PyErr_Clear();  // could not build the raising code: the original runs
    }
  }
  return pass_through(ts, f, throw_flag);
}

// A translation failure: the original code runs (the reason recorded), or under strict mode the
// frame raises it. At the failure limit the code is given up on.
PyObject* fail(PyThreadState* ts, _PyInterpreterFrame* f, int throw_flag, CodeCache* cache,
               const std::string& reason) {
  ++cache->counters.fallbacks;
  ++cache->counters.failed;
  cache->record(reason);
  if (static_cast<int>(cache->counters.failed) >= g_failure_limit && cache->gave_up.empty()) {
    cache->gave_up = "gave up after " + std::to_string(cache->counters.failed) +
                     " failed translations; the last: " + reason;
    cache->record(cache->gave_up);
  }
  return run_original(ts, f, throw_flag, reason);
}

// A call that missed every entry at the entry limit (the original runs): recorded once; a code
// whose entries miss more than they hit is abandoned (CodeCache::abandoned).
void miss_at_limit(CodeCache* cache) {
  ++cache->counters.fallbacks;
  const auto limit = [] {
    return "recompile limit (" + std::to_string(g_cache_limit) + " entries) reached";
  };
  if (++cache->limit_misses == 1) {
    cache->record(limit());
  }
  if (cache->limit_misses >= kAbandonMisses && cache->limit_misses > cache->counters.hits) {
    cache->abandoned = true;
    cache->gave_up = limit() + ", then " + std::to_string(cache->limit_misses) +
                     " calls missed every entry against " + std::to_string(cache->counters.hits) +
                     " hits: every call runs the original code, no guard checked";
    cache->record(cache->gave_up);
  }
}

// Runs `code` in the frame (counted in `counter`), or the original code when the frame cannot grow
// to fit it (a fallback, recorded in `cache`).
PyObject* run(PyThreadState* ts, _PyInterpreterFrame* f, int throw_flag, PyObject* code,
              CodeCache* cache, std::uint64_t* counter) {
  auto* replacement = reinterpret_cast<PyCodeObject*>(code);
  if (!frame::make_room(ts, f, frame::code(f), replacement)) {
    ++cache->counters.fallbacks;
    cache->record("no room to grow the frame for the transformed code's deeper stack");
    return pass_through(ts, f, throw_flag);
  }
  ++*counter;
  frame::swap_code(f, replacement);
  return pass_through(ts, f, throw_flag);
}

// Code whose frames are suspended and resumed: a call's time is not its work's.
constexpr int kResumable = CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE;

// A hit: the entry's transformed code, or the original code where that ran faster (EntryTiming),
// the two timed in turns in the entry's rounds. A new choice is recorded with the medians.
PyObject* run_hit(PyThreadState* ts, _PyInterpreterFrame* f, int throw_flag, PyObject* code,
                  CodeCache* cache, EntryTiming& timing) {
  using Run = EntryTiming::Run;
  const Run choice = timing.next();
  const bool original = choice == Run::kOriginal || choice == Run::kTimedOriginal;
  const bool timed = choice == Run::kTimedTransformed || choice == Run::kTimedOriginal;
  // (the code, its cache and the entry's timing stay alive through the run, which may drop them)
  const py::object keep_code =
      py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(frame::code(f)));
  const auto started =
      timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  PyObject* result = nullptr;
  if (original) {
    ++cache->counters.hits;
    ++cache->counters.as_is;
    result = pass_through(ts, f, throw_flag);
  } else {
    result = run(ts, f, throw_flag, code, cache, &cache->counters.hits);
  }
  if (timed) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now() - started)
                        .count();
    if (timing.took(choice, static_cast<std::uint64_t>(ns))) {
      cache->record((timing.runs_original() ? "runs as is: the original code ran faster ("
                                            : "the transformed code runs again: it ran faster (") +
                    timing.verdict() + ")");
    }
  }
  return result;
}

// Asks `translator` about the frame, turning every error into a kFailed translation.
Translation ask(Translator& translator, const FrameInfo& info) {
  try {
    Translation t = translator.translate(info);
    if (PyErr_Occurred() != nullptr) {
      return Translation::failed(current_exception_text());
    }
    return t;
  } catch (py::error_already_set& e) {
    return Translation::failed(exception_text(e.value().ptr(), "translator raised"));
  } catch (const std::exception& e) {
    PyErr_Clear();
    return Translation::failed(std::string("translator error: ") + e.what());
  }
}

// The first cache entry whose guard passes, or null. A Python guard that raises is recorded and
// fails. (The entry pointed to is valid until the cache's entries change.) Nothing is described
// here: an older entry's failing guard before the one that passes would otherwise describe its
// values on every call (0.55 us of a 1.2 us call of a function translated for two shapes).
const CacheEntry* find_entry(CodeCache* cache, const FrameValues& values, PyCodeObject* co) {
  py::object locals;  // for Python guards, built on first need
  for (const CacheEntry& entry : cache->entries) {
    if (entry.guard.is_none()) {
      return &entry;
    }
    if (entry.tree) {
      if (entry.tree->check(values, nullptr)) {
        return &entry;
      }
      continue;
    }
    if (!locals) {
      locals = frame_locals(values, co);
    }
    PyObject* verdict = PyObject_CallOneArg(entry.guard.ptr(), locals.ptr());
    const int passed = verdict != nullptr ? PyObject_IsTrue(verdict) : -1;
    Py_XDECREF(verdict);
    if (passed < 0) {
      cache->record("guard raised: " + current_exception_text());
    } else if (passed == 1) {
      return &entry;
    }
  }
  return nullptr;
}

// After a miss: every entry's failing C++ guard, oldest first.
std::string describe_misses(const CodeCache& cache, const FrameValues& values) {
  std::string failures;
  for (const CacheEntry& entry : cache.entries) {
    std::string failure;
    if (entry.tree && !entry.tree->check(values, &failure)) {
      failures += (failures.empty() ? "" : "; ") + failure;
    }
  }
  return failures;
}

PyObject* eval_hook(PyThreadState* ts, _PyInterpreterFrame* f, int throw_flag);

// `run()` with the hook off: set again after, unless a scope opened meanwhile set it or the last
// scope closed.
template <typename Run>
PyObject* run_unhooked(PyThreadState* ts, const Run& run) {
  _PyInterpreterState_SetEvalFrameFunc(
      ts->interp, g_previous != nullptr ? g_previous : _PyEval_EvalFrameDefault);
  g_unhooked = true;
  PyObject* result = run();
  if (g_unhooked) {
    g_unhooked = false;
    if (g_open_scopes > 0) {
      _PyInterpreterState_SetEvalFrameFunc(ts->interp, eval_hook);
    }
  }
  return result;
}

// A run of the frame of `co` (whose cache is `cache`) by `run()`: with the hook off where its
// last runs were quiet (QuietRuns), else watched to see whether it is.
template <typename Run>
PyObject* run_watched(PyThreadState* ts, ThreadState* st, PyCodeObject* co, CodeCache* cache,
                      const Run& run) {
  QuietRuns& quiet = cache->quiet;
  if (g_strict) {
    return run();
  }
  if (quiet.streak >= kQuietStreak && ++quiet.since_probe < kQuietProbe) {
    ++cache->counters.unhooked;
    return run_unhooked(ts, run);
  }
  quiet.since_probe = 0;
  // (the code keeps its cache alive through the run)
  const py::object keep = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(co));
  const std::uint64_t passes = st->passes;
  const std::uint64_t work = st->work;
  PyObject* result = run();
  const bool was_quiet = st->work == work && st->passes - passes >= kQuietPasses;
  quiet.streak = was_quiet ? quiet.streak + 1 : 0;
  return result;
}

// A call of a code given up on (CodeCache::gave_up): its original code, watched.
PyObject* run_given_up(PyThreadState* ts, _PyInterpreterFrame* f, int throw_flag, ThreadState* st,
                       PyCodeObject* co, CodeCache* cache) {
  ++cache->counters.fallbacks;
  ++st->passes;
  return run_watched(ts, st, co, cache,
                     [&] { return run_original(ts, f, throw_flag, cache->gave_up); });
}

PyObject* eval_hook(PyThreadState* ts, _PyInterpreterFrame* f, int throw_flag) {
  ThreadState* st = t_state;
  if (st == nullptr || st->scopes.empty() || st->busy > 0 || throw_flag != 0 ||
      !frame::owned_by_thread(f) || frame::tracing(ts) || !frame::not_started(f)) {
    return pass_through(ts, f, throw_flag);
  }
  PyCodeObject* co = frame::code(f);
  auto* code_object = reinterpret_cast<PyObject*>(co);
  CodeCache* cache = cache_for(code_object);
  if (cache == nullptr) {
    PyErr_Clear();
    return pass_through(ts, f, throw_flag);
  }
  const SkipRules& rules = skip_rules();
  if (cache->decision == CodeCache::Decision::kUndecided ||
      cache->rules_generation != rules.generation) {
    cache->skip_reason = cache->never_translate ? "marked do-not-translate"
                                                : rules.reason_to_skip(co, frame::globals(f));
    cache->decision =
        cache->skip_reason.empty() ? CodeCache::Decision::kCapture : CodeCache::Decision::kSkip;
    cache->rules_generation = rules.generation;
  }
  if (cache->decision == CodeCache::Decision::kSkip || cache->never_translate || cache->abandoned) {
    cache->counters.fallbacks += cache->abandoned ? 1U : 0U;
    ++st->passes;
    return run_watched(ts, st, co, cache, [&] { return pass_through(ts, f, throw_flag); });
  }
  if (cache->entries.empty() && !cache->gave_up.empty()) {  // (no entry to look up: a miss)
    ++cache->counters.misses;
    return run_given_up(ts, f, throw_flag, st, co, cache);
  }

  ++st->busy;
  const FrameValues values(f, co);
  // 1. A cached entry whose guard passes.
  PyObject* chosen = nullptr;  // borrowed from the cache entry
  // The guards' time: every lookup of the first kGuardSample, then one in kGuardSample counted for
  // all of them (the clock costs about as much as a small guard tree).
  const std::uint64_t lookup = cache->counters.lookups++;
  const std::uint64_t weight = lookup < kGuardSample ? 1 : kGuardSample;
  const bool timed = lookup < kGuardSample || lookup % kGuardSample == 0;
  const auto started =
      timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  const CacheEntry* entry = find_entry(cache, values, co);
  if (entry != nullptr) {
    chosen = entry->code.ptr();
  }
  if (timed) {
    cache->counters.guard_ns +=
        weight * static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                std::chrono::steady_clock::now() - started)
                                                .count());
  }
  if (chosen != nullptr) {
    --st->busy;
    ++st->work;
    if (!g_adaptive || !entry->timing || (co->co_flags & kResumable) != 0) {
      return run_watched(ts, st, co, cache, [&] {
        return run(ts, f, throw_flag, chosen, cache, &cache->counters.hits);
      });
    }
    // (the timing stays alive through the run, which may add entries to the cache)
    const std::shared_ptr<EntryTiming> timing = entry->timing;
    return run_watched(ts, st, co, cache,
                       [&] { return run_hit(ts, f, throw_flag, chosen, cache, *timing); });
  }
  ++cache->counters.misses;
  // At the entry limit a miss only runs the original: no reason is worth describing the values.
  if (static_cast<int>(cache->entries.size()) < g_cache_limit) {
    const std::string failures = describe_misses(*cache, values);
    if (!failures.empty()) {
      cache->record("guard failed: " + failures);
    }
  }
  if (!cache->gave_up.empty()) {  // no reason recorded: it would cost more than the lookup
    --st->busy;
    return run_given_up(ts, f, throw_flag, st, co, cache);
  }
  if (static_cast<int>(cache->entries.size()) >= g_cache_limit) {
    miss_at_limit(cache);
    --st->busy;
    ++st->passes;
    return pass_through(ts, f, throw_flag);
  }
  // 2. Ask the innermost scope's translator (kept alive across the call: it may close scopes).
  const std::shared_ptr<Translator> translator = st->scopes.back();
  FrameInfo info;
  info.code = co;
  info.globals = frame::globals(f);
  info.builtins = f->f_builtins;
  info.values = &values;
  ++st->work;
  Translation answer = ask(*translator, info);
  --st->busy;
  if (answer.outcome == Translation::Outcome::kDeclined) {
    ++cache->counters.declined;
    if (!answer.reason.empty()) {
      cache->record("declined: " + answer.reason);
    }
    return pass_through(ts, f, throw_flag);
  }
  if (answer.outcome == Translation::Outcome::kFailed) {
    return fail(ts, f, throw_flag, cache, answer.reason);
  }
  std::string problem = incompatibility(co, answer.code.ptr());
  if (problem.empty() && !answer.guard.is_none() && PyCallable_Check(answer.guard.ptr()) == 0 &&
      !py::isinstance<GuardTree>(answer.guard)) {
    problem = "the guard is neither None, a GuardTree nor callable";
  }
  if (!problem.empty()) {
    return fail(ts, f, throw_flag, cache, problem);
  }
  std::shared_ptr<GuardTree> tree;
  if (py::isinstance<GuardTree>(answer.guard)) {
    tree = answer.guard.cast<std::shared_ptr<GuardTree>>();
  }
  ++cache->counters.translations;
  PyObject* new_code = answer.code.ptr();  // kept alive by the cache entry
  cache->entries.push_back(CacheEntry{std::move(answer.code), std::move(answer.guard),
                                      std::move(tree), std::make_shared<EntryTiming>()});
  std::uint64_t ran_new_entry = 0;  // translations already counts the entry
  return run(ts, f, throw_flag, new_code, cache, &ran_new_entry);
}

void install() {
  PyInterpreterState* interp = PyInterpreterState_Get();
  const _PyFrameEvalFunction current = _PyInterpreterState_GetEvalFrameFunc(interp);
  if (current != eval_hook) {
    g_previous = current == _PyEval_EvalFrameDefault ? nullptr : current;
    _PyInterpreterState_SetEvalFrameFunc(interp, eval_hook);
  }
  g_unhooked = false;
}

void uninstall() {
  PyInterpreterState* interp = PyInterpreterState_Get();
  if (_PyInterpreterState_GetEvalFrameFunc(interp) == eval_hook) {
    _PyInterpreterState_SetEvalFrameFunc(
        interp, g_previous != nullptr ? g_previous : _PyEval_EvalFrameDefault);
  }
  g_previous = nullptr;
}

}  // namespace

void enable(std::shared_ptr<Translator> translator) {
  if (!translator) {
    throw std::invalid_argument("capture needs a translator");
  }
  if (t_state == nullptr) {
    t_state = thread_state();
  }
  t_state->scopes.push_back(std::move(translator));
  if (g_open_scopes++ == 0 || g_unhooked) {
    install();
  }
}

void enable(py::object callback) {
  if (!PyCallable_Check(callback.ptr())) {
    throw py::type_error("capture callback must be callable");
  }
  enable(std::make_shared<CallbackTranslator>(std::move(callback)));
}

bool disable() {
  ThreadState* st = t_state;
  if (st == nullptr || st->scopes.empty()) {
    return false;
  }
  const std::shared_ptr<Translator> innermost = std::move(st->scopes.back());
  st->scopes.pop_back();
  if (st->scopes.empty() && st->busy == 0) {
    t_state = nullptr;
  }
  if (--g_open_scopes == 0) {
    uninstall();
  }
  return true;
}

int depth() {
  return t_state == nullptr ? 0 : static_cast<int>(t_state->scopes.size());
}

void set_cache_limit(int limit) {
  if (limit < 1) {
    throw py::value_error("the cache limit must be at least 1");
  }
  g_cache_limit = limit;
}

int cache_limit() {
  return g_cache_limit;
}

void set_failure_limit(int limit) {
  if (limit < 1) {
    throw py::value_error("the failure limit must be at least 1");
  }
  g_failure_limit = limit;
}

int failure_limit() {
  return g_failure_limit;
}

void set_strict(bool strict) {
  g_strict = strict;
}

void set_adaptive(bool adaptive) {
  g_adaptive = adaptive;
}
bool adaptive() {
  return g_adaptive;
}
bool strict() {
  return g_strict;
}

}  // namespace sot::capture
