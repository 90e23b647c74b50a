// Must come first (its own include block): defines Py_BUILD_CORE before Python.h.
#include "capture/frame_api.hpp"

#include "capture/eval_hook.hpp"

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "bytecode/version.hpp"
#include "capture/code_cache.hpp"
#include "capture/guard_tree.hpp"
#include "capture/skip_rules.hpp"
#include "capture/strict_raise.hpp"

namespace py = pybind11;

namespace sot::capture {

namespace {

// This thread's capture scopes: strong references to their callbacks, innermost last. A thread that
// ends with scopes open leaks those references (they are never released without the GIL).
struct ThreadState {
  std::vector<PyObject*> callbacks;
  int busy = 0;  // > 0 while the runtime's own Python code (callbacks, guards) runs: its frames
                 // pass through
};
thread_local ThreadState t_state;

int g_open_scopes = 0;  // over all threads (changed with the GIL held)
_PyFrameEvalFunction g_previous = nullptr;
int g_cache_limit = 8;
bool g_strict = false;

PyObject* pass_through(PyThreadState* ts, _PyInterpreterFrame* f, int throw_flag) {
  return g_previous != nullptr ? g_previous(ts, f, throw_flag)
                               : _PyEval_EvalFrameDefault(ts, f, throw_flag);
}

// The frame's variables by name (a new dict), read from localsplus without creating a frame object.
py::dict frame_locals(_PyInterpreterFrame* f, PyCodeObject* co) {
  py::dict out;
  const auto* kinds =
      reinterpret_cast<const unsigned char*>(PyBytes_AS_STRING(co->co_localspluskinds));
  for (int i = 0; i < co->co_nlocalsplus; ++i) {
    if ((kinds[i] & bytecode::version::kFastHidden) != 0) {
      continue;
    }
    PyObject* value = frame::local_value(f, co, i);  // borrowed
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

std::string current_exception_text() {
  PyObject* type = nullptr;
  PyObject* value = nullptr;
  PyObject* tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  std::string text = "callback raised";
  if (value != nullptr) {
    PyObject* repr = PyObject_Repr(value);
    if (repr != nullptr) {
      text += ": " + std::string(PyUnicode_AsUTF8(repr));
      Py_DECREF(repr);
    }
  }
  PyErr_Clear();
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

// A translation failure: the original code runs (the reason recorded), or under strict mode the
// frame raises it.
PyObject* fail(PyThreadState* ts, _PyInterpreterFrame* f, int throw_flag, CodeCache* cache,
               const std::string& reason) {
  ++cache->counters.fallbacks;
  cache->record(reason);
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

PyObject* eval_hook(PyThreadState* ts, _PyInterpreterFrame* f, int throw_flag) {
  ThreadState& st = t_state;
  if (st.callbacks.empty() || st.busy > 0 || throw_flag != 0 || !frame::owned_by_thread(f) ||
      frame::tracing(ts) || !frame::not_started(f)) {
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
  if (cache->decision == CodeCache::Decision::kSkip || cache->never_translate) {
    return pass_through(ts, f, throw_flag);
  }

  ++st.busy;
  py::object locals;  // built on first need
  auto locals_dict = [&]() -> py::object& {
    if (!locals) {
      locals = frame_locals(f, co);
    }
    return locals;
  };
  // 1. A cached entry whose guard passes.
  PyObject* chosen = nullptr;  // borrowed from the cache entry
  const auto started = std::chrono::steady_clock::now();
  std::string first_failure;
  const FrameValues values(f, co);
  for (const CacheEntry& entry : cache->entries) {
    if (entry.guard.is_none()) {
      chosen = entry.code.ptr();
      break;
    }
    if (entry.tree) {
      if (entry.tree->check(values, first_failure.empty() ? &first_failure : nullptr)) {
        chosen = entry.code.ptr();
        break;
      }
      continue;
    }
    PyObject* verdict = PyObject_CallOneArg(entry.guard.ptr(), locals_dict().ptr());
    const int passed = verdict != nullptr ? PyObject_IsTrue(verdict) : -1;
    Py_XDECREF(verdict);
    if (passed < 0) {
      cache->record("guard raised: " + current_exception_text());
    } else if (passed == 1) {
      chosen = entry.code.ptr();
      break;
    }
  }
  cache->counters.guard_ns +=
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now() - started)
                                     .count());
  if (chosen != nullptr) {
    --st.busy;
    return run(ts, f, throw_flag, chosen, cache, &cache->counters.hits);
  }
  ++cache->counters.misses;
  if (!first_failure.empty()) {
    cache->record("guard failed: " + first_failure);
  }
  if (static_cast<int>(cache->entries.size()) >= g_cache_limit) {
    ++cache->counters.fallbacks;
    cache->record("recompile limit (" + std::to_string(g_cache_limit) + " entries) reached");
    --st.busy;
    return pass_through(ts, f, throw_flag);
  }
  // 2. Ask the innermost scope's callback.
  PyObject* callback = st.callbacks.back();
  PyObject* answer =
      PyObject_CallFunctionObjArgs(callback, code_object, locals_dict().ptr(), nullptr);
  --st.busy;
  if (answer == nullptr) {
    return fail(ts, f, throw_flag, cache, current_exception_text());
  }
  const py::object result = py::reinterpret_steal<py::object>(answer);
  if (result.is_none()) {
    ++cache->counters.declined;
    return pass_through(ts, f, throw_flag);
  }
  if (!PyTuple_Check(result.ptr()) || PyTuple_GET_SIZE(result.ptr()) != 2) {
    return fail(ts, f, throw_flag, cache, "the callback must return None or (code, guard)");
  }
  const py::object new_code = py::reinterpret_borrow<py::object>(PyTuple_GET_ITEM(result.ptr(), 0));
  const py::object guard = py::reinterpret_borrow<py::object>(PyTuple_GET_ITEM(result.ptr(), 1));
  std::string problem = incompatibility(co, new_code.ptr());
  if (problem.empty() && !guard.is_none() && PyCallable_Check(guard.ptr()) == 0 &&
      !py::isinstance<GuardTree>(guard)) {
    problem = "the guard is neither None, a GuardTree nor callable";
  }
  if (!problem.empty()) {
    return fail(ts, f, throw_flag, cache, problem);
  }
  std::shared_ptr<GuardTree> tree;
  if (py::isinstance<GuardTree>(guard)) {
    tree = guard.cast<std::shared_ptr<GuardTree>>();
  }
  ++cache->counters.translations;
  cache->entries.push_back(CacheEntry{new_code, guard, std::move(tree)});
  std::uint64_t ran_new_entry = 0;  // translations already counts the entry
  return run(ts, f, throw_flag, new_code.ptr(), cache, &ran_new_entry);
}

void install() {
  PyInterpreterState* interp = PyInterpreterState_Get();
  const _PyFrameEvalFunction current = _PyInterpreterState_GetEvalFrameFunc(interp);
  if (current != eval_hook) {
    g_previous = current == _PyEval_EvalFrameDefault ? nullptr : current;
    _PyInterpreterState_SetEvalFrameFunc(interp, eval_hook);
  }
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

void enable(py::object callback) {
  if (!PyCallable_Check(callback.ptr())) {
    throw py::type_error("capture callback must be callable");
  }
  t_state.callbacks.push_back(callback.release().ptr());  // the scope owns this reference
  if (g_open_scopes++ == 0) {
    install();
  }
}

bool disable() {
  if (t_state.callbacks.empty()) {
    return false;
  }
  PyObject* callback = t_state.callbacks.back();
  t_state.callbacks.pop_back();
  Py_DECREF(callback);
  if (--g_open_scopes == 0) {
    uninstall();
  }
  return true;
}

int depth() {
  return static_cast<int>(t_state.callbacks.size());
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

void set_strict(bool strict) {
  g_strict = strict;
}
bool strict() {
  return g_strict;
}

}  // namespace sot::capture
