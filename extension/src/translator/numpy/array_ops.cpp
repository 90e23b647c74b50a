// NumPy in the translator: arrays and NumPy scalars as graph values, and the operators, ufuncs,
// reductions, shape operations, indexing and array methods captured into the frame's graph. Every
// op calls what the user's code called (the same function or operator with the same arguments),
// so the reference backend is bit-exact; the rules of graph/rules/rules.hpp give each result its
// dtype and shape without running anything. What is not modelled breaks the graph with a NumPy
// reason.
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/array_fields.hpp"
#include "core/device_arrays.hpp"
#include "core/loaded_module.hpp"
#include "translator/guards/guards.hpp"
#include "translator/numpy/array_state.hpp"
#include "translator/numpy/numpy_errstate.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

using graph::Arg;
using graph::DType;
using graph::Operand;
using graph::UfuncKind;
using graph::ValueInfo;

std::optional<ArrayState::LoopIndex> ArrayState::int_range(int id) const {
  if (const auto it = loop_indices.find(id); it != loop_indices.end()) {
    return it->second;
  }
  if (const auto it = int_ranges.find(id); it != int_ranges.end()) {
    return it->second;
  }
  return std::nullopt;
}

void ArrayState::forget_from(std::size_t first) {
  loop_indices.erase(loop_indices.lower_bound(static_cast<int>(first)), loop_indices.end());
  carried_from.erase(carried_from.lower_bound(static_cast<int>(first)), carried_from.end());
  graph_lists.erase(graph_lists.lower_bound(static_cast<int>(first)), graph_lists.end());
  int_ranges.erase(int_ranges.lower_bound(static_cast<int>(first)), int_ranges.end());
  for (auto it = slice_symbols.begin(); it != slice_symbols.end();) {
    if (it->second.max_id >= static_cast<int>(first)) {
      it = slice_symbols.erase(it);  // (its ids may be other values' next)
    } else {
      ++it;
    }
  }
}

int ArrayState::slice_symbol(const std::string& form, int max_id) {
  const auto it = slice_symbols.find(form);
  if (it != slice_symbols.end()) {
    return it->second.symbol;
  }
  const int sym = static_cast<int>(specialized.size());
  specialized.push_back(false);
  runtime.push_back(sym);
  slice_symbols[form] = SliceSymbol{sym, max_id};
  return sym;
}

std::vector<int> ArrayState::cut_back(const graph::Graph& before, const Mark& m) {
  const std::size_t nvalues = before.values().size();
  std::vector<int> moved(nvalues, -1);
  for (std::size_t v = 0; v < m.values && v < nvalues; ++v) {
    moved[v] = static_cast<int>(v);
  }
  graph.truncate(m.values, m.ops, m.inputs);
  forget_from(m.values);  // (the body's ids are made again for other values)
  for (std::size_t v = m.values; v < nvalues; ++v) {
    const graph::Value& value = before.value(static_cast<int>(v));
    if (value.source == graph::Value::Source::kInput && value.input >= 0) {
      moved[v] = graph.add_input(value.info, value.name);
    }
  }
  for (auto& entry : ids) {
    if (static_cast<std::size_t>(entry.second) >= m.values) {
      entry.second = moved[static_cast<std::size_t>(entry.second)];
    }
  }
  return moved;
}

void ArrayState::rollback(const Mark& m) {
  graph.truncate(m.values, m.ops, m.inputs);
  inputs.resize(std::min(inputs.size(), m.inputs));
  meta.resize(std::min(meta.size(), m.inputs));
  for (auto it = ids.begin(); it != ids.end();) {
    if (static_cast<std::size_t>(it->second) >= m.values) {
      it = ids.erase(it);
    } else {
      ++it;
    }
  }
  forget_from(m.values);
  for (auto it = mask_symbol.begin(); it != mask_symbol.end();) {
    if (static_cast<std::size_t>(it->first) >= m.values) {
      it = mask_symbol.erase(it);  // (its id may be another value's next)
    } else {
      ++it;
    }
  }
}

