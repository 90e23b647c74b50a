#include "graph/ir/graph.hpp"

#include "core/loaded_module.hpp"
#include "graph/ir/arg_values.hpp"
#include "graph/ir/subgraph.hpp"

#include <pybind11/stl.h>

#include <algorithm>
#include <map>
#include <set>

namespace py = pybind11;

namespace sot::graph {

std::string ValueInfo::text() const {
  if (is_tuple()) {
    return "tuple of " + std::to_string(parts);
  }
  if (python != 0) {
    return python == 'i'   ? "Python int"
           : python == 'f' ? "Python float"
           : python == 'b' ? "Python bool"
           : python == 'l' ? "Python list"
                           : "Python str";
  }
  std::string s(name(dtype));
  if (scalar) {
    return s + " scalar";
  }
  s += "[";
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (d > 0) {
      s += ", ";
    }
    const int sym = d < symbols.size() ? symbols[d] : -1;
    s += sym >= 0 ? "s" + std::to_string(sym) : std::to_string(shape[d]);
  }
  return s + "]";
}

Arg Arg::of(int v) {
  Arg a;
  a.kind = Kind::kValue;
  a.value = v;
  return a;
}

Arg Arg::constant_of(py::object c) {
  Arg a;
  a.kind = Kind::kConst;
  a.constant = std::move(c);
  return a;
}

Arg Arg::sequence(std::vector<int> vs, bool tuple) {
  Arg a;
  a.kind = tuple ? Kind::kTuple : Kind::kList;
  a.values = std::move(vs);
  return a;
}

int Graph::add_input(ValueInfo info, std::string name) {
  Value v;
  v.source = Value::Source::kInput;
  v.info = std::move(info);
  v.input = static_cast<int>(inputs_.size());
  v.name = std::move(name);
  values_.push_back(std::move(v));
  const int id = static_cast<int>(values_.size()) - 1;
  inputs_.push_back(id);
  return id;
}

int Graph::add_placeholder(ValueInfo info, std::string name) {
  Value v;
  v.source = Value::Source::kInput;
  v.info = std::move(info);
  v.name = std::move(name);
  values_.push_back(std::move(v));
  return static_cast<int>(values_.size()) - 1;
}

int Graph::add_constant(py::object value, ValueInfo info) {
  Value v;
  v.source = Value::Source::kConst;
  v.info = std::move(info);
  v.constant = std::move(value);
  values_.push_back(std::move(v));
  return static_cast<int>(values_.size()) - 1;
}

int Graph::add_op(Op op, ValueInfo info) {
  Value v;
  v.source = Value::Source::kOp;
  v.info = std::move(info);
  v.op = static_cast<int>(ops_.size());
  values_.push_back(std::move(v));
  const int id = static_cast<int>(values_.size()) - 1;
  op.result = id;
  ops_.push_back(std::move(op));
  return id;
}

void Graph::truncate(std::size_t values, std::size_t ops, std::size_t inputs) {
  values_.resize(std::min(values, values_.size()));
  ops_.resize(std::min(ops, ops_.size()));
  inputs_.resize(std::min(inputs, inputs_.size()));
}

bool python_scalar(PyObject* value, PyScalar* out) {
  PyScalar s;
  if (PyBool_Check(value)) {
    s.kind = PyScalar::Kind::kBool;
    s.value = value == Py_True ? 1 : 0;
  } else if (PyLong_CheckExact(value)) {
    s.kind = PyScalar::Kind::kInt;
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow == 0) {
      s.value = static_cast<long double>(v);
    } else {
      // Exact for the integers that matter at the edges of the integer types.
      const unsigned long long u = overflow > 0 ? PyLong_AsUnsignedLongLong(value) : 0;
      if (overflow > 0 && PyErr_Occurred() == nullptr) {
        s.value = static_cast<long double>(u);
      } else {
        PyErr_Clear();
        s.value = static_cast<long double>(PyLong_AsDouble(value));
        if (PyErr_Occurred() != nullptr) {
          PyErr_Clear();
          s.value = overflow > 0 ? 1e300L : -1e300L;
        }
        if (overflow < 0) {
          // Below int64's range, even where the double rounds to -2**63 (-2**63 - 1 did, and
          // NumPy 1.x's value-based casting then said int64 where NumPy makes an object array).
          s.value = std::min(s.value, -9223372036854775809.0L);
        }
      }
    }
  } else if (PyFloat_CheckExact(value)) {
    s.kind = PyScalar::Kind::kFloat;
    s.value = PyFloat_AS_DOUBLE(value);
  } else if (PyComplex_CheckExact(value)) {
    s.kind = PyScalar::Kind::kComplex;
    s.value = PyComplex_RealAsDouble(value);
    s.imag = PyComplex_ImagAsDouble(value);
  } else {
    return false;
  }
  *out = s;
  return true;
}

