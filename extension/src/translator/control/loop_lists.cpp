// Lists a loop op's body appends to. `history = []` before a `for` loop whose body runs
// `history.append(change)` ended the loop op's capture (a Variable made before the loop changed),
// and the loop unrolled or broke the graph. Now the first attempt notes each such list (made in the
// frame, a `for` loop over a range of known length) with the kind of its items, and the next one
// keeps it as arrays of the graph:
// - a buffer `buf` of trips x appends-per-step rows of the item's dtype and shape, and `count`, an
//   int64 array of one item, both made before the loop and written in place by the body:
//   `L.append(v)` is buf[int(count[0])] = v; count[0] += 1 (element ops tier C runs natively,
//   in a cond op's way too: an append after an exit's test, or under an `if`);
// - in the body, `len(L)` is the items before the loop plus int(count[0]), and `L[k]` (a constant
//   index; a list empty before the loop) buf[list_position(count, k)], list_position raising
//   IndexError where the list's own index would;
// - the items appended are NumPy scalars of one dtype, Python floats, or arrays of one dtype and
//   shape made by the step itself (fresh, not written later in the step): no object a later step
//   could change in place is kept in a buffer. Anything else (another kind of item, a Python int,
//   any other use of the list, an append in an inner loop op) ends the attempt as before;
// - after the loop op, the list is the graph value rows_list(buf, count, kind, *items before): a
//   Python list made where the graph runs, its items the ones before the loop (the same objects),
//   then each appended row as the item it was (buf[i] a NumPy scalar, float(buf[i]), a copy of the
//   row). len(), constant indices and np.array() of it read the list or the buffer; anything else
//   breaks there as for any value of the graph, the list then a real one.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/loaded_module.hpp"
#include "translator/control/loop_site.hpp"
#include "translator/executor_support.hpp"
#include "translator/numpy/array_state.hpp"
#include "translator/numpy/numpy_names.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

using graph::Arg;
using graph::ValueInfo;

namespace {

constexpr std::int64_t kMostBufferBytes = std::int64_t{64} << 20;  // a buffer, at most

ValueInfo python_kind(char kind) {
  ValueInfo info;
  info.dtype = kind == 'i' ? graph::DType::kInt64 : graph::DType::kFloat64;
  info.scalar = true;
  info.python = kind;
  return info;
}

// list_position(count, k): the position of the list's item k among `count` (k + count for a
// negative k), or IndexError as the list raises it.
const py::object& list_position_fn() {
  static const py::object& fn =
      *new py::object(py::cpp_function([](const py::int_& count, const py::int_& k) {
        const auto n = count.cast<long long>();
        const auto i = k.cast<long long>();
        const long long at = i < 0 ? n + i : i;
        if (at < 0 || at >= n) {
          throw py::index_error("list index out of range");
        }
        return at;
      }));
  return fn;
}

// rows_list(buf, count, kind, *before): [*before, *items of the first count[0] rows of buf], each
// row the item it was: a NumPy scalar ('s'), a Python float ('f') or a copy of the row ('a').
const py::object& rows_list_fn() {
  static const py::object& fn = *new py::object(py::cpp_function([](const py::args& a) {
    const py::object buf = a[0];
    const auto n = py::reinterpret_borrow<py::object>(a[1])[py::int_(0)].cast<long long>();
    const std::string kind = a[2].cast<std::string>();
    py::list out;
    for (std::size_t k = 3; k < a.size(); ++k) {
      out.append(a[k]);
    }
    for (long long i = 0; i < n; ++i) {
      py::object row = buf[py::int_(i)];
      if (kind == "f") {
        out.append(py::float_(row.cast<double>()));
      } else if (kind == "a") {
        out.append(row.attr("copy")());
      } else {
        out.append(row);
      }
    }
    return out;
  }));
  return fn;
}

// count[0] of a list's buffer (an int64 scalar), and that scalar's kind.
graph::Op count_item(const ListBuffer& b) {
  graph::Op item;
  item.name = "getitem";
  item.fn = operator_fn("getitem");
  item.args = {Arg::of(b.count), Arg::constant_of(py::int_(0))};
  return item;
}

ValueInfo int64_scalar() {
  ValueInfo scalar;
  scalar.dtype = graph::DType::kInt64;
  scalar.scalar = true;
  return scalar;
}

}  // namespace