int ArrayState::add_input(const VarPtr& v, graph::ValueInfo info, const std::string& path,
                          InputMeta m) {
  const int id = graph.add_input(std::move(info), path);
  meta.push_back(std::move(m));
  inputs.push_back(v);
  ids[v.get()] = id;
  return id;
}

int ArrayState::count_symbol(int mask) {
  const auto it = mask_symbol.find(mask);
  if (it != mask_symbol.end()) {
    return it->second;
  }
  const int sym = static_cast<int>(specialized.size());
  specialized.push_back(false);
  runtime.push_back(sym);
  mask_symbol[mask] = sym;
  return sym;
}

bool ArrayState::has_runtime(const ValueInfo& info) const {
  return std::any_of(info.symbols.begin(), info.symbols.end(), [&](int s) {
    return std::find(runtime.begin(), runtime.end(), s) != runtime.end();
  });
}

void ArrayState::specialize(const ValueInfo& info) {
  for (const int sym : info.symbols) {
    if (sym >= 0 && static_cast<std::size_t>(sym) < specialized.size()) {
      specialized[static_cast<std::size_t>(sym)] = true;
    }
  }
}

ValueInfo ArrayState::current(ValueInfo info) const {
  bool any = false;
  for (int& sym : info.symbols) {
    if (sym >= 0 && static_cast<std::size_t>(sym) < specialized.size() &&
        specialized[static_cast<std::size_t>(sym)]) {
      sym = -1;
    }
    any = any || sym >= 0;
  }
  if (!any) {
    info.symbols.clear();
  }
  return info;
}

std::vector<int> ArrayState::shape_symbols(const std::string& path, const graph::Shape& shape) {
  // Dimensions that changed since an earlier translation of this code are dynamic (sizes >= 2).
  const py::str seen_key("shape " + path);
  const py::str dynamic_key("dynamic " + path);
  std::vector<bool> changed(shape.size(), false);
  if (history.contains(dynamic_key)) {
    for (const py::handle d : history[dynamic_key]) {
      const auto k = d.cast<std::size_t>();
      if (k < changed.size()) {
        changed[k] = true;
      }
    }
  }
  if (dynamic && history.contains(seen_key)) {
    const auto before = history[seen_key].cast<std::vector<std::int64_t>>();
    if (before.size() == shape.size()) {
      for (std::size_t d = 0; d < before.size(); ++d) {
        changed[d] = changed[d] || before[d] != shape[d];
      }
    }
  }
  py::list seen_changed;
  std::vector<int> symbols;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    int sym = -1;
    if (changed[d]) {
      seen_changed.append(d);
      if (dynamic && shape[d] >= 2) {
        const auto it = symbol_of_size.find(shape[d]);
        if (it != symbol_of_size.end()) {
          sym = it->second;
        } else {
          sym = static_cast<int>(specialized.size());
          specialized.push_back(false);
          symbol_of_size[shape[d]] = sym;
        }
      }
    }
    symbols.push_back(sym);
  }
  history[seen_key] = py::tuple(py::cast(shape));
  history[dynamic_key] = py::tuple(seen_changed);
  return symbols;
}

void add_array_guards(const ArrayState& arrays, GuardSet* guards) {
  for (std::size_t k = 0; k < arrays.inputs.size() && k < arrays.meta.size(); ++k) {
    const ArrayState::InputMeta& m = arrays.meta[k];
    if (!m.array) {
      continue;
    }
    std::vector<Py_ssize_t> dims;
    for (std::size_t d = 0; d < m.shape.size(); ++d) {
      const int sym = d < m.symbols.size() ? m.symbols[d] : -1;
      if (sym >= 0 && !arrays.specialized[static_cast<std::size_t>(sym)]) {
        dims.push_back(
            capture::GuardCheck::symbol(guards->tree()->symbol_id("s" + std::to_string(sym))));
      } else {
        dims.push_back(static_cast<Py_ssize_t>(m.shape[d]));
      }
    }
    guards->array(arrays.inputs[k], m.format, dims, m.device, m.written && !m.device);
  }
}

