// Loops whose steps compute single elements or Python numbers alone (loop_capture.cpp asks here):
// what a body computes (element work or array work, nested loops and cond ops included), and
// whether such a loop is a loop op (where the backend runs it natively), unrolls, or breaks the
// graph where it starts (a loop op from Python would be slower than CPython's own loop).
#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "graph/exec/backend.hpp"
#include "graph/exec/cond_op.hpp"
#include "graph/exec/loop_op.hpp"
#include "graph/ir/arg_values.hpp"
#include "translator/control/loop_site.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

namespace {

// Whether the ops [first, last) of `g` compute single elements alone (see element_work), each value
// they read from before `first_value` passed to `before`; `numbers` is cleared by a value that is
// not a Python number.
class ElementScan {
 public:
  ElementScan(bool* numbers, std::function<void(int)> before)
      : numbers_(numbers), before_(std::move(before)) {}

  // False for an array of more than one element (or of a size known only at run time).
  bool single(const graph::ValueInfo& info) const {
    if (info.python != 0) {
      return true;
    }
    *numbers_ = false;
    if (info.is_tuple()) {
      return false;
    }
    const bool dynamic = std::any_of(info.symbols.begin(), info.symbols.end(),
                                     [](int symbol) { return symbol >= 0; });
    return info.scalar || (!dynamic && std::all_of(info.shape.begin(), info.shape.end(),
                                                   [](std::int64_t n) { return n == 1; }));
  }

  bool ops(const graph::Graph& g, std::size_t first, std::size_t last) const {
    for (std::size_t k = first; k < last; ++k) {
      if (!op(g, g.ops()[k])) {
        return false;
      }
    }
    return true;
  }

 private:
  // x[i] = v, x[i, j] = v: one element written (an int index per dimension, a single value).
  bool element_write(const graph::Graph& g, const graph::Op& op) const {
    const bool at = op.name == "setitem_at";
    if ((op.name != "setitem" && !at) || op.args.size() < 3 ||
        op.args[0].kind != graph::Arg::Kind::kValue) {
      return false;
    }
    const int ndim = g.value(op.args[0].value).info.ndim();
    const auto is_int = [&](const graph::Arg& a) {
      return a.kind == graph::Arg::Kind::kValue
                 ? g.value(a.value).info.python == 'i'
                 : a.kind == graph::Arg::Kind::kConst && PyLong_CheckExact(a.constant.ptr()) != 0;
    };
    int ints = 0;
    if (at) {  // (x, template, indices..., v): the template's items ints or the indices' places
      for (const py::handle item : py::reinterpret_borrow<py::tuple>(op.args[1].constant)) {
        if (!item.is_none() && PyLong_CheckExact(item.ptr()) == 0) {
          return false;
        }
        ++ints;
      }
      for (std::size_t j = 2; j + 1 < op.args.size(); ++j) {
        if (!is_int(op.args[j])) {
          return false;
        }
      }
    } else {
      if (op.args.size() != 3 || !is_int(op.args[1])) {
        return false;
      }
      ints = 1;
    }
    const graph::Arg& value = op.args.back();
    return ints == ndim &&
           (value.kind == graph::Arg::Kind::kConst ||
            (value.kind == graph::Arg::Kind::kValue && single(g.value(value.value).info)));
  }

  // (an element read, x[i] or x[i, j], reads one element of any array: its result is checked to be
  // one; any other op reading an array of more than one element is array work: x.max() on each
  // step)
  bool element_of(const graph::Graph& g, int v, const graph::Op& op) const {
    return v < 0 || op.name == "getitem" || op.name == "getitem_at" || op.name == "loop" ||
           op.name == "cond" || single(g.value(v).info);
  }

  bool op(const graph::Graph& g, const graph::Op& op) const {
    if (element_write(g, op)) {
      for_each_value(op, before_);
      return true;
    }
    if (op.name == "loop") {  // a nested loop of element work is element work
      const graph::LoopBody* body = graph::loop_body_of(op.fn);
      if (body == nullptr) {
        return false;
      }
      const graph::Graph& inner = body->spec().body;
      for (std::size_t k = 0; k < body->spec().ncarried; ++k) {
        if (!single(inner.value(inner.inputs()[k]).info)) {
          return false;  // (an array carried)
        }
      }
      const ElementScan nested(numbers_, [](int) {});
      if (!nested.ops(inner, 0, inner.ops().size())) {
        return false;
      }
      for_each_value(op, before_);
      return true;
    }
    if (op.name == "cond") {  // both ways element work
      const graph::CondBody* cond = graph::cond_body_of(op.fn);
      if (cond == nullptr) {
        return false;
      }
      const ElementScan nested(numbers_, [](int) {});
      for (const graph::Graph& way : cond->spec().body) {
        if (!nested.ops(way, 0, way.ops().size())) {
          return false;
        }
      }
      bool ok = true;
      for_each_value(op, [&](int v) { ok = ok && element_of(g, v, op); });
      for_each_value(op, before_);
      return ok;
    }
    if (op.name == "loop_output" || op.name == "cond_output") {
      return single(g.value(op.result).info);
    }
    if (op.mutates || (op.result >= 0 && !single(g.value(op.result).info))) {
      return false;  // array work
    }
    bool ok = true;
    for_each_value(op, [&](int v) { ok = ok && element_of(g, v, op); });
    if (ok) {
      for_each_value(op, before_);
    }
    return ok;
  }

