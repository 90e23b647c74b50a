// Which NumPy callables the translator captures, and how it names them (numpy_names.hpp): the
// ufunc table, the functions, linalg and fft functions, ufunc methods and ndarray methods captured,
// the identity table of this process's numpy, the coverage list docs/numpy_coverage.md is made
// from, and the basic index items of a constant subscript key.
#include "translator/numpy/numpy_names.hpp"

#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/loaded_module.hpp"
#include "graph/rules/op_list.hpp"
#include "translator/numpy/array_state.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

using graph::UfuncKind;

py::object operator_fn(const char* name) {
  return loaded_module("operator").attr(name);
}

namespace {

// The ufuncs captured: the rows of graph/rules/op_list.hpp the translator captures by name.
const std::vector<UfuncEntry>& captured_ufuncs() {
  static const std::vector<UfuncEntry> table = [] {
    std::vector<UfuncEntry> rows;
    for (const graph::OpDef& op : graph::op_list()) {
      if (op.captured) {
        rows.push_back({op.name, op.kind, op.nin});
      }
    }
    return rows;
  }();
  return table;
}

// The other NumPy functions captured (the names the numpy module has them under).
const char* const kFunctions[] = {
    "abs",          "amax",         "amin",        "sum",
    "prod",         "mean",         "max",         "min",
    "argmax",       "argmin",       "var",         "std",
    "any",          "all",          "cumsum",      "cumprod",
    "matmul",       "dot",          "reshape",     "transpose",
    "swapaxes",     "moveaxis",     "expand_dims", "squeeze",
    "concatenate",  "stack",        "split",       "where",
    "clip",         "copy",         "zeros",       "ones",
    "empty",        "full",         "zeros_like",  "ones_like",
    "empty_like",   "full_like",    "arange",      "linspace",
    "eye",          "broadcast_to", "round",       "around",
    "ravel",        "einsum",       "outer",       "flip",
    "fliplr",       "flipud",       "roll",        "tril",
    "triu",         "sort",         "argsort",     "take_along_axis",
    "cov",          "histogram",    "diag",        "trace",
    "vander",       "polyval",      "insert",      "hanning",
    "array",        "indices",      "nonzero",     "repeat",
    "tile",         "diff",         "average",     "hstack",
    "vstack",       "ndarray",      "median",      "nanmedian",
    "percentile",   "quantile",     "nansum",      "nanmean",
    "nanmax",       "nanmin",       "nanstd",      "nanvar",
    "convolve",     "correlate",    "interp",      "append",
    "pad",          "kron",         "asarray",     "column_stack",
    "searchsorted", "digitize",     "isclose",     "count_nonzero",
    "flatnonzero",  "gradient",
};

// The np.linalg functions captured (as "linalg.<name>").
const char* const kLinalg[] = {"inv", "det",  "cholesky", "solve", "qr",
                               "svd", "eigh", "norm",     "lstsq"};

// The np.fft functions captured (as "fft.<name>"). NumPy 2 loads np.fft at its first use: the
// table imports it.
const char* const kFft[] = {"rfft", "rfftfreq"};

// The methods of NumPy's ufuncs that are captured (as "ufunc.<name>").
const char* const kUfuncMethods[] = {"outer", "reduce", "accumulate"};

// Methods of ndarray that are captured.
const char* const kMethods[] = {
    "sum",      "prod",    "mean",    "max",    "min",          "argmax", "argmin",  "var",
    "std",      "any",     "all",     "cumsum", "cumprod",      "dot",    "reshape", "transpose",
    "swapaxes", "squeeze", "astype",  "copy",   "clip",         "round",  "ravel",   "flatten",
    "sort",     "argsort", "nonzero", "repeat", "searchsorted",
};

}  // namespace

bool captured_ufunc_method(const std::string& name) {
  return std::any_of(std::begin(kUfuncMethods), std::end(kUfuncMethods),
                     [&](const char* m) { return name == m; });
}

bool captured_method(const std::string& name) {
  return std::any_of(std::begin(kMethods), std::end(kMethods),
                     [&](const char* m) { return name == m; });
}

