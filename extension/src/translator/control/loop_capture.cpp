// Loops as loop ops. A `for` loop over a constant range, or over the rows of an array, longer than
// kLoopUnrollMax has its body simulated once instead of once per step (the range's variable may
// only index arrays; a row is x[t], made in the body from the step's index t): the
// locals the body stores that hold arrays become placeholders (graph values that stand for "the
// value at the start of a step"), the body runs to its jump back to FOR_ITER, and what it left is
// checked:
// - every local it changed holds an array of the same dtype and shape as at the start (carried
//   from step to step), or an array that was unbound before the loop (its last value is read);
// - nothing else changed: no Python value a later step would see differently (a counter, a list
//   appended to, a global, an attribute, an iterator made before the loop), no print, no break.
// The body's ops then move from the frame's graph into a graph of their own
// (graph/exec/loop_op.hpp) and the frame's graph gets one `loop` op and a `loop_output` per value
// read after the loop. Anything else (a break, a branch on an array, a side effect, a return) puts
// every value back as it was before the loop and the loop unrolls as before.
#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bytecode/opcode_table.hpp"
#include "bytecode/operands.hpp"
#include "core/loaded_module.hpp"
#include "graph/exec/backend.hpp"
#include "graph/exec/cond_op.hpp"
#include "graph/exec/loop_op.hpp"
#include "graph/ir/arg_values.hpp"
#include "translator/control/loop_site.hpp"
#include "translator/executor_support.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

using graph::Arg;
using graph::ValueInfo;

bool OpcodeExecutor::loop_targets(LoopSite* site) const {
  // `for x in ...` (STORE_FAST x), or `for n, x in enumerate(...)` (UNPACK_SEQUENCE 2 and two
  // stores: STORE_FAST n, STORE_FAST x, or 3.13's STORE_FAST_STORE_FAST).
  const auto& code = code_.instructions();
  auto name = [&](std::size_t k) {
    return k < site->exit ? std::string(bytecode::opcode_info(code[k].opcode).name) : "";
  };
  const std::size_t first = site->for_pc + 1;
  if (name(first) == "STORE_FAST") {
    site->var = code[first].arg;
    site->header = 1;
  } else if (name(first) == "UNPACK_SEQUENCE" && code[first].arg == 2 &&
             name(first + 1) == "STORE_FAST_STORE_FAST") {
    site->counter = code[first + 1].arg >> 4;
    site->var = code[first + 1].arg & 15;
    site->header = 2;
  } else if (name(first) == "UNPACK_SEQUENCE" && code[first].arg == 2 &&
             name(first + 1) == "STORE_FAST" && name(first + 2) == "STORE_FAST") {
    site->counter = code[first + 1].arg;
    site->var = code[first + 2].arg;
    site->header = 3;
  } else {
    return false;
  }
  return !cell_slot(site->var) && (site->counter < 0 || !cell_slot(site->counter)) &&
         site->counter != site->var && site->exit > first + site->header;
}

bool OpcodeExecutor::loop_shape(const bytecode::Instruction& ins, LoopSite* site) const {
  const auto& code = code_.instructions();
  site->for_pc = pc_;
  site->exit = code_.index_of(ins.target);
  if (site->exit <= pc_ + 2 || site->exit > code.size() || !loop_targets(site) ||
      yields_in(pc_, site->exit)) {
    return false;
  }
  slots_stored(pc_ + 1 + site->header, site->exit, site);
  exit_needs_var(site);
  return true;
}

bool OpcodeExecutor::yields_in(std::size_t from, std::size_t to) const {
  // (a generator's loop: each step hands a value to the consumer, which a loop op cannot)
  const auto& code = code_.instructions();
  for (std::size_t k = from; k < to && k < code.size(); ++k) {
    const std::string name = bytecode::opcode_info(code[k].opcode).name;
    if (name == "YIELD_VALUE" || name == "SEND" || name == "YIELD_FROM" ||
        name == "RETURN_GENERATOR") {
      return true;
    }
  }
  return false;
}

