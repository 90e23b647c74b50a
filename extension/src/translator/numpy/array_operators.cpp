// NumPy operators and calls captured into the frame's graph: BINARY_OP, COMPARE_OP and the unary
// operators on arrays, subscripts and subscript stores, array attributes, and the calls of NumPy
// functions and ndarray methods (array_functions.cpp binds their arguments).
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/loaded_module.hpp"
#include "translator/numpy/array_indexing.hpp"
#include "translator/numpy/array_state.hpp"
#include "translator/handlers/binary_operators.hpp"
#include "translator/guards/guards.hpp"
#include "translator/numpy/numpy_errstate.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

using graph::Arg;
using graph::DType;
using graph::Operand;
using graph::UfuncKind;
using graph::ValueInfo;

namespace {

py::object operator_fn(const char* name) {
  return loaded_module("operator").attr(name);
}

constexpr std::array<UfuncEntry, 60> kUfuncs = {{
    {"add", UfuncKind::kArith, 2},
    {"subtract", UfuncKind::kSubtract, 2},
    {"multiply", UfuncKind::kArith, 2},
    {"true_divide", UfuncKind::kTrueDivide, 2},
    {"divide", UfuncKind::kTrueDivide, 2},
    {"floor_divide", UfuncKind::kFloorDivide, 2},
    {"remainder", UfuncKind::kFloorDivide, 2},
    {"mod", UfuncKind::kFloorDivide, 2},
    {"fmod", UfuncKind::kFloorDivide, 2},
    {"power", UfuncKind::kPower, 2},
    {"maximum", UfuncKind::kArith, 2},
    {"minimum", UfuncKind::kArith, 2},
    {"fmax", UfuncKind::kArith, 2},
    {"fmin", UfuncKind::kArith, 2},
    {"arctan2", UfuncKind::kFloat, 2},
    {"hypot", UfuncKind::kFloat, 2},
    {"exp", UfuncKind::kFloat, 1},
    {"exp2", UfuncKind::kFloat, 1},
    {"expm1", UfuncKind::kFloat, 1},
    {"log", UfuncKind::kFloat, 1},
    {"log2", UfuncKind::kFloat, 1},
    {"log10", UfuncKind::kFloat, 1},
    {"log1p", UfuncKind::kFloat, 1},
    {"sqrt", UfuncKind::kFloat, 1},
    {"cbrt", UfuncKind::kFloat, 1},
    {"sin", UfuncKind::kFloat, 1},
    {"cos", UfuncKind::kFloat, 1},
    {"tan", UfuncKind::kFloat, 1},
    {"arcsin", UfuncKind::kFloat, 1},
    {"arccos", UfuncKind::kFloat, 1},
    {"arctan", UfuncKind::kFloat, 1},
    {"sinh", UfuncKind::kFloat, 1},
    {"cosh", UfuncKind::kFloat, 1},
    {"tanh", UfuncKind::kFloat, 1},
    {"arcsinh", UfuncKind::kFloat, 1},
    {"arccosh", UfuncKind::kFloat, 1},
    {"arctanh", UfuncKind::kFloat, 1},
    {"square", UfuncKind::kSame, 1},
    {"negative", UfuncKind::kSame, 1},
    {"positive", UfuncKind::kSame, 1},
    {"absolute", UfuncKind::kAbs, 1},
    {"fabs", UfuncKind::kRound, 1},
    {"sign", UfuncKind::kSame, 1},
    {"floor", UfuncKind::kRound, 1},
    {"ceil", UfuncKind::kRound, 1},
    {"trunc", UfuncKind::kRound, 1},
    {"rint", UfuncKind::kRound, 1},
    {"isnan", UfuncKind::kPredicate, 1},
    {"isinf", UfuncKind::kPredicate, 1},
    {"isfinite", UfuncKind::kPredicate, 1},
    {"logical_and", UfuncKind::kLogical, 2},
    {"logical_or", UfuncKind::kLogical, 2},
    {"logical_xor", UfuncKind::kLogical, 2},
    {"logical_not", UfuncKind::kLogical, 1},
    {"greater", UfuncKind::kCompare, 2},
    {"greater_equal", UfuncKind::kCompare, 2},
    {"less", UfuncKind::kCompare, 2},
    {"less_equal", UfuncKind::kCompare, 2},
    {"equal", UfuncKind::kCompare, 2},
    {"not_equal", UfuncKind::kCompare, 2},
}};

constexpr std::array<UfuncEntry, 4> kBitwiseUfuncs = {{
    {"bitwise_and", UfuncKind::kBitwise, 2},
    {"bitwise_or", UfuncKind::kBitwise, 2},
    {"bitwise_xor", UfuncKind::kBitwise, 2},
    {"invert", UfuncKind::kBitwise, 1},
}};

// The other NumPy functions captured (the names the numpy module has them under).
const char* const kFunctions[] = {
    "abs",         "amax",         "amin",        "sum",
    "prod",        "mean",         "max",         "min",
    "argmax",      "argmin",       "var",         "std",
    "any",         "all",          "cumsum",      "cumprod",
    "matmul",      "dot",          "reshape",     "transpose",
    "swapaxes",    "moveaxis",     "expand_dims", "squeeze",
    "concatenate", "stack",        "split",       "where",
    "clip",        "copy",         "zeros",       "ones",
    "empty",       "full",         "zeros_like",  "ones_like",
    "empty_like",  "full_like",    "arange",      "linspace",
    "eye",         "broadcast_to", "round",       "around",
    "ravel",       "einsum",       "outer",       "flip",
    "fliplr",      "flipud",       "roll",        "tril",
    "triu",        "sort",         "argsort",     "take_along_axis",
    "cov",         "histogram",    "diag",        "trace",
    "vander",      "polyval",      "insert",      "hanning",
    "array",       "indices",      "nonzero",
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
    "sum",    "prod", "mean",   "max",     "min",   "argmax",  "argmin",    "var",      "std",
    "any",    "all",  "cumsum", "cumprod", "dot",   "reshape", "transpose", "swapaxes", "squeeze",
    "astype", "copy", "clip",   "round",   "ravel", "flatten", "sort",      "argsort",  "nonzero",
};

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
  for (const auto& e : kUfuncs) {
    add(e.name, std::string(e.name) == "divide" ? "true_divide"
                : std::string(e.name) == "mod"  ? "remainder"
                                                : e.name);
  }
  for (const auto& e : kBitwiseUfuncs) {
    add(e.name, e.name);
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

}  // namespace

std::vector<std::pair<std::string, std::string>> numpy_coverage() {
  // Ops the cpu backend runs as calls of NumPy's own routine (a library group or an opaque op),
  // never fused with elementwise neighbours.
  static const char* const kLibrary[] = {
      "matmul",  "dot", "einsum",    "outer",           "sort",
      "argsort", "cov", "histogram", "take_along_axis", "insert"};
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& e : kUfuncs) {
    out.emplace_back(std::string("np.") + e.name,
                     std::string(e.name) == "matmul" ? "library op" : "ufunc (fused)");
  }
  for (const auto& e : kBitwiseUfuncs) {
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
  for (const UfuncEntry& e : kUfuncs) {
    if (name == e.name) {
      return &e;
    }
  }
  for (const UfuncEntry& e : kBitwiseUfuncs) {
    if (name == e.name) {
      return &e;
    }
  }
  return nullptr;
}

namespace {

constexpr int kMatmul = 4;
constexpr int kPower = 8;

// A binary ufunc the translator captures, as the numpy module has it (np.add, np.maximum, ...).
bool captured_binary_ufunc(const VarPtr& v) {
  if (v->kind() != Variable::Kind::kObject ||
      std::strcmp(Py_TYPE(v->value().ptr())->tp_name, "numpy.ufunc") != 0) {
    return false;
  }
  const py::object np = numpy_module();
  const std::string name = str_of(v->value().attr("__name__"));
  const UfuncEntry* u = find_ufunc(name);
  return !np.is_none() && u != nullptr && u->nin == 2 &&
         py::getattr(np, name.c_str(), py::none()).is(v->value());
}

// The rule's result is `info` for every probe of a Python number made in the graph (`xp` for the
// operand `x`, `yp` for `y`), each tried in turn as the operand's scalar.
template <class Operand>
bool same_for_probes(const ValueInfo& info, const std::vector<graph::PyScalar>& xp,
                     const std::vector<graph::PyScalar>& yp,
                     const std::function<std::optional<ValueInfo>()>& rule, Operand* x,
                     Operand* y) {
  for (auto [probes, o] : {std::pair{&xp, x}, std::pair{&yp, y}}) {
    const graph::PyScalar kept = o->scalar;
    for (const graph::PyScalar& p : *probes) {
      o->scalar = p;
      const std::optional<ValueInfo> r = rule();
      if (!r || r->dtype != info.dtype || r->scalar != info.scalar || r->shape != info.shape ||
          r->symbols != info.symbols) {
        o->scalar = kept;
        return false;
      }
    }
    o->scalar = kept;
  }
  return true;
}

}  // namespace

OpcodeExecutor::ArrayOperand OpcodeExecutor::number_array_operand(const VarPtr& v,
                                                                  const graph::PyScalar& probe) {
  ArrayOperand o;
  o.kind = ArrayOperand::Kind::kPython;
  o.id = v->graph_id();
  o.scalar = probe;
  return o;
}

OpcodeExecutor::ArrayOperand OpcodeExecutor::binary_operand(const VarPtr& v,
                                                            std::vector<graph::PyScalar>* probes) {
  *probes = number_probes(v);
  return probes->empty() ? array_operand(v) : number_array_operand(v, probes->front());
}

void OpcodeExecutor::require_value_independent(const BinaryOperator& bo, const ValueInfo& info,
                                               const std::vector<graph::PyScalar>& xprobes,
                                               const std::vector<graph::PyScalar>& yprobes,
                                               ArrayOperand* x, ArrayOperand* y) {
  // The rule gives `info` whatever value a Python number made in the graph has (its probes).
  auto operand = [&](const ArrayOperand& o) {
    return o.kind == ArrayOperand::Kind::kPython ? Operand::python(o.scalar)
                                                 : Operand::array(array_info(o.id));
  };
  std::string why;
  const auto rule = [&] {
    return graph::ufunc_result(bo.ufunc, bo.kind, {operand(*x), operand(*y)}, arrays().promotion,
                               &why);
  };
  if (!same_for_probes(info, xprobes, yprobes, rule, x, y)) {
    graph_break("numpy " + std::string(bo.ufunc) +
                " with a Python number made in the graph whose result dtype depends on its value");
  }
}

bool OpcodeExecutor::array_binary_op(int op) {
  const VarPtr b = peek(1);
  const VarPtr a = peek(2);
  if (!is_array_like(a) && !is_array_like(b)) {
    return false;
  }
  const BinaryOperator* bo = binary_operator(op);
  if (bo == nullptr) {
    return false;
  }
  const bool inplace = binary_inplace(op);
  const int base = bo->base;
  const std::string name = bo->ufunc;
  // (a Python number made in the graph, a loop variable among them: kPython with its value's id,
  // the rules tried on each of its probes)
  std::vector<graph::PyScalar> xprobes;
  std::vector<graph::PyScalar> yprobes;
  ArrayOperand x = binary_operand(a, &xprobes);
  ArrayOperand y = binary_operand(b, &yprobes);
  if (x.kind == ArrayOperand::Kind::kNone || y.kind == ArrayOperand::Kind::kNone) {
    graph_break("numpy " + name + " of " + a->describe() + " and " + b->describe() +
                " (an operand that is not an array, NumPy scalar or Python number)");
  }
  if ((!xprobes.empty() || !yprobes.empty()) && (base == kMatmul || base == kPower)) {
    graph_break("numpy " + name + " with a Python number made in the graph");
  }
  auto operand = [&](const ArrayOperand& o) {
    return o.kind == ArrayOperand::Kind::kPython ? Operand::python(o.scalar)
                                                 : Operand::array(array_info(o.id));
  };
  auto arg = [](const ArrayOperand& o) {
    return o.kind != ArrayOperand::Kind::kPython ? Arg::of(o.id)
           : o.id >= 0                           ? Arg::of(o.id)
                                                 : Arg::constant_of(o.constant);
  };
  std::string why;
  std::optional<ValueInfo> info;
  if (base == kMatmul) {
    if (x.kind != ArrayOperand::Kind::kValue || y.kind != ArrayOperand::Kind::kValue) {
      graph_break("numpy matmul with a Python scalar (raises ValueError)");
    }
    if (inplace) {
      graph_break("in-place matmul (@=)");
    }
    info = retry_static({x.id, y.id}, [&] {
      why.clear();
      return graph::matmul_result(array_info(x.id), array_info(y.id), &why);
    });
  } else {
    if ((base == 3 || base == 9) &&
        ((x.kind == ArrayOperand::Kind::kValue && graph::kind(array_info(x.id).dtype) == 'b') ||
         (y.kind == ArrayOperand::Kind::kValue && graph::kind(array_info(y.id).dtype) == 'b'))) {
      graph_break("numpy " + name + " of booleans");
    }
    info = retry_static({x.id, y.id}, [&] {
      why.clear();
      return graph::ufunc_result(name, bo->kind, {operand(x), operand(y)}, arrays().promotion,
                                 &why);
    });
    if (info) {
      require_value_independent(*bo, *info, xprobes, yprobes, &x, &y);
    }
    if (info && base == kPower && x.kind == ArrayOperand::Kind::kValue) {
      power_dtype_from_numpy(x, y, &*info);
    }
    if (info && base == kPower && graph::kind(info->dtype) != 'f' &&
        graph::kind(info->dtype) != 'c' &&
        !(y.kind == ArrayOperand::Kind::kPython && y.scalar.value >= 0)) {
      graph_break("integer power with an exponent that may be negative (NumPy raises ValueError)");
    }
  }
  if (!info) {
    graph_break("numpy " + name + ": " + why);
  }
  graph::Op g;
  g.name = name;
  g.args = {arg(x), arg(y)};
  VarPtr result;
  const bool target_array = x.kind == ArrayOperand::Kind::kValue && !array_info(x.id).scalar;
  if (inplace && target_array) {
    const ValueInfo& target = array_info(x.id);
    if (info->shape != target.shape) {
      graph_break("in-place numpy " + name + ": non-broadcastable output operand with shape " +
                  graph::shape_text(target.shape) + " doesn't match the broadcast shape " +
                  graph::shape_text(info->shape));
    }
    if (!graph::can_cast_same_kind(info->dtype, target.dtype)) {
      graph_break("in-place numpy " + name + ": cannot cast ufunc output from " +
                  std::string(graph::name(info->dtype)) + " to " +
                  std::string(graph::name(target.dtype)) + " with casting rule 'same_kind'");
    }
    g.fn = operator_fn(bo->inplace);
    g.mutates = true;
    const ValueInfo same = target;
    add_array_op(std::move(g), same);
    result = a;  // the same array, changed
  } else {
    g.fn = operator_fn(inplace ? bo->inplace : bo->function);
    result = add_array_op(std::move(g), *info);
  }
  pop();
  pop();
  push(std::move(result));
  return true;
}

bool OpcodeExecutor::array_compare_op(int op) {
  const VarPtr b = peek(1);
  const VarPtr a = peek(2);
  // x.dtype == np.float32, x.dtype != "int8": dtypes are immutable, compared now.
  const py::object np = numpy_module();
  auto is_dtype = [&](const VarPtr& v) {
    return !np.is_none() && v->kind() == Variable::Kind::kObject && !v->tracker().is_input() &&
           PyObject_TypeCheck(v->value().ptr(),
                              reinterpret_cast<PyTypeObject*>(np.attr("dtype").ptr())) != 0;
  };
  if ((op == Py_EQ || op == Py_NE) && (is_dtype(a) || is_dtype(b))) {
    const VarPtr& other = is_dtype(a) ? b : a;
    py::object value;
    if (other->kind() == Variable::Kind::kObject) {
      value = other->value();
      if (!(PyType_Check(value.ptr()) || is_dtype(other))) {
        return false;
      }
      guards_->identity(other);
    } else if (other->is_const()) {
      value = constant_value(other);
    } else {
      return false;
    }
    const py::object mine = is_dtype(a) ? a->value() : b->value();
    const int eq = PyObject_RichCompareBool(mine.ptr(), value.ptr(), op);
    if (eq < 0) {
      PyErr_Clear();
      return false;
    }
    pop();
    pop();
    push(Variable::constant(py::bool_(eq == 1)));
    return true;
  }
  if (!is_array_like(a) && !is_array_like(b)) {
    return false;
  }
  static const char* const kNames[] = {"less",      "less_equal", "equal",
                                       "not_equal", "greater",    "greater_equal"};
  static const char* const kFns[] = {"lt", "le", "eq", "ne", "gt", "ge"};
  const std::string name = kNames[op];
  const ArrayOperand x = array_operand(a);
  const ArrayOperand y = array_operand(b);
  if (x.kind == ArrayOperand::Kind::kNone || y.kind == ArrayOperand::Kind::kNone) {
    graph_break("numpy " + name + " of " + a->describe() + " and " + b->describe());
  }
  auto operand = [&](const ArrayOperand& o) {
    return o.kind == ArrayOperand::Kind::kPython ? Operand::python(o.scalar)
                                                 : Operand::array(array_info(o.id));
  };
  std::string why;
  auto info = retry_static({x.id, y.id}, [&] {
    why.clear();
    return graph::ufunc_result(name, UfuncKind::kCompare, {operand(x), operand(y)},
                               arrays().promotion, &why);
  });
  if (!info) {
    graph_break("numpy " + name + ": " + why);
  }
  graph::Op g;
  g.name = name;
  g.fn = operator_fn(kFns[op]);
  auto arg = [](const ArrayOperand& o) {
    return o.kind == ArrayOperand::Kind::kPython ? Arg::constant_of(o.constant) : Arg::of(o.id);
  };
  g.args = {arg(x), arg(y)};
  VarPtr r = add_array_op(std::move(g), *info);
  pop();
  pop();
  push(std::move(r));
  return true;
}

bool OpcodeExecutor::array_unary(const char* which) {
  const VarPtr a = peek(1);
  if (!is_array_like(a)) {
    return false;
  }
  const std::string w = which;
  const std::string name = w == "neg" ? "negative" : w == "pos" ? "positive" : "invert";
  const ArrayOperand x = array_operand(a);
  std::string why;
  auto info = graph::ufunc_result(name, w == "invert" ? UfuncKind::kBitwise : UfuncKind::kSame,
                                  {Operand::array(array_info(x.id))}, arrays().promotion, &why);
  if (!info) {
    graph_break("numpy " + name + ": " + why);
  }
  graph::Op g;
  g.name = name;
  g.fn = operator_fn(which);
  g.args = {Arg::of(x.id)};
  VarPtr r = add_array_op(std::move(g), *info);
  pop();
  push(std::move(r));
  return true;
}

bool OpcodeExecutor::array_subscript(std::size_t n) {
  const VarPtr container = peek(n);
  if (!is_array_like(container)) {
    return false;
  }
  py::object key;
  std::optional<std::vector<graph::IndexItem>> items;
  const std::optional<LoopKey> at_index = n == 2 ? loop_key(container, peek(1)) : std::nullopt;
  if (at_index) {
    items = at_index->items;
    key = py::none();  // (x[i] with the loop variable: the op takes the index as a value)
  } else if (n == 3) {
    const VarPtr& start = peek(2);
    const VarPtr& stop = peek(1);
    const py::object s0 = constant_value(start);
    const py::object s1 = s0 ? constant_value(stop) : py::object();
    if (!s1) {
      graph_break("a slice of a NumPy array with " + start->describe() + " and " +
                  stop->describe());
    }
    key = py::reinterpret_steal<py::object>(PySlice_New(s0.ptr(), s1.ptr(), nullptr));
  } else {
    const VarPtr& k = peek(1);
    AdvancedIndex advanced(*this, container, k);  // x[mask], x[idx], x[:, idx] (array_indexing.cpp)
    if (advanced.advanced) {
      VarPtr r = advanced.get();
      pop();
      pop();
      push(std::move(r));
      return true;
    }
    key = constant_value(k);
    if (!key) {
      graph_break("indexing a NumPy array with " + k->describe());
    }
  }
  if (!items) {
    items = index_items(key);
  }
  if (!items) {
    graph_break("indexing a NumPy array with " + py::repr(key).cast<std::string>() +
                " (advanced indexing)");
  }
  const ArrayOperand x = array_operand(container);
  if (array_info(x.id).scalar) {
    graph_break("indexing a NumPy scalar");
  }
  std::string why;
  auto info = retry_static({x.id}, [&] {
    why.clear();
    return graph::index_result(array_info(x.id), *items, &why);
  });
  if (!info) {
    graph_break("numpy indexing: " + why);
  }
  graph::Op g;
  g.name = "getitem";
  g.fn = operator_fn("getitem");
  g.args = {Arg::of(x.id), at_index ? Arg::of(at_index->index) : Arg::constant_of(key)};
  if (at_index && at_index->tuple.size() > 0) {
    g.name = "getitem_at";  // x[..., i, ...]: the key made when the op runs
    g.fn = at_index->getter();
  }
  g.view = !info->scalar;
  VarPtr r = add_array_op(std::move(g), *info);
  for (std::size_t i = 0; i < n; ++i) {
    pop();
  }
  push(std::move(r));
  return true;
}

bool OpcodeExecutor::array_store_subscr() {
  const VarPtr key = peek(1);
  const VarPtr container = peek(2);
  const VarPtr value = peek(3);
  if (!is_array_like(container)) {
    return false;
  }
  const ArrayOperand x = array_operand(container);
  const ValueInfo target = array_info(x.id);
  if (target.scalar) {
    graph_break("item assignment on a NumPy scalar (raises TypeError)");
  }
  AdvancedIndex advanced(*this, container, key);
  if (advanced.advanced) {
    advanced.set(value);
    pop();
    pop();
    pop();
    return true;
  }
  const std::optional<LoopKey> at_index =
      loop_key(container, key);  // x[i] = v, i the loop variable
  std::optional<std::vector<graph::IndexItem>> items;
  if (at_index) {
    items = at_index->items;
  }
  const py::object k = at_index ? py::object(py::none()) : constant_value(key);
  if (!at_index && k) {
    items = index_items(k);
  }
  if (!items) {
    graph_break("assignment to a NumPy array with the index " + key->describe());
  }
  const ArrayOperand v = array_operand(value);
  AdvancedIndex::check_store(*this, target, v);
  std::string why;
  // The region x[k], and a value that broadcasts into it: the same sizes, and the same shape
  // symbols where they are dynamic (they may differ where the graph runs).
  const auto region = retry_static({x.id, v.id}, [&]() -> std::optional<ValueInfo> {
    why.clear();
    auto r = graph::index_result(array_info(x.id), *items, &why);
    if (!r || v.kind != ArrayOperand::Kind::kValue) {
      return r;
    }
    const ValueInfo vi = array_info(v.id);
    const auto b = graph::broadcast_info({Operand::array(vi), Operand::array(*r)}, &why);
    if (!b || b->shape != r->shape || b->symbols != r->symbols) {
      why = "could not broadcast input array from shape " + graph::shape_text(vi.shape) +
            " into shape " + graph::shape_text(r->shape);
      return std::nullopt;
    }
    return r;
  });
  if (!region) {
    graph_break("numpy assignment: " + why);
  }
  graph::Op g;
  g.name = "setitem";
  g.fn = operator_fn("setitem");
  g.args = {Arg::of(x.id), at_index ? Arg::of(at_index->index) : Arg::constant_of(k),
            v.kind == ArrayOperand::Kind::kPython ? Arg::constant_of(v.constant) : Arg::of(v.id)};
  if (at_index && at_index->tuple.size() > 0) {
    g.name = "setitem_at";  // x[..., i, ...] = v: the key made when the op runs
    g.fn = at_index->setter();
  }
  g.mutates = true;
  add_array_op(std::move(g), target);
  pop();
  pop();
  pop();
  return true;
}

VarPtr OpcodeExecutor::array_attr(const VarPtr& base, const py::object& name) {
  if (captured_binary_ufunc(base)) {
    // np.add.outer, np.maximum.reduce, ...: called as ufunc methods (array_call).
    const std::string m = str_of(name);
    const bool method = std::any_of(std::begin(kUfuncMethods), std::end(kUfuncMethods),
                                    [&](const char* k) { return m == k; });
    return method ? Variable::method(base, name) : nullptr;
  }
  if (!is_array_like(base)) {
    return nullptr;
  }
  const std::string n = str_of(name);
  const ArrayOperand x = array_operand(base);
  if (x.kind != ArrayOperand::Kind::kValue) {
    return nullptr;
  }
  // Sizes read as Python values: the translation relies on them (static from now on).
  const bool sizes = n == "shape" || n == "size" || n == "nbytes";
  const ValueInfo info = sizes ? static_info(x.id) : array_info(x.id);
  if (n == "shape") {
    py::tuple t(info.shape.size());
    for (std::size_t d = 0; d < info.shape.size(); ++d) {
      t[d] = py::int_(info.shape[d]);
    }
    return Variable::constant(t);
  }
  if (n == "ndim") {
    return Variable::constant(py::int_(info.ndim()));
  }
  std::int64_t size = 1;
  for (const auto d : info.shape) {
    size *= d;
  }
  if (n == "size") {
    return Variable::constant(py::int_(size));
  }
  if (n == "itemsize" || n == "nbytes") {
    const int item = graph::itemsize(info.dtype);
    return Variable::constant(py::int_(n == "itemsize" ? item : item * size));
  }
  if (n == "dtype") {
    return Variable::object(arrays().numpy.attr("dtype")(std::string(graph::name(info.dtype))),
                            Tracker{});
  }
  if (n == "T") {
    std::string why;
    auto t = graph::transpose_result(info, {}, &why);
    if (!t || info.scalar) {
      graph_break("numpy .T: " + (info.scalar ? std::string("of a NumPy scalar") : why));
    }
    graph::Op g;
    g.name = "transpose";
    g.fn = operator_fn("attrgetter")("T");
    g.args = {Arg::of(x.id)};
    g.view = true;
    return add_array_op(std::move(g), *t);
  }
  const PyObject* ndarray = arrays().numpy.attr("ndarray").ptr();
  if (PyObject_HasAttr(const_cast<PyObject*>(ndarray), name.ptr()) != 0) {
    return Variable::method(base, name);  // captured or not: decided at the call
  }
  return nullptr;
}

VarPtr OpcodeExecutor::array_call(const VarPtr& callable, const std::vector<VarPtr>& args,
                                  const py::object& kwnames) {
  const std::size_t nkw = kwnames ? static_cast<std::size_t>(PyTuple_GET_SIZE(kwnames.ptr())) : 0;
  std::vector<VarPtr> positional(args.begin(), args.end() - static_cast<std::ptrdiff_t>(nkw));
  std::vector<std::pair<std::string, VarPtr>> kwargs;
  for (std::size_t i = 0; i < nkw; ++i) {
    kwargs.emplace_back(str_of(PyTuple_GET_ITEM(kwnames.ptr(), static_cast<Py_ssize_t>(i))),
                        args[positional.size() + i]);
  }
  if (callable->kind() == Variable::Kind::kMethod && is_array_like(callable->items()[0])) {
    const std::string name = str_of(callable->value());
    if (std::none_of(std::begin(kMethods), std::end(kMethods),
                     [&](const char* m) { return name == m; })) {
      if (name == "item" || name == "tolist" || name == "__bool__" || name == "__float__") {
        graph_break("ndarray." + name + "() needs the array's data");
      }
      graph_break("unsupported numpy method ndarray." + name);
    }
    return numpy_function(name, nullptr, positional, kwargs, callable->items()[0]);
  }
  if (callable->kind() == Variable::Kind::kMethod && captured_binary_ufunc(callable->items()[0])) {
    const VarPtr& ufunc = callable->items()[0];
    guards_->identity(ufunc);
    const std::string method = str_of(callable->value());
    const VarPtr bound = Variable::object(ufunc->value().attr(method.c_str()), Tracker{});
    return numpy_function("ufunc." + method, bound, positional, kwargs, nullptr);
  }
  if (callable->kind() != Variable::Kind::kObject) {
    return nullptr;
  }
  const py::object np = numpy_module();
  if (np.is_none()) {
    return nullptr;
  }
  PyObject* fn = callable->value().ptr();
  if (PyType_Check(fn) != 0 && PyObject_IsSubclass(fn, np.attr("generic").ptr()) == 1) {
    // A NumPy scalar type called on a Python number: np.float32(2.0).
    const py::object dt = np.attr("dtype")(callable->value());
    const auto dtype = graph::dtype_from_name(str_of(dt.attr("name")));
    if (dtype && dt.attr("type").ptr() == fn && positional.size() == 1 && kwargs.empty() &&
        positional[0]->kind() == Variable::Kind::kConst) {
      const ArrayOperand v = array_operand(positional[0]);
      if (v.kind == ArrayOperand::Kind::kPython &&
          v.scalar.kind != graph::PyScalar::Kind::kComplex) {
        // (an int out of the type's range raises OverflowError: where the graph runs that would be
        // before the side effects recorded so far are replayed, so the call runs for real)
        const auto tried =
            py::reinterpret_steal<py::object>(PyObject_CallOneArg(fn, v.constant.ptr()));
        if (!tried) {
          PyErr_Clear();
          graph_break("numpy " + str_of(callable->value().attr("__name__")) + "() of " +
                      positional[0]->describe() + " raises");
        }
        guards_->identity(callable);
        graph::Op g;
        g.name = "scalar";
        g.fn = callable->value();
        g.args = {Arg::constant_of(v.constant)};
        ValueInfo info;
        info.dtype = *dtype;
        info.scalar = true;
        return add_array_op(std::move(g), info);
      }
    }
    graph_break("numpy " + str_of(callable->value().attr("__name__")) + "() of " +
                (positional.empty() ? std::string("nothing") : positional[0]->describe()));
  }
  PyErr_Clear();
  const auto& table = numpy_table(np);
  const auto it = table.find(fn);
  if (it == table.end()) {
    const std::string shown = numpy_name(callable->value());
    if (shown.empty()) {
      return nullptr;
    }
    graph_break("unsupported numpy function " + shown);
  }
  guards_->identity(callable);
  return numpy_function(it->second, callable, positional, kwargs, nullptr);
}

}  // namespace sot::translator