  bool* numbers_;
  std::function<void(int)> before_;
};

}  // namespace

namespace {

// A getitem_at or setitem_at whose key holds a slice of values of the graph (L[i, :i]: Ellipsis
// parts in its template).
bool ranged_slice_op(const graph::Op& op) {
  if ((op.name != "getitem_at" && op.name != "setitem_at") || op.args.size() < 2 ||
      op.args[1].kind != graph::Arg::Kind::kConst || !PyTuple_Check(op.args[1].constant.ptr())) {
    return false;
  }
  for (const py::handle item : py::reinterpret_borrow<py::tuple>(op.args[1].constant)) {
    if (PySlice_Check(item.ptr()) != 0) {
      auto* s = reinterpret_cast<PySliceObject*>(item.ptr());
      if (s->start == Py_Ellipsis || s->stop == Py_Ellipsis || s->step == Py_Ellipsis) {
        return true;
      }
    }
  }
  return false;
}

// Whether the ops of `g` from `first` on (nested loops' and cond ops' included) hold a cond op or a
// slice of values of the graph.
bool needs_native(const graph::Graph& g, std::size_t first) {
  for (std::size_t k = first; k < g.ops().size(); ++k) {
    const graph::Op& op = g.ops()[k];
    if (op.name == "cond" || ranged_slice_op(op)) {
      return true;
    }
    const graph::LoopBody* body = op.name == "loop" ? graph::loop_body_of(op.fn) : nullptr;
    if (body != nullptr && needs_native(body->spec().body, 0)) {
      return true;
    }
  }
  return false;
}

}  // namespace

graph::LoopSpec OpcodeExecutor::native_spec(const LoopSite& site) {
  // (the last values no code after the loop reads, as compile_loops will find them: unread)
  graph::LoopSpec spec = build_loop(site).spec;
  spec.unread.assign(spec.ncarried, false);
  for (const auto& [slot, v] : site.last) {
    spec.unread.push_back(never_read(slot, site.for_pc, site.exit));
  }
  return spec;
}

bool OpcodeExecutor::body_needs_native(const LoopSite& site) {
  // A body with a cond op (captured only for a backend with native loops) stays a loop op only
  // where that backend's native code runs it: from Python, each step's cond op is slower than the
  // branch. So does a body with slices of its ints (L[i, :i] @ x[:i]): their sizes change every
  // step, which only native code takes in its stride (the loop unrolls elsewhere).
  if (!needs_native(shared_->arrays->graph, site.ops)) {
    return false;
  }
  graph::Backend* backend = graph::find_backend(shared_->backend);
  std::string why;
  if (backend != nullptr && backend->native_loop(native_spec(site), &why)) {
    return false;
  }
  LoopSite declined = site;  // (the break's reason says why the loop is not one)
  declined.why = "its body needs native code, and it is not native: " +
                 (backend == nullptr ? std::string("no backend") : why);
  abandon_loop(declined);
  return true;
}

OpcodeExecutor::ElementWork OpcodeExecutor::element_work(const LoopSite& site) const {
  ElementWork w;
  const graph::Graph& g = shared_->arrays->graph;
  // (every value the body reads from before the loop a constant; every value it makes a number)
  const auto before = [&](int v) {
    if (v >= 0 && static_cast<std::size_t>(v) < site.values &&
        g.value(v).source != graph::Value::Source::kConst) {
      w.constants = false;
    }
  };
  const ElementScan scan(&w.numbers, before);
  for (const LoopSite::Carried& c : site.carried) {
    if (!scan.single(g.value(c.placeholder).info)) {
      return w;  // an array carried
    }
    before(c.outer);
  }
  w.elements = scan.ops(g, site.ops, g.ops().size());
  return w;
}

bool OpcodeExecutor::scalar_loop(const LoopSite& site) {
  const ElementWork w = element_work(site);
  graph::Backend* backend = graph::find_backend(shared_->backend);
  std::string why;
  if (!w.elements) {
    // (short loops of array work unroll, unless the backend runs them natively: views and dot
    // products of rows and slices, A[i] @ x, L[i, :i] @ x[:i])
    if (site.short_loop && (backend == nullptr || !backend->native_loop(native_spec(site), &why))) {
      abandon_loop(site);
      return true;
    }
    return false;
  }
  if (w.numbers && !site.is_while && w.constants && site.trips <= kPythonUnrollMax) {
    abandon_loop(site);
    return true;
  }
  // (the backend's native code runs the whole loop: a loop op, as fast as its arithmetic)
  if (backend != nullptr && backend->native_loop(build_loop(site).spec, &why)) {
    return false;
  }
  abandon_loop(site);
  if (site.short_loop || !site.buffered.empty()) {
    return true;  // (unrolled: a list appended to unrolled before it was a buffer)
  }
  graph_break(std::string(w.numbers ? "a loop over Python numbers only"
                                    : "a loop over single elements only, NumPy scalars and Python "
                                      "numbers") +
              " (CPython runs it faster than a loop op; not native: " + why + ")");
}

}  // namespace sot::translator