void OpcodeExecutor::slots_stored(std::size_t from, std::size_t to, LoopSite* site) const {
  // The slots the instructions [from, to) store or delete (and whether they read the loop
  // variable)
  const auto& code = code_.instructions();
  for (std::size_t k = from; k < to; ++k) {
    const auto& info = bytecode::opcode_info(code[k].opcode);
    const std::string name = info.name;
    // (slot, whether the instruction stores it without reading it)
    std::vector<std::pair<int, bool>> slots;
    if (info.arg_kind == bytecode::ArgKind::kLocal) {
      slots = {{code[k].arg, name == "STORE_FAST"}};
    } else if (info.arg_kind == bytecode::ArgKind::kLocalPair) {
      slots = {{code[k].arg >> 4, name.rfind("STORE_FAST", 0) == 0},
               {code[k].arg & 15, name == "STORE_FAST_STORE_FAST"}};
    }
    for (const auto& [slot, stores] : slots) {
      if (slot == site->var && !stores) {
        site->reads_var = true;  // (a graph value: it may index arrays)
      }
      if (stores || name == "DELETE_FAST" || name == "LOAD_FAST_AND_CLEAR") {
        site->stored.insert(slot);
      }
    }
  }
}

bool OpcodeExecutor::range_loop_bounds(const VarPtr& it, LoopSite* site) {
  PyObject* range = it->value().ptr();
  if (it->iter_kind() != Variable::IterKind::kConstSeq || !PyRange_Check(range)) {
    return false;
  }
  const Py_ssize_t pos = it->position();
  const Py_ssize_t n = PyObject_Length(range);
  if (n < 0) {
    PyErr_Clear();
    return false;
  }
  // (a short loop unrolls, but for one of single elements the backend compiles natively: tried as
  // a loop op, unrolled when it is not one)
  graph::Backend* backend = graph::find_backend(shared_->backend);
  site->short_loop = n - pos <= kLoopUnrollMax;
  if (site->short_loop &&
      (pos > 0 || n - pos < 2 || backend == nullptr || !backend->compiles_loops())) {
    return false;
  }
  site->trips = n - pos;
  const auto rng = py::reinterpret_borrow<py::object>(range);
  try {
    site->step = rng.attr("step").cast<std::int64_t>();
    const auto start = rng.attr("start").cast<std::int64_t>();
    // (A loop op computes its variable as a 64-bit int: every value the loop takes must be one.)
    if (!graph::linear_in_int64(start, site->step, pos, &site->start) ||
        !graph::linear_in_int64(site->start, site->step, site->trips - 1, &site->last_index)) {
      return false;
    }
  } catch (const py::cast_error&) {
    return false;  // (a range past 64-bit ints)
  }
  if (runtime_range_ && runtime_range_->range.ptr() == range) {
    site->start_value = runtime_range_->start;
    site->stop_value = runtime_range_->stop;
  }
  site->first = py::reinterpret_steal<py::object>(PySequence_GetItem(range, pos));
  site->final = py::reinterpret_steal<py::object>(PySequence_GetItem(range, n - 1));
  if (!site->first || !site->final) {
    PyErr_Clear();
    return false;
  }
  return true;
}

bool OpcodeExecutor::rows_loop_bounds(const VarPtr& it, LoopSite* site) {
  if (it->iter_kind() != Variable::IterKind::kList || !is_array_like(it->items()[0])) {
    return false;
  }
  const ArrayOperand x = array_operand(it->items()[0]);
  if (x.kind != ArrayOperand::Kind::kValue) {
    return false;
  }
  const ValueInfo info = array_info(x.id);
  if (info.scalar || info.ndim() == 0) {
    return false;
  }
  const std::int64_t n = static_info(x.id).shape[0];
  const Py_ssize_t pos = it->position();
  // (a short loop unrolls unless the backend's native code runs it: range_loop_bounds' rule)
  graph::Backend* backend = graph::find_backend(shared_->backend);
  site->short_loop = n - pos <= kLoopUnrollMax;
  if (site->short_loop &&
      (pos > 0 || n - pos < 2 || backend == nullptr || !backend->compiles_loops())) {
    return false;
  }
  site->rows = it->items()[0];
  site->trips = n - pos;
  site->start = pos;
  site->step = 1;
  site->last_index = n - 1;
  site->reads_var = true;  // (the row is made in the body from the step's index)
  return true;
}