void OpcodeExecutor::note_append(const VarPtr& list, const VarPtr& value) {
  LoopSite* site = body_loop_;
  if (site == nullptr || list->tracker().is_input() || list->serial() > site->serial) {
    return;  // (a list the body made, or none being captured)
  }
  ValueInfo info;
  bool ok = true;
  if (value->is_const() && PyFloat_CheckExact(value->value().ptr())) {
    info = python_kind('f');
  } else if (value->kind() == Variable::Kind::kArray) {
    info = array_info(value->graph_id());
    ok = !info.is_tuple() && (info.python == 0 || info.python == 'f') &&
         !arrays().is_loop_index(value->graph_id());
  } else {
    ok = false;
  }
  for (LoopSite::Appended& a : site->appended) {
    if (a.list == list) {
      a.ok = a.ok && ok && same_array_info(a.item, info);
      ++a.appends;
      return;
    }
  }
  site->appended.push_back({list, info, 1, ok});
}

bool OpcodeExecutor::buffer_lists(LoopSite* site) {
  ArrayState& a = arrays();
  for (const LoopSite::Appended& plan : site->buffered) {
    const VarPtr& list = plan.list;
    const ValueInfo& item = plan.item;
    if (list->kind() != Variable::Kind::kList || site->is_while || site->start_value >= 0 ||
        site->trips <= 0) {
      return false;
    }
    std::int64_t rows = site->trips * plan.appends;
    std::int64_t bytes = rows * static_cast<std::int64_t>(graph::itemsize(item.dtype));
    for (const std::int64_t d : item.shape) {
      bytes *= std::max<std::int64_t>(d, 1);
    }
    if (rows <= 0 || bytes > kMostBufferBytes ||
        (!item.scalar && !item.symbols.empty() && a.has_runtime(item))) {
      return false;
    }
    for (const VarPtr& v : list->items()) {  // (the items before the loop: handed to rows_list)
      if (!v->is_const() && v->kind() != Variable::Kind::kArray) {
        return false;
      }
    }
    ValueInfo buf_info;
    buf_info.dtype = item.dtype;
    buf_info.shape = item.scalar ? graph::Shape{} : item.shape;
    buf_info.shape.insert(buf_info.shape.begin(), rows);
    buf_info.symbols = item.scalar ? std::vector<int>{} : item.symbols;
    if (!buf_info.symbols.empty()) {
      buf_info.symbols.insert(buf_info.symbols.begin(), -1);
    }
    graph::Op zeros;
    zeros.name = "zeros";
    zeros.fn = numpy_module().attr("zeros");
    py::tuple shape(static_cast<py::ssize_t>(buf_info.shape.size()));
    for (std::size_t d = 0; d < buf_info.shape.size(); ++d) {
      shape[d] = py::int_(buf_info.shape[d]);
    }
    const py::object dtype = numpy_module().attr("dtype")(std::string(graph::name(item.dtype)));
    zeros.args = {Arg::constant_of(shape)};
    zeros.kwargs = {{"dtype", Arg::constant_of(dtype)}};
    ListBuffer b;
    b.buf = add_array_op(zeros, buf_info)->graph_id();
    graph::Op count = zeros;
    count.args = {Arg::constant_of(py::make_tuple(1))};
    count.kwargs = {{"dtype", Arg::constant_of(numpy_module().attr("dtype")("int64"))}};
    ValueInfo count_info;
    count_info.dtype = graph::DType::kInt64;
    count_info.shape = {1};
    b.count = add_array_op(count, count_info)->graph_id();
    b.item = item;
    b.before = list->items().size();
    b.per_step = plan.appends;
    b.site = site;
    a.list_buffers[list.get()] = b;
    list->buffer_list();  // (not logged: unbuffer_lists puts it back where the attempt fails)
  }
  return true;
}

