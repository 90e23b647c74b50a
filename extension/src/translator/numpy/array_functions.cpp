// NumPy functions and ndarray methods captured into the graph: the call's arguments are bound to
// the function's parameters to work out the result (dtype, shape) by the rules; the op itself
// repeats the call as the user wrote it (same positional and keyword arguments), so the reference
// backend computes exactly what eager NumPy does.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/loaded_module.hpp"
#include "translator/numpy/array_state.hpp"
#include "translator/numpy/numpy_call.hpp"

namespace py = pybind11;

namespace sot::translator {

using graph::Arg;
using graph::DType;
using graph::Operand;
using graph::ReduceKind;
using graph::UfuncKind;
using graph::ValueInfo;

namespace {

struct Signature {
  const char* name;
  std::vector<const char*> params;  // function form; the method form drops the first
};

// Parameters the rules understand, by function (others are refused with a reason).
const std::vector<Signature>& signatures() {
  static const std::vector<Signature> s = {
      {"sum", {"a", "axis", "dtype", "out", "keepdims"}},
      {"prod", {"a", "axis", "dtype", "out", "keepdims"}},
      {"mean", {"a", "axis", "dtype", "out", "keepdims"}},
      {"max", {"a", "axis", "out", "keepdims"}},
      {"min", {"a", "axis", "out", "keepdims"}},
      {"argmax", {"a", "axis", "out", "keepdims"}},
      {"argmin", {"a", "axis", "out", "keepdims"}},
      {"any", {"a", "axis", "out", "keepdims"}},
      {"all", {"a", "axis", "out", "keepdims"}},
      {"var", {"a", "axis", "dtype", "out", "ddof", "keepdims"}},
      {"std", {"a", "axis", "dtype", "out", "ddof", "keepdims"}},
      {"cumsum", {"a", "axis", "dtype", "out"}},
      {"cumprod", {"a", "axis", "dtype", "out"}},
      {"matmul", {"x1", "x2"}},
      {"dot", {"a", "b", "out"}},
      {"reshape", {"a", "newshape", "order"}},
      {"transpose", {"a", "axes"}},
      {"swapaxes", {"a", "axis1", "axis2"}},
      {"moveaxis", {"a", "source", "destination"}},
      {"expand_dims", {"a", "axis"}},
      {"squeeze", {"a", "axis"}},
      {"concatenate", {"arrays", "axis"}},
      {"stack", {"arrays", "axis"}},
      {"split", {"ary", "indices_or_sections", "axis"}},
      {"where", {"condition", "x", "y"}},
      {"clip", {"a", "a_min", "a_max"}},
      {"copy", {"a"}},
      {"astype", {"self", "dtype"}},
      {"zeros", {"shape", "dtype"}},
      {"ones", {"shape", "dtype"}},
      {"empty", {"shape", "dtype"}},
      {"full", {"shape", "fill_value", "dtype"}},
      {"zeros_like", {"a", "dtype"}},
      {"ones_like", {"a", "dtype"}},
      {"empty_like", {"a", "dtype"}},
      {"full_like", {"a", "fill_value", "dtype"}},
      {"arange", {"start", "stop", "step", "dtype"}},
      {"linspace", {"start", "stop", "num", "endpoint", "retstep", "dtype", "axis"}},
      {"eye", {"N", "M", "k", "dtype"}},
      {"broadcast_to", {"array", "shape"}},
      {"round", {"a", "decimals"}},
      {"ravel", {"a"}},
      {"flatten", {"self"}},
      {"outer", {"a", "b", "out"}},
      {"ufunc.outer", {"A", "B"}},
      {"ufunc.reduce", {"array", "axis", "dtype", "out", "keepdims", "initial"}},
      {"ufunc.accumulate", {"array", "axis", "dtype", "out"}},
      {"flip", {"m", "axis"}},
      {"fliplr", {"m"}},
      {"flipud", {"m"}},
      {"roll", {"a", "shift", "axis"}},
      {"tril", {"m", "k"}},
      {"triu", {"m", "k"}},
      {"sort", {"a", "axis", "kind", "order"}},
      {"argsort", {"a", "axis", "kind", "order"}},
      {"take_along_axis", {"arr", "indices", "axis"}},
      {"linalg.inv", {"a"}},
      {"linalg.det", {"a"}},
      {"linalg.cholesky", {"a"}},
      {"linalg.solve", {"a", "b"}},
      {"linalg.qr", {"a", "mode"}},
      {"linalg.svd", {"a", "full_matrices", "compute_uv", "hermitian"}},
      {"linalg.eigh", {"a", "UPLO"}},
      {"linalg.norm", {"x", "ord", "axis", "keepdims"}},
      {"cov", {"m", "y", "rowvar", "bias", "ddof", "fweights", "aweights", "dtype"}},
      {"histogram", {"a", "bins", "range", "density", "weights"}},
      {"diag", {"v", "k"}},
      {"trace", {"a", "offset", "axis1", "axis2", "dtype", "out"}},
      {"vander", {"x", "N", "increasing"}},
      {"polyval", {"p", "x"}},
      {"linalg.lstsq", {"a", "b", "rcond"}},
      {"hanning", {"M"}},
      {"fft.rfft", {"a", "n", "axis", "norm", "out"}},
      {"fft.rfftfreq", {"n", "d", "device"}},
      {"insert", {"arr", "obj", "values", "axis"}},
      {"array", {"object", "dtype"}},
      {"indices", {"dimensions", "dtype", "sparse"}},
      {"nonzero", {"a"}},
      {"flatnonzero", {"a"}},
      {"gradient", {"f", "spacing", "axis", "edge_order"}},
      {"repeat", {"a", "repeats", "axis"}},
      {"tile", {"A", "reps"}},
      {"diff", {"a", "n", "axis", "prepend", "append"}},
      {"average", {"a", "axis", "weights", "returned", "keepdims"}},
      {"hstack", {"tup", "dtype", "casting"}},
      {"vstack", {"tup", "dtype", "casting"}},
      {"ndarray", {"shape", "dtype"}},
      {"median", {"a", "axis", "out", "overwrite_input", "keepdims"}},
      {"nanmedian", {"a", "axis", "out", "overwrite_input", "keepdims"}},
      {"percentile", {"a", "q", "axis", "out", "overwrite_input", "method", "keepdims"}},
      {"quantile", {"a", "q", "axis", "out", "overwrite_input", "method", "keepdims"}},
      {"nansum", {"a", "axis", "dtype", "out", "keepdims"}},
      {"nanmean", {"a", "axis", "dtype", "out", "keepdims"}},
      {"nanmax", {"a", "axis", "out", "keepdims"}},
      {"nanmin", {"a", "axis", "out", "keepdims"}},
      {"nanstd", {"a", "axis", "dtype", "out", "ddof", "keepdims"}},
      {"nanvar", {"a", "axis", "dtype", "out", "ddof", "keepdims"}},
      {"convolve", {"a", "v", "mode"}},
      {"correlate", {"a", "v", "mode"}},
      {"interp", {"x", "xp", "fp", "left", "right", "period"}},
      {"append", {"arr", "values", "axis"}},
      {"pad", {"array", "pad_width", "mode", "constant_values"}},
      {"kron", {"a", "b"}},
      {"asarray", {"a", "dtype", "order"}},
      {"column_stack", {"tup"}},
      {"searchsorted", {"a", "v", "side", "sorter"}},
      {"digitize", {"x", "bins", "right"}},
      {"isclose", {"a", "b", "rtol", "atol", "equal_nan"}},
      {"count_nonzero", {"a", "axis", "keepdims"}},
  };
  return s;
}

const Signature* signature_of(const std::string& name) {
  for (const Signature& s : signatures()) {
    if (name == s.name) {
      return &s;
    }
  }
  return nullptr;
}

}  // namespace

std::optional<std::vector<int>> ints_of(const py::object& v) {
  std::vector<int> out;
  if (PyLong_CheckExact(v.ptr())) {
    out.push_back(v.cast<int>());
    return out;
  }
  if (PyTuple_CheckExact(v.ptr()) || PyList_CheckExact(v.ptr())) {
    for (const py::handle item : v) {
      if (!PyLong_CheckExact(item.ptr())) {
        return std::nullopt;
      }
      out.push_back(item.cast<int>());
    }
    return out;
  }
  return std::nullopt;
}

std::optional<DType> dtype_of_spec(const py::object& np, const py::object& spec) {
  PyObject* d = PyObject_CallOneArg(np.attr("dtype").ptr(), spec.ptr());
  if (d == nullptr) {
    PyErr_Clear();
    return std::nullopt;
  }
  const auto dt = py::reinterpret_steal<py::object>(d);
  if (!dt.attr("isnative").cast<bool>()) {
    return std::nullopt;
  }
  return graph::dtype_from_name(str_of(dt.attr("name")));
}

ValueInfo array_of(DType t, graph::Shape shape) {
  ValueInfo v;
  v.dtype = t;
  v.shape = std::move(shape);
  return v;
}

DType python_default(const graph::PyScalar& s) {
  switch (s.kind) {
    case graph::PyScalar::Kind::kBool:
      return DType::kBool;
    case graph::PyScalar::Kind::kInt:
      return DType::kInt64;
    case graph::PyScalar::Kind::kFloat:
      return DType::kFloat64;
    case graph::PyScalar::Kind::kComplex:
      return DType::kComplex128;
  }
  return DType::kFloat64;
}

OpcodeExecutor::NumpyCall::NumpyCall(OpcodeExecutor& executor, const std::string& function,
                                     const VarPtr& callable, const std::vector<VarPtr>& positional,
                                     const std::vector<std::pair<std::string, VarPtr>>& keywords,
                                     const VarPtr& receiver)
    : ex(executor),
      name(function),
      args(positional),
      kwargs(keywords),
      self(receiver),
      st(executor.arrays()),
      np(st.numpy),
      shown(receiver ? "ndarray." + function : "np." + function) {
  // The op repeats the call: the same callable (ndarray.<name> for a method, with the array
  // first), the same arguments, arrays as graph values.
  g.name = name;
  std::vector<VarPtr> all_args;
  if (self) {
    const ArrayOperand s = ex.array_operand(self);
    if (s.kind != ArrayOperand::Kind::kValue || ex.array_info(s.id).scalar) {
      refuse("a method of a NumPy scalar");
    }
    g.fn = np.attr("ndarray").attr(name.c_str());
    all_args.push_back(self);
  } else {
    g.fn = callable->value();
  }
  all_args.insert(all_args.end(), args.begin(), args.end());
  auto to_arg = [&](const VarPtr& v) -> Arg {
    if (ex.is_array_like(v)) {
      return Arg::of(ex.array_operand(v).id);
    }
    if (v->kind() == Variable::Kind::kArray && ex.arrays().graph_lists.count(v->graph_id()) != 0) {
      return Arg::of(v->graph_id());  // (a list a loop appended to: stack_sequences takes it)
    }
    if ((v->kind() == Variable::Kind::kList || v->kind() == Variable::Kind::kTuple) &&
        std::any_of(v->items().begin(), v->items().end(),
                    [&](const VarPtr& i) { return ex.is_array_like(i); })) {
      std::vector<int> ids;
      for (const VarPtr& item : v->items()) {
        if (!ex.is_array_like(item)) {
          refuse("a sequence mixing arrays and " + item->describe());
        }
        ids.push_back(ex.array_operand(item).id);
      }
      return Arg::sequence(std::move(ids), v->kind() == Variable::Kind::kTuple);
    }
    // (a list, dict or set received from outside: its contents may change between calls, and an
    // identity guard on it would retranslate for every new one; refused before anything is
    // guarded - but for a short list of Python numbers, guarded by its length and its items'
    // values, and given as a copy)
    PyObject* o = v->kind() == Variable::Kind::kObject ? v->value().ptr() : nullptr;
    if (o != nullptr && v->tracker().is_input()) {
      if (py::object numbers = guarded_numbers(v)) {
        return Arg::constant_of(numbers);
      }
    }
    if (o != nullptr && (PyList_Check(o) || PyDict_Check(o) || PyAnySet_Check(o))) {
      refuse("an argument it does not model (" + v->describe() + ")");
    }
    py::object c = ex.static_arg(v);
    if (!c) {
      refuse("an argument it does not model (" + v->describe() + ")");
    }
    return Arg::constant_of(c);
  };
  for (const VarPtr& a : all_args) {
    g.args.push_back(to_arg(a));
  }
  for (const auto& [k, v] : kwargs) {
    g.kwargs.emplace_back(k, to_arg(v));
  }
}

py::object OpcodeExecutor::NumpyCall::guarded_numbers(const VarPtr& v) const {
  constexpr Py_ssize_t kMaxItems = 32;  // (each item's value checked on every call)
  PyObject* o = v->value().ptr();
  if (!PyList_CheckExact(o) || PyList_GET_SIZE(o) == 0 || PyList_GET_SIZE(o) > kMaxItems) {
    return py::object();
  }
  // (not the list the frame changes: its contents here are those at entry, the frame's are in the
  // side effects' model)
  const VarPtr& modeled = ex.effects().modeled;
  if (modeled && modeled->value() && modeled->value().ptr() == o) {
    return py::object();
  }
  const py::list items = py::reinterpret_borrow<py::list>(o);
  for (const py::handle item : items) {
    if (!PyLong_CheckExact(item.ptr()) && !PyFloat_CheckExact(item.ptr())) {
      return py::object();
    }
  }
  ex.guards_->type(v);
  ex.guards_->length(v, PyList_GET_SIZE(o));
  py::list copy;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(o); ++i) {
    const py::object item = items[static_cast<std::size_t>(i)];
    ex.guards_->value(Variable::constant(item, Tracker::item(v, py::int_(i))));
    copy.append(item);
  }
  return copy;
}