bool OpcodeExecutor::capture_loop(const bytecode::Instruction& ins, const VarPtr& it) {
  // At the loop's first step, or after one or two steps unrolled ("peeled": a value that changes
  // kind on the first steps, a Python float becoming a NumPy scalar, stays the same after).
  if (it->position() < 0 || it->position() > kLoopPeelMax || numpy_module().is_none() ||
      depth_ >= kMaxInlineDepth || under_handler(ins) || shared_->calls_under_handler > 0 ||
      arrays().errors_raise) {
    return false;
  }
  LoopSite site;
  if (!loop_shape(ins, &site)) {
    return false;
  }
  // enumerate(...) of a range or of an array's rows: the counter is a second loop variable; zip(a,
  // b) of two of them, as long as each other: b's index is that second variable
  VarPtr source = it;
  VarPtr second;
  const auto kind = it->iter_kind();
  if (site.counter >= 0 || kind == Variable::IterKind::kEnumerate ||
      kind == Variable::IterKind::kZip) {
    if (site.counter < 0 || (kind != Variable::IterKind::kEnumerate &&
                             !(kind == Variable::IterKind::kZip && it->items().size() == 2))) {
      return false;
    }
    source = it->items()[0];
    if (__builtin_add_overflow(it->start(), it->position(), &site.counter_start)) {
      return false;
    }
    if (kind == Variable::IterKind::kZip) {
      second = it->items()[1];
      std::swap(site.var, site.counter);  // (the first target takes the first source's item)
      site.zip = true;
      site.reads_var = true;
    }
  }
  if (source->position() < 0 ||
      !(range_loop_bounds(source, &site) || rows_loop_bounds(source, &site))) {
    return false;
  }
  std::int64_t last_count = 0;
  if (site.counter >= 0 &&
      !graph::linear_in_int64(site.counter_start, 1, site.trips - 1, &last_count)) {
    return false;  // (enumerate's count past 64-bit ints)
  }
  if (second) {
    LoopSite other;
    if (second->position() < 0 ||
        !(range_loop_bounds(second, &other) || rows_loop_bounds(second, &other)) ||
        other.trips != site.trips || other.step != 1) {
      return false;
    }
    site.counter_start = other.start;
    site.second_rows = other.rows;
  }
  site.locals = locals_;
  site.stack = stack_;
  const LoopSite initial = site;
  // (an attempt that found lists appended to is made again with them as buffers: loop_lists.cpp)
  for (int attempt = 0;; ++attempt) {
    site.mark = mark();
    bool ok = false;
    {
      const LoopDepth depth(&shared_->loop_depth);
      try {
        loop_numbers(&site);
        if (buffer_lists(&site)) {
          loop_placeholders(&site);
          ok = simulate_loop_body(&site) && loop_state_ok(&site) && loop_exit_ok(&site, it) &&
               lists_ok(&site);
        }
      } catch (const Stop&) {
        ok = false;
      }
    }
    if (ok) {
      break;
    }
    abandon_loop(site);
    // (lists appended to as buffers, loop_lists.cpp; Python floats that become NumPy scalars as
    // ones from the loop's entry, promotes)
    const bool lists = next_list_plans(&site);
    if (attempt >= 2 || (!lists && site.promotable.empty())) {
      return false;
    }
    std::vector<LoopSite::Appended> plans = std::move(site.buffered);
    std::vector<int> promote = std::move(site.promote);
    promote.insert(promote.end(), site.promotable.begin(), site.promotable.end());
    site = initial;
    site.buffered = std::move(plans);
    site.promote = std::move(promote);
  }
  if (scalar_loop(site) || body_needs_native(site)) {
    return false;  // (unrolled)
  }
  if (!runtime_loop_ok(site)) {
    abandon_loop(site);
    return false;
  }
  emit_loop_op(&site);
  lists_after_loop(site);
  for (const VarPtr& part : {source, second}) {
    if (part && part != it) {
      remember(part);
      part->set_position(-1);  // (exhausted with the enumerate or zip around it)
    }
  }
  return true;
}

