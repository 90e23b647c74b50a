// `_sot.capture`: the frame-capture runtime (PEP 523 hook, per-code cache, skip rules).
// Must come first (its own include block): defines Py_BUILD_CORE before Python.h.
#include "capture/frame_api.hpp"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "capture/code_cache.hpp"
#include "capture/eval_hook.hpp"
#include "capture/guard_tree.hpp"
#include "capture/jit_function.hpp"
#include "capture/skip_rules.hpp"
#include "capture/translator.hpp"
#include "module/bindings.hpp"

namespace py = pybind11;

namespace sot::module {

namespace {
PyObject* code_of(const py::object& fn_or_code) {
  // (a sot.jit function: the function it runs)
  const py::object fn = py::hasattr(fn_or_code, "__sot_original__")
                            ? py::object(fn_or_code.attr("__sot_original__"))
                            : fn_or_code;
  py::object code = py::hasattr(fn, "__code__") ? py::object(fn.attr("__code__")) : fn;
  if (!PyCode_Check(code.ptr())) {
    throw py::type_error("expected a function or a code object");
  }
  return code.ptr();  // borrowed: alive as long as fn_or_code (and the function it holds)
}
// Guard values from dicts (locals by name), for checking a GuardTree outside a frame.
class DictValues final : public capture::ValueSource {
 public:
  DictValues(py::object locals, py::object globals, py::object builtins)
      : locals_(std::move(locals)), globals_(std::move(globals)), builtins_(std::move(builtins)) {}
  PyObject* local(int /*index*/, PyObject* name) const override { return get(locals_, name); }
  PyObject* global(PyObject* name) const override { return get(globals_, name); }
  PyObject* builtin(PyObject* name) const override { return get(builtins_, name); }

