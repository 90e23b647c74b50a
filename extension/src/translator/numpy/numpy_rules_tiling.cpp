// The rules of np.repeat, np.tile and np.diff (graph ops that run NumPy's function; shapes from
// graph/rules/library_rules.hpp, dtypes the input's or the running NumPy's), np.average (a mean
// of its axes, weighted or not; dtype from the running NumPy), np.append, np.pad, np.kron and
// np.gradient.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/loaded_module.hpp"
#include "graph/rules/library_rules.hpp"
#include "translator/numpy/numpy_call.hpp"

namespace py = pybind11;

namespace sot::translator {

using graph::Shape;
using graph::ValueInfo;

namespace {

// The shape of `info` as NumPy's functions take it (a NumPy scalar as a 0-d array).
Shape shape_of(const ValueInfo& info) {
  return info.scalar ? Shape{} : info.shape;
}

}  // namespace

VarPtr OpcodeExecutor::NumpyCall::repeat() {
  const ValueInfo a = array_param("a");
  if (!PyLong_CheckExact(value_of("repeats").ptr())) {
    refuse("repeats that are not one int (" + str_of(py::repr(value_of("repeats"))) + ")");
  }
  const std::int64_t n = int_param("repeats", 0);
  const bool flat = value_of("axis").is_none();
  const auto axis = static_cast<int>(int_param("axis", 0));
  const auto shape = graph::repeat_shape(shape_of(a), n, axis, flat, &why);
  if (!shape) {
    refuse(why);
  }
  return result(array_of(a.dtype, *shape));
}

VarPtr OpcodeExecutor::NumpyCall::tile() {
  const ValueInfo a = array_param("A");
  const py::object reps = value_of("reps");
  const auto given = ints_of(reps);
  if (!given) {
    refuse("reps " + str_of(py::repr(reps)) + " that are not an int or a tuple or list of ints");
  }
  std::vector<std::int64_t> r(given->begin(), given->end());
  for (const std::int64_t k : r) {
    if (k < 0) {
      refuse("negative dimensions are not allowed");
    }
  }
  // (a copy, whatever reps: NumPy copies where every rep is one too)
  return result(array_of(a.dtype, graph::tile_shape(shape_of(a), r)));
}

VarPtr OpcodeExecutor::NumpyCall::diff() {
  const ValueInfo a = array_param("a");
  if (get("prepend") || get("append")) {
    refuse("prepend= or append=");
  }
  const std::int64_t n = int_param("n", 1);
  if (n == 0) {
    refuse("n=0 (NumPy returns the array itself)");
  }
  const auto axis = static_cast<int>(int_param("axis", -1));
  const auto shape = graph::diff_shape(shape_of(a), n, axis, &why);
  if (!shape) {
    refuse(why);
  }
  // (subtract's dtype; not_equal's bool for bools)
  return result(probed(probe(), *shape));
}

VarPtr OpcodeExecutor::NumpyCall::average() {
  const ValueInfo a = array_param("a");
  if (a.scalar) {
    refuse("a NumPy scalar");
  }
  if (bool_param("returned") || get("keepdims")) {
    refuse("returned=True or keepdims=");
  }
  std::vector<int> axes;
  const bool all = !axes_param("axis", &axes);
  const auto rank = static_cast<int>(a.ndim());
  std::vector<bool> reduced(a.shape.size(), all);
  for (const int ax : axes) {
    if (ax < -rank || ax >= rank || reduced[static_cast<std::size_t>(ax < 0 ? ax + rank : ax)]) {
      refuse("the axis " + str_of(py::repr(value_of("axis"))));
    }
    reduced[static_cast<std::size_t>(ax < 0 ? ax + rank : ax)] = true;
  }
  const VarPtr weights = get("weights");
  if (weights && !(weights->is_const() && weights->value().is_none())) {
    const ValueInfo w = array_param("weights");
    // (weights of a's shape, or 1-d along the one axis: else NumPy raises on the shapes)
    const bool one_axis =
        axes.size() == 1 && w.ndim() == 1 &&
        w.shape[0] == a.shape[static_cast<std::size_t>(axes[0] < 0 ? axes[0] + rank : axes[0])];
    if (w.scalar || (w.shape != a.shape && !one_axis)) {
      refuse("weights of another shape than a's, or 1-d along one axis");
    }
    raises_on_data("ZeroDivisionError (weights that sum to zero)");
  }
  Shape shape;
  for (std::size_t d = 0; d < a.shape.size(); ++d) {
    if (!reduced[d]) {
      shape.push_back(a.shape[d]);
    }
  }
  for (const std::int64_t d : a.shape) {
    if (d == 0) {
      refuse("an empty array (NumPy warns or raises)");
    }
  }
  return result(probed(probe(), shape));
}

VarPtr OpcodeExecutor::NumpyCall::append() {
  const ValueInfo arr = array_param("arr");
  const VarPtr values = get("values");
  Shape vshape;  // the values' shape: an array's, a Python number's (), a literal list's
  std::optional<graph::DType> joined;  // values not an array: the arrays' dtypes promoted, now
  if (values && ex.is_array_like(values)) {
    vshape = shape_of(array_param("values"));
  } else {
    const py::object v = value_of("values");
    std::string error;
    const py::object made =
        quiet_call(np, np.attr("asarray"), py::make_tuple(v), py::dict(), &error);
    if (!made || str_of(made.attr("dtype").attr("kind")) == "O" ||
        str_of(made.attr("dtype").attr("kind")) == "U") {
      refuse("values that are not an array or numbers");
    }
    for (const py::handle d : made.attr("shape")) {
      vshape.push_back(d.cast<std::int64_t>());
    }
    // (np.append ravels or takes the values as an array: their dtype promotes as an array's)
    const py::object t = np.attr("result_type")(
        np.attr("dtype")(std::string(graph::name(arr.dtype))), made.attr("dtype"));
    joined = graph::dtype_from_name(str_of(t.attr("name")));
    if (!joined) {
      refuse("values of " + str_of(py::repr(made.attr("dtype"))));
    }
  }
  const Shape a = shape_of(arr);
  Shape shape;
  if (value_of("axis").is_none()) {
    std::int64_t n = 0;
    for (const Shape* s : {&a, static_cast<const Shape*>(&vshape)}) {
      std::int64_t k = 1;
      for (const std::int64_t d : *s) {
        k *= d;
      }
      n += k;
    }
    shape = {n};
  } else {
    const auto axis = static_cast<int>(int_param("axis", 0));
    const auto rank = static_cast<int>(a.size());
    if (vshape.size() != a.size() || axis < -rank || axis >= rank) {
      refuse("values of another dimension, or the axis out of range (raises)");
    }
    const auto ax = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
    for (std::size_t d = 0; d < a.size(); ++d) {
      if (d != ax && a[d] != vshape[d]) {
        refuse("values whose shape does not join (raises ValueError)");
      }
    }
    shape = a;
    shape[ax] += vshape[ax];
  }
  // (the arrays' dtypes promoted as concatenate does)
  return result(joined ? array_of(*joined, shape) : probed(probe(), shape));
}

VarPtr OpcodeExecutor::NumpyCall::pad() {
  const ValueInfo a = array_param("array");
  if (a.scalar || a.ndim() == 0) {
    refuse("a NumPy scalar or a 0-d array");
  }
  const py::object mode = value_of("mode");
  const std::string md =
      mode.is_none() ? "constant" : (PyUnicode_Check(mode.ptr()) ? str_of(mode) : "");
  if (md != "constant" && md != "edge" && md != "wrap" && md != "reflect" && md != "symmetric") {
    refuse("the mode " + str_of(py::repr(mode)));
  }
  const py::object cv = value_of("constant_values");
  if (!cv.is_none() &&
      (md != "constant" || (!PyFloat_CheckExact(cv.ptr()) && !PyLong_CheckExact(cv.ptr())))) {
    refuse("constant_values that are not one Python number of the constant mode");
  }
  // pad_width: n, (n,), (before, after), or one (before, after) per axis.
  const py::object width = value_of("pad_width");
  std::vector<std::pair<std::int64_t, std::int64_t>> widths;
  const auto flat = ints_of(width);
  if (flat && (flat->size() == 1 || flat->size() == 2)) {
    widths.assign(a.shape.size(), {(*flat)[0], flat->size() == 2 ? (*flat)[1] : (*flat)[0]});
  } else if ((PyTuple_CheckExact(width.ptr()) || PyList_CheckExact(width.ptr())) &&
             py::len(width) == a.shape.size()) {
    for (const py::handle item : width) {
      const auto pair = ints_of(py::reinterpret_borrow<py::object>(item));
      if (!pair || pair->empty() || pair->size() > 2) {
        refuse("the pad_width " + str_of(py::repr(width)));
      }
      widths.emplace_back((*pair)[0], pair->size() == 2 ? (*pair)[1] : (*pair)[0]);
    }
  } else {
    refuse("the pad_width " + str_of(py::repr(width)));
  }
  Shape shape = a.shape;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const auto [before, after] = widths[d];
    if (before < 0 || after < 0) {
      refuse("negative pad widths (raises ValueError)");
    }
    if (md != "constant" && shape[d] == 0 && before + after > 0) {
      refuse("an empty axis padded from its items (raises ValueError)");
    }
    shape[d] += before + after;
  }
  return result(array_of(a.dtype, shape));
}