void OpcodeExecutor::NumpyCall::refuse(const std::string& reason) const {
  ex.graph_break("numpy " + shown + ": " + reason);
}

Operand OpcodeExecutor::NumpyCall::operand_of(const VarPtr& v) const {
  const ArrayOperand o = ex.array_operand(v);
  if (o.kind == ArrayOperand::Kind::kNone) {
    refuse("an operand that is not an array, NumPy scalar or Python number (" + v->describe() +
           ")");
  }
  return o.kind == ArrayOperand::Kind::kPython ? Operand::python(o.scalar)
                                               : Operand::array(ex.array_info(o.id));
}

Operand OpcodeExecutor::NumpyCall::static_operand(const VarPtr& v) const {
  const ArrayOperand o = ex.array_operand(v);
  if (o.kind == ArrayOperand::Kind::kValue) {
    ex.static_info(o.id);  // (its symbols specialized: array_info gives sizes from now on)
  }
  return operand_of(v);
}

VarPtr OpcodeExecutor::NumpyCall::ufunc() {
  // (matmul: a gufunc, its shape by matmul_result)
  const UfuncEntry* ufunc = find_ufunc(name);
  if (ufunc == nullptr && name != "matmul") {
    return nullptr;
  }
  {
    const UfuncKind kind = ufunc != nullptr ? ufunc->kind : UfuncKind::kArith;
    const int nin = ufunc != nullptr ? ufunc->nin : 2;
    if (args.size() != static_cast<std::size_t>(nin)) {
      refuse("called with " + std::to_string(args.size()) + " positional arguments");
    }
    VarPtr out;
    for (const auto& [k, v] : kwargs) {
      if (k != "out") {
        refuse("the keyword argument " + k);
      }
      out = v;
    }
    std::vector<Operand> operands;
    operands.reserve(args.size());
    for (const VarPtr& a : args) {
      operands.push_back(operand_of(a));
    }
    std::optional<ValueInfo> info;
    if (name == "matmul") {
      if (operands[0].is_python || operands[1].is_python) {
        refuse("a Python scalar operand (raises ValueError)");
      }
      const int a0 = ex.array_operand(args[0]).id;
      const int a1 = ex.array_operand(args[1]).id;
      info = ex.retry_static({a0, a1}, [&] {
        why.clear();
        return graph::matmul_result(ex.array_info(a0), ex.array_info(a1), &why);
      });
    } else {
      std::vector<int> ids;
      ids.reserve(args.size());
      for (const VarPtr& a : args) {
        ids.push_back(ex.array_operand(a).id);
      }
      info = ex.retry_static(ids, [&] {
        why.clear();
        std::vector<Operand> ops;
        ops.reserve(args.size());
        for (const VarPtr& a : args) {
          ops.push_back(operand_of(a));
        }
        return graph::ufunc_result(name, kind, ops, st.promotion, &why);
      });
    }
    if (!info) {
      refuse(why);
    }
    if (name == "power" && graph::kind(info->dtype) != 'f' && graph::kind(info->dtype) != 'c' &&
        !(operands[1].is_python && operands[1].scalar.value >= 0)) {
      refuse("integer power with an exponent that may be negative (NumPy raises ValueError)");
    }
    if (out) {
      if (!ex.is_array_like(out) || ex.array_info(ex.array_operand(out).id).scalar) {
        refuse("out= that is not an array");
      }
      const ValueInfo target = ex.array_info(ex.array_operand(out).id);
      if (info->shape != target.shape) {
        refuse("non-broadcastable output operand with shape " + graph::shape_text(target.shape) +
               " doesn't match the broadcast shape " + graph::shape_text(info->shape));
      }
      if (!graph::can_cast_same_kind(info->dtype, target.dtype)) {
        refuse("cannot cast ufunc output from " + std::string(graph::name(info->dtype)) + " to " +
               std::string(graph::name(target.dtype)) + " with casting rule 'same_kind'");
      }
      g.mutates = true;
      ex.add_array_op(std::move(g), target);
      return out;  // a ufunc returns its out= array
    }
    return ex.add_array_op(std::move(g), *info);
  }
}

