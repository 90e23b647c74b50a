#include "graph/lower/kernel_ir.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/loaded_module.hpp"
#include "graph/rules/ufuncs.hpp"

namespace py = pybind11;

namespace sot::graph::kir {

namespace {

std::vector<Dim> dims_of(const ValueInfo& info) {
  std::vector<Dim> dims;
  for (std::size_t d = 0; d < info.shape.size(); ++d) {
    Dim dim;
    dim.size = info.shape[d];
    dim.symbol = d < info.symbols.size() ? info.symbols[d] : -1;
    dims.push_back(dim);
  }
  return dims;
}

std::string dims_text(const std::vector<Dim>& dims) {
  std::string s = "[";
  for (std::size_t d = 0; d < dims.size(); ++d) {
    s += d > 0 ? ", " : "";
    s += dims[d].symbol >= 0 ? "s" + std::to_string(dims[d].symbol) : std::to_string(dims[d].size);
  }
  return s + "]";
}

// Builds a kernel's expressions from the group's ops, loading each input once.
class Lowering {
 public:
  Lowering(const Graph& graph, Kernel& k) : graph_(graph), k_(k) {}

  void add_op(int index, const py::module_& numpy) {
    const Op& op = graph_.ops()[static_cast<std::size_t>(index)];
    Expr e;
    std::string unused;
    if (const auto r = fusable_reduction(graph_, op, &unused)) {
      e.kind = Expr::Kind::kReduce;
      e.reduce = *r;
      e.fn = r->ufunc_name();
      e.ufunc = numpy.attr(e.fn.c_str());
      append(std::move(e), index, {op.args[0]});
    } else if (op.name == "astype") {
      e.kind = Expr::Kind::kCast;
      e.fn = "astype";
      append(std::move(e), index, {op.args[0]});
    } else if (op.name == "where") {
      e.kind = Expr::Kind::kSelect;
      e.fn = "where";
      e.ufunc = numpy.attr("where");
      append(std::move(e), index, op.args);
    } else {
      const UfuncCall call = ufunc_call(graph_, op, numpy);
      e.kind = Expr::Kind::kCall;
      e.ufunc = call.ufunc;
      e.fn = py::str(call.ufunc.attr("__name__")).cast<std::string>();
      append(std::move(e), index, call.args);
    }
  }

  int expr_of(int value) const { return expr_of_.at(value); }

 private:
  // Appends `e` as what op `index` computes: its result value and dtype, its operands from `args`
  // (graph values, loaded once, or constants).
  void append(Expr e, int index, const std::vector<Arg>& args) {
    const Op& op = graph_.ops()[static_cast<std::size_t>(index)];
    e.op = index;
    e.value = op.result;
    e.dtype = graph_.value(op.result).info.dtype;
    for (const Arg& a : args) {
      e.operands.push_back(a.kind == Arg::Kind::kValue ? operand(a.value) : constant(a.constant));
    }
    expr_of_[op.result] = static_cast<int>(k_.exprs.size());
    if (op.mutates) {
      // `t += y`: t's later readers (and its store) read the new value
      expr_of_[op.args[0].value] = expr_of_[op.result];
    }
    k_.exprs.push_back(std::move(e));
  }

  int operand(int value) {
    const auto found = expr_of_.find(value);
    if (found != expr_of_.end()) {
      return found->second;
    }
    const ValueInfo& info = graph_.value(value).info;
    Expr e;
    e.value = value;
    if (info.scalar || info.ndim() == 0) {
      e.kind = Expr::Kind::kScalar;
      e.scalar = static_cast<int>(k_.scalars.size());
      k_.scalars.push_back(Scalar{value, py::object()});
    } else {
      e.kind = Expr::Kind::kLoad;
      e.dtype = info.dtype;
      e.buffer = static_cast<int>(k_.buffers.size());
      k_.buffers.push_back(Buffer{value, info.dtype, dims_of(info), false});
    }
    e.dtype = info.dtype;
    expr_of_[value] = static_cast<int>(k_.exprs.size());
    k_.exprs.push_back(e);
    return expr_of_[value];
  }