void OpcodeExecutor::unbuffer_lists(const LoopSite& site) {
  for (const LoopSite::Appended& plan : site.buffered) {
    if (plan.list->kind() == Variable::Kind::kListBuffer) {
      plan.list->unbuffer_list();
    }
    arrays().list_buffers.erase(plan.list.get());
  }
}

bool OpcodeExecutor::next_list_plans(LoopSite* site) const {
  // (the lists the attempt saw appended to, each with items of one kind; the most appends a step
  // of either attempt made)
  std::vector<LoopSite::Appended> plans;
  for (const LoopSite::Appended& seen : site->appended) {
    if (!seen.ok) {
      return false;
    }
    LoopSite::Appended plan = seen;
    for (const LoopSite::Appended& before : site->buffered) {
      if (before.list == seen.list) {
        plan.appends = std::max(plan.appends, before.appends);
      }
    }
    plans.push_back(std::move(plan));
  }
  if (plans.empty()) {
    return false;
  }
  site->buffered = std::move(plans);
  site->appended.clear();
  return true;
}

ListBuffer* OpcodeExecutor::list_buffer(const VarPtr& list) {
  if (list->kind() != Variable::Kind::kListBuffer || !shared_->arrays) {
    return nullptr;
  }
  const auto found = arrays().list_buffers.find(list.get());
  return found == arrays().list_buffers.end() ? nullptr : &found->second;
}

int OpcodeExecutor::buffer_count(const ListBuffer& b) {
  // int(count[0]): a Python int of the graph
  const int c = add_array_op(count_item(b), int64_scalar())->graph_id();
  return number_op("int", loaded_module("builtins").attr("int"), {c}, 'i')->graph_id();
}

void OpcodeExecutor::buffered_append(const VarPtr& list, const VarPtr& value) {
  ListBuffer* b = list_buffer(list);
  LoopSite* site = body_loop_;
  if (b == nullptr || site == nullptr || b->site != site) {
    graph_break("an append to a list in a loop inside the loop op that appends to it");
  }
  note_append(list, value);  // (the count the next attempt plans for)
  ValueInfo info;
  int v = -1;
  if (value->is_const() && PyFloat_CheckExact(value->value().ptr())) {
    info = python_kind('f');
    v = arrays().graph.add_constant(value->value(), info);
    guards_->value(value);
  } else if (value->kind() == Variable::Kind::kArray) {
    v = value->graph_id();
    info = array_info(v);
  }
  if (v < 0 || !same_array_info(info, b->item)) {
    graph_break("an append of " + value->describe() + " to a list of " + b->item.text());
  }
  if (!info.scalar) {
    // (an array item: made by the step itself, so that no later step changes the object kept)
    const graph::Value& made = arrays().graph.value(v);
    const graph::Op* op = made.source == graph::Value::Source::kOp
                              ? &arrays().graph.ops()[static_cast<std::size_t>(made.op)]
                              : nullptr;
    if (static_cast<std::size_t>(v) < site->values || op == nullptr || op->view || op->mutates) {
      graph_break("an append of an array the step did not make (it may change later)");
    }
    b->arrays.push_back(v);
  }
  if (++b->appends > b->per_step) {
    graph_break("more appends in a step than the loop's first attempt saw");
  }
  b->conditional = b->conditional || shared_->cond_depth > site->body_conds;
  // c = count[0]; buf[int(c)] = v; count[0] = c + 1 (count read once: the store writes buf)
  const int c = add_array_op(count_item(*b), int64_scalar())->graph_id();
  const int at = number_op("int", loaded_module("builtins").attr("int"), {c}, 'i')->graph_id();
  graph::Op store;
  store.name = "setitem";
  store.fn = operator_fn("setitem");
  store.args = {Arg::of(b->buf), Arg::of(at), Arg::of(v)};
  store.mutates = true;
  add_array_op(std::move(store), array_info(b->buf));
  graph::Op next;
  next.name = "add";
  next.fn = numpy_module().attr("add");
  next.args = {Arg::of(c), Arg::constant_of(py::int_(1))};
  const int n = add_array_op(std::move(next), int64_scalar())->graph_id();
  graph::Op bump;
  bump.name = "setitem";
  bump.fn = operator_fn("setitem");
  bump.args = {Arg::of(b->count), Arg::constant_of(py::int_(0)), Arg::of(n)};
  bump.mutates = true;
  add_array_op(std::move(bump), array_info(b->count));
}