bool Graph::has_mutation() const {
  return std::any_of(ops_.begin(), ops_.end(), [](const Op& op) { return op.mutates; });
}

namespace {

bool same_constant(const py::object& a, const py::object& b) {
  if (a.ptr() == b.ptr()) {
    return true;
  }
  if (Py_TYPE(a.ptr()) != Py_TYPE(b.ptr())) {
    return false;
  }
  // Plain constants only (ints, floats, tuples of them, slices, dtypes, strings).
  const int eq = PyObject_RichCompareBool(a.ptr(), b.ptr(), Py_EQ);
  if (eq < 0) {
    PyErr_Clear();
    return false;
  }
  return eq == 1;
}

bool same_arg(const Arg& a, const Arg& b) {
  if (a.kind != b.kind) {
    return false;
  }
  switch (a.kind) {
    case Arg::Kind::kValue:
      return a.value == b.value;
    case Arg::Kind::kList:
    case Arg::Kind::kTuple:
      return a.values == b.values;
    case Arg::Kind::kConst:
      return same_constant(a.constant, b.constant);
  }
  return false;
}

bool same_op(const Op& a, const Op& b) {
  if (a.name != b.name || a.fn.ptr() != b.fn.ptr() || a.args.size() != b.args.size() ||
      a.kwargs.size() != b.kwargs.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.args.size(); ++i) {
    if (!same_arg(a.args[i], b.args[i])) {
      return false;
    }
  }
  for (std::size_t i = 0; i < a.kwargs.size(); ++i) {
    if (a.kwargs[i].first != b.kwargs[i].first ||
        !same_arg(a.kwargs[i].second, b.kwargs[i].second)) {
      return false;
    }
  }
  return true;
}

// Operations that make a new array from nothing: two of them are two arrays, never one.
bool creates(const Op& op) {
  static const std::set<std::string> kMakers = {
      "zeros", "ones",  "full",   "empty",    "zeros_like", "ones_like", "full_like", "empty_like",
      "copy",  "array", "arange", "linspace", "eye",        "indices",   "hanning"};
  return kMakers.count(op.name) != 0;
}

// fn(*args, **kwargs) now, for folding, or a null object when it raises, warns or sets a
// floating-point flag: then its outcome depends on NumPy's error state and the warning filters
// when it runs, so it must run then.
py::object fold_call(const py::object& fn, const py::tuple& args, const py::dict& kwargs) {
  const py::module_ warnings = loaded_module("warnings");
  const py::object errstate =
      loaded_module("numpy").attr("errstate")(**py::dict(py::arg("all") = "raise"));
  const py::object caught = warnings.attr("catch_warnings")();
  py::object result;
  errstate.attr("__enter__")();
  caught.attr("__enter__")();
  warnings.attr("simplefilter")("error");
  PyObject* r = PyObject_Call(fn.ptr(), args.ptr(), kwargs.ptr());
  if (r != nullptr) {
    result = py::reinterpret_steal<py::object>(r);
  }
  PyErr_Clear();
  caught.attr("__exit__")(py::none(), py::none(), py::none());
  errstate.attr("__exit__")(py::none(), py::none(), py::none());
  return result;
}

}  // namespace

// An op runs even when nothing needs its result if it changes an array in place or computes (it
// may raise or warn: a floating-point error under np.seterr, a read-only array written); only
// views and new arrays are dropped.
bool runs_for_effect(const Op& op) {
  return op.mutates || (!op.view && !creates(op));
}