void OpcodeExecutor::loop_numbers(LoopSite* site) {
  // The Python ints and floats the body stores (a counter, a time) become values of the graph
  // (constants of the frame's graph), so that each step reads the last one's.
  for (const int slot : site->stored) {
    VarPtr& v = locals_[static_cast<std::size_t>(slot)];
    if (slot == site->var || slot == site->counter || !v || v->kind() != Variable::Kind::kConst) {
      continue;
    }
    const NumberOperand n = number_operand(v);
    if (n.kind == 'f' &&
        std::find(site->promote.begin(), site->promote.end(), slot) != site->promote.end()) {
      v = promoted_float(v);  // (a float64 scalar from the loop's entry: promotes)
    } else if (n.kind != 0) {
      v = Variable::array(number_value(n), n.kind == 'i' ? "Python int" : "Python float");
    }
  }
}

void OpcodeExecutor::loop_placeholders(LoopSite* site) {
  ArrayState& a = arrays();
  const auto names = py::reinterpret_borrow<py::tuple>(inputs_.code->co_localsplusnames);
  std::vector<std::pair<int, int>> outer;  // (slot, value)
  for (const int slot : site->stored) {
    if (slot == site->var || slot == site->counter) {
      continue;  // (stored before the body runs: never carried)
    }
    const VarPtr& v = locals_[static_cast<std::size_t>(slot)];
    if (v && v->kind() == Variable::Kind::kArray) {
      outer.emplace_back(slot, v->graph_id());
    } else if (v && v->kind() == Variable::Kind::kObject && is_array_like(v)) {
      const ArrayOperand op = array_operand(v);
      if (op.kind == ArrayOperand::Kind::kValue) {
        outer.emplace_back(slot, op.id);
      }
    }
  }
  // (inputs found above are the frame's; the body's values start here)
  site->values = a.graph.values().size();
  site->ops = a.graph.ops().size();
  site->inputs = a.graph.inputs().size();
  site->serial = Variable::last_serial();
  for (const auto& [slot, id] : outer) {
    const ValueInfo info = array_info(id);
    if (info.is_tuple()) {
      continue;
    }
    LoopSite::Carried c;
    c.slot = slot;
    c.outer = id;
    c.placeholder = a.graph.add_placeholder(info, str_of(names[static_cast<std::size_t>(slot)]));
    a.carried_from[c.placeholder] = id;
    locals_[static_cast<std::size_t>(slot)] = Variable::array(c.placeholder, info.text());
    site->carried.push_back(c);
  }
  // A loop variable: a Python int on each step (weak in NumPy's promotion), from lo to hi.
  const auto int_placeholder = [&a](const std::string& name, std::int64_t lo, std::int64_t hi) {
    ValueInfo info;
    info.dtype = graph::DType::kInt64;
    info.scalar = true;
    info.python = 'i';
    const int id = a.graph.add_placeholder(info, name);
    a.loop_indices[id] = {lo, hi};
    return id;
  };
  if (site->reads_var) {
    site->index = int_placeholder(
        site->rows ? std::string("row index") : str_of(names[static_cast<std::size_t>(site->var)]),
        std::min(site->start, site->last_index), std::max(site->start, site->last_index));
  }
  if (site->counter >= 0) {
    site->counter_index =
        int_placeholder(str_of(names[static_cast<std::size_t>(site->counter)]), site->counter_start,
                        site->counter_start + site->trips - 1);
  }
  site->body_locals = locals_;
}