bool OpcodeExecutor::lists_ok(LoopSite* site) {
  if (site->buffered.empty()) {
    return true;
  }
  if (site->exit_returns) {
    site->why = "a list appended to in a loop that may return";
    return false;
  }
  const graph::Graph& g = arrays().graph;
  std::vector<int> buffers;   // (every list's buffer and count)
  std::vector<int> appended;  // (the arrays appended, to any list)
  for (const LoopSite::Appended& plan : site->buffered) {
    const ListBuffer* b = list_buffer(plan.list);
    if (b == nullptr) {
      site->why = "a list appended to is used otherwise";
      return false;
    }
    buffers.push_back(b->buf);
    buffers.push_back(b->count);
    for (const int v : b->arrays) {
      if (std::find(appended.begin(), appended.end(), v) != appended.end()) {
        site->why = "an array appended twice (a list holds one object twice)";
        return false;
      }
      appended.push_back(v);
    }
  }
  if (appended.empty()) {
    return true;  // (NumPy scalars and Python floats: nothing changes them)
  }
  // Arrays appended: a row of the buffer stands for each, a copy. So no array is written in place
  // in the step (the object kept, or the one a later step appends, would change), and a local that
  // holds one at the step's end is read nowhere after the loop (it would be the list's item).
  const auto root = [&g](int v) {
    for (;;) {
      const graph::Value& value = g.value(v);
      const graph::Op* maker = value.source == graph::Value::Source::kOp
                                   ? &g.ops()[static_cast<std::size_t>(value.op)]
                                   : nullptr;
      if (maker == nullptr || !(maker->view || maker->mutates) || maker->args.empty() ||
          maker->args[0].kind != Arg::Kind::kValue) {
        return v;
      }
      v = maker->args[0].value;
    }
  };
  for (std::size_t k = site->ops; k < g.ops().size(); ++k) {
    const graph::Op& op = g.ops()[k];
    if (op.mutates && !op.args.empty() && op.args[0].kind == Arg::Kind::kValue &&
        std::find(buffers.begin(), buffers.end(), root(op.args[0].value)) == buffers.end()) {
      site->why = "an array written in place in a loop that appends arrays to a list";
      return false;
    }
  }
  const auto& code = code_.instructions();
  bool enclosed = false;  // (in another loop: code before this one runs after it too)
  for (std::size_t k = site->for_pc; k < code.size(); ++k) {
    enclosed = enclosed || (code[k].target >= 0 && code_.index_of(code[k].target) < site->for_pc);
  }
  for (std::size_t slot = 0; slot < locals_.size(); ++slot) {
    const VarPtr& v = locals_[slot];
    if (v && v->kind() == Variable::Kind::kArray &&
        std::find(appended.begin(), appended.end(), v->graph_id()) != appended.end() &&
        !never_read(static_cast<int>(slot), enclosed ? site->for_pc : 0, site->exit)) {
      site->why = "a local read after the loop holds an array appended to a list";
      return false;
    }
  }
  return true;
}

