// The rules of the NumPy functions and ndarray methods captured, one member of NumpyCall per
// function (or family), registered by name in numpy_rules(): each reads its bound parameters and
// gives the result's dtype and shape (graph/rules/rules.hpp), or refuses with the reason.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/loaded_module.hpp"
#include "translator/numpy/numpy_call.hpp"

namespace py = pybind11;

namespace sot::translator {

using graph::Arg;
using graph::DType;
using graph::Operand;
using graph::ReduceKind;
using graph::UfuncKind;
using graph::ValueInfo;

const std::map<std::string, OpcodeExecutor::NumpyCall::Rule>& OpcodeExecutor::NumpyCall::rules() {
  using C = NumpyCall;
  static const std::map<std::string, Rule> kRules = {
      {"sum", &C::reduction},
      {"prod", &C::reduction},
      {"mean", &C::reduction},
      {"max", &C::reduction},
      {"min", &C::reduction},
      {"argmax", &C::reduction},
      {"argmin", &C::reduction},
      {"any", &C::reduction},
      {"all", &C::reduction},
      {"var", &C::reduction},
      {"std", &C::reduction},
      {"cumsum", &C::cumulative},
      {"cumprod", &C::cumulative},
      {"dot", &C::dot},
      {"reshape", &C::reshape},
      {"transpose", &C::transpose},
      {"swapaxes", &C::swapaxes},
      {"moveaxis", &C::moveaxis},
      {"expand_dims", &C::expand_dims},
      {"squeeze", &C::squeeze},
      {"concatenate", &C::join},
      {"stack", &C::join},
      {"split", &C::split},
      {"where", &C::where},
      {"clip", &C::clip},
      {"copy", &C::copy_like},
      {"ravel", &C::copy_like},
      {"flatten", &C::copy_like},
      {"astype", &C::astype},
      {"round", &C::round_},
      {"zeros", &C::filled},
      {"ones", &C::filled},
      {"empty", &C::filled},
      {"full", &C::full},
      {"zeros_like", &C::like},
      {"ones_like", &C::like},
      {"empty_like", &C::like},
      {"full_like", &C::like},
      {"arange", &C::arange},
      {"linspace", &C::linspace},
      {"eye", &C::eye},
      {"broadcast_to", &C::broadcast_to},
      {"outer", &C::outer},
      {"ufunc.outer", &C::ufunc_outer},
      {"ufunc.reduce", &C::ufunc_reduce},
      {"ufunc.accumulate", &C::ufunc_reduce},
      {"flip", &C::flip},
      {"fliplr", &C::flip},
      {"flipud", &C::flip},
      {"roll", &C::roll},
      {"tril", &C::triangle},
      {"triu", &C::triangle},
      {"sort", &C::sort},
      {"argsort", &C::sort},
      {"take_along_axis", &C::take_along_axis},
      {"linalg.inv", &C::linalg_square},
      {"linalg.det", &C::linalg_square},
      {"linalg.cholesky", &C::linalg_square},
      {"linalg.solve", &C::linalg_solve},
      {"linalg.qr", &C::linalg_factor},
      {"linalg.svd", &C::linalg_factor},
      {"linalg.eigh", &C::linalg_factor},
      {"linalg.norm", &C::linalg_norm},
      {"cov", &C::cov},
      {"histogram", &C::histogram},
      {"diag", &C::diag},
      {"trace", &C::trace},
      {"vander", &C::vander},
      {"polyval", &C::polyval},
      {"linalg.lstsq", &C::linalg_lstsq},
      {"hanning", &C::hanning},
      {"fft.rfft", &C::rfft},
      {"fft.rfftfreq", &C::rfftfreq},
      {"insert", &C::insert},
      {"array", &C::array},
      {"indices", &C::indices},
      {"nonzero", &C::nonzero},
      {"flatnonzero", &C::flatnonzero},
      {"gradient", &C::gradient},
      {"repeat", &C::repeat},
      {"tile", &C::tile},
      {"diff", &C::diff},
      {"average", &C::average},
      {"hstack", &C::join},
      {"vstack", &C::join},
      {"ndarray", &C::filled},
      {"median", &C::statistic},
      {"percentile", &C::statistic},
      {"quantile", &C::statistic},
      {"nansum", &C::statistic},
      {"nanmean", &C::statistic},
      {"nanmax", &C::statistic},
      {"nanmin", &C::statistic},
      {"nanstd", &C::statistic},
      {"nanvar", &C::statistic},
      {"nanmedian", &C::statistic},
      {"convolve", &C::convolve},
      {"correlate", &C::convolve},
      {"interp", &C::interp},
      {"append", &C::append},
      {"pad", &C::pad},
      {"kron", &C::kron},
      {"asarray", &C::asarray},
      {"column_stack", &C::join},
      {"searchsorted", &C::searchsorted},
      {"digitize", &C::digitize},
      {"isclose", &C::isclose},
      {"count_nonzero", &C::count_nonzero},
  };
  return kRules;
}

VarPtr OpcodeExecutor::NumpyCall::reduction() {
  static const std::map<std::string, ReduceKind> kReductions = {
      {"sum", ReduceKind::kSum},    {"prod", ReduceKind::kSum}, {"mean", ReduceKind::kMean},
      {"max", ReduceKind::kSame},   {"min", ReduceKind::kSame}, {"argmax", ReduceKind::kArg},
      {"argmin", ReduceKind::kArg}, {"any", ReduceKind::kBool}, {"all", ReduceKind::kBool},
      {"var", ReduceKind::kVar},    {"std", ReduceKind::kVar},
  };
  const ReduceKind kind = kReductions.at(name);
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
  if ((kind == ReduceKind::kSame || kind == ReduceKind::kArg) && st.has_runtime(in)) {
    // A mask's selection may be empty where the graph runs: max/min/argmax/argmin raise then.
    auto normal = graph::normalize_axes(axes, all, in.ndim(), nullptr);
    for (int d = 0; normal && d < in.ndim(); ++d) {
      const bool reduced = std::find(normal->begin(), normal->end(), d) != normal->end();
      if (reduced && static_cast<std::size_t>(d) < in.symbols.size() &&
          std::find(st.runtime.begin(), st.runtime.end(),
                    in.symbols[static_cast<std::size_t>(d)]) != st.runtime.end()) {
        raises_on_data("ValueError (an empty selection)");
      }
    }
  }
  if (kind == ReduceKind::kVar) {
    const py::object ddof = value_of("ddof");
    if (!ddof.is_none() && !PyLong_CheckExact(ddof.ptr())) {
      refuse("a non-int ddof");
    }
  }
  return result(graph::reduce_result(kind, in, axes, all, keepdims, dtype, &why));
}

VarPtr OpcodeExecutor::NumpyCall::cumulative() {
  no_out();
  const ValueInfo in = array_param(params[0]);
  const py::object axis = value_of("axis");
  if (!axis.is_none() && !PyLong_CheckExact(axis.ptr())) {
    refuse("the axis " + py::repr(axis).cast<std::string>());
  }
  return result(graph::cumulative_result(in, axis.is_none() ? 0 : axis.cast<int>(), axis.is_none(),
                                         dtype_param("dtype"), &why));
}

VarPtr OpcodeExecutor::NumpyCall::dot() {
  no_out();
  // (shape symbols kept where the rule takes them - slices of one form, L[i, :i] and x[:i] - and
  // specialized otherwise, as the @ operator does)
  int ids[2] = {-1, -1};
  for (int k = 0; k < 2; ++k) {
    const VarPtr v = get(params[k]);
    if (!v || !ex.is_array_like(v)) {
      refuse(std::string("a non-array ") + params[k] + (v ? " (" + v->describe() + ")" : ""));
    }
    ids[k] = ex.array_operand(v).id;
  }
  return result(ex.retry_static({ids[0], ids[1]}, [&] {
    why.clear();
    return graph::dot_result(ex.array_info(ids[0]), ex.array_info(ids[1]), &why);
  }));
}

VarPtr OpcodeExecutor::NumpyCall::reshape() {
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

VarPtr OpcodeExecutor::NumpyCall::transpose() {
  const ValueInfo in = array_param(params[0]);
  std::vector<int> axes;
  axes_param(params[1], &axes);
  g.view = true;
  return result(graph::transpose_result(in, axes, &why));
}

VarPtr OpcodeExecutor::NumpyCall::swapaxes() {
  const ValueInfo in = array_param(params[0]);
  std::vector<int> a;
  std::vector<int> b;
  if (!axes_param("axis1", &a) || !axes_param("axis2", &b) || a.size() != 1 || b.size() != 1) {
    refuse("axes that are not two ints");
  }
  g.view = true;
  return result(graph::swapaxes_result(in, a[0], b[0], &why));
}

VarPtr OpcodeExecutor::NumpyCall::moveaxis() {
  const ValueInfo in = array_param("a");
  std::vector<int> from;
  std::vector<int> to;
  if (!axes_param("source", &from) || !axes_param("destination", &to)) {
    refuse("missing axes");
  }
  g.view = true;
  return result(graph::moveaxis_result(in, from, to, &why));
}

VarPtr OpcodeExecutor::NumpyCall::expand_dims() {
  const ValueInfo in = array_param("a");
  std::vector<int> axes;
  if (!axes_param("axis", &axes)) {
    refuse("a missing axis");
  }
  g.view = true;
  return result(graph::expand_dims_result(in, axes, &why));
}

VarPtr OpcodeExecutor::NumpyCall::squeeze() {
  const ValueInfo in = array_param(params[0]);
  std::vector<int> axes;
  const bool all = !axes_param("axis", &axes);
  if (all && st.has_runtime(in)) {
    refuse("a dimension whose size is known only when the graph runs (it may be 1)");
  }
  g.view = true;
  return result(graph::squeeze_result(in, axes, all, &why));
}

VarPtr OpcodeExecutor::NumpyCall::join() {
  const VarPtr seq = get(params[0]);
  if (!seq || (seq->kind() != Variable::Kind::kList && seq->kind() != Variable::Kind::kTuple)) {
    refuse("arrays that are not a list or tuple built in the frame");
  }
  std::vector<ValueInfo> in;
  for (const VarPtr& item : seq->items()) {
    if (!ex.is_array_like(item)) {
      refuse("an item that is not an array (" + item->describe() + ")");
    }
    in.push_back(ex.static_info(ex.array_operand(item).id));
  }
  if (name == "hstack" || name == "vstack" || name == "column_stack") {
    return result(stacked(in));
  }
  const py::object axis = value_of("axis");
  if (axis.is_none() && get("axis")) {
    refuse("axis=None");
  }
  const int a = axis.is_none() ? 0 : axis.cast<int>();
  return result(name == "stack" ? graph::stack_result(in, a, st.promotion, &why)
                                : graph::concatenate_result(in, a, st.promotion, &why));
}

// hstack and vstack as NumPy joins them: hstack of 1-d arrays along their axis, of arrays of two
// or more dimensions along the second; vstack of 1-d arrays stacked as rows, of others along the
// first. (0-d items and items of 1 and more dimensions mixed: not modelled.)
std::optional<ValueInfo> OpcodeExecutor::NumpyCall::stacked(const std::vector<ValueInfo>& in) {
  if (!value_of("dtype").is_none() || !value_of("casting").is_none()) {
    refuse("dtype= or casting=");
  }
  const auto ndim_is = [&](const auto& test) {
    return std::all_of(in.begin(), in.end(), [&](const ValueInfo& v) { return test(v.ndim()); });
  };
  if (name == "column_stack") {
    // (1-d items as columns, 2-d ones as they are, joined side by side)
    if (in.empty() || !ndim_is([](int n) { return n == 1 || n == 2; })) {
      refuse("items that are not 1-d or 2-d");
    }
    std::vector<ValueInfo> columns = in;
    for (ValueInfo& c : columns) {
      if (c.ndim() == 1) {
        c.shape.push_back(1);
        if (!c.symbols.empty()) {
          c.symbols.push_back(-1);
        }
      }
    }
    return graph::concatenate_result(columns, 1, st.promotion, &why);
  }
  const bool vectors = !in.empty() && ndim_is([](int n) { return n == 1; });
  if (!vectors && (in.empty() || !ndim_is([](int n) { return n >= 2; }))) {
    refuse("items that are 0-d, or of one and more dimensions mixed");
  }
  if (name == "hstack") {
    return graph::concatenate_result(in, vectors ? 0 : 1, st.promotion, &why);
  }
  return vectors ? graph::stack_result(in, 0, st.promotion, &why)
                 : graph::concatenate_result(in, 0, st.promotion, &why);
}

VarPtr OpcodeExecutor::NumpyCall::split() {
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
  const int id = ex.array_operand(ary).id;
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
    parts.push_back(ex.add_array_op(std::move(part), *info));
  }
  return Variable::list(std::move(parts));
}

VarPtr OpcodeExecutor::NumpyCall::where() {
  if (!get("x") && !get("y")) {
    return nonzero_of("condition");  // (np.where(c) is np.nonzero(c))
  }
  if (!get("x") || !get("y")) {
    refuse("where with x or y alone (raises ValueError)");
  }
  std::vector<int> ids;
  for (const char* p : {"condition", "x", "y"}) {
    ids.push_back(ex.array_operand(get(p)).id);
  }
  auto shape = ex.retry_static(ids, [&] {
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

VarPtr OpcodeExecutor::NumpyCall::clip() {
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

VarPtr OpcodeExecutor::NumpyCall::copy_like() {
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

VarPtr OpcodeExecutor::NumpyCall::astype() {
  ValueInfo in = array_param("self");
  const auto t = dtype_param("dtype");
  if (!t) {
    refuse("astype without a dtype");
  }
  in.dtype = *t;
  return result(in);
}

VarPtr OpcodeExecutor::NumpyCall::round_() {
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

VarPtr OpcodeExecutor::NumpyCall::filled() {
  const auto t = dtype_param("dtype");
  return result(array_of(t.value_or(DType::kFloat64), shape_param("shape")));
}

VarPtr OpcodeExecutor::NumpyCall::full() {
  const VarPtr fill = get("fill_value");
  const ArrayOperand f = fill ? ex.array_operand(fill) : ArrayOperand{};
  if (f.kind != ArrayOperand::Kind::kPython) {
    refuse("a fill value that is not a Python number");
  }
  const auto t = dtype_param("dtype");
  return result(array_of(t.value_or(python_default(f.scalar)), shape_param("shape")));
}

VarPtr OpcodeExecutor::NumpyCall::like() {
  ValueInfo in = array_param("a");
  if (name == "full_like") {
    const VarPtr fill = get("fill_value");
    if (!fill || ex.array_operand(fill).kind != ArrayOperand::Kind::kPython) {
      refuse("a fill value that is not a Python number");
    }
  }
  if (const auto t = dtype_param("dtype")) {
    in.dtype = *t;
  }
  in.scalar = false;
  return result(in);
}

VarPtr OpcodeExecutor::NumpyCall::arange() {
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

VarPtr OpcodeExecutor::NumpyCall::linspace() {
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
  bool_param("endpoint");
  if (bool_param("retstep")) {
    refuse("retstep=True (a tuple)");
  }
  if (!value_of("axis").is_none()) {
    refuse("an axis (for array start and stop)");
  }
  const auto t = dtype_param("dtype");
  return result(array_of(t.value_or(DType::kFloat64), {n}));
}

VarPtr OpcodeExecutor::NumpyCall::eye() {
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

VarPtr OpcodeExecutor::NumpyCall::broadcast_to() {
  g.view = true;
  return result(graph::broadcast_to_result(array_param("array"), shape_param("shape"), &why));
}

}  // namespace sot::translator
