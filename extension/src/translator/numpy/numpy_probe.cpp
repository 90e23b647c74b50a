// What a captured call makes, asked of the running NumPy: the call repeated on small samples of
// its arrays (the same dtypes, kinds and dimensions, sizes cut down, every element one), so that
// result dtypes (np.linalg's float32 in, float32 out; cov's float64; a ufunc method's casting)
// and whether a result is a NumPy scalar come from NumPy itself, for every NumPy version; the
// shapes come from the rules (graph/rules/order_rules.hpp, graph/rules/linalg_rules.hpp). A call
// that raises on its samples is refused: it raises for real. Also the calls of several results, and
// the refusal of a call that may raise on its data while side effects wait to be replayed.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "bytecode/opcode_table.hpp"
#include "core/loaded_module.hpp"
#include "translator/numpy/numpy_call.hpp"

namespace py = pybind11;

namespace sot::translator {

using graph::Arg;
using graph::ValueInfo;

namespace {

// A sample of value `info`: a NumPy scalar, or an array of ones of its dtype whose sizes are cut
// to at most `cap` (0 stays 0).
py::object sample_of(const py::object& np, const ValueInfo& info, std::int64_t cap) {
  const std::string dtype(graph::name(info.dtype));
  if (info.scalar) {
    return np.attr("dtype")(dtype).attr("type")(1);
  }
  py::tuple shape(info.shape.size());
  for (std::size_t d = 0; d < info.shape.size(); ++d) {
    shape[d] = py::int_(std::min(info.shape[d], cap));
  }
  return np.attr("ones")(shape, dtype);
}

}  // namespace

py::object quiet_call(const py::object& np, const py::object& fn, const py::tuple& args,
                      const py::dict& kwargs, std::string* error) {
  const py::object errstate = np.attr("errstate")(**py::dict(py::arg("all") = "ignore"));
  const py::object caught = loaded_module("warnings").attr("catch_warnings")();
  errstate.attr("__enter__")();
  caught.attr("__enter__")();
  loaded_module("warnings").attr("simplefilter")("ignore");
  PyObject* r = PyObject_Call(fn.ptr(), args.ptr(), kwargs.ptr());
  py::object result;
  if (r != nullptr) {
    result = py::reinterpret_steal<py::object>(r);
  } else {
    PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    const auto t = py::reinterpret_steal<py::object>(type);
    const auto v = py::reinterpret_steal<py::object>(value);
    Py_XDECREF(tb);
    *error = (t ? str_of(t.attr("__name__")) : std::string("an error")) + ": " +
             (v ? str_of(v) : std::string());
  }
  caught.attr("__exit__")(py::none(), py::none(), py::none());
  errstate.attr("__exit__")(py::none(), py::none(), py::none());
  return result;
}

py::object OpcodeExecutor::NumpyCall::probe(std::int64_t cap) const {
  auto value = [&](const Arg& a) -> py::object {
    switch (a.kind) {
      case Arg::Kind::kConst:
        return a.constant;
      case Arg::Kind::kValue:
        return sample_of(np, ex.array_info(a.value), cap);
      case Arg::Kind::kList:
      case Arg::Kind::kTuple: {
        py::list l;
        for (const int v : a.values) {
          l.append(sample_of(np, ex.array_info(v), cap));
        }
        return a.kind == Arg::Kind::kTuple ? py::object(py::tuple(l)) : py::object(l);
      }
    }
    return py::none();
  };
  py::tuple positional(g.args.size());
  for (std::size_t i = 0; i < g.args.size(); ++i) {
    positional[i] = value(g.args[i]);
  }
  py::dict keywords;
  for (const auto& [k, a] : g.kwargs) {
    keywords[py::str(k)] = value(a);
  }
  std::string error;
  py::object r = quiet_call(np, g.fn, positional, keywords, &error);
  if (!r) {
    refuse("it raises on its dtypes (" + error + ")");
  }
  return r;
}

ValueInfo OpcodeExecutor::NumpyCall::probed(const py::handle& r, graph::Shape shape) const {
  ValueInfo info;
  const bool array = reinterpret_cast<PyObject*>(Py_TYPE(r.ptr())) == np.attr("ndarray").ptr();
  const bool scalar = !array && py::isinstance(r, np.attr("generic"));
  const auto dtype =
      array || scalar ? graph::dtype_from_name(str_of(r.attr("dtype").attr("name"))) : std::nullopt;
  if (!dtype || (scalar && !shape.empty()) || (array && py::len(r.attr("shape")) != shape.size())) {
    refuse("a result it does not model (" + str_of(py::repr(py::type::of(r))) + ")");
  }
  info.dtype = *dtype;
  info.scalar = scalar;
  info.shape = std::move(shape);
  return info;
}

void OpcodeExecutor::NumpyCall::raises_on_data(const std::string& error) const {
  // The graph runs where the frame breaks or returns, before the side effects recorded so far are
  // replayed: an error there would lose them.
  if (ex.effects().pending()) {
    refuse("it may raise " + error +
           " on its data, after side effects that are replayed once the graph has run");
  }
}

bool OpcodeExecutor::NumpyCall::unpacked_next(std::size_t n) const {
  const auto& code = ex.code_.instructions();
  return ex.next_ < code.size() &&
         std::string(bytecode::opcode_info(code[ex.next_].opcode).name) == "UNPACK_SEQUENCE" &&
         code[ex.next_].arg == static_cast<int>(n);
}

VarPtr OpcodeExecutor::NumpyCall::results(const py::object& sample,
                                          const std::vector<graph::Shape>& shapes,
                                          const std::vector<int>& counted) {
  if (!PyTuple_Check(sample.ptr()) ||
      PyTuple_GET_SIZE(sample.ptr()) != static_cast<Py_ssize_t>(shapes.size())) {
    refuse("a result it does not model (" + str_of(py::repr(py::type::of(sample))) + ")");
  }
  // NumPy 2's named tuples (QRResult, ...) are not modelled: only one unpacked at once
  // (`q, r = np.linalg.qr(a)`) is taken as its items.
  if (!PyTuple_CheckExact(sample.ptr()) && !unpacked_next(shapes.size())) {
    refuse("its result, a " + str_of(py::type::of(sample).attr("__name__")) +
           ", used other than unpacked");
  }
  std::vector<ValueInfo> infos;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    infos.push_back(probed(sample[py::int_(i)], shapes[i]));
  }
  ValueInfo whole;
  whole.parts = static_cast<int>(shapes.size());
  const VarPtr tuple = ex.add_array_op(std::move(g), whole);
  for (std::size_t i = 0; i < counted.size() && i < infos.size(); ++i) {
    if (counted[i] == -1 || infos[i].shape.empty()) {
      continue;
    }
    // A first dimension whose size is known only when the graph runs: a shape symbol nothing
    // specializes (the tuple's own, or the count of a mask), its size here at least 2.
    ValueInfo& info = infos[i];
    info.symbols.assign(info.shape.size(), -1);
    info.symbols[0] = counted[i] == kOwnCount ? st.count_symbol(tuple->graph_id()) : counted[i];
    info.shape[0] = std::max<std::int64_t>(info.shape[0], 2);
  }
  std::vector<VarPtr> items;
  for (std::size_t i = 0; i < infos.size(); ++i) {
    graph::Op item;
    item.name = "getitem";
    item.fn = loaded_module("operator").attr("getitem");
    item.args = {Arg::of(tuple->graph_id()), Arg::constant_of(py::int_(i))};
    item.view = true;  // the tuple's own item
    items.push_back(ex.add_array_op(std::move(item), infos[i]));
  }
  return Variable::tuple(std::move(items));
}

}  // namespace sot::translator
