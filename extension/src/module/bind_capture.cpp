// `_sot.capture`: the frame-capture runtime (PEP 523 hook, per-code cache, skip rules).
#include "capture/frame_api.hpp"  // first: defines Py_BUILD_CORE before Python.h

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "capture/code_cache.hpp"
#include "capture/eval_hook.hpp"
#include "capture/skip_rules.hpp"
#include "module/bindings.hpp"

namespace py = pybind11;

namespace sot::module {

namespace {
PyObject* code_of(const py::object& fn_or_code) {
  py::object code =
      py::hasattr(fn_or_code, "__code__") ? py::object(fn_or_code.attr("__code__")) : fn_or_code;
  if (!PyCode_Check(code.ptr())) {
    throw py::type_error("expected a function or a code object");
  }
  return code.ptr();  // borrowed: alive as long as fn_or_code
}
}  // namespace

void bind_capture(py::module_& parent) {
  py::module_ m = parent.def_submodule("capture", "The frame-capture runtime (PEP 523).");
  m.def(
      "enable", &capture::enable, py::arg("callback"),
      "Open a capture scope on this thread: frames called from here go to callback(code, locals).");
  m.def("disable", &capture::disable, "Close this thread's innermost capture scope.");
  m.def("depth", &capture::depth, "Capture scopes open on this thread.");
  m.def("set_cache_limit", &capture::set_cache_limit, py::arg("limit"));
  m.def("cache_limit", &capture::cache_limit);
  m.def(
      "stats",
      [](const py::object& fn) -> py::dict {
        py::dict d;
        const capture::CodeCache* cache = capture::existing_cache(code_of(fn));
        if (cache == nullptr) {
          return d;
        }
        d["hits"] = cache->counters.hits;
        d["misses"] = cache->counters.misses;
        d["translations"] = cache->counters.translations;
        d["declined"] = cache->counters.declined;
        d["fallbacks"] = cache->counters.fallbacks;
        d["guard_ns"] = cache->counters.guard_ns;
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
          cache->decision = capture::CodeCache::Decision::kUndecided;
        }
      },
      py::arg("fn"), "Drop the cache entries and counters of a function or code object.");
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
         std::vector<std::string> allow_modules) {
        capture::SkipRules& rules = capture::skip_rules();
        rules.modules = std::move(modules);
        rules.path_prefixes = std::move(path_prefixes);
        rules.allow_modules = std::move(allow_modules);
        ++rules.generation;
      },
      py::arg("modules"), py::arg("path_prefixes"),
      py::arg("allow_modules") = std::vector<std::string>{});
  m.def("skip_rules", []() {
    const capture::SkipRules& rules = capture::skip_rules();
    return py::make_tuple(rules.modules, rules.path_prefixes, rules.allow_modules);
  });
}

}  // namespace sot::module