py::object numpy_module() {
  PyObject* np = PyDict_GetItemString(PyImport_GetModuleDict(), "numpy");  // borrowed
  return np != nullptr ? py::reinterpret_borrow<py::object>(np) : py::none();
}

std::string str_of(const py::handle& o) {
  return py::str(o).cast<std::string>();
}

ArrayState& OpcodeExecutor::arrays() {
  if (!shared_->arrays) {
    auto a = std::make_shared<ArrayState>();
    a->numpy = numpy_module();
    if (!a->numpy.is_none()) {
      // NEP 50 in NumPy 2, or NumPy 1.24's experimental "weak" state; value-based casting
      // otherwise.
      const bool numpy1 = str_of(a->numpy.attr("__version__")).rfind("1.", 0) == 0;
      const bool weak_state = py::hasattr(a->numpy, "_get_promotion_state") &&
                              str_of(a->numpy.attr("_get_promotion_state")()) == "weak";
      if (!numpy1 || weak_state) {
        a->promotion = graph::ScalarPromotion::kWeak;
      }
      a->numpy1 = numpy1;
      const py::object probe = numpy_errors_raise_probe();
      const int raising = probe().cast<int>();
      a->errors_raise = (raising & kErrstateRaises) != 0;
      a->warnings_raise = (raising & kWarningsRaise) != 0;
      guards_->call_equals(probe, "floating-point problems raise (np.seterr 2, warnings filters 1)",
                           py::int_(raising));
    }
    a->history = shared_->shape_history;
    a->dynamic = shared_->dynamic_shapes;
    shared_->arrays = std::move(a);
  }
  return *shared_->arrays;
}

ValueInfo OpcodeExecutor::array_info(int id) {
  ArrayState& a = arrays();
  return a.current(a.graph.value(id).info);
}

ValueInfo OpcodeExecutor::static_info(int id) {
  ArrayState& a = arrays();
  if (a.has_runtime(a.graph.value(id).info)) {
    graph_break(
        "numpy: a size known only when the graph runs (the count of a boolean mask) is needed "
        "here");
  }
  a.specialize(a.current(a.graph.value(id).info));
  return array_info(id);
}

std::optional<ValueInfo> OpcodeExecutor::retry_static(
    const std::vector<int>& ids, const std::function<std::optional<ValueInfo>()>& rule) {
  auto info = rule();
  if (info) {
    return info;
  }
  bool symbolic = false;
  for (const int id : ids) {
    if (id >= 0 && !array_info(id).symbols.empty()) {
      static_info(id);
      symbolic = true;
    }
  }
  return symbolic ? rule() : info;
}

bool OpcodeExecutor::is_array_like(const VarPtr& v) {
  if (v->kind() == Variable::Kind::kArray) {
    return !shared_->arrays || !shared_->arrays->is_opaque(v->graph_id());
  }
  if (v->kind() != Variable::Kind::kObject || !v->tracker().is_input()) {
    return false;
  }
  PyObject* o = v->value().ptr();
  // (Every value from outside passes here on each operator, attribute and subscript: NumPy's types
  // are told apart by name first, before any lookup.)
  if (std::strncmp(Py_TYPE(o)->tp_name, "numpy.", 6) != 0) {
    // The caller's device arrays, where the graph runs on the device.
    return shared_->backend == "cuda" && core::may_be_device_array(o);
  }
  const py::object np = numpy_module();
  if (np.is_none()) {
    return false;
  }
  if (reinterpret_cast<PyObject*>(Py_TYPE(o)) == np.attr("ndarray").ptr()) {
    return true;
  }
  // A NumPy scalar of one of the graph's dtypes (exactly its type).
  const int generic = PyObject_IsInstance(o, np.attr("generic").ptr());
  if (generic != 1) {
    PyErr_Clear();
    return false;
  }
  const py::object dt = py::reinterpret_borrow<py::object>(o).attr("dtype");
  return dt.attr("type").ptr() == reinterpret_cast<PyObject*>(Py_TYPE(o)) &&
         graph::dtype_from_name(str_of(dt.attr("name"))).has_value() &&
         dt.attr("isnative").cast<bool>();
}