bool OpcodeExecutor::simulate_loop_body(LoopSite* site) {
  const auto& code = code_.instructions();
  VarPtr item = site->rows         ? array_row_at(site->rows, site->index, site->start)  // x[t]
                : site->index >= 0 ? Variable::array(site->index, "the loop variable")
                                   : Variable::constant(site->first);
  if (site->zip) {
    VarPtr other = site->second_rows
                       ? array_row_at(site->second_rows, site->counter_index, site->counter_start)
                       : Variable::array(site->counter_index, "the loop variable");
    item = Variable::tuple({item, other});
  } else if (site->counter >= 0) {
    item = Variable::tuple({Variable::array(site->counter_index, "the loop counter"), item});
  }
  push(std::move(item));
  // (the head of an outer loop's body again once this body is simulated; an `if` in this body may
  // leave this loop, loop_exits.cpp)
  const ScopedSet<std::size_t> head(&loop_head_, site->for_pc);
  const ScopedSet<LoopSite*> body(&body_loop_, site);
  site->body_conds = shared_->cond_depth;
  next_ = site->for_pc + 1;
  for (;;) {
    pc_ = next_;
    if (pc_ <= site->for_pc || pc_ >= site->exit) {
      site->why = "the body leaves the loop";
      return false;
    }
    if (++result_.simulated > kMaxSteps) {
      site->why = "the body is too long";
      return false;
    }
    next_ = pc_ + 1;
    step(code[pc_]);
    if (next_ == site->for_pc) {
      return true;
    }
  }
}

bool OpcodeExecutor::loop_state_ok(LoopSite* site) {
  if (stack_ != site->stack || cleared_.size() != site->mark.cleared ||
      effects().changed_since(site->mark.effects, site->serial)) {
    site->why = "the body changes values other than its locals";
    return false;
  }
  for (std::size_t slot = 0; slot < locals_.size(); ++slot) {
    const VarPtr& before = site->body_locals[slot];
    VarPtr after = locals_[slot];
    const VarPtr& entry = site->locals[slot];
    if (after == before || (after && entry && after->is_const() && entry->is_const() &&
                            same_constant(after->value(), entry->value()))) {
      continue;  // (a constant stored again: the same on every step)
    }
    if ((static_cast<int>(slot) == site->var && site->stored.count(site->var) == 0) ||
        (static_cast<int>(slot) == site->counter && site->stored.count(site->counter) == 0)) {
      continue;  // (the value FOR_ITER stored)
    }
    if (static_cast<int>(slot) == site->var && after && after->is_const()) {
      site->var_after = after;  // the body's own store, the same on every step
      continue;
    }
    if (after && after->kind() == Variable::Kind::kObject && is_array_like(after)) {
      const ArrayOperand op = array_operand(after);
      after = Variable::array(op.id, array_info(op.id).text());
    }
    const bool array = after && after->kind() == Variable::Kind::kArray &&
                       !arrays().is_loop_index(after->graph_id());
    auto c =
        std::find_if(site->carried.begin(), site->carried.end(),
                     [&](const LoopSite::Carried& x) { return x.slot == static_cast<int>(slot); });
    if (array && c != site->carried.end() &&
        same_array_info(array_info(c->placeholder), array_info(after->graph_id()))) {
      c->out = after->graph_id();
      continue;
    }
    if (array && c != site->carried.end() &&
        promotes(*site, static_cast<int>(slot), c->placeholder, after->graph_id())) {
      site->promotable.push_back(static_cast<int>(slot));
      site->why = "a Python float becomes a NumPy scalar (the loop is tried again with one)";
      return false;
    }
    // (a while loop may run no step: every value it leaves must have one before it)
    const bool fresh =
        !site->is_while && (!site->locals[slot] || static_cast<int>(slot) == site->var ||
                            static_cast<int>(slot) == site->counter);
    if (array && fresh && !array_info(after->graph_id()).is_tuple()) {
      site->last.emplace_back(static_cast<int>(slot), after->graph_id());
      continue;
    }
    // (a constant the step made from constants alone: unbound before, it is read in the step only
    // after the step stored it; a range known only where the graph runs may run no step)
    if (fresh && after && after->is_const() && site->start_value < 0) {
      site->last_constants.emplace_back(static_cast<int>(slot), after);
      continue;
    }
    // (a while loop's temporary, `x_new`: unbound before the loop and read nowhere outside it;
    // left unbound after the loop op, as a loop of no steps leaves it, since nothing reads it)
    if (site->is_while && !site->locals[slot] &&
        never_read(static_cast<int>(slot), site->top, site->back + 1)) {
      site->dead.push_back(static_cast<int>(slot));
      continue;
    }
    site->why = "a local changes in a way the next step would see";
    return false;
  }
  return true;
}