void OpcodeExecutor::lists_after_loop(const LoopSite& site) {
  ArrayState& a = arrays();
  for (const LoopSite::Appended& plan : site.buffered) {
    const VarPtr& list = plan.list;
    ListBuffer* found = list_buffer(list);
    if (found == nullptr) {
      continue;
    }
    ListBuffer b = *found;
    a.list_buffers.erase(list.get());
    graph::Op rows;
    rows.name = "rows_list";
    rows.fn = rows_list_fn();
    const char* kind = !b.item.scalar ? "a" : b.item.python == 'f' ? "f" : "s";
    rows.args = {Arg::of(b.buf), Arg::of(b.count), Arg::constant_of(py::str(kind))};
    for (const VarPtr& v : list->items()) {
      rows.args.push_back(v->is_const() ? Arg::constant_of(v->value()) : Arg::of(v->graph_id()));
      if (v->is_const()) {
        guards_->value(v);
      }
    }
    b.length = b.conditional || !site.step_tests.empty()
                   ? -1
                   : static_cast<std::int64_t>(b.before) + site.trips * b.per_step;
    const int id = add_array_op(std::move(rows), python_kind('l'))->graph_id();
    b.pre = list->items();
    a.graph_lists[id] = b;
    list->unbuffer_list();
    mutate(list);  // (logged as the list it was: an outer capture given up puts it back)
    list->list_in_graph(id, "Python list");
  }
}

VarPtr OpcodeExecutor::list_length(const VarPtr& v) {
  const ListBuffer* b = list_buffer(v);
  if (b == nullptr && v->kind() == Variable::Kind::kArray && shared_->arrays) {
    const auto found = arrays().graph_lists.find(v->graph_id());
    b = found == arrays().graph_lists.end() ? nullptr : &found->second;
    if (b != nullptr && b->length >= 0) {
      return Variable::constant(py::int_(b->length));
    }
  }
  if (b == nullptr) {
    return nullptr;
  }
  const int n = buffer_count(*b);
  if (b->before == 0) {
    return Variable::array(n, "Python int");
  }
  const int before =
      arrays().graph.add_constant(py::int_(static_cast<long long>(b->before)), python_kind('i'));
  return number_op("add", operator_fn("add"), {n, before}, 'i');
}

bool OpcodeExecutor::list_subscript() {
  // [list, key]: list[k] with a constant int k.
  const VarPtr container = peek(2);
  const VarPtr key = peek(1);
  const bool in_body = container->kind() == Variable::Kind::kListBuffer;
  const bool in_graph = container->kind() == Variable::Kind::kArray && shared_->arrays &&
                        arrays().graph_lists.count(container->graph_id()) != 0;
  if (!in_body && !in_graph) {
    return false;
  }
  if (!key->is_const() || !PyLong_CheckExact(key->value().ptr())) {
    graph_break("an item of a list appended to in a loop, at " + key->describe());
  }
  guards_->value(key);
  const long long k = key->value().cast<long long>();
  VarPtr item;
  if (in_body) {
    ListBuffer* b = list_buffer(container);
    if (b == nullptr || b->before != 0) {
      graph_break("an item of a list appended to in a loop that held items before it");
    }
    const int at =
        number_op("list_position", list_position_fn(),
                  {buffer_count(*b), arrays().graph.add_constant(py::int_(k), python_kind('i'))},
                  'i')
            ->graph_id();
    graph::Op get;
    get.name = "getitem";
    get.fn = operator_fn("getitem");
    get.args = {Arg::of(b->buf), Arg::of(at)};
    get.view = !b->item.scalar;
    ValueInfo row = b->item;
    row.python = 0;  // (a Python float's row: a float64 scalar, then float() of it)
    item = add_array_op(std::move(get), row);
    if (b->item.python == 'f') {
      item = number_op("float", loaded_module("builtins").attr("float"), {item->graph_id()}, 'f');
    }
  } else {
    const ListBuffer b = arrays().graph_lists.at(container->graph_id());
    long long at = k;
    if (k < 0 && b.length >= 0) {
      at = b.length + k;
    }
    if (at >= 0 && static_cast<std::size_t>(at) < b.before) {
      item = b.pre[static_cast<std::size_t>(at)];  // (the object itself)
    } else if (at < 0 && b.before > 0) {
      graph_break("an item of a list appended to in a loop, from its end (before the loop's)");
    } else {
      graph::Op get;
      get.name = "getitem";
      get.fn = operator_fn("getitem");
      get.args = {Arg::of(container->graph_id()), Arg::constant_of(py::int_(at))};
      get.view = true;  // (an object the list holds)
      item = add_array_op(std::move(get), b.item);
    }
  }
  pop();
  pop();
  push(std::move(item));
  return true;
}