// NumPy computes `array ** scalar` for some exponents with another ufunc (square, sqrt, reciprocal,
// ...), whose dtype can differ from power's (a bool array ** 2 is int8), and which exponents take
// that path differs between NumPy versions (1.x: 2.0 too). So the running NumPy is asked, on a
// one-item value of the same dtype and kind (array or NumPy scalar) raised to the same exponent.
void OpcodeExecutor::power_dtype_from_numpy(const ArrayOperand& x, const ArrayOperand& y,
                                            ValueInfo* info) {
  const ValueInfo base = array_info(x.id);
  if (y.kind != ArrayOperand::Kind::kPython) {
    if (graph::kind(base.dtype) == 'b' && y.kind == ArrayOperand::Kind::kValue &&
        array_info(y.id).scalar) {
      graph_break("a bool array to the power of a NumPy scalar (its dtype depends on the value)");
    }
    return;
  }
  const py::object np = arrays().numpy;
  py::object sample = np.attr("ones")(base.scalar ? py::tuple() : py::make_tuple(1),
                                      py::arg("dtype") = std::string(graph::name(base.dtype)));
  if (base.scalar) {
    sample = sample[py::tuple()];  // the NumPy scalar
  }
  const py::object result =
      py::reinterpret_steal<py::object>(PyNumber_Power(sample.ptr(), y.constant.ptr(), Py_None));
  if (!result) {
    PyErr_Clear();  // (an integer to a negative power: the break below says so)
    return;
  }
  const auto dtype = graph::dtype_from_name(str_of(result.attr("dtype").attr("name")));
  if (dtype) {
    info->dtype = *dtype;
  }
}

OpcodeExecutor::ArrayOperand OpcodeExecutor::array_operand(const VarPtr& v) {
  ArrayOperand out;
  // (a loop variable is a kArray but no array operand, only an index: it is not array-like)
  if (v->kind() == Variable::Kind::kArray && is_array_like(v)) {
    out.kind = ArrayOperand::Kind::kValue;
    out.id = v->graph_id();
    return out;
  }
  if (v->kind() == Variable::Kind::kConst) {
    graph::PyScalar s;
    if (graph::python_scalar(v->value().ptr(), &s)) {
      guards_->value(v);
      out.kind = ArrayOperand::Kind::kPython;
      out.scalar = s;
      out.constant = v->value();
    }
    return out;
  }
  if (!is_array_like(v)) {
    return out;
  }
  ArrayState& a = arrays();
  if (const auto it = a.ids.find(v.get()); it != a.ids.end()) {
    out.kind = ArrayOperand::Kind::kValue;
    out.id = it->second;
    return out;
  }
  read_input(v);
  PyObject* o = v->value().ptr();
  const py::object obj = v->value();
  // A device array (is_array_like) is described by its protocol (core/device_arrays.hpp).
  const bool device = std::strncmp(Py_TYPE(o)->tp_name, "numpy.", 6) != 0;
  core::DeviceArrayView view;
  std::string refused;
  if (device && !core::read_device_array(o, &view, &refused)) {
    graph_break(refused);
  }
  const py::object np_dtype =
      device ? a.numpy.attr("dtype")(view.typestr) : py::object(obj.attr("dtype"));
  ValueInfo info;
  const auto dtype = graph::dtype_from_name(str_of(np_dtype.attr("name")));
  if (!dtype || !np_dtype.attr("isnative").cast<bool>()) {
    // Strings, objects, datetimes, structured or non-native byte order: opaque to the graph rules,
    // so no operation on such a value is captured (every caller needs a modelled operand).
    graph_break("a NumPy value of dtype " + str_of(py::repr(np_dtype)) +
                " (not modelled by the graph rules)");
  }
  info.dtype = *dtype;
  const bool array =
      device || reinterpret_cast<PyObject*>(Py_TYPE(o)) == a.numpy.attr("ndarray").ptr();
  info.scalar = !array;
  guards_->type(v);
  ArrayState::InputMeta meta;
  meta.array = array;
  meta.device = device;
  const std::string path = tracker_path(v->tracker(), py::tuple());
  if (array) {
    if (device) {
      info.shape = view.shape;
    } else {
      for (const py::handle d : obj.attr("shape")) {
        info.shape.push_back(d.cast<std::int64_t>());
      }
    }
    meta.format = device ? view.typestr
                         : str_of(loaded_module("builtins").attr("memoryview")(obj).attr("format"));
    meta.shape = info.shape;
    meta.symbols = a.shape_symbols(path, info.shape);
    if (std::any_of(meta.symbols.begin(), meta.symbols.end(), [](int k) { return k >= 0; })) {
      info.symbols = meta.symbols;
    }
  }
  out.kind = ArrayOperand::Kind::kValue;
  out.id = a.add_input(v, info, path, std::move(meta));
  return out;
}

