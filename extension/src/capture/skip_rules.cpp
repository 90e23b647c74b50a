// Must come first (its own include block): defines Py_BUILD_CORE before Python.h.
#include "capture/frame_api.hpp"

#include "capture/skip_rules.hpp"

namespace sot::capture {

namespace {
bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

std::string utf8(PyObject* str) {
  if (str == nullptr || !PyUnicode_Check(str)) {
    return {};
  }
  const char* text = PyUnicode_AsUTF8(str);
  if (text == nullptr) {
    PyErr_Clear();
    return {};
  }
  return text;
}
}  // namespace

std::string SkipRules::reason_to_skip(PyCodeObject* code, PyObject* globals) const {
  const std::string filename = utf8(code->co_filename);
  if (starts_with(filename, "<frozen ")) {
    return "frozen module " + filename;
  }
  const std::string module = (globals != nullptr && PyDict_Check(globals))
                                 ? utf8(PyDict_GetItemString(globals, "__name__"))
                                 : "";
  auto in = [&module](const std::vector<std::string>& names) {
    for (const std::string& name : names) {
      if (module == name || starts_with(module, name + ".")) {
        return true;
      }
    }
    return false;
  };
  if (filename == "<string>" && starts_with(module, "namedtuple_")) {
    // collections.namedtuple's __new__, made by eval() in a namespace of that name: one tuple call
    return "the generated __new__ of a named tuple (" + module.substr(11) + ")";
  }
  if (!generators && (code->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)) != 0) {
    return "generator or coroutine function (its generator's gi_code must stay the original code)";
  }
  if (!module.empty() && in(allow_modules)) {
    return {};
  }
  for (const std::string& prefix : path_prefixes) {
    if (!prefix.empty() && starts_with(filename, prefix)) {
      return "file under skipped path " + prefix;
    }
  }
  if (!module.empty() && in(modules)) {
    return "module " + module + " is skipped";
  }
  return {};
}

SkipRules& skip_rules() {
  static SkipRules rules;
  return rules;
}

}  // namespace sot::capture