VarPtr OpcodeExecutor::NumpyCall::kron() {
  const ValueInfo a = array_param("a");
  const ValueInfo b = array_param("b");
  if (a.scalar || b.scalar || a.ndim() == 0 || b.ndim() == 0) {
    refuse("a NumPy scalar or a 0-d array");
  }
  const Shape sa = a.shape;
  const Shape sb = b.shape;
  const std::size_t n = std::max(sa.size(), sb.size());
  Shape shape(n, 1);
  for (std::size_t d = 0; d < n; ++d) {
    const std::int64_t x = d + sa.size() >= n ? sa[d + sa.size() - n] : 1;
    const std::int64_t y = d + sb.size() >= n ? sb[d + sb.size() - n] : 1;
    shape[d] = x * y;
  }
  // (a product's dtype; NumPy scalars in, a NumPy scalar or an array out: NumPy's)
  return result(probed(probe(), shape));
}

// np.gradient(f), np.gradient(f, h) of one spacing for every axis, with axis= and edge_order=: one
// op running NumPy's function; each result of f's shape, its dtype the running NumPy's (ints give
// float64). One axis gives an array; several a tuple under NumPy 2 and a list under 1.x, taken
// there only where the next instruction unpacks it (a tuple would not be that list).
VarPtr OpcodeExecutor::NumpyCall::gradient() {
  const ValueInfo f = array_param("f");
  if (f.scalar || f.ndim() == 0) {
    refuse("a 0-d array or NumPy scalar (NumPy raises)");
  }
  if (args.size() > 2) {
    refuse("a spacing per axis");
  }
  if (const VarPtr h = get("spacing")) {
    const py::object v = value_of("spacing");
    if (!(PyFloat_CheckExact(v.ptr()) || PyLong_CheckExact(v.ptr()))) {
      refuse("a spacing that is not a Python int or float (" + h->describe() + ")");
    }
  }
  const py::object order = value_of("edge_order");
  if (!order.is_none() && !PyLong_CheckExact(order.ptr())) {
    refuse("an edge_order that is not an int");
  }
  std::vector<int> axes;
  const std::size_t n = axes_param("axis", &axes) ? axes.size() : f.shape.size();
  // (Sizes cut to 3 at most: NumPy raises on an axis shorter than edge_order + 1 for the sample
  // where it would for the array.)
  const py::object sample = probe(3);
  if (n == 1) {
    return result(probed(sample, f.shape));
  }
  if (PyList_CheckExact(sample.ptr()) && unpacked_next(n)) {
    // (the op makes NumPy 1.x's list a tuple, the graph's kind of value of several results)
    static const py::object& tupled =
        *new py::object(py::cpp_function([](const py::args& a, const py::kwargs& k) -> py::object {
          return py::tuple(a[0](*a[py::slice(1, static_cast<Py_ssize_t>(a.size()), 1)], **k));
        }));
    g.fn = loaded_module("functools").attr("partial")(tupled, g.fn);
    return results(py::tuple(sample), std::vector<Shape>(n, f.shape));
  }
  return results(sample, std::vector<Shape>(n, f.shape));
}

}  // namespace sot::translator