// The NumPy callables this process's numpy has, by identity -> canonical name.
const std::map<PyObject*, std::string>& numpy_table(const py::object& np) {
  static std::map<PyObject*, std::string> table;
  // The numpy module the table was made from: kept alive, never released (a static py::object
  // would be released after the interpreter is gone).
  static PyObject* seen = nullptr;
  if (seen == np.ptr()) {
    return table;
  }
  table.clear();
  Py_XDECREF(seen);
  seen = np.ptr();
  Py_INCREF(seen);
  auto add = [&](const char* attr, const std::string& canonical) {
    PyObject* f = PyObject_GetAttrString(np.ptr(), attr);
    if (f == nullptr) {
      PyErr_Clear();
      return;
    }
    table.emplace(f, canonical);  // the first name wins (np.abs is np.absolute)
    Py_DECREF(f);                 // the numpy module keeps it alive
  };
  for (const auto& e : captured_ufuncs()) {
    add(e.name, std::string(e.name) == "divide" ? "true_divide"
                : std::string(e.name) == "mod"  ? "remainder"
                                                : e.name);
  }
  for (const char* f : kFunctions) {
    const std::string n = f;
    add(f, n == "abs"      ? "absolute"
           : n == "amax"   ? "max"
           : n == "amin"   ? "min"
           : n == "around" ? "round"
                           : n);
  }
  auto add_module = [&](const char* sub, const auto& names) {
    PyObject* module = PyImport_ImportModule((std::string("numpy.") + sub).c_str());
    if (module == nullptr) {
      PyErr_Clear();
      return;
    }
    for (const char* f : names) {
      PyObject* fn = PyObject_GetAttrString(module, f);
      if (fn == nullptr) {
        PyErr_Clear();
        continue;
      }
      table.emplace(fn, std::string(sub) + "." + f);
      Py_DECREF(fn);  // the module keeps it alive
    }
    Py_DECREF(module);
  };
  add_module("linalg", kLinalg);
  add_module("fft", kFft);
  return table;
}

namespace {

// `module`'s attribute at dotted `path` ("linalg.norm"): a new reference, or nullptr (no error).
PyObject* attribute_path(PyObject* module, const std::string& path) {
  PyObject* at = module;
  Py_INCREF(at);
  std::size_t start = 0;
  while (at != nullptr && start <= path.size()) {
    const std::size_t dot = std::min(path.find('.', start), path.size());
    PyObject* next = PyObject_GetAttrString(at, path.substr(start, dot - start).c_str());
    Py_DECREF(at);
    at = next;
    start = dot + 1;
  }
  PyErr_Clear();
  return at;
}

}  // namespace

const std::map<PyObject*, CupyEntry>& cupy_table(const py::object& np) {
  static std::map<PyObject*, CupyEntry> table;
  static PyObject* seen = nullptr;  // the cupy module the table was made from (kept alive)
  PyObject* cupy = PyImport_GetModule(py::str("cupy").ptr());  // (only where it is imported)
  if (cupy == nullptr) {
    PyErr_Clear();
    static const std::map<PyObject*, CupyEntry> none;
    return none;
  }
  if (seen == cupy) {
    Py_DECREF(cupy);
    return table;
  }
  table.clear();
  Py_XDECREF(seen);
  seen = cupy;  // (the reference taken)
  for (const auto& [numpy_fn, canonical] : numpy_table(np)) {
    PyObject* fn = attribute_path(cupy, canonical);
    if (fn == nullptr) {
      PyObject* name = PyObject_GetAttrString(numpy_fn, "__name__");
      fn = name != nullptr && PyUnicode_Check(name) != 0
               ? attribute_path(cupy, PyUnicode_AsUTF8(name))
               : nullptr;
      Py_XDECREF(name);
      PyErr_Clear();
    }
    if (fn != nullptr) {
      table.emplace(fn, CupyEntry{canonical, numpy_fn});  // (the first name wins)
      Py_DECREF(fn);                                      // the cupy module keeps it alive
    }
  }
  return table;
}