bool OpcodeExecutor::promotes(const LoopSite& site, int slot, int placeholder, int end) {
  // `b = 0.0` before a loop with an exit whose step computes `b -= lr * err.mean()` (a float64
  // NumPy scalar): the first step cannot be unrolled (its exit's `if` would break the graph), so
  // b may be np.float64(0.0) from the loop's entry where nothing could tell the two apart - a
  // `for` loop over a range of known length (a step runs), whose every op reading b is NumPy's
  // add, subtract or multiply of it and a float64 value (the same float64 value for a Python
  // float as for np.float64, and the same kind). An exit before b's new value hands b on, a
  // cond op reading it: not one of those.
  const VarPtr& before = site.locals[static_cast<std::size_t>(slot)];
  const graph::Graph& g = arrays().graph;
  const ValueInfo ph = array_info(placeholder);
  const ValueInfo made = array_info(end);
  if (site.is_while || site.start_value >= 0 || site.step_tests.empty() || !before ||
      !before->is_const() || !PyFloat_CheckExact(before->value().ptr()) || ph.python != 'f' ||
      made.python != 0 || !made.scalar || made.dtype != graph::DType::kFloat64) {
    return false;
  }
  const auto float64 = [&](const Arg& a) {
    if (a.kind != Arg::Kind::kValue) {
      return false;
    }
    const ValueInfo i = array_info(a.value);
    return a.value != placeholder && !i.is_tuple() && i.python == 0 &&
           i.dtype == graph::DType::kFloat64;
  };
  for (std::size_t k = site.ops; k < g.ops().size(); ++k) {
    const graph::Op& op = g.ops()[k];
    bool reads = false;
    graph::for_each_value(op, [&](int v) { reads = reads || v == placeholder; });
    if (!reads) {
      continue;
    }
    const bool arith = op.name == "add" || op.name == "subtract" || op.name == "multiply";
    if (!arith || op.args.size() != 2 || !op.kwargs.empty() || op.mutates ||
        array_info(op.result).python != 0 || !(float64(op.args[0]) || float64(op.args[1]))) {
      return false;
    }
  }
  return true;
}

VarPtr OpcodeExecutor::promoted_float(const VarPtr& v) {
  graph::Op g;
  g.name = "scalar";
  g.fn = numpy_module().attr("float64");
  g.args = {Arg::constant_of(v->value())};
  guards_->value(v);
  ValueInfo info;
  info.dtype = graph::DType::kFloat64;
  info.scalar = true;
  return add_array_op(std::move(g), info);
}

// A loop op whose steps compute single elements alone (Python numbers, NumPy scalars, one-element
// arrays) runs each step as a graph call from Python objects: slower than CPython's own loop on the
// same elements (`for i in range(n): s += i * i` took 4.4x plain, `for v in x: s += float(v)` 3.5x,
// 180 ns a step against 50). Such a loop is not one: a short `for` loop of Python numbers on
// constants alone unrolls (its steps fold to constants), any other breaks the graph where it
// starts, and CPython runs it and the rest of the frame as written. A step that writes more than
// one element of an array (one element of a 1-d array, out[i] = v, is element work), or makes or
// reads an array of more than one element, keeps the loop op.
void OpcodeExecutor::abandon_loop(const LoopSite& site) {
  unbuffer_lists(site);
  if (!site.why.empty()) {
    const std::size_t first = site.is_while ? std::min(site.top, site.test_pc) : site.for_pc;
    declined_loop_ = {first, site.exit, site.why};
  }
  rollback(site.mark);
  locals_ = site.locals;
  stack_ = site.is_while ? site.test_stack : site.stack;
  pc_ = site.is_while ? site.test_pc : site.for_pc;
  next_ = pc_ + 1;
  clear_result();
  in_group_ = false;
  kwnames_ = py::object();
  break_stack_ = nullptr;
}

