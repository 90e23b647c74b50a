// The rules of np.array of a list or tuple of arrays and NumPy scalars the frame computed (one
// array of them stacked), np.indices of a static shape and np.nonzero (its items' length a count
// known only when the graph runs: the same shape symbol as a boolean mask's count of true items,
// array_indexing.cpp). Dtypes from the running NumPy (numpy_probe.cpp) where they are not plain.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "core/loaded_module.hpp"
#include "translator/numpy/numpy_call.hpp"

namespace py = pybind11;

namespace sot::translator {

using graph::DType;
using graph::Shape;
using graph::ValueInfo;

VarPtr OpcodeExecutor::NumpyCall::array() {
  const VarPtr object = get("object");
  const bool sequence = object && (object->kind() == Variable::Kind::kList ||
                                   object->kind() == Variable::Kind::kTuple);
  // (a list from outside arrives here as the guarded copy guarded_numbers made)
  const bool literal = sequence ||
                       (object && object->kind() == Variable::Kind::kConst &&
                        PyTuple_CheckExact(object->value().ptr())) ||
                       (object && object->kind() == Variable::Kind::kObject &&
                        PyList_CheckExact(object->value().ptr()));
  if (literal && !g.args.empty() && g.args[0].kind == graph::Arg::Kind::kConst) {
    return literal_array(g.args[0].constant);
  }
  if (!sequence || g.args.empty() ||
      (g.args[0].kind != graph::Arg::Kind::kList && g.args[0].kind != graph::Arg::Kind::kTuple)) {
    refuse("an object that is not a list or tuple of arrays and NumPy scalars");
  }
  // Items of one shape (else NumPy raises: an inhomogeneous shape); their sizes static.
  Shape item;
  for (std::size_t i = 0; i < object->items().size(); ++i) {
    const ValueInfo info = ex.static_info(ex.array_operand(object->items()[i]).id);
    if (info.is_tuple()) {
      refuse("an item that is a tuple");
    }
    if (i > 0 && info.shape != item) {
      refuse("items of different shapes (" + graph::shape_text(item) + " and " +
             graph::shape_text(info.shape) + ")");
    }
    item = info.shape;
  }
  dtype_param("dtype");  // (a dtype it knows; its effect comes from NumPy)
  Shape shape{static_cast<std::int64_t>(object->items().size())};
  shape.insert(shape.end(), item.begin(), item.end());
  // (The items' dtypes promoted, or the dtype given.)
  return result(probed(probe(), shape));
}

// np.array of a list or tuple of Python numbers (nested) the frame built from constants: the op
// makes a new array of them each call (the result may be changed), its dtype and shape NumPy's
// for them now (the same each call: the items are the code's constants).
VarPtr OpcodeExecutor::NumpyCall::literal_array(const py::object& items) {
  py::dict kw;
  if (const VarPtr d = get("dtype")) {
    dtype_param("dtype");
    kw["dtype"] = value_of("dtype");
  }
  std::string error;
  const py::object made = quiet_call(np, np.attr("array"), py::make_tuple(items), kw, &error);
  if (!made) {
    refuse(error);
  }
  const auto t = graph::dtype_from_name(str_of(made.attr("dtype").attr("name")));
  if (!t || str_of(made.attr("dtype").attr("kind")) == "O") {
    refuse("items NumPy makes an array of " + str_of(py::repr(made.attr("dtype"))) + " of");
  }
  Shape shape;
  for (const py::handle d : made.attr("shape")) {
    shape.push_back(d.cast<std::int64_t>());
  }
  return result(array_of(*t, shape));
}

// np.asarray of an array the frame has (no order): that very array, as NumPy returns it, where a
// dtype given is its own (not a NumPy scalar: that gives a 0-d array; not where the graph has
// device arrays: NumPy would copy them to the host, or refuse); of a list or tuple of numbers the
// frame built, or of its arrays and NumPy scalars: as np.array.
VarPtr OpcodeExecutor::NumpyCall::asarray() {
  VarPtr a = get("a");
  if (!value_of("order").is_none()) {
    refuse("order=");
  }
  if (a && ex.is_array_like(a)) {
    const ValueInfo info = array_param("a");
    const bool device = std::any_of(st.meta.begin(), st.meta.end(),
                                    [](const ArrayState::InputMeta& m) { return m.device; });
    if (info.scalar || device || info.is_tuple()) {
      refuse("a NumPy scalar, or device arrays in the graph");
    }
    // With a dtype: the array itself where it has that dtype, else a new array of it.
    const std::optional<DType> t = dtype_param("dtype");
    if (!t || *t == info.dtype) {
      return a;
    }
    ValueInfo made = info;
    made.dtype = *t;
    return result(made);
  }
  if (!value_of("dtype").is_none()) {
    refuse("dtype= of a list or tuple");
  }
  // A list or tuple of the frame's arrays and NumPy scalars: a new array of them, as np.array.
  if (a && (a->kind() == Variable::Kind::kList || a->kind() == Variable::Kind::kTuple) &&
      !g.args.empty() &&
      (g.args[0].kind == graph::Arg::Kind::kList || g.args[0].kind == graph::Arg::Kind::kTuple)) {
    return ex.numpy_function("array", Variable::constant(np.attr("array")), {a}, {}, nullptr);
  }
  const bool literal =
      a && (a->kind() == Variable::Kind::kList || a->kind() == Variable::Kind::kTuple ||
            (a->kind() == Variable::Kind::kConst && PyTuple_CheckExact(a->value().ptr())) ||
            (a->kind() == Variable::Kind::kObject && PyList_CheckExact(a->value().ptr())));
  if (!literal || g.args.empty() || g.args[0].kind != graph::Arg::Kind::kConst) {
    refuse("an object that is not an array or a list of numbers (" +
           (a ? a->describe() : std::string("none")) + ")");
  }
  return literal_array(g.args[0].constant);
}

VarPtr OpcodeExecutor::NumpyCall::indices() {
  const py::object dims = value_of("dimensions");
  const auto sizes = ints_of(dims);
  if (!sizes || !(PyTuple_CheckExact(dims.ptr()) || PyList_CheckExact(dims.ptr()))) {
    refuse("dimensions " + str_of(py::repr(dims)) + " that are not a tuple or list of ints");
  }
  if (bool_param("sparse")) {
    refuse("sparse=True (a tuple)");
  }
  const auto t = get("dtype") ? dtype_param("dtype")
                              : dtype_of_spec(np, loaded_module("builtins").attr("int"));
  if (!t) {
    refuse("the dtype");
  }
  Shape shape{static_cast<std::int64_t>(sizes->size())};
  for (const int d : *sizes) {
    if (d < 0) {
      refuse("negative dimensions are not allowed");
    }
    shape.push_back(d);
  }
  return result(array_of(*t, shape));
}

VarPtr OpcodeExecutor::NumpyCall::nonzero() {
  return nonzero_of("a");
}

// np.flatnonzero(a): NumPy's np.nonzero(np.ravel(a))[0], made of those two ops.
VarPtr OpcodeExecutor::NumpyCall::flatnonzero() {
  array_param("a");
  const VarPtr flat =
      ex.numpy_function("ravel", Variable::constant(np.attr("ravel")), {get("a")}, {}, nullptr);
  const VarPtr parts =
      ex.numpy_function("nonzero", Variable::constant(np.attr("nonzero")), {flat}, {}, nullptr);
  return parts->items()[0];
}

VarPtr OpcodeExecutor::NumpyCall::nonzero_of(const char* p) {
  const VarPtr a = get(p);
  const ValueInfo in = array_param(p);
  if (in.scalar || in.ndim() == 0) {
    refuse("a 0-d array or NumPy scalar (NumPy 2 raises, 1.x warns)");
  }
  // One index array per dimension, each as long as a's count of nonzero items: for a boolean
  // array, the count its use as a mask has.
  std::int64_t size = 1;
  for (const auto d : in.shape) {
    size *= d;
  }
  const int count = st.count_symbol(ex.array_operand(a).id);
  const std::vector<Shape> shapes(in.shape.size(), Shape{size});
  return results(probe(), shapes, std::vector<int>(in.shape.size(), count));
}

}  // namespace sot::translator
