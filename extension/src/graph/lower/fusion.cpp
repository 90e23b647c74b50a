#include "graph/lower/fusion.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "core/loaded_module.hpp"
#include "graph/rules/reductions.hpp"
#include "graph/rules/ufuncs.hpp"

namespace py = pybind11;

namespace sot::graph {

namespace {

bool python_or_numpy_scalar(const py::handle& c, const py::module_& numpy) {
  PyScalar unused;
  return python_scalar(c.ptr(), &unused) || py::isinstance(c, numpy.attr("generic"));
}

// Why an argument cannot be an operand of a fused op (empty: it can).
std::string operand_reason(const Graph& graph, const Arg& a, const ValueInfo& result,
                           const py::module_& numpy) {
  switch (a.kind) {
    case Arg::Kind::kValue: {
      const ValueInfo& info = graph.value(a.value).info;
      if (info.scalar || info.ndim() == 0) {
        return {};
      }
      return info.ndim() <= result.ndim() ? std::string() : "an operand wider than the result";
    }
    case Arg::Kind::kConst:
      return python_or_numpy_scalar(a.constant, numpy) ? std::string() : "a constant operand";
    default:
      return "a list operand";
  }
}

// Why `x.astype(dtype)` cannot be a fused cast (empty: it can).
std::string cast_reason(const Graph& graph, const Op& op) {
  if (op.args.size() != 2 || op.args[0].kind != Arg::Kind::kValue) {
    return "astype of a non-array";
  }
  const DType from = graph.value(op.args[0].value).info.dtype;
  const DType to = graph.value(op.result).info.dtype;
  if (kind(from) == 'c' && kind(to) != 'c') {
    return "astype from complex (NumPy warns that it drops the imaginary part)";
  }
  return {};
}

// Why `numpy.where(c, x, y)` cannot be a fused select (empty: it can).
std::string select_reason(const Graph& graph, const Op& op, const py::module_& numpy) {
  if (op.args.size() != 3) {
    return "where with one argument";
  }
  const Arg& c = op.args[0];
  if (c.kind != Arg::Kind::kValue || graph.value(c.value).info.dtype != DType::kBool) {
    return "a condition that is not a boolean array";
  }
  const ValueInfo& result = graph.value(op.result).info;
  for (const Arg& a : op.args) {
    std::string why = operand_reason(graph, a, result, numpy);
    if (!why.empty()) {
      return why;
    }
  }
  return {};
}

bool is_library(const std::string& name) {
  return name == "matmul" || name == "dot" || name == "einsum";
}

bool same_domain(const ValueInfo& a, const ValueInfo& b) {
  return a.shape == b.shape && a.symbols == b.symbols;
}

// Fills in the inputs and outputs of `g` from who reads what.
void connect(const Graph& graph, const std::vector<int>& outputs, const std::vector<int>& last_read,
             Group& g) {
  std::vector<int> made;
  for (const int k : g.ops) {
    const Op& op = graph.ops()[static_cast<std::size_t>(k)];
    auto read = [&](int v) {
      if (std::find(made.begin(), made.end(), v) == made.end() &&
          std::find(g.inputs.begin(), g.inputs.end(), v) == g.inputs.end()) {
        g.inputs.push_back(v);
      }
    };
    for (const Arg& a : op.args) {
      if (a.kind == Arg::Kind::kValue) {
        read(a.value);
      }
      for (const int v : a.values) {
        read(v);
      }
    }
    for (const auto& kw : op.kwargs) {
      if (kw.second.kind == Arg::Kind::kValue) {
        read(kw.second.value);
      }
      for (const int v : kw.second.values) {
        read(v);
      }
    }
    made.push_back(op.result);
  }
  const int last = g.ops.back();
  auto returned = [&](int v) {
    return std::find(outputs.begin(), outputs.end(), v) != outputs.end();
  };
  for (const int v : made) {
    if (returned(v) || last_read[static_cast<std::size_t>(v)] > last) {
      g.outputs.push_back(v);
    }
    if (returned(v)) {
      g.returned.push_back(v);
    }
  }
}

// The last op that reads each value (-1: none).
std::vector<int> last_reads(const Graph& graph) {
  std::vector<int> last(graph.values().size(), -1);
  for (std::size_t k = 0; k < graph.ops().size(); ++k) {
    const Op& op = graph.ops()[k];
    auto mark = [&](const Arg& a) {
      if (a.kind == Arg::Kind::kValue) {
        last[static_cast<std::size_t>(a.value)] = static_cast<int>(k);
      }
      for (const int v : a.values) {
        last[static_cast<std::size_t>(v)] = static_cast<int>(k);
      }
    };
    for (const Arg& a : op.args) {
      mark(a);
    }
    for (const auto& kw : op.kwargs) {
      mark(kw.second);
    }
  }
  return last;
}

// True when `op` is a reduction the open group can end in: of a value the group makes, over the
// group's whole domain.
bool ends_group(const Graph& graph, const Group& open, const Op& op) {
  std::string unused;
  if (open.ops.empty() || !fusable_reduction(graph, op, &unused)) {
    return false;
  }
  const Value& in = graph.value(op.args[0].value);
  const Op& first = graph.ops()[static_cast<std::size_t>(open.ops[0])];
  return in.source == Value::Source::kOp &&
         std::find(open.ops.begin(), open.ops.end(), in.op) != open.ops.end() &&
         same_domain(graph.value(first.result).info, in.info);
}

// True when `key` is a basic slice that cannot raise: a slice of Python ints or None (step not 0),
// None or Ellipsis, or a tuple of those.
bool plain_slice_key(const py::handle& key) {
  auto item = [](PyObject* k) {
    if (k == Py_None || k == Py_Ellipsis) {
      return true;
    }
    if (!PySlice_Check(k)) {
      return false;
    }
    auto* s = reinterpret_cast<PySliceObject*>(k);
    for (PyObject* part : {s->start, s->stop, s->step}) {
      if (part != Py_None && !PyLong_CheckExact(part)) {
        return false;
      }
    }
    return s->step == Py_None || PyObject_IsTrue(s->step) == 1;
  };
  if (!PyTuple_Check(key.ptr())) {
    return item(key.ptr());
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(key.ptr()); ++i) {
    if (!item(PyTuple_GET_ITEM(key.ptr(), i))) {
      return false;
    }
  }
  return true;
}

// True when `op` is a basic slice of a value the open group does not make: it may run before the
// group (it reads nothing the group makes and cannot raise; the group's members change nothing).
bool hoistable(const Graph& graph, const Group& open, const Op& op) {
  if (open.ops.empty() || !op.view || op.mutates || op.name != "getitem" || !op.kwargs.empty() ||
      op.args.size() != 2 || op.args[0].kind != Arg::Kind::kValue ||
      op.args[1].kind != Arg::Kind::kConst || !plain_slice_key(op.args[1].constant)) {
    return false;
  }
  const Value& base = graph.value(op.args[0].value);
  return base.source != Value::Source::kOp ||
         std::find(open.ops.begin(), open.ops.end(), base.op) == open.ops.end();
}

// True when `op` is an in-place ufunc operator (`t += y`) on a value `t` the open group makes (so
// no view of it exists and nothing outside the group has read it): a member computing t's new
// value into the kernel, which every later reader of `t` reads (the graph keeps t's id for the
// changed array). Its own result id is read by nobody.
bool in_place_member(const Graph& graph, const Group& open, const Op& op,
                     const std::vector<int>& outputs, const std::vector<int>& last_read,
                     const py::module_& numpy) {
  if (open.ops.empty() || !op.mutates || !op.kwargs.empty() || op.args.size() != 2 ||
      op.args[0].kind != Arg::Kind::kValue || ufunc_of(op, numpy).is_none()) {
    return false;
  }
  const Value& target = graph.value(op.args[0].value);
  const Op& first = graph.ops()[static_cast<std::size_t>(open.ops[0])];
  const ValueInfo& result = graph.value(op.result).info;
  return target.source == Value::Source::kOp &&
         std::find(open.ops.begin(), open.ops.end(), target.op) != open.ops.end() &&
         same_domain(graph.value(first.result).info, result) &&
         operand_reason(graph, op.args[1], result, numpy).empty() &&
         last_read[static_cast<std::size_t>(op.result)] < 0 &&
         std::find(outputs.begin(), outputs.end(), op.result) == outputs.end();
}

}  // namespace

std::string_view kind_name(Group::Kind kind) {
  switch (kind) {
    case Group::Kind::kFused:
      return "fused";
    case Group::Kind::kLibrary:
      return "library";
    case Group::Kind::kOpaque:
      break;
  }
  return "opaque";
}

std::string unfusable_reason(const Graph& graph, const Op& op, const py::module_& numpy) {
  if (op.mutates) {
    return "changes an array in place";
  }
  if (op.view) {
    return "a view";
  }
  if (!op.kwargs.empty()) {
    return "keyword arguments";
  }
  const ValueInfo& result = graph.value(op.result).info;
  if (result.scalar || result.ndim() == 0) {
    return "a scalar result";
  }
  if (op.name == "astype") {
    return cast_reason(graph, op);
  }
  if (op.name == "where") {
    return select_reason(graph, op, numpy);
  }
  const UfuncCall call = ufunc_call(graph, op, numpy);
  if (call.ufunc.is_none()) {
    return "not an elementwise ufunc";
  }
  if (!call.ufunc.attr("signature").is_none() || call.ufunc.attr("nout").cast<int>() != 1 ||
      call.ufunc.attr("nin").cast<std::size_t>() != call.args.size()) {
    return "a ufunc with another signature";
  }
  for (const Arg& a : call.args) {
    std::string why = operand_reason(graph, a, result, numpy);
    if (!why.empty()) {
      return why;
    }
  }
  return {};
}

std::vector<Group> partition(const Graph& graph, const std::vector<int>& outputs) {
  const py::module_ numpy = loaded_module("numpy");
  const std::vector<int> last = last_reads(graph);
  std::vector<Group> groups;
  Group open;
  open.kind = Group::Kind::kFused;
  auto close = [&] {
    if (!open.ops.empty()) {
      groups.push_back(open);
    }
    open = Group();
    open.kind = Group::Kind::kFused;
  };
  for (std::size_t k = 0; k < graph.ops().size(); ++k) {
    const Op& op = graph.ops()[k];
    if (ends_group(graph, open, op)) {
      open.ops.push_back(static_cast<int>(k));
      close();
      continue;
    }
    if (hoistable(graph, open, op)) {
      open.hoisted.push_back(static_cast<int>(k));
      continue;
    }
    if (in_place_member(graph, open, op, outputs, last, numpy)) {
      open.ops.push_back(static_cast<int>(k));
      continue;
    }
    const std::string why = unfusable_reason(graph, op, numpy);
    if (why.empty()) {
      const ValueInfo& result = graph.value(op.result).info;
      if (!open.ops.empty() &&
          !same_domain(graph.value(graph.ops()[static_cast<std::size_t>(open.ops[0])].result).info,
                       result)) {
        close();
      }
      open.ops.push_back(static_cast<int>(k));
      continue;
    }
    close();
    Group single;
    single.kind = is_library(op.name) ? Group::Kind::kLibrary : Group::Kind::kOpaque;
    single.why = single.kind == Group::Kind::kLibrary ? op.name : op.name + ": " + why;
    single.ops.push_back(static_cast<int>(k));
    groups.push_back(single);
  }
  close();
  for (Group& g : groups) {
    connect(graph, outputs, last, g);
    if (g.kind == Group::Kind::kFused && g.ops.size() == 1) {
      for (const int v : g.inputs) {
        const Value& in = graph.value(v);
        g.single_after_library = g.single_after_library ||
                                 (in.source == Value::Source::kOp &&
                                  is_library(graph.ops()[static_cast<std::size_t>(in.op)].name));
      }
    }
  }
  return groups;
}

}  // namespace sot::graph
