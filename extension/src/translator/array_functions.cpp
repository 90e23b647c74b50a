// NumPy functions and ndarray methods captured into the graph: the call's arguments are bound to
// the function's parameters to work out the result (dtype, shape) by the rules; the op itself
// repeats the call as the user wrote it (same positional and keyword arguments), so the reference
// backend computes exactly what eager NumPy does.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/loaded_module.hpp"
#include "translator/array_state.hpp"
#include "translator/opcode_executor.hpp"

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
      {"linspace", {"start", "stop", "num", "endpoint"}},
      {"eye", {"N", "M", "k", "dtype"}},
      {"broadcast_to", {"array", "shape"}},
      {"round", {"a", "decimals"}},
      {"ravel", {"a"}},
      {"flatten", {"self"}},
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

}  // namespace

VarPtr OpcodeExecutor::numpy_function(const std::string& name, const VarPtr& callable,
                                      const std::vector<VarPtr>& args,
                                      const std::vector<std::pair<std::string, VarPtr>>& kwargs,
                                      const VarPtr& self) {
  ArrayState& st = arrays();
  const py::object& np = st.numpy;
  const std::string shown = self ? "ndarray." + name : "np." + name;
  auto refuse = [&](const std::string& why) { graph_break("numpy " + shown + ": " + why); };

  // The op repeats the call: the same callable (ndarray.<name> for a method, with the array
  // first), the same arguments, arrays as graph values.
  graph::Op g;
  g.name = name;
  std::vector<VarPtr> all_args;
  if (self) {
    const ArrayOperand s = array_operand(self);
    if (s.kind != ArrayOperand::Kind::kValue || array_info(s.id).scalar) {
      refuse("a method of a NumPy scalar");
    }
    g.fn = np.attr("ndarray").attr(name.c_str());
    all_args.push_back(self);
  } else {
    g.fn = callable->value();
  }
  all_args.insert(all_args.end(), args.begin(), args.end());
  auto to_arg = [&](const VarPtr& v) -> Arg {
    if (is_array_like(v)) {
      return Arg::of(array_operand(v).id);
    }
    if ((v->kind() == Variable::Kind::kList || v->kind() == Variable::Kind::kTuple) &&
        std::any_of(v->items().begin(), v->items().end(),
                    [&](const VarPtr& i) { return is_array_like(i); })) {
      std::vector<int> ids;
      for (const VarPtr& item : v->items()) {
        if (!is_array_like(item)) {
          refuse("a sequence mixing arrays and " + item->describe());
        }
        ids.push_back(array_operand(item).id);
      }
      return Arg::sequence(std::move(ids), v->kind() == Variable::Kind::kTuple);
    }
    py::object c = static_arg(v);
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

  // Operands of a ufunc-like function.
  auto operand_of = [&](const VarPtr& v) -> Operand {
    const ArrayOperand o = array_operand(v);
    if (o.kind == ArrayOperand::Kind::kNone) {
      refuse("an operand that is not an array, NumPy scalar or Python number (" + v->describe() +
             ")");
    }
    return o.kind == ArrayOperand::Kind::kPython ? Operand::python(o.scalar)
                                                 : Operand::array(array_info(o.id));
  };
  std::string why;

  // Ufuncs called as functions: np.add(x, y), np.exp(x), with out= at most.
  if (!self) {
    // (matmul: a gufunc, its shape by matmul_result)
    const UfuncEntry* ufunc = find_ufunc(name);
    if (ufunc != nullptr || name == "matmul") {
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
        const int a0 = array_operand(args[0]).id;
        const int a1 = array_operand(args[1]).id;
        info = retry_static({a0, a1}, [&] {
          why.clear();
          return graph::matmul_result(array_info(a0), array_info(a1), &why);
        });
      } else {
        std::vector<int> ids;
        ids.reserve(args.size());
        for (const VarPtr& a : args) {
          ids.push_back(array_operand(a).id);
        }
        info = retry_static(ids, [&] {
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
        if (!is_array_like(out) || array_info(array_operand(out).id).scalar) {
          refuse("out= that is not an array");
        }
        const ValueInfo target = array_info(array_operand(out).id);
        if (info->shape != target.shape) {
          refuse("non-broadcastable output operand with shape " + graph::shape_text(target.shape) +
                 " doesn't match the broadcast shape " + graph::shape_text(info->shape));
        }
        if (!graph::can_cast_same_kind(info->dtype, target.dtype)) {
          refuse("cannot cast ufunc output from " + std::string(graph::name(info->dtype)) + " to " +
                 std::string(graph::name(target.dtype)) + " with casting rule 'same_kind'");
        }
        g.mutates = true;
        add_array_op(std::move(g), target);
        return out;  // a ufunc returns its out= array
      }
      return add_array_op(std::move(g), *info);
    }
  }

  if (name == "einsum") {
    if (!kwargs.empty() || args.size() < 2) {
      refuse("keyword arguments or no operands");
    }
    const py::object spec = static_arg(args[0]);
    if (!spec || !PyUnicode_Check(spec.ptr())) {
      refuse("subscripts that are not a constant string");
    }
    std::vector<ValueInfo> operands;
    for (std::size_t k = 1; k < args.size(); ++k) {
      if (!is_array_like(args[k])) {
        refuse("an operand that is not an array (" + args[k]->describe() + ")");
      }
      operands.push_back(static_info(array_operand(args[k]).id));
    }
    auto info = graph::einsum_result(str_of(spec), operands, &why);
    if (!info) {
      refuse(why);
    }
    return add_array_op(std::move(g), *info);
  }

  // Everything else: bind the arguments to the parameters the rules read.
  const Signature* sig = signature_of(name);
  if (sig == nullptr) {
    refuse("not modelled");
  }
  std::vector<const char*> params = sig->params;
  std::map<std::string, VarPtr> bound;
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
  auto get = [&](const char* p) -> VarPtr {
    const auto it = bound.find(p);
    return it == bound.end() ? nullptr : it->second;
  };
  // A static argument's value (None when absent).
  auto value_of = [&](const char* p) -> py::object {
    const VarPtr v = get(p);
    if (!v) {
      return py::none();
    }
    if (is_array_like(v)) {
      refuse(std::string("an array as ") + p);
    }
    py::object c = static_arg(v);
    if (!c) {
      refuse(std::string("a value it does not model as ") + p + " (" + v->describe() + ")");
    }
    return c;
  };
  // Rules that carry shape symbols through; the others need sizes (symbols specialized).
  static const char* const kSymbolic[] = {
      "sum",  "prod",   "mean",  "max",        "min",       "argmax",     "argmin",      "any",
      "all",  "var",    "std",   "transpose",  "swapaxes",  "moveaxis",   "expand_dims", "squeeze",
      "copy", "astype", "round", "zeros_like", "ones_like", "empty_like", "full_like"};
  const bool symbolic = std::any_of(std::begin(kSymbolic), std::end(kSymbolic),
                                    [&](const char* n) { return name == n; });
  auto array_param = [&](const char* p) -> ValueInfo {
    const VarPtr v = get(p);
    if (!v || !is_array_like(v)) {
      refuse(std::string("a non-array ") + p + (v ? " (" + v->describe() + ")" : ""));
    }
    const int id = array_operand(v).id;
    return symbolic ? array_info(id) : static_info(id);
  };
  auto dtype_param = [&](const char* p) -> std::optional<DType> {
    const py::object spec = value_of(p);
    if (spec.is_none()) {
      return std::nullopt;
    }
    auto t = dtype_of_spec(np, spec);
    if (!t) {
      refuse("the dtype " + py::repr(spec).cast<std::string>());
    }
    return t;
  };
  auto axes_param = [&](const char* p, std::vector<int>* axes) -> bool {  // false: None
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
  };
  auto bool_param = [&](const char* p) {
    const py::object v = value_of(p);
    if (v.is_none()) {
      return false;
    }
    if (!PyBool_Check(v.ptr())) {
      refuse(std::string("a non-bool ") + p);
    }
    return v.ptr() == Py_True;
  };
  auto shape_param = [&](const char* p) -> graph::Shape {
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
  };
  auto no_out = [&]() {
    if (get("out") && !value_of("out").is_none()) {
      refuse("out= (not modelled for this function)");
    }
  };
  auto result = [&](std::optional<ValueInfo> info) {
    if (!info) {
      refuse(why);
    }
    return add_array_op(std::move(g), std::move(*info));
  };

  static const std::map<std::string, ReduceKind> kReductions = {
      {"sum", ReduceKind::kSum},    {"prod", ReduceKind::kSum}, {"mean", ReduceKind::kMean},
      {"max", ReduceKind::kSame},   {"min", ReduceKind::kSame}, {"argmax", ReduceKind::kArg},
      {"argmin", ReduceKind::kArg}, {"any", ReduceKind::kBool}, {"all", ReduceKind::kBool},
      {"var", ReduceKind::kVar},    {"std", ReduceKind::kVar},
  };
  if (const auto it = kReductions.find(name); it != kReductions.end()) {
    no_out();
    const ValueInfo in = array_param(params[0]);
    std::vector<int> axes;
    const bool all = !axes_param("axis", &axes);
    const bool keepdims = bool_param("keepdims");
    std::optional<DType> dtype;
    if (std::find_if(params.begin(), params.end(),
                     [](const char* p) { return std::string(p) == "dtype"; }) != params.end()) {
      dtype = dtype_param("dtype");
    }
    if (it->second == ReduceKind::kVar) {
      const py::object ddof = value_of("ddof");
      if (!ddof.is_none() && !PyLong_CheckExact(ddof.ptr())) {
        refuse("a non-int ddof");
      }
    }
    return result(graph::reduce_result(it->second, in, axes, all, keepdims, dtype, &why));
  }
  if (name == "cumsum" || name == "cumprod") {
    no_out();
    const ValueInfo in = array_param(params[0]);
    const py::object axis = value_of("axis");
    if (!axis.is_none() && !PyLong_CheckExact(axis.ptr())) {
      refuse("the axis " + py::repr(axis).cast<std::string>());
    }
    return result(graph::cumulative_result(in, axis.is_none() ? 0 : axis.cast<int>(),
                                           axis.is_none(), dtype_param("dtype"), &why));
  }
  if (name == "dot") {
    no_out();
    return result(graph::dot_result(array_param(params[0]), array_param(params[1]), &why));
  }
  if (name == "reshape") {
    const py::object order = value_of("order");
    if (!order.is_none() && !(PyUnicode_Check(order.ptr()) && str_of(order) == "C")) {
      refuse("order other than 'C'");
    }
    const ValueInfo in = array_param(params[0]);
    const py::object shape = value_of(params[1]);
    auto l = ints_of(shape);
    if (!l) {
      refuse("the shape " + py::repr(shape).cast<std::string>());
    }
    g.view = true;
    return result(graph::reshape_result(in, std::vector<std::int64_t>(l->begin(), l->end()), &why));
  }
  if (name == "transpose") {
    const ValueInfo in = array_param(params[0]);
    std::vector<int> axes;
    axes_param(params[1], &axes);
    g.view = true;
    return result(graph::transpose_result(in, axes, &why));
  }
  if (name == "swapaxes") {
    const ValueInfo in = array_param(params[0]);
    std::vector<int> a;
    std::vector<int> b;
    if (!axes_param("axis1", &a) || !axes_param("axis2", &b) || a.size() != 1 || b.size() != 1) {
      refuse("axes that are not two ints");
    }
    g.view = true;
    return result(graph::swapaxes_result(in, a[0], b[0], &why));
  }
  if (name == "moveaxis") {
    const ValueInfo in = array_param("a");
    std::vector<int> from;
    std::vector<int> to;
    if (!axes_param("source", &from) || !axes_param("destination", &to)) {
      refuse("missing axes");
    }
    g.view = true;
    return result(graph::moveaxis_result(in, from, to, &why));
  }
  if (name == "expand_dims") {
    const ValueInfo in = array_param("a");
    std::vector<int> axes;
    if (!axes_param("axis", &axes)) {
      refuse("a missing axis");
    }
    g.view = true;
    return result(graph::expand_dims_result(in, axes, &why));
  }
  if (name == "squeeze") {
    const ValueInfo in = array_param(params[0]);
    std::vector<int> axes;
    const bool all = !axes_param("axis", &axes);
    g.view = true;
    return result(graph::squeeze_result(in, axes, all, &why));
  }
  if (name == "concatenate" || name == "stack") {
    const VarPtr seq = get("arrays");
    if (!seq || (seq->kind() != Variable::Kind::kList && seq->kind() != Variable::Kind::kTuple)) {
      refuse("arrays that are not a list or tuple built in the frame");
    }
    std::vector<ValueInfo> in;
    for (const VarPtr& item : seq->items()) {
      if (!is_array_like(item)) {
        refuse("an item that is not an array (" + item->describe() + ")");
      }
      in.push_back(static_info(array_operand(item).id));
    }
    const py::object axis = value_of("axis");
    if (axis.is_none() && get("axis")) {
      refuse("axis=None");
    }
    const int a = axis.is_none() ? 0 : axis.cast<int>();
    return result(name == "stack" ? graph::stack_result(in, a, st.promotion, &why)
                                  : graph::concatenate_result(in, a, st.promotion, &why));
  }
  if (name == "split") {
    const VarPtr ary = get("ary");
    const ValueInfo in = array_param("ary");
    const py::object sections = value_of("indices_or_sections");
    const py::object axis_v = value_of("axis");
    const int axis = axis_v.is_none() ? 0 : axis_v.cast<int>();
    if (axis < -in.ndim() || axis >= in.ndim()) {
      refuse("axis out of range");
    }
    const int ax = axis < 0 ? axis + in.ndim() : axis;
    const std::int64_t n = in.shape[static_cast<std::size_t>(ax)];
    std::vector<std::int64_t> bounds = {0};
    if (PyLong_CheckExact(sections.ptr())) {
      const std::int64_t k = sections.cast<std::int64_t>();
      if (k <= 0 || n % k != 0) {
        refuse("array split does not result in an equal division");
      }
      for (std::int64_t i = 1; i <= k; ++i) {
        bounds.push_back(n / k * i);
      }
    } else if (auto idx = ints_of(sections)) {
      bounds.insert(bounds.end(), idx->begin(), idx->end());
      bounds.push_back(n);
    } else {
      refuse("sections " + py::repr(sections).cast<std::string>());
    }
    // Each part is ary[:, ..., a:b]: the view np.split returns.
    const int id = array_operand(ary).id;
    std::vector<VarPtr> parts;
    for (std::size_t i = 0; i + 1 < bounds.size(); ++i) {
      py::tuple key(static_cast<std::size_t>(ax) + 1);
      for (int d = 0; d < ax; ++d) {
        key[static_cast<std::size_t>(d)] =
            py::reinterpret_steal<py::object>(PySlice_New(nullptr, nullptr, nullptr));
      }
      key[static_cast<std::size_t>(ax)] = py::reinterpret_steal<py::object>(
          PySlice_New(py::int_(bounds[i]).ptr(), py::int_(bounds[i + 1]).ptr(), nullptr));
      auto items = std::vector<graph::IndexItem>(static_cast<std::size_t>(ax) + 1);
      for (int d = 0; d < ax; ++d) {
        items[static_cast<std::size_t>(d)].kind = graph::IndexItem::Kind::kSlice;
      }
      items[static_cast<std::size_t>(ax)].kind = graph::IndexItem::Kind::kSlice;
      items[static_cast<std::size_t>(ax)].start = bounds[i];
      items[static_cast<std::size_t>(ax)].stop = bounds[i + 1];
      auto info = graph::index_result(in, items, &why);
      if (!info) {
        refuse(why);
      }
      graph::Op part;
      part.name = "split";
      part.fn = loaded_module("operator").attr("getitem");
      part.args = {Arg::of(id), Arg::constant_of(key)};
      part.view = true;
      parts.push_back(add_array_op(std::move(part), *info));
    }
    return Variable::list(std::move(parts));
  }
  if (name == "where") {
    if (!get("x") || !get("y")) {
      refuse("one-argument where (the result's shape depends on the data)");
    }
    std::vector<int> ids;
    for (const char* p : {"condition", "x", "y"}) {
      ids.push_back(array_operand(get(p)).id);
    }
    auto shape = retry_static(ids, [&] {
      why.clear();
      return graph::broadcast_info(
          {operand_of(get("condition")), operand_of(get("x")), operand_of(get("y"))}, &why);
    });
    Operand x = operand_of(get("x"));
    Operand y = operand_of(get("y"));
    if (st.numpy1 && st.promotion == graph::ScalarPromotion::kWeak) {
      for (Operand* o : {&x, &y}) {  // NumPy 1.x "weak": where's Python scalars are strong
        if (o->is_python) {
          ValueInfo strong;
          strong.dtype = graph::default_dtype(o->scalar);
          *o = Operand::array(strong);
        }
      }
    }
    const auto t = shape ? graph::result_dtype({x, y}, st.promotion, &why) : std::nullopt;
    if (!t) {
      refuse(why);
    }
    shape->dtype = *t;
    shape->scalar = false;  // where returns an array, even 0-d
    return result(shape);
  }
  if (name == "clip") {
    no_out();
    std::vector<Operand> operands = {Operand::array(array_param(params[0]))};
    for (const char* p : {"a_min", "a_max"}) {
      const VarPtr v = get(p);
      if (v && !(v->is_const() && v->value().is_none())) {
        operands.push_back(operand_of(v));
      }
    }
    if (operands.size() == 1) {
      refuse("no bounds");
    }
    return result(graph::ufunc_result("clip", UfuncKind::kArith, operands, st.promotion, &why));
  }
  if (name == "copy" || name == "ravel" || name == "flatten") {
    ValueInfo in = array_param(params[0]);
    if (name != "copy") {
      std::int64_t size = 1;
      for (const auto d : in.shape) {
        size *= d;
      }
      in.shape = {size};
      in.symbols.clear();
      g.view = name == "ravel";
    }
    in.scalar = false;
    return result(in);
  }
  if (name == "astype") {
    ValueInfo in = array_param("self");
    const auto t = dtype_param("dtype");
    if (!t) {
      refuse("astype without a dtype");
    }
    in.dtype = *t;
    return result(in);
  }
  if (name == "round") {
    ValueInfo in = array_param(params[0]);
    const py::object d = value_of("decimals");
    if (!d.is_none() && !PyLong_CheckExact(d.ptr())) {
      refuse("non-int decimals");
    }
    if (in.dtype == DType::kBool) {
      refuse("round of booleans");
    }
    return result(in);
  }
  if (name == "zeros" || name == "ones" || name == "empty") {
    const auto t = dtype_param("dtype");
    return result(array_of(t.value_or(DType::kFloat64), shape_param("shape")));
  }
  if (name == "full") {
    const VarPtr fill = get("fill_value");
    const ArrayOperand f = fill ? array_operand(fill) : ArrayOperand{};
    if (f.kind != ArrayOperand::Kind::kPython) {
      refuse("a fill value that is not a Python number");
    }
    const auto t = dtype_param("dtype");
    return result(array_of(t.value_or(python_default(f.scalar)), shape_param("shape")));
  }
  if (name == "zeros_like" || name == "ones_like" || name == "empty_like" || name == "full_like") {
    ValueInfo in = array_param("a");
    if (name == "full_like") {
      const VarPtr fill = get("fill_value");
      if (!fill || array_operand(fill).kind != ArrayOperand::Kind::kPython) {
        refuse("a fill value that is not a Python number");
      }
    }
    if (const auto t = dtype_param("dtype")) {
      in.dtype = *t;
    }
    in.scalar = false;
    return result(in);
  }
  if (name == "arange") {
    // arange(stop), arange(start, stop[, step]): all Python numbers.
    std::vector<graph::PyScalar> v;
    for (const char* p : {"start", "stop", "step"}) {
      const py::object c = value_of(p);
      if (c.is_none()) {
        continue;
      }
      graph::PyScalar s;
      if (!graph::python_scalar(c.ptr(), &s) || s.kind == graph::PyScalar::Kind::kComplex) {
        refuse(std::string("a non-real ") + p);
      }
      v.push_back(s);
    }
    if (v.empty() || (get("stop") == nullptr && v.size() > 1)) {
      refuse("its arguments");
    }
    long double start = 0;
    long double stop = 0;
    long double step = 1;
    if (v.size() == 1) {
      stop = v[0].value;
    } else {
      start = v[0].value;
      stop = v[1].value;
      if (v.size() == 3) {
        step = v[2].value;
      }
    }
    if (step == 0) {
      refuse("a zero step (raises ZeroDivisionError)");
    }
    const bool floats = std::any_of(v.begin(), v.end(), [](const graph::PyScalar& s) {
      return s.kind == graph::PyScalar::Kind::kFloat;
    });
    const long double len = std::ceil((stop - start) / step);
    const auto t = dtype_param("dtype");
    return result(array_of(t.value_or(floats ? DType::kFloat64 : DType::kInt64),
                           {len > 0 ? static_cast<std::int64_t>(len) : 0}));
  }
  if (name == "linspace") {
    for (const char* p : {"start", "stop"}) {
      graph::PyScalar s;
      const py::object c = value_of(p);
      if (!graph::python_scalar(c.ptr(), &s) || s.kind == graph::PyScalar::Kind::kComplex) {
        refuse(std::string("a non-real ") + p);
      }
    }
    const py::object num = value_of("num");
    if (!num.is_none() && !PyLong_CheckExact(num.ptr())) {
      refuse("a non-int num");
    }
    const std::int64_t n = num.is_none() ? 50 : num.cast<std::int64_t>();
    if (n < 0) {
      refuse("a negative num (raises ValueError)");
    }
    return result(array_of(DType::kFloat64, {n}));
  }
  if (name == "eye") {
    const py::object n = value_of("N");
    const py::object m = value_of("M");
    if (!PyLong_CheckExact(n.ptr()) || (!m.is_none() && !PyLong_CheckExact(m.ptr()))) {
      refuse("non-int sizes");
    }
    const py::object k = value_of("k");
    if (!k.is_none() && !PyLong_CheckExact(k.ptr())) {
      refuse("a non-int k");
    }
    const auto rows = n.cast<std::int64_t>();
    const auto cols = m.is_none() ? rows : m.cast<std::int64_t>();
    if (rows < 0 || cols < 0) {
      refuse("negative dimensions are not allowed");
    }
    const auto t = dtype_param("dtype");
    return result(array_of(t.value_or(DType::kFloat64), {rows, cols}));
  }
  if (name == "broadcast_to") {
    g.view = true;
    return result(graph::broadcast_to_result(array_param("array"), shape_param("shape"), &why));
  }
  refuse("not modelled");
  return nullptr;
}

}  // namespace sot::translator