  int constant(const py::object& c) {
    Expr e;
    e.kind = Expr::Kind::kScalar;
    e.scalar = static_cast<int>(k_.scalars.size());
    k_.scalars.push_back(Scalar{-1, c});
    k_.exprs.push_back(e);
    return static_cast<int>(k_.exprs.size()) - 1;
  }

  const Graph& graph_;
  Kernel& k_;
  std::map<int, int> expr_of_;
};

std::string expr_text(const Kernel& k, const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kLoad:
      return "load b" + std::to_string(e.buffer);
    case Expr::Kind::kScalar: {
      const Scalar& s = k.scalars[static_cast<std::size_t>(e.scalar)];
      return s.value >= 0 ? "scalar %" + std::to_string(s.value)
                          : "const " + py::repr(s.constant).cast<std::string>();
    }
    case Expr::Kind::kReduce:
      return e.reduce.text() + " of e" + std::to_string(e.operands[0]) + " (" + e.fn +
             ".reduce) : " + std::string(name(e.dtype));
    case Expr::Kind::kCall:
    case Expr::Kind::kCast:
    case Expr::Kind::kSelect:
      break;
  }
  std::string s = e.fn + "(";
  for (std::size_t i = 0; i < e.operands.size(); ++i) {
    s += (i > 0 ? ", e" : "e") + std::to_string(e.operands[i]);
  }
  return s + ") : " + std::string(name(e.dtype));
}

}  // namespace

Kernel lower(const Graph& graph, const Group& g, const std::string& name) {
  const py::module_ numpy = loaded_module("numpy");
  Kernel k;
  k.name = name;
  k.first_op = g.ops.front();
  k.last_op = g.ops.back();
  k.domain = dims_of(graph.value(graph.ops()[static_cast<std::size_t>(k.first_op)].result).info);
  Lowering lowering(graph, k);
  for (const int op : g.ops) {
    lowering.add_op(op, numpy);
  }
  for (const int v : g.outputs) {
    const ValueInfo& info = graph.value(v).info;
    Store st;
    st.expr = lowering.expr_of(v);
    st.buffer = static_cast<int>(k.buffers.size());
    Buffer out{v, info.dtype, dims_of(info), true};
    out.returned = std::find(g.returned.begin(), g.returned.end(), v) != g.returned.end();
    k.buffers.push_back(out);
    k.stores.push_back(st);
  }
  return k;
}

int Kernel::calls() const {
  return static_cast<int>(
      std::count_if(exprs.begin(), exprs.end(), [](const Expr& e) { return e.elementwise(); }));
}

int Kernel::reduction() const {
  for (std::size_t i = 0; i < exprs.size(); ++i) {
    if (exprs[i].kind == Expr::Kind::kReduce) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

bool Kernel::row_scalar(std::size_t b) const {
  const std::vector<Dim>& shape = buffers[b].shape;
  return !shape.empty() && !domain.empty() && shape.back() == Dim{1, -1} &&
         domain.back().symbol < 0 && domain.back().size != 1;
}

std::string Kernel::text() const {
  std::string s = "kernel " + name + " over " + dims_text(domain) + "\n";
  for (std::size_t b = 0; b < buffers.size(); ++b) {
    const Buffer& buf = buffers[b];
    s += std::string(buf.output ? "  out b" : "  in  b") + std::to_string(b) + ": " +
         std::string(graph::name(buf.dtype)) + dims_text(buf.shape) + "  (%" +
         std::to_string(buf.value) + ")\n";
  }
  for (std::size_t i = 0; i < exprs.size(); ++i) {
    s += "  e" + std::to_string(i) + " = " + expr_text(*this, exprs[i]) + "\n";
  }
  for (const Store& st : stores) {
    s += "  store b" + std::to_string(st.buffer) + " <- e" + std::to_string(st.expr) + "\n";
  }
  return s;
}

namespace {

Observer g_observer = nullptr;  // set and read with the GIL held

}  // namespace

void set_observer(Observer fn) {
  g_observer = fn;
}

Observer observer() {
  return g_observer;
}

}  // namespace sot::graph::kir

namespace sot::graph {

bool exact_double_float(PyObject* value) {
  const char* type = Py_TYPE(value)->tp_name;
  return PyFloat_Check(value) || std::strcmp(type, "numpy.float32") == 0 ||
         std::strcmp(type, "numpy.float16") == 0;
}

}  // namespace sot::graph
