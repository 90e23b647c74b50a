// Must come first (its own include block): defines Py_BUILD_CORE before Python.h.
#include "capture/frame_api.hpp"

#include "capture/jit_function.hpp"

#include <structmember.h>

#include <cstddef>
#include <exception>
#include <memory>
#include <utility>

#include "capture/eval_hook.hpp"
#include "capture/translator.hpp"
#include "core/call_options.hpp"

namespace py = pybind11;

namespace sot::capture {

namespace {

struct JitObject {
  PyObject_HEAD PyObject* fn;  // every PyObject* here is owned (a strong reference or null)
  PyObject* resolve;
  PyObject* config;
  PyObject* backend;     // a backend name, or None: config.backend at each call
  PyObject* cached_key;  // the backend name `translator` was resolved for
  PyObject* dict;
  PyObject* weakrefs;                       // the weak reference list (not a reference)
  std::shared_ptr<Translator>* translator;  // owned; null until the first call
  vectorcallfunc vectorcall;
  bool device_results;  // runs hand back device arrays (core/call_options.hpp)
};

JitObject* as_jit(PyObject* self) {
  return reinterpret_cast<JitObject*>(self);
}

// The translator for this call (borrowed from `j`), or null with an exception set.
Translator* translator_for_call(JitObject* j) {
  py::object key = py::reinterpret_borrow<py::object>(j->backend);
  if (key.is_none()) {
    static PyObject* const attr = PyUnicode_InternFromString("backend");  // (lives for the process)
    PyObject* name = attr == nullptr ? nullptr : PyObject_GetAttr(j->config, attr);
    if (name == nullptr) {
      return nullptr;
    }
    key = py::reinterpret_steal<py::object>(name);
  }
  if (j->translator != nullptr && j->cached_key != nullptr) {
    if (key.ptr() == j->cached_key) {
      return j->translator->get();
    }
    const int same = PyObject_RichCompareBool(key.ptr(), j->cached_key, Py_EQ);
    if (same < 0) {
      return nullptr;
    }
    if (same == 1) {
      return j->translator->get();
    }
  }
  try {
    const py::object t = py::reinterpret_borrow<py::object>(j->resolve)(key);
    auto resolved = t.cast<std::shared_ptr<Translator>>();
    if (!resolved) {
      PyErr_SetString(PyExc_TypeError, "the jit function's translator is None");
      return nullptr;
    }
    delete j->translator;  // NOLINT(cppcoreguidelines-owning-memory): owned by the object
    j->translator =
        new std::shared_ptr<Translator>(std::move(resolved));  // NOLINT(*-owning-memory)
    Py_XSETREF(j->cached_key, key.release().ptr());
    return j->translator->get();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

PyObject* jit_vectorcall(PyObject* self, PyObject* const* args, std::size_t nargsf,
                         PyObject* kwnames) {
  JitObject* j = as_jit(self);
  if (j->fn == nullptr || j->config == nullptr || j->resolve == nullptr) {
    // (cleared by the garbage collector, then reached again from a finalizer of the same cycle)
    PyErr_SetString(PyExc_RuntimeError, "this jit function was cleared");
    return nullptr;
  }
  if (translator_for_call(j) == nullptr) {
    return nullptr;
  }
  try {
    enable(*j->translator);
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
  PyObject* result = nullptr;
  {
    const core::DeviceResultsScope results(j->device_results);
    result = PyObject_Vectorcall(j->fn, args, nargsf, kwnames);
  }
  disable();
  return result;
}

int jit_traverse(PyObject* self, visitproc visit, void* arg) {
  JitObject* j = as_jit(self);
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(j->fn);
  Py_VISIT(j->resolve);
  Py_VISIT(j->config);
  Py_VISIT(j->backend);
  Py_VISIT(j->cached_key);
  Py_VISIT(j->dict);
  return 0;
}

int jit_clear(PyObject* self) {
  JitObject* j = as_jit(self);
  Py_CLEAR(j->fn);
  Py_CLEAR(j->resolve);
  Py_CLEAR(j->config);
  Py_CLEAR(j->backend);
  Py_CLEAR(j->cached_key);
  Py_CLEAR(j->dict);
  return 0;
}

void jit_dealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  if (as_jit(self)->weakrefs != nullptr) {
    PyObject_ClearWeakRefs(self);
  }
  jit_clear(self);
  JitObject* j = as_jit(self);
  delete j->translator;  // NOLINT(cppcoreguidelines-owning-memory): owned by the object
  j->translator = nullptr;
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);
}

// Bound to an instance like a function: `obj.method(...)` calls fn(obj, ...).
PyObject* jit_descr_get(PyObject* self, PyObject* obj, PyObject* /*type*/) {
  if (obj == nullptr || obj == Py_None) {
    Py_INCREF(self);
    return self;
  }
  return PyMethod_New(self, obj);
}

PyObject* jit_repr(PyObject* self) {
  return PyUnicode_FromFormat("<sot.jit of %R>", as_jit(self)->fn);
}

PyMemberDef jit_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, static_cast<Py_ssize_t>(offsetof(JitObject, vectorcall)),
     READONLY, nullptr},
    {"__dictoffset__", T_PYSSIZET, static_cast<Py_ssize_t>(offsetof(JitObject, dict)), READONLY,
     nullptr},
    {"__weaklistoffset__", T_PYSSIZET, static_cast<Py_ssize_t>(offsetof(JitObject, weakrefs)),
     READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

PyGetSetDef jit_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyTypeObject* jit_type() {
  static PyTypeObject* type = [] {
    PyType_Slot slots[] = {
        {Py_tp_dealloc, reinterpret_cast<void*>(jit_dealloc)},
        {Py_tp_traverse, reinterpret_cast<void*>(jit_traverse)},
        {Py_tp_clear, reinterpret_cast<void*>(jit_clear)},
        {Py_tp_repr, reinterpret_cast<void*>(jit_repr)},
        {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
        {Py_tp_descr_get, reinterpret_cast<void*>(jit_descr_get)},
        {Py_tp_members, static_cast<void*>(jit_members)},
        {Py_tp_getset, static_cast<void*>(jit_getset)},
        {0, nullptr},
    };
    PyType_Spec spec = {"sot.JitFunction", sizeof(JitObject), 0,
                        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                            Py_TPFLAGS_DISALLOW_INSTANTIATION | Py_TPFLAGS_METHOD_DESCRIPTOR,
                        slots};
    PyObject* t = PyType_FromSpec(&spec);
    if (t == nullptr) {
      throw py::error_already_set();
    }
    return reinterpret_cast<PyTypeObject*>(t);  // kept for the life of the process
  }();
  return type;
}

}  // namespace

py::object make_jit_function(py::object fn, py::object resolve, py::object config,
                             py::object backend, bool device_results) {
  if (PyCallable_Check(fn.ptr()) == 0) {
    throw py::type_error("jit expects a callable");
  }
  auto* j = PyObject_GC_New(JitObject, jit_type());
  if (j == nullptr) {
    throw py::error_already_set();
  }
  j->fn = fn.release().ptr();
  j->resolve = resolve.release().ptr();
  j->config = config.release().ptr();
  j->backend = backend.release().ptr();
  j->cached_key = nullptr;
  j->dict = nullptr;
  j->weakrefs = nullptr;
  j->translator = nullptr;
  j->vectorcall = jit_vectorcall;
  j->device_results = device_results;
  PyObject_GC_Track(reinterpret_cast<PyObject*>(j));
  return py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(j));
}

}  // namespace sot::capture