OpcodeExecutor::BuiltLoop OpcodeExecutor::build_loop(const LoopSite& site) const {
  const graph::Graph& g = shared_->arrays->graph;  // the frame's graph with the body's ops
  const std::size_t nvalues = g.values().size();
  BuiltLoop built;
  graph::LoopSpec& spec = built.spec;
  std::vector<int>& outer_args = built.outer_args;  // body input k -> the frame's value
  spec.trips = site.is_while ? -1 : site.trips;
  std::vector<int> body_id(nvalues, -1);
  std::vector<int> placeholder_of(nvalues, -1);
  for (const LoopSite::Carried& c : site.carried) {
    placeholder_of[static_cast<std::size_t>(c.placeholder)] = c.outer;
    if (c.out >= 0) {
      const graph::Value& v = g.value(c.placeholder);
      body_id[static_cast<std::size_t>(c.placeholder)] = spec.body.add_input(v.info, v.name);
      outer_args.push_back(c.outer);
    }
  }
  spec.ncarried = outer_args.size();
  if (site.index >= 0) {
    const graph::Value& v = g.value(site.index);
    body_id[static_cast<std::size_t>(site.index)] = spec.body.add_input(v.info, v.name);
    spec.index_input = static_cast<int>(spec.ncarried);
    spec.start = site.start;
    spec.step = site.step;
  }
  spec.runtime_bounds = site.start_value >= 0;
  if (site.counter_index >= 0) {
    const graph::Value& v = g.value(site.counter_index);
    spec.counter_input = static_cast<int>(spec.ncarried) + (site.index >= 0 ? 1 : 0);
    body_id[static_cast<std::size_t>(site.counter_index)] = spec.body.add_input(v.info, v.name);
    spec.counter_start = site.counter_start;
  }
  auto body_value = [&](int v) {
    const auto k = static_cast<std::size_t>(v);
    if (body_id[k] >= 0) {
      return body_id[k];
    }
    const graph::Value& value = g.value(v);
    if (k >= site.values && value.source == graph::Value::Source::kConst) {
      body_id[k] = spec.body.add_constant(value.constant, value.info);
    } else {
      body_id[k] = spec.body.add_input(value.info, value.name.empty() ? "loop input" : value.name);
      outer_args.push_back(placeholder_of[k] >= 0 ? placeholder_of[k] : v);
    }
    return body_id[k];
  };
  graph::copy_ops(g, site.ops, g.ops().size(), &spec.body, &body_id, body_value);
  for (const LoopSite::Carried& c : site.carried) {
    if (c.out >= 0) {
      spec.outputs.push_back(body_value(c.out));
      built.out_infos.push_back(g.value(c.placeholder).info);
    }
  }
  for (const auto& [slot, v] : site.last) {
    spec.outputs.push_back(body_value(v));
    built.out_infos.push_back(g.value(v).info);
  }
  for (const int v : site.exit_values) {  // (loop_exits.cpp)
    spec.outputs.push_back(body_value(v));
    built.out_infos.push_back(g.value(v).info);
  }
  for (const LoopSite::Test& t : site.step_tests) {  // (outputs of the body, not of the op)
    spec.outputs.push_back(body_value(t.value));
    spec.step_go_on_if.push_back(t.go_on_if);
  }
  for (const LoopSite::Test& t : site.entry_tests) {  // (arguments of the op, not of the body)
    spec.entry_go_on_if.push_back(t.go_on_if);
  }
  return built;
}