bool Graph::runs_for_effect() const {
  return std::any_of(ops_.begin(), ops_.end(),
                     [](const Op& op) { return graph::runs_for_effect(op); });
}

namespace {

std::string arg_text(const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::kValue:
      return "%" + std::to_string(a.value);
    case Arg::Kind::kList:
    case Arg::Kind::kTuple: {
      std::string s = a.kind == Arg::Kind::kList ? "[" : "(";
      for (std::size_t i = 0; i < a.values.size(); ++i) {
        s += (i > 0 ? ", %" : "%") + std::to_string(a.values[i]);
      }
      if (a.kind == Arg::Kind::kTuple && a.values.size() == 1) {
        s += ",";
      }
      return s + (a.kind == Arg::Kind::kList ? "]" : ")");
    }
    case Arg::Kind::kConst:
      return py::repr(a.constant).cast<std::string>();
  }
  return "?";
}

py::object arg_json(const Arg& a) {
  py::dict d;
  switch (a.kind) {
    case Arg::Kind::kValue:
      d["value"] = a.value;
      break;
    case Arg::Kind::kList:
    case Arg::Kind::kTuple:
      d[a.kind == Arg::Kind::kList ? "list" : "tuple"] = py::cast(a.values);
      break;
    case Arg::Kind::kConst:
      d["const"] = py::repr(a.constant);
      break;
  }
  return std::move(d);
}

py::dict info_json(const ValueInfo& info) {
  py::dict d;
  d["dtype"] = std::string(name(info.dtype));
  py::list shape;
  for (std::size_t i = 0; i < info.shape.size(); ++i) {
    const int sym = i < info.symbols.size() ? info.symbols[i] : -1;
    if (sym >= 0) {
      shape.append("s" + std::to_string(sym));
    } else {
      shape.append(info.shape[i]);
    }
  }
  d["shape"] = shape;
  d["scalar"] = info.scalar;
  if (info.is_tuple()) {
    d["parts"] = info.parts;
  }
  return d;
}

}  // namespace

std::string callable_name(const py::handle& fn) {
  const py::object module = py::getattr(fn, "__module__", py::none());
  std::string qual =
      py::str(py::getattr(fn, "__qualname__", py::getattr(fn, "__name__", py::str("?"))))
          .cast<std::string>();
  if (PyObject_TypeCheck(fn.ptr(), &PyMethodDescr_Type) != 0) {
    return qual;  // "ndarray.reshape"
  }
  std::string mod = module.is_none() ? "" : py::str(module).cast<std::string>();
  if (mod == "numpy" || mod.rfind("numpy.", 0) == 0) {
    mod = "np";
  } else if (mod == "_operator") {
    mod = "operator";
  }
  // ufuncs have no __module__: they are NumPy's.
  if (mod.empty() && std::string(Py_TYPE(fn.ptr())->tp_name) == "numpy.ufunc") {
    mod = "np";
  }
  return mod.empty() ? qual : mod + "." + qual;
}