 private:
  static PyObject* get(const py::object& dict, PyObject* name) {
    if (!PyDict_Check(dict.ptr())) {
      return nullptr;
    }
    PyObject* v = PyDict_GetItemWithError(dict.ptr(), name);  // borrowed
    if (v == nullptr) {
      PyErr_Clear();
    }
    return v;
  }
  py::object locals_;
  py::object globals_;
  py::object builtins_;
};

bool is_guardable_constant(const py::handle& v) {
  if (v.is_none() || PyBool_Check(v.ptr()) || PyLong_CheckExact(v.ptr()) ||
      PyFloat_CheckExact(v.ptr()) || PyUnicode_CheckExact(v.ptr()) || PyBytes_CheckExact(v.ptr())) {
    return true;
  }
  if (PyTuple_CheckExact(v.ptr())) {
    for (const py::handle item : py::reinterpret_borrow<py::tuple>(v)) {
      if (!is_guardable_constant(item)) {
        return false;
      }
    }
    return true;
  }
  return false;
}

capture::GuardNode* node_for(capture::GuardTree& tree, const py::object& code,
                             const py::sequence& path) {
  if (path.size() == 0) {
    throw py::value_error(
        "a guard path starts with ('local', name), ('global', name) or ('builtin', name)");
  }
  const auto first = py::reinterpret_borrow<py::tuple>(path[0]);
  const std::string where = first[0].cast<std::string>();
  const py::object name = py::reinterpret_borrow<py::object>(first[1]);
  capture::GuardNode* node = nullptr;
  if (where == "local") {
    int index = -1;
    if (!code.is_none()) {
      auto* co = reinterpret_cast<PyCodeObject*>(code.ptr());
      const auto localsplus = py::reinterpret_borrow<py::tuple>(co->co_localsplusnames);
      for (std::size_t i = 0; i < localsplus.size(); ++i) {
        if (py::object(localsplus[i]).equal(name)) {
          index = static_cast<int>(i);
          break;
        }
      }
      if (index < 0) {
        throw py::value_error("the code has no local named " + py::str(name).cast<std::string>());
      }
    }
    node = tree.local(index, name);
  } else if (where == "global") {
    node = tree.global(name);
  } else if (where == "builtin") {
    node = tree.builtin(name);
  } else {
    throw py::value_error("unknown guard root " + where);
  }
  for (std::size_t i = 1; i < path.size(); ++i) {
    const auto step = py::reinterpret_borrow<py::tuple>(path[i]);
    const std::string how = step[0].cast<std::string>();
    const py::object key = py::reinterpret_borrow<py::object>(step[1]);
    if (how == "attr") {
      node = node->child(capture::GuardNode::Access::kAttr, -1, key,
                         node->path + "." + py::str(key).cast<std::string>());
    } else if (how == "item") {
      node = node->child(capture::GuardNode::Access::kItem, -1, key,
                         node->path + "[" + py::repr(key).cast<std::string>() + "]");
    } else {
      throw py::value_error("unknown guard step " + how);
    }
  }
  return node;
}

void bind_guard_tree(py::module_& m) {
  py::class_<capture::GuardTree, std::shared_ptr<capture::GuardTree>>(
      m, "GuardTree", "Guards evaluated in C++ against a frame's locals, globals and builtins.")
      .def(py::init<>())
      .def("__len__", &capture::GuardTree::size)
      .def("describe", &capture::GuardTree::describe)
      .def(
          "check",
          [](const capture::GuardTree& tree, py::object locals, py::object globals,
             py::object builtins) {
            const DictValues values(std::move(locals), std::move(globals), std::move(builtins));
            std::string failure;
            const bool ok = tree.check(values, &failure);
            return py::make_tuple(ok, failure);
          },
          py::arg("locals"), py::arg("globals") = py::dict(), py::arg("builtins") = py::dict(),
          "(passed, failure) for values given as dicts (locals by name).");
  m.def(
      "add_guard",
      [](capture::GuardTree& tree, const py::object& code, const py::sequence& path,
         const std::string& kind, const py::object& expected, Py_ssize_t length,
         const py::object& shape, bool contiguous) {
        capture::GuardCheck check;
        if (kind == "type") {
          if (!PyType_Check(expected.ptr())) {
            throw py::type_error("a type guard needs a type");
          }
          check.kind = capture::GuardCheck::Kind::kType;
        } else if (kind == "id") {
          check.kind = capture::GuardCheck::Kind::kId;
        } else if (kind == "equals") {
          if (!is_guardable_constant(expected)) {
            throw py::type_error(
                "an equals guard takes int, float, str, bytes, bool, None or tuples of them");
          }
          check.kind = capture::GuardCheck::Kind::kEquals;
        } else if (kind == "len") {
          check.kind = capture::GuardCheck::Kind::kLen;
          check.length = length;
        } else if (kind == "dict_keys") {
          check.kind = capture::GuardCheck::Kind::kDictKeys;
        } else if (kind == "dict_version") {
          if (!PyDict_Check(expected.ptr())) {
            throw py::type_error(
                "a dict_version guard needs the dict whose current version it keeps");
          }
          check.kind = capture::GuardCheck::Kind::kDictVersion;
          check.version = capture::frame::dict_version(expected.ptr());
        } else if (kind == "absent") {
          check.kind = capture::GuardCheck::Kind::kAbsent;
        } else if (kind == "array") {
          check.kind = capture::GuardCheck::Kind::kArray;
          const auto dims = py::reinterpret_borrow<py::sequence>(shape);
          check.length = static_cast<Py_ssize_t>(dims.size());
          for (const py::handle d : dims) {
            if (d.is_none()) {
              check.shape.push_back(capture::GuardCheck::kAnyDim);
            } else if (py::isinstance<py::str>(d)) {
              const int k = tree.symbol_id(d.cast<std::string>());
              check.shape.push_back(capture::GuardCheck::symbol(k));
            } else {
              const auto size = d.cast<Py_ssize_t>();
              if (size < 0) {
                throw py::value_error("an array guard's sizes are >= 0, None or a symbol name");
              }
              check.shape.push_back(size);
            }
          }
          check.format = py::str(expected).cast<std::string>();
          check.contiguous = contiguous;
        } else {
          throw py::value_error("unknown guard kind " + kind);
        }
        // a dict_version guard keeps the version, not the dict
        check.expected = kind == "dict_keys"      ? py::object(py::tuple(expected))
                         : kind == "dict_version" ? py::object(py::none())
                                                  : expected;
        node_for(tree, code, path)->checks.push_back(std::move(check));
      },
      py::arg("tree"), py::arg("code"), py::arg("path"), py::arg("kind"),
      py::arg("expected") = py::none(), py::arg("length") = 0, py::arg("shape") = py::tuple(),
      py::arg("contiguous") = false,
      "Add one check at `path` ((root, name), then ('attr', name) / ('item', key) steps).");
}

void bind_scope(py::module_& m) {
  const py::class_<capture::Translator, std::shared_ptr<capture::Translator>> translator_class(
      m, "Translator", "A translator implemented in C++ (pass it to enable() or capture()).");
  py::class_<capture::RoundTripTranslator, capture::Translator,
             std::shared_ptr<capture::RoundTripTranslator>>(
      m, "RoundTripTranslator",
      "Replaces every captured frame's code by its round trip through the bytecode layer.")
      .def(py::init<bool>(), py::arg("keep_originals") = false)
      .def_property_readonly("translated",
                             [](const capture::RoundTripTranslator& t) { return t.translated; })
      .def_property_readonly(
          "originals",
          [](const capture::RoundTripTranslator& t) {
            py::list out;
            for (const py::object& code : t.originals()) {
              out.append(code);
            }
            return out;
          },
          "The code objects translated, in order (with keep_originals=True).");
  m.def(
      "enable",
      [](const py::object& translator) {
        if (py::isinstance<capture::Translator>(translator)) {
          capture::enable(translator.cast<std::shared_ptr<capture::Translator>>());
        } else {
          capture::enable(translator);
        }
      },
      py::arg("translator"),
      "Open a capture scope on this thread: frames called from here go to the translator (a C++ "
      "Translator, or a Python callback(code, locals) -> None | (code, guard)).");
  m.def("jit_function", &capture::make_jit_function, py::arg("fn"), py::arg("resolve"),
        py::arg("config"), py::arg("backend"), py::arg("device_results") = false,
        "A callable that runs fn inside a capture scope of the translator resolve(name) returns "
        "for the backend `name` (config.backend at each call when backend is None); with "
        "device_results, the arrays its runs made on the device come back as device arrays.");
  m.def("disable", &capture::disable, "Close this thread's innermost capture scope.");
  m.def("depth", &capture::depth, "Capture scopes open on this thread.");
  m.def(
      "set_adaptive", &capture::set_adaptive, py::arg("adaptive"),
      "Time each cache entry's code against the original now and then; the faster runs its hits.");
  m.def("adaptive", &capture::adaptive);
  m.def("set_cache_limit", &capture::set_cache_limit, py::arg("limit"));
  m.def("cache_limit", &capture::cache_limit);
  m.def("set_failure_limit", &capture::set_failure_limit, py::arg("limit"),
        "Failed translations of a code object before the translator is no longer asked about it.");
  m.def("failure_limit", &capture::failure_limit);
  m.def("set_strict", &capture::set_strict, py::arg("strict"),
        "Strict mode: a translation failure raises RuntimeError in the frame instead of running "
        "the original.");
  m.def("strict", &capture::strict);
}

}  // namespace

void bind_capture(py::module_& parent) {
  py::module_ m = parent.def_submodule("capture", "The frame-capture runtime (PEP 523).");

  bind_guard_tree(m);

  bind_scope(m);
  m.def(
      "stats",
      [](const py::object& fn) -> py::dict {
        py::dict d;
        const capture::CodeCache* cache = capture::existing_cache(code_of(fn));
        if (cache == nullptr) {
          return d;
        }
        d["hits"] = cache->counters.hits;
        d["as_is"] = cache->counters.as_is;
        d["misses"] = cache->counters.misses;
        d["translations"] = cache->counters.translations;
        d["declined"] = cache->counters.declined;
        d["fallbacks"] = cache->counters.fallbacks;
        d["failed"] = cache->counters.failed;
        d["gave_up"] = cache->gave_up;
        d["abandoned"] = cache->abandoned;
        d["guard_ns"] = cache->counters.guard_ns;
        d["unhooked"] = cache->counters.unhooked;
        d["entries"] = cache->entries.size();
        d["skipped"] = cache->decision == capture::CodeCache::Decision::kSkip;
        d["skip_reason"] = cache->skip_reason;
        d["reasons"] = std::vector<std::string>(cache->reasons.begin(), cache->reasons.end());
        py::list codes;
        for (const capture::CacheEntry& e : cache->entries) {
          codes.append(e.code);
        }
        d["codes"] = codes;
        return d;
      },
      py::arg("fn"),
      "Counters and entries of the cache of a function or code object ({} if it has none).");
  m.def(
      "clear",
      [](const py::object& fn) {
        capture::CodeCache* cache = capture::existing_cache(code_of(fn));
        if (cache != nullptr) {
          cache->entries.clear();
          cache->counters = capture::Counters{};
          cache->reasons.clear();
          cache->gave_up.clear();
          cache->abandoned = false;
          cache->limit_misses = 0;
          cache->decision = capture::CodeCache::Decision::kUndecided;
          if (cache->translator_data) {
            cache->translator_data->forget();  // (the shapes seen: dynamic shapes start again)
          }
        }
      },
      py::arg("fn"),
      "Drop the cache entries, counters and shape history of a function or code object.");
  m.def(
      "mark_do_not_translate",
      [](const py::object& fn) {
        capture::CodeCache* cache = capture::cache_for(code_of(fn));
        if (cache == nullptr) {
          throw py::error_already_set();
        }
        cache->never_translate = true;
      },
      py::arg("fn"), "Never hand this function's frames to a capture callback.");
  m.def(
      "set_skip_rules",
      [](std::vector<std::string> modules, std::vector<std::string> path_prefixes,
         std::vector<std::string> allow_modules, bool generators) {
        capture::SkipRules& rules = capture::skip_rules();
        rules.generators = generators;
        rules.modules = std::move(modules);
        rules.path_prefixes = std::move(path_prefixes);
        rules.allow_modules = std::move(allow_modules);
        ++rules.generation;
      },
      py::arg("modules"), py::arg("path_prefixes"),
      py::arg("allow_modules") = std::vector<std::string>{}, py::arg("generators") = false);
  m.def("skip_rules", []() {
    const capture::SkipRules& rules = capture::skip_rules();
    return py::make_tuple(rules.modules, rules.path_prefixes, rules.allow_modules,
                          rules.generators);
  });
}

}  // namespace sot::module