// "np.random.rand", "np.linalg.norm": how a NumPy callable is named in reasons; empty when the
// callable is not NumPy's.
std::string numpy_name(const py::handle& fn) {
  if (std::string(Py_TYPE(fn.ptr())->tp_name) == "numpy.ufunc") {
    return "np." + str_of(fn.attr("__name__"));
  }
  PyObject* mod = PyObject_GetAttrString(fn.ptr(), "__module__");
  if (mod == nullptr) {
    PyErr_Clear();
    return {};
  }
  const auto m = py::reinterpret_steal<py::object>(mod);
  if (!PyUnicode_Check(m.ptr())) {
    return {};
  }
  std::string module = str_of(m);
  if (module != "numpy" && module.rfind("numpy.", 0) != 0) {
    return {};
  }
  PyObject* qn = PyObject_GetAttrString(fn.ptr(), "__qualname__");
  if (qn == nullptr) {
    PyErr_Clear();
    return {};
  }
  const std::string qual = str_of(py::reinterpret_steal<py::object>(qn));
  // numpy.random.mtrand -> np.random; numpy.core.fromnumeric -> np.
  std::string shown = "np";
  for (const char* sub : {"random", "linalg", "fft", "ma", "polynomial"}) {
    if (module.rfind(std::string("numpy.") + sub, 0) == 0) {
      shown += std::string(".") + sub;
    }
  }
  return shown + "." + qual;
}

std::vector<std::pair<std::string, std::string>> numpy_coverage() {
  // Ops the cpu backend runs as calls of NumPy's own routine (a library group or an opaque op),
  // never fused with elementwise neighbours.
  static const char* const kLibrary[] = {
      "matmul",  "dot", "einsum",    "outer",           "sort",
      "argsort", "cov", "histogram", "take_along_axis", "insert"};
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& e : captured_ufuncs()) {
    out.emplace_back(std::string("np.") + e.name, "ufunc (fused)");
  }
  for (const char* f : kFunctions) {
    const bool library = std::find_if(std::begin(kLibrary), std::end(kLibrary), [&](const char* l) {
                           return std::string(l) == f;
                         }) != std::end(kLibrary);
    out.emplace_back(std::string("np.") + f, library ? "library op" : "graph op");
  }
  for (const char* f : kLinalg) {
    out.emplace_back(std::string("np.linalg.") + f, "library op");
  }
  for (const char* f : kFft) {
    out.emplace_back(std::string("np.fft.") + f, "library op");
  }
  for (const char* m : kUfuncMethods) {
    out.emplace_back(std::string("np.<ufunc>.") + m, "graph op");
  }
  for (const char* m : kMethods) {
    out.emplace_back(std::string("ndarray.") + m, "graph op");
  }
  return out;
}

// Basic index items of a constant key, or nullopt when the key is not a basic index.
std::optional<std::vector<graph::IndexItem>> index_items(const py::object& key) {
  std::vector<graph::IndexItem> items;
  auto one = [&](PyObject* k) {
    graph::IndexItem it;
    if (PyLong_CheckExact(k)) {
      it.kind = graph::IndexItem::Kind::kInt;
      it.index = PyLong_AsLongLong(k);
      if (PyErr_Occurred() != nullptr) {
        PyErr_Clear();
        return false;
      }
    } else if (k == Py_None) {
      it.kind = graph::IndexItem::Kind::kNewAxis;
    } else if (k == Py_Ellipsis) {
      it.kind = graph::IndexItem::Kind::kEllipsis;
    } else if (PySlice_Check(k)) {
      it.kind = graph::IndexItem::Kind::kSlice;
      auto* s = reinterpret_cast<PySliceObject*>(k);
      std::array<std::optional<std::int64_t>*, 3> parts = {&it.start, &it.stop, &it.step};
      std::array<PyObject*, 3> values = {s->start, s->stop, s->step};
      for (std::size_t p = 0; p < 3; ++p) {
        if (values[p] == Py_None) {
          continue;
        }
        if (!PyLong_CheckExact(values[p])) {
          return false;
        }
        *parts[p] = PyLong_AsLongLong(values[p]);
        if (PyErr_Occurred() != nullptr) {
          PyErr_Clear();
          return false;
        }
      }
    } else {
      return false;
    }
    items.push_back(it);
    return true;
  };
  if (PyTuple_CheckExact(key.ptr())) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(key.ptr()); ++i) {
      if (!one(PyTuple_GET_ITEM(key.ptr(), i))) {
        return std::nullopt;
      }
    }
  } else if (!one(key.ptr())) {
    return std::nullopt;
  }
  return items;
}

const UfuncEntry* find_ufunc(const std::string& name) {
  for (const UfuncEntry& e : captured_ufuncs()) {
    if (name == e.name) {
      return &e;
    }
  }
  return nullptr;
}

}  // namespace sot::translator