namespace {

// Common subexpressions, merged: only where no array changes in place (a later change would show
// through the shared value) and at most one of the duplicates is an output. The ops with their
// arguments resolved to the kept values, which ones are removed, and the outputs resolved.
struct Merged {
  std::vector<Op> ops;
  std::vector<bool> removed;
};

Merged merge_common(const Graph& src, bool mutation, std::vector<int>* outputs) {
  const std::size_t nv = src.values().size();
  std::vector<int> replace(nv);
  for (std::size_t i = 0; i < nv; ++i) {
    replace[i] = static_cast<int>(i);
  }
  auto resolve = [&](int v) {
    while (replace[static_cast<std::size_t>(v)] != v) {
      v = replace[static_cast<std::size_t>(v)];
    }
    return v;
  };
  auto remap = [&](Arg& a) {
    if (a.kind == Arg::Kind::kValue) {
      a.value = resolve(a.value);
    } else {
      for (int& v : a.values) {
        v = resolve(v);
      }
    }
  };
  std::set<int> is_output(outputs->begin(), outputs->end());
  Merged m{src.ops(), std::vector<bool>(src.ops().size(), false)};
  std::vector<Op>& ops = m.ops;
  for (std::size_t i = 0; i < ops.size() && !mutation; ++i) {
    Op& op = ops[i];
    for (Arg& a : op.args) {
      remap(a);
    }
    for (auto& kw : op.kwargs) {
      remap(kw.second);
    }
    if (creates(op)) {
      continue;
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (m.removed[j] || !same_op(ops[j], op)) {
        continue;
      }
      const int keep = ops[j].result;
      if (is_output.count(keep) != 0 && is_output.count(op.result) != 0) {
        continue;
      }
      replace[static_cast<std::size_t>(op.result)] = keep;
      if (is_output.count(op.result) != 0) {
        is_output.insert(keep);
      }
      m.removed[i] = true;
      break;
    }
  }
  for (int& o : *outputs) {
    o = resolve(o);
  }
  return m;
}

// Live ops: those the outputs need, every in-place op, and what they need.
std::vector<bool> live_ops(const Merged& m, std::size_t nv, const std::vector<int>& outputs) {
  std::vector<bool> live(m.ops.size(), false);
  std::vector<bool> needed(nv, false);
  for (const int o : outputs) {
    needed[static_cast<std::size_t>(o)] = true;
  }
  for (std::size_t k = m.ops.size(); k-- > 0;) {
    if (m.removed[k]) {
      continue;
    }
    if (graph::runs_for_effect(m.ops[k]) || needed[static_cast<std::size_t>(m.ops[k].result)]) {
      live[k] = true;
      for_each_value(m.ops[k], [&](int v) { needed[static_cast<std::size_t>(v)] = true; });
    }
  }
  return live;
}

// Runs `op` (its values all constants of `g`) now: its result, or a null object when it raises
// (it is left to run, and raise, for real).
py::object fold_now(const Graph& g, const Op& op) {
  py::tuple args(op.args.size());
  py::dict kwargs;
  auto arg_value = [&](const Arg& a) -> py::object {
    if (a.kind == Arg::Kind::kConst) {
      return a.constant;
    }
    if (a.kind == Arg::Kind::kValue) {
      return g.value(a.value).constant;
    }
    py::list l;
    for (const int v : a.values) {
      l.append(g.value(v).constant);
    }
    return a.kind == Arg::Kind::kTuple ? py::object(py::tuple(l)) : py::object(l);
  };
  for (std::size_t i = 0; i < op.args.size(); ++i) {
    args[i] = arg_value(op.args[i]);
  }
  for (const auto& kw : op.kwargs) {
    kwargs[py::str(kw.first)] = arg_value(kw.second);
  }
  return fold_call(op.fn, args, kwargs);
}

}  // namespace

Graph Graph::optimized(std::vector<int>* outputs) const {
  const std::size_t nv = values_.size();
  const bool mutation = has_mutation();
  const Merged merged = merge_common(*this, mutation, outputs);
  const std::vector<Op>& ops = merged.ops;
  const std::vector<bool> live = live_ops(merged, nv, *outputs);

  // Rebuild with new ids: inputs first (all of them: the generated code passes every input),
  // then live constants and ops in order; ops on constants only are folded where that is safe.
  Graph g;
  std::vector<int> id(nv, -1);
  for (const int in : inputs_) {
    const Value& v = values_[static_cast<std::size_t>(in)];
    id[static_cast<std::size_t>(in)] = g.add_input(v.info, v.name);
  }
  for (std::size_t k = 0; k < ops.size(); ++k) {
    if (!live[k]) {
      continue;
    }
    Op op = ops[k];
    bool all_const = !mutation && !creates(op) && op.name != "loop";  // (a loop runs later)
    for_each_value(op, [&](int v) {
      const Value& src = values_[static_cast<std::size_t>(v)];
      if (id[static_cast<std::size_t>(v)] < 0 && src.source == Value::Source::kConst) {
        id[static_cast<std::size_t>(v)] = g.add_constant(src.constant, src.info);
      }
      if (g.value(id[static_cast<std::size_t>(v)]).source != Value::Source::kConst) {
        all_const = false;
      }
    });
    for (Arg& a : op.args) {
      a = renumbered(std::move(a), id);
    }
    for (auto& kw : op.kwargs) {
      kw.second = renumbered(std::move(kw.second), id);
    }
    const ValueInfo& info = values_[static_cast<std::size_t>(ops[k].result)].info;
    if (all_const) {
      if (py::object r = fold_now(g, op)) {
        id[static_cast<std::size_t>(ops[k].result)] = g.add_constant(std::move(r), info);
        continue;
      }
    }
    id[static_cast<std::size_t>(ops[k].result)] = g.add_op(std::move(op), info);
  }
  for (int& o : *outputs) {
    if (id[static_cast<std::size_t>(o)] < 0) {
      const Value& src = values_[static_cast<std::size_t>(o)];
      id[static_cast<std::size_t>(o)] = g.add_constant(src.constant, src.info);
    }
    o = id[static_cast<std::size_t>(o)];
  }
  return g;
}