VarPtr OpcodeExecutor::add_array_op(graph::Op op, ValueInfo info) {
  if (arrays().errors_raise) {
    // An op that raises where the graph runs would lose or reorder what the frame did around it.
    graph_break("NumPy's error state raises (np.seterr): array operations run as is");
  }
  if (arrays().warnings_raise && effects().pending()) {
    // (a warning made an error raises where the graph runs: not after what waits to be replayed)
    graph_break(
        "a warnings filter makes NumPy's warnings errors (-W error) and side effects wait to be "
        "replayed after the graph");
  }
  if (under_handler(code_.instructions()[pc_]) || shared_->calls_under_handler > 0) {
    // The graph runs later, outside the block: an error of this operation (a read-only array
    // written, a floating-point error under np.seterr(...='raise')) would escape its handler.
    graph_break(
        "a NumPy operation inside a try or with block (its errors must reach the block's "
        "handler)");
  }
  if (op.mutates) {
    written_input(op);
  }
  op.line = code_.instructions()[pc_].position.line;
  std::string text = info.text();
  const int id = arrays().graph.add_op(std::move(op), std::move(info));
  return Variable::array(id, std::move(text));
}

void OpcodeExecutor::written_input(const graph::Op& op) {
  // The array an op changes in place, back through the views and in-place changes that made it:
  // an input from outside is guarded writeable from now on; one that is read-only now raises
  // here in plain Python (ValueError), before whatever follows, and so breaks the graph here.
  ArrayState& a = arrays();
  if (op.args.empty() || op.args[0].kind != graph::Arg::Kind::kValue) {
    return;
  }
  int v = op.args[0].value;
  for (;;) {
    const graph::Value& value = a.graph.value(v);
    const auto carried = a.carried_from.find(v);
    if (carried != a.carried_from.end()) {
      v = carried->second;  // (a loop body's carried local: on its first step, the value before)
      continue;
    }
    if (value.source != graph::Value::Source::kOp) {
      break;
    }
    const graph::Op& maker = a.graph.ops()[static_cast<std::size_t>(value.op)];
    if (!(maker.view || maker.mutates) || maker.args.empty() ||
        maker.args[0].kind != graph::Arg::Kind::kValue) {
      return;  // (an array made in the graph)
    }
    v = maker.args[0].value;
  }
  const graph::Value& root = a.graph.value(v);
  if (root.source != graph::Value::Source::kInput || root.input < 0 ||
      static_cast<std::size_t>(root.input) >= a.meta.size() || !a.meta[root.input].array ||
      a.meta[root.input].device) {
    return;
  }
  PyObject* o = a.inputs[static_cast<std::size_t>(root.input)]->value().ptr();
  if (Py_TYPE(o) == reinterpret_cast<PyTypeObject*>(a.numpy.attr("ndarray").ptr()) &&
      (array_fields(o)->flags & kArrayWriteable) == 0) {
    graph_break("a write into a read-only array (NumPy raises here)");
  }
  a.meta[static_cast<std::size_t>(root.input)].written = true;
}

py::object OpcodeExecutor::static_arg(const VarPtr& v) {
  if (v->kind() == Variable::Kind::kObject) {
    guards_->identity(v);
    return v->value();
  }
  return constant_value(v);
}

}  // namespace sot::translator