VarPtr OpcodeExecutor::NumpyCall::einsum() {
  if (!kwargs.empty() || args.size() < 2) {
    refuse("keyword arguments or no operands");
  }
  const py::object spec = ex.static_arg(args[0]);
  if (!spec || !PyUnicode_Check(spec.ptr())) {
    refuse("subscripts that are not a constant string");
  }
  std::vector<ValueInfo> operands;
  for (std::size_t k = 1; k < args.size(); ++k) {
    if (!ex.is_array_like(args[k])) {
      refuse("an operand that is not an array (" + args[k]->describe() + ")");
    }
    operands.push_back(ex.static_info(ex.array_operand(args[k]).id));
  }
  auto info = graph::einsum_result(str_of(spec), operands, &why);
  if (!info) {
    refuse(why);
  }
  return ex.add_array_op(std::move(g), *info);
}

void OpcodeExecutor::NumpyCall::bind() {
  // Everything else: bind the arguments to the parameters the rules read.
  const Signature* sig = signature_of(name);
  if (sig == nullptr) {
    refuse("not modelled");
  }
  params = sig->params;
  std::size_t next = 0;
  if (self) {
    bound[params[0]] = self;
    next = 1;
  }
  // Methods that take their shape or axes spread out: x.reshape(2, 3), x.transpose(1, 0).
  const bool spread = self && (name == "reshape" || name == "transpose") && args.size() > 1;
  if (spread) {
    bound[params[1]] = Variable::tuple(args);
  } else {
    for (const VarPtr& a : args) {
      if (next >= params.size()) {
        refuse("too many positional arguments");
      }
      bound[params[next++]] = a;
    }
  }
  for (const auto& kw : kwargs) {
    const std::string& k = kw.first;
    if (std::none_of(params.begin(), params.end(), [&k](const char* p) { return k == p; }) ||
        bound.count(k) != 0) {
      refuse("the keyword argument " + k);
    }
    bound[k] = kw.second;
  }
  // Rules that carry shape symbols through; the others need sizes (symbols specialized).
  static const char* const kSymbolic[] = {
      "sum",         "prod",      "mean",   "max",    "min",       "argmax",     "argmin",
      "any",         "all",       "var",    "std",    "transpose", "swapaxes",   "moveaxis",
      "expand_dims", "squeeze",   "copy",   "astype", "round",     "zeros_like", "ones_like",
      "empty_like",  "full_like", "flip",   "fliplr", "flipud",    "roll",       "tril",
      "triu",        "sort",      "argsort"};
  symbolic = std::any_of(std::begin(kSymbolic), std::end(kSymbolic),
                         [&](const char* n) { return name == n; });
}

