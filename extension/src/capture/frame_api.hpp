// The few CPython frame internals the capture runtime touches, for 3.11, 3.12 and 3.13, in one
// place.
//
// Include this header first in a translation unit (it defines Py_BUILD_CORE before Python.h, which
// the internal headers require).
#pragma once

#ifdef Py_PYTHON_H
#error \
    "capture/frame_api.hpp must come before Python.h (and anything including it): it defines Py_BUILD_CORE"
#endif
#ifndef Py_BUILD_CORE
#define Py_BUILD_CORE 1
#endif
#include <Python.h>
#if PY_VERSION_HEX >= 0x030C0000
#undef _PyGC_FINALIZED  // clashes with the internal headers when compiled as C++ (3.12)
#endif
#include <internal/pycore_frame.h>

#include <cstdint>

namespace sot::capture::frame {

static_assert(PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000,
              "capture supports 3.11 to 3.13");

// The frame's code object (borrowed), or nullptr when the frame runs something else (3.13's
// f_executable).
inline PyCodeObject* code(_PyInterpreterFrame* f) {
#if PY_VERSION_HEX >= 0x030D0000
  return PyCode_Check(f->f_executable) ? reinterpret_cast<PyCodeObject*>(f->f_executable) : nullptr;
#else
  return f->f_code;
#endif
}

// The function being called (borrowed).
inline PyObject* function(_PyInterpreterFrame* f) {
#if PY_VERSION_HEX >= 0x030C0000
  return f->f_funcobj;
#else
  return reinterpret_cast<PyObject*>(f->f_func);
#endif
}

inline PyObject* globals(_PyInterpreterFrame* f) {
  return f->f_globals;
}

// A frame called normally (not a generator or coroutine being resumed).
inline bool owned_by_thread(_PyInterpreterFrame* f) {
  return f->owner == FRAME_OWNED_BY_THREAD;
}

// The first code unit of `co`'s instructions: _PyCode_CODE without its C cast, which raises the
// required alignment from char to _Py_CODEUNIT (the field is aligned for it).
inline _Py_CODEUNIT* code_units(PyCodeObject* co) {
  return static_cast<_Py_CODEUNIT*>(static_cast<void*>(co->co_code_adaptive));
}

// The frame has not run any instruction yet.
inline bool not_started(_PyInterpreterFrame* f) {
  PyCodeObject* co = code(f);
#if PY_VERSION_HEX >= 0x030D0000
  return co != nullptr && f->instr_ptr == code_units(co);
#else
  return co != nullptr && f->prev_instr == code_units(co) - 1;
#endif
}

// Makes a not-yet-started frame run `replacement` instead of its code. The caller guarantees the
// same localsplus layout and a value stack no larger than the frame's (co_stacksize). Reference
// counts: the frame takes a new reference to `replacement` and drops its reference to the old code.
inline void swap_code(_PyInterpreterFrame* f, PyCodeObject* replacement) {
  Py_INCREF(replacement);
#if PY_VERSION_HEX >= 0x030D0000
  PyObject* old = f->f_executable;
  f->f_executable = reinterpret_cast<PyObject*>(replacement);
  f->instr_ptr = code_units(replacement);
#else
  PyCodeObject* old = f->f_code;
  f->f_code = replacement;
  f->prev_instr = code_units(replacement) - 1;
#endif
  Py_DECREF(old);
}

// Slots a frame for `co` occupies on the thread's data stack (specials, localsplus, value stack).
inline Py_ssize_t frame_slots(PyCodeObject* co) {
#if PY_VERSION_HEX >= 0x030C0000
  return co->co_framesize;
#else
  return co->co_nlocalsplus + co->co_stacksize + static_cast<Py_ssize_t>(FRAME_SPECIALS_SIZE);
#endif
}

// Makes room in frame `f` (made for `old`) for running `replacement`, whose value stack may be
// deeper. A frame that was just pushed is the top of the thread's data stack, so it can grow in
// place while its chunk has room; popping it resets the top to the frame's start whatever its size,
// so nothing else changes. False when the frame is not the top or the chunk is full (then the
// original code must run).
inline bool make_room(PyThreadState* ts, _PyInterpreterFrame* f, PyCodeObject* old,
                      PyCodeObject* replacement) {
  const Py_ssize_t extra = frame_slots(replacement) - frame_slots(old);
  if (extra <= 0) {
    return true;
  }
  PyObject** end = reinterpret_cast<PyObject**>(f) + frame_slots(old);
  if (end != ts->datastack_top || ts->datastack_limit - ts->datastack_top < extra) {
    return false;
  }
  ts->datastack_top += extra;
  return true;
}

// The version tag of a dict: changes on every mutation (3.11-3.13; deprecated for extensions
// from 3.12, still maintained, and readable here under Py_BUILD_CORE).
inline std::uint64_t dict_version(PyObject* dict) {
  return reinterpret_cast<PyDictObject*>(dict)->ma_version_tag;
}

// A trace or profile function is set on this thread (such frames are never translated).
inline bool tracing(PyThreadState* ts) {
  return ts->c_tracefunc != nullptr || ts->c_profilefunc != nullptr;
}

}  // namespace sot::capture::frame

namespace sot::capture::frame {

// The code-extra slot API (renamed PyUnstable_* in 3.12).
inline Py_ssize_t request_code_extra_index(freefunc free) {
#if PY_VERSION_HEX >= 0x030C0000
  return PyUnstable_Eval_RequestCodeExtraIndex(free);
#else
  return _PyEval_RequestCodeExtraIndex(free);
#endif
}
inline int get_code_extra(PyObject* code, Py_ssize_t index, void** extra) {
#if PY_VERSION_HEX >= 0x030C0000
  return PyUnstable_Code_GetExtra(code, index, extra);
#else
  return _PyCode_GetExtra(code, index, extra);
#endif
}
inline int set_code_extra(PyObject* code, Py_ssize_t index, void* extra) {
#if PY_VERSION_HEX >= 0x030C0000
  return PyUnstable_Code_SetExtra(code, index, extra);
#else
  return _PyCode_SetExtra(code, index, extra);
#endif
}

// The value of localsplus slot `i` of a not-yet-started frame (borrowed, may be null): cells are
// still plain values (MAKE_CELL has not run) and free variables are still in the function's closure
// (COPY_FREE_VARS has not).
inline PyObject* local_value(_PyInterpreterFrame* f, PyCodeObject* co, int i) {
  const int first_free = co->co_nlocalsplus - co->co_nfreevars;
  if (i >= first_free) {
    PyObject* closure = reinterpret_cast<PyFunctionObject*>(function(f))->func_closure;
    if (closure == nullptr || i - first_free >= PyTuple_GET_SIZE(closure)) {
      return nullptr;
    }
    return PyCell_GET(PyTuple_GET_ITEM(closure, i - first_free));
  }
  return f->localsplus[i];
}

}  // namespace sot::capture::frame