VarPtr OpcodeExecutor::array_of_list(const VarPtr& v, const std::string& name) {
  // np.array(L), np.asarray(L), np.stack(L), np.vstack(L), np.hstack(L), np.concatenate(L) and
  // builtin sum(L) of a list made after a loop: the function itself on the list, where the graph
  // runs; here only the kind of its result, from the items' (the items before the loop of the
  // same kind). A length known only where the graph runs is one dimension of the result alone
  // (else nullptr: the call breaks as before).
  if (v->kind() != Variable::Kind::kArray || !shared_->arrays) {
    return nullptr;
  }
  ArrayState& a = arrays();
  const auto found = a.graph_lists.find(v->graph_id());
  if (found == a.graph_lists.end()) {
    return nullptr;
  }
  const ListBuffer& b = found->second;
  for (const VarPtr& p : b.pre) {
    if (p->kind() != Variable::Kind::kArray ||
        !same_array_info(array_info(p->graph_id()), b.item)) {
      return nullptr;
    }
  }
  const bool floats =
      b.item.dtype == graph::DType::kFloat64 || b.item.dtype == graph::DType::kFloat32;
  ValueInfo info;
  info.dtype = b.item.dtype;
  const graph::Shape item = b.item.scalar ? graph::Shape{} : b.item.shape;
  if (!b.item.scalar && !b.item.symbols.empty()) {
    return nullptr;  // (items of dynamic sizes)
  }
  const std::int64_t n = b.length;
  std::int64_t lead = -1;  // the result's dimension that is the list's length (-1: none)
  py::object fn;
  if (name == "sum") {
    // (Python's sum: 0 + items, left to right; an empty list's is the int 0)
    if (n < 1 || !floats) {
      return nullptr;
    }
    info = b.item;
    fn = loaded_module("builtins").attr("sum");
  } else if (name == "array" || name == "asarray" || name == "stack") {
    // (an empty list's array is float64 of shape (0,); np.stack of none raises)
    if (n < 0 && name != "stack" && (!b.item.scalar || b.item.dtype != graph::DType::kFloat64)) {
      return nullptr;
    }
    info.shape = item;
    info.shape.insert(info.shape.begin(), n);
    lead = 0;
  } else if (name == "vstack" && item.size() <= 1) {
    info.shape = {n, item.empty() ? 1 : item[0]};
    lead = 0;
  } else if ((name == "vstack" || name == "concatenate") && item.size() >= 2 && n >= 0) {
    info.shape = item;
    info.shape[0] = n * item[0];
  } else if ((name == "hstack" || name == "concatenate") && item.size() == 1 && n >= 0) {
    info.shape = {n * item[0]};
  } else if (name == "hstack" && item.empty()) {
    info.shape = {n};
    lead = 0;
  } else if (name == "hstack" && item.size() >= 2 && n >= 0) {
    info.shape = item;
    info.shape[1] = n * item[1];
  } else {
    return nullptr;
  }
  if (n < 0 && lead < 0) {
    return nullptr;
  }
  if (n < 0) {
    // (a runtime symbol, the most rows standing for it)
    const std::int64_t rows =
        static_cast<std::int64_t>(b.before) + a.graph.value(b.buf).info.shape[0];
    info.shape[static_cast<std::size_t>(lead)] = std::max<std::int64_t>(rows, 2);
    info.symbols.assign(info.shape.size(), -1);
    info.symbols[static_cast<std::size_t>(lead)] = a.count_symbol(v->graph_id());
  }
  if (!fn) {
    fn = numpy_module().attr(name.c_str());
  }
  graph::Op make;
  make.name = "list_" + name;
  make.fn = fn;
  make.args = {Arg::of(v->graph_id())};
  return add_array_op(std::move(make), info);
}

}  // namespace sot::translator