VarPtr OpcodeExecutor::NumpyCall::get(const char* p) const {
  const auto it = bound.find(p);
  return it == bound.end() ? nullptr : it->second;
}

// A static argument's value (None when absent).
py::object OpcodeExecutor::NumpyCall::value_of(const char* p) const {
  const VarPtr v = get(p);
  if (!v) {
    return py::none();
  }
  if (ex.is_array_like(v)) {
    refuse(std::string("an array as ") + p);
  }
  py::object c = ex.static_arg(v);
  if (!c) {
    refuse(std::string("a value it does not model as ") + p + " (" + v->describe() + ")");
  }
  return c;
}

ValueInfo OpcodeExecutor::NumpyCall::array_param(const char* p) const {
  const VarPtr v = get(p);
  if (!v || !ex.is_array_like(v)) {
    refuse(std::string("a non-array ") + p + (v ? " (" + v->describe() + ")" : ""));
  }
  const int id = ex.array_operand(v).id;
  return symbolic ? ex.array_info(id) : ex.static_info(id);
}

std::optional<DType> OpcodeExecutor::NumpyCall::dtype_param(const char* p) const {
  const py::object spec = value_of(p);
  if (spec.is_none()) {
    return std::nullopt;
  }
  auto t = dtype_of_spec(np, spec);
  if (!t) {
    refuse("the dtype " + py::repr(spec).cast<std::string>());
  }
  return t;
}