std::string Graph::text(const std::vector<int>& outputs) const {
  std::string s;
  for (const int in : inputs_) {
    const Value& v = values_[static_cast<std::size_t>(in)];
    s += "%" + std::to_string(in) + " = input " + v.name + " : " + v.info.text() + "\n";
  }
  for (std::size_t i = 0; i < values_.size(); ++i) {
    const Value& v = values_[i];
    if (v.source == Value::Source::kConst) {
      s += "%" + std::to_string(i) + " = constant " + py::repr(v.constant).cast<std::string>() +
           " : " + v.info.text() + "\n";
    }
  }
  for (const Op& op : ops_) {
    std::string line = "%" + std::to_string(op.result) + " = " + op.name + "(";
    bool first = true;
    for (const Arg& a : op.args) {
      line += (first ? "" : ", ") + arg_text(a);
      first = false;
    }
    for (const auto& kw : op.kwargs) {
      line += (first ? "" : ", ") + kw.first + "=" + arg_text(kw.second);
      first = false;
    }
    line += ") : " + values_[static_cast<std::size_t>(op.result)].info.text();
    if (op.mutates) {
      line += "  # in place";
    } else if (op.view) {
      line += "  # view";
    }
    s += line + "\n";
    if (const SubgraphOp* sub = subgraph_of(op.fn)) {
      s += sub->text("    | ");
    }
  }
  s += "return (";
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    s += (i > 0 ? ", %" : "%") + std::to_string(outputs[i]);
  }
  return s + ")\n";
}

py::dict Graph::json(const std::vector<int>& outputs) const {
  py::dict d;
  py::list inputs;
  for (const int in : inputs_) {
    const Value& v = values_[static_cast<std::size_t>(in)];
    py::dict e = info_json(v.info);
    e["id"] = in;
    e["name"] = v.name;
    inputs.append(e);
  }
  py::list constants;
  for (std::size_t i = 0; i < values_.size(); ++i) {
    const Value& v = values_[i];
    if (v.source == Value::Source::kConst) {
      py::dict e = info_json(v.info);
      e["id"] = i;
      e["repr"] = py::repr(v.constant);
      constants.append(e);
    }
  }
  py::list ops;
  for (const Op& op : ops_) {
    py::dict e = info_json(values_[static_cast<std::size_t>(op.result)].info);
    e["id"] = op.result;
    e["op"] = op.name;
    e["fn"] = callable_name(op.fn);
    py::list args;
    for (const Arg& a : op.args) {
      args.append(arg_json(a));
    }
    e["args"] = args;
    py::dict kwargs;
    for (const auto& kw : op.kwargs) {
      kwargs[py::str(kw.first)] = arg_json(kw.second);
    }
    e["kwargs"] = kwargs;
    e["in_place"] = op.mutates;
    e["view"] = op.view;
    e["line"] = op.line;
    ops.append(e);
  }
  d["inputs"] = inputs;
  d["constants"] = constants;
  d["ops"] = ops;
  d["outputs"] = py::cast(outputs);
  return d;
}

py::dict Graph::op_counts() const {
  std::map<std::string, int> counts;
  for (const Op& op : ops_) {
    ++counts[op.name];
  }
  py::dict d;
  for (const auto& [k, n] : counts) {
    d[py::str(k)] = n;
  }
  return d;
}

}  // namespace sot::graph