void OpcodeExecutor::emit_loop_op(LoopSite* site) {
  ArrayState& a = arrays();
  const graph::Graph g = a.graph;  // the frame's graph with the body's ops
  BuiltLoop built = build_loop(*site);
  graph::LoopSpec& spec = built.spec;
  const std::vector<int>& outer_args = built.outer_args;
  const std::vector<ValueInfo>& out_infos = built.out_infos;
  // The frame's graph without the body: the inputs the body found stay inputs of the frame.
  const std::vector<int> moved = a.cut_back(g, {site->values, site->ops, site->inputs});
  graph::Op loop;
  loop.name = "loop";
  loop.mutates = spec.body.has_mutation();
  for (const int v : outer_args) {
    loop.args.push_back(Arg::of(moved[static_cast<std::size_t>(v)]));
  }
  for (const LoopSite::Test& t : site->entry_tests) {  // (arguments of the op, not of the body)
    loop.args.push_back(Arg::of(t.value));
  }
  if (site->start_value >= 0) {  // (a range known where it runs: its bounds, the last arguments)
    loop.args.push_back(Arg::of(moved[static_cast<std::size_t>(site->start_value)]));
    loop.args.push_back(Arg::of(moved[static_cast<std::size_t>(site->stop_value)]));
  }
  const std::size_t line_pc = site->is_while ? site->test_pc : site->for_pc;
  loop.line = code_.instructions()[line_pc].position.line;
  loop.fn = graph::make_loop_callable(std::move(spec));
  ValueInfo tuple;
  tuple.parts = static_cast<int>(out_infos.size());
  const int loop_id = a.graph.add_op(std::move(loop), tuple);
  std::vector<int> outs;
  for (std::size_t k = 0; k < out_infos.size(); ++k) {
    graph::Op out;
    out.name = "loop_output";
    out.fn = loaded_module("operator").attr("getitem");
    out.args = {Arg::of(loop_id), Arg::constant_of(py::int_(k))};
    out.view = true;  // (it may be an array the frame also holds: never reused for another result)
    out.line = code_.instructions()[line_pc].position.line;
    outs.push_back(a.graph.add_op(std::move(out), out_infos[k]));
  }
  loop_locals_after(*site, outs, out_infos);
}

void OpcodeExecutor::loop_locals_after(const LoopSite& site, const std::vector<int>& outs,
                                       const std::vector<ValueInfo>& out_infos) {
  // The locals after the loop: carried and last values from the loop op, the loop variables'
  // last values, the others as before.
  std::size_t k = 0;
  for (const LoopSite::Carried& c : site.carried) {
    const auto slot = static_cast<std::size_t>(c.slot);
    locals_[slot] = c.out >= 0 ? Variable::array(outs[k], out_infos[k].text()) : site.locals[slot];
    k += c.out >= 0 ? 1 : 0;
  }
  for (const auto& [slot, v] : site.last) {
    locals_[static_cast<std::size_t>(slot)] = Variable::array(outs[k], out_infos[k].text());
    ++k;
  }
  for (const auto& [slot, v] : site.last_constants) {
    locals_[static_cast<std::size_t>(slot)] = v;
  }
  for (const int slot : site.dead) {
    locals_[static_cast<std::size_t>(slot)] = nullptr;
  }
  loop_exit_values(site, outs, out_infos, k);
  if (site.var < 0 || site.var_out) {
    return;  // (a while loop, or the loop variable's last value from the op)
  }
  if (site.start_value >= 0) {
    // (the loop variable, read nowhere after the loop, as it was: a range of no steps)
    locals_[static_cast<std::size_t>(site.var)] = site.locals[static_cast<std::size_t>(site.var)];
    return;
  }
  if (site.stored.count(site.var) == 0) {
    locals_[static_cast<std::size_t>(site.var)] =
        site.rows ? array_row(site.rows, static_cast<Py_ssize_t>(site.last_index))
                  : Variable::constant(site.final);
  } else if (site.var_after) {
    locals_[static_cast<std::size_t>(site.var)] = site.var_after;
  }
  if (site.counter >= 0 && site.stored.count(site.counter) == 0) {
    const std::int64_t last = site.counter_start + site.trips - 1;
    locals_[static_cast<std::size_t>(site.counter)] =
        site.second_rows ? array_row(site.second_rows, static_cast<Py_ssize_t>(last))
                         : Variable::constant(py::int_(last));
  }
}

}  // namespace sot::translator