bool OpcodeExecutor::NumpyCall::axes_param(const char* p, std::vector<int>* axes) const {
  const py::object v = value_of(p);
  if (v.is_none()) {
    return false;
  }
  auto l = ints_of(v);
  if (!l) {
    refuse(std::string("the ") + p + " " + py::repr(v).cast<std::string>());
  }
  *axes = *l;
  return true;
}

bool OpcodeExecutor::NumpyCall::bool_param(const char* p) const {
  const py::object v = value_of(p);
  if (v.is_none()) {
    return false;
  }
  if (!PyBool_Check(v.ptr())) {
    refuse(std::string("a non-bool ") + p);
  }
  return v.ptr() == Py_True;
}

std::int64_t OpcodeExecutor::NumpyCall::int_param(const char* p, std::int64_t fallback) const {
  const py::object v = value_of(p);
  if (v.is_none()) {
    return fallback;
  }
  int overflow = 0;
  const long long n =
      PyLong_CheckExact(v.ptr()) != 0 ? PyLong_AsLongLongAndOverflow(v.ptr(), &overflow) : 0;
  if (PyLong_CheckExact(v.ptr()) == 0 || overflow != 0 || n < -(1LL << 30) || n > (1LL << 30)) {
    refuse(std::string("the ") + p + " " + py::repr(v).cast<std::string>());
  }
  return n;
}

graph::Shape OpcodeExecutor::NumpyCall::shape_param(const char* p) const {
  const py::object v = value_of(p);
  auto l = ints_of(v);
  if (!l) {
    refuse(std::string("the shape ") + py::repr(v).cast<std::string>());
  }
  for (const int d : *l) {
    if (d < 0) {
      refuse("negative dimensions are not allowed");
    }
  }
  return graph::Shape(l->begin(), l->end());
}

void OpcodeExecutor::NumpyCall::stack_sequences() {
  // (Parameters NumPy reads with asarray/asanyarray; not those that take a sequence of arrays as
  // one - concatenate's arrays, hstack's tup, np.array's object - nor shapes, axes and the like.)
  static const char* const kArrayLike[] = {"a",  "b",  "x",       "x1",   "x2",  "v",
                                           "m",  "y",  "p",       "arr",  "ary", "values",
                                           "xp", "fp", "weights", "array"};
  const bool literal = name == "array" || name == "asarray";
  for (auto& [param, v] : bound) {
    const char* p = param.c_str();
    const bool listed = std::any_of(std::begin(kArrayLike), std::end(kArrayLike),
                                    [p](const char* n) { return std::strcmp(n, p) == 0; });
    if (list_param(param, listed, &v)) {
      continue;
    }
    if (literal) {
      continue;
    }
    // The op's argument for this parameter (positional, after the method's array, or keyword).
    Arg* given = nullptr;
    const std::size_t first = self ? 1 : 0;
    for (std::size_t i = 0; i < args.size(); ++i) {
      given = args[i] == v ? &g.args[first + i] : given;
    }
    for (std::size_t i = 0; i < kwargs.size(); ++i) {
      given = kwargs[i].second == v ? &g.kwargs[i].second : given;
    }
    if (!listed || given == nullptr || !stackable(v, *given)) {
      continue;
    }
    const VarPtr made =
        ex.numpy_function("array", Variable::constant(np.attr("array")), {v}, {}, nullptr);
    *given = Arg::of(ex.array_operand(made).id);
    v = made;
  }
}

bool OpcodeExecutor::NumpyCall::list_param(const std::string& param, bool listed, VarPtr* v) {
  // A list a loop appended to (loop_lists.cpp), given for an array parameter: np.array of it first.
  if ((*v)->kind() != Variable::Kind::kArray ||
      ex.arrays().graph_lists.count((*v)->graph_id()) == 0) {
    return false;
  }
  VarPtr made = listed ? ex.array_of_list(*v, "array") : nullptr;
  if (!made) {
    refuse("a list appended to in a loop, as " + param);
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == *v) {
      g.args[(self ? 1 : 0) + i] = Arg::of(made->graph_id());
    }
  }
  for (std::size_t i = 0; i < kwargs.size(); ++i) {
    if (kwargs[i].second == *v) {
      g.kwargs[i].second = Arg::of(made->graph_id());
    }
  }
  *v = std::move(made);
  return true;
}

bool OpcodeExecutor::NumpyCall::stackable(const VarPtr& v, const Arg& given) const {
  // A list of numbers from outside, guarded (guarded_numbers): np.array's literal array.
  if (v->kind() == Variable::Kind::kObject) {
    return given.kind == Arg::Kind::kConst && PyList_CheckExact(given.constant.ptr());
  }
  if ((v->kind() != Variable::Kind::kList && v->kind() != Variable::Kind::kTuple) ||
      v->items().empty()) {
    return false;
  }
  // Arrays and NumPy scalars only (a Python number of the graph or a constant: its dtype would be
  // NumPy's for the whole list, not its own), of one dtype (no promotion rule asked).
  std::optional<graph::DType> dtype;
  for (const VarPtr& item : v->items()) {
    if (item->kind() == Variable::Kind::kConst || !ex.is_array_like(item)) {
      return false;
    }
    const ArrayOperand o = ex.array_operand(item);
    if (o.kind != ArrayOperand::Kind::kValue) {
      return false;
    }
    const graph::DType t = ex.static_info(o.id).dtype;
    if (dtype && *dtype != t) {
      return false;
    }
    dtype = t;
  }
  return true;
}

void OpcodeExecutor::NumpyCall::no_out() const {
  if (get("out") && !value_of("out").is_none()) {
    refuse("out= (not modelled for this function)");
  }
}

VarPtr OpcodeExecutor::NumpyCall::result(std::optional<ValueInfo> info) {
  if (!info) {
    refuse(why);
  }
  return ex.add_array_op(std::move(g), std::move(*info));
}

VarPtr OpcodeExecutor::numpy_function(const std::string& name, const VarPtr& callable,
                                      const std::vector<VarPtr>& args,
                                      const std::vector<std::pair<std::string, VarPtr>>& kwargs,
                                      const VarPtr& self) {
  if (!self && args.size() == 1 && kwargs.empty()) {
    if (VarPtr r =
            array_of_list(args[0], name)) {  // (a list appended to in a loop: loop_lists.cpp)
      return r;
    }
  }
  NumpyCall c(*this, name, callable, args, kwargs, self);
  if (name.rfind("ufunc.", 0) == 0) {
    c.shown = "np." + str_of(c.ufunc_of().attr("__name__")) + name.substr(5);  // np.add.outer
  }
  if (!self) {
    if (VarPtr r = c.ufunc()) {
      return r;
    }
  }
  if (name == "einsum") {
    return c.einsum();
  }
  c.bind();
  c.stack_sequences();
  const auto& rules = NumpyCall::rules();
  const auto it = rules.find(name);
  if (it == rules.end()) {
    c.refuse("not modelled");
  }
  return (c.*(it->second))();
}

}  // namespace sot::translator
