// Ifs on values of the graph as cond ops. `if row.sum() > 0:` would break the graph at its jump;
// instead each way is simulated from the jump to where the two meet, and the `if` becomes one op
// of the graph (graph/exec/cond_op.hpp) that runs the way its test picks where the graph runs:
// - the ways: the jump's fall-through way runs to the jump's target (an `if` without `else`) or to
//   the unconditional jump just before it (the end of the `if` block: its destination is where the
//   ways meet, after the `else` block or back at a loop's head); the other way from the target to
//   that place. A way that leaves elsewhere (a `break`, a `return`) ends the attempt;
// - each way, as a loop's step (loop_capture.cpp), may only change locals: nothing recorded to
//   replay, the stack as it was, no Variable from before changed;
// - the locals either way changed are the op's outputs: in each way an array or Python number of
//   the graph, or a Python number constant (a constant of that way's graph), of the same dtype,
//   shape and kind both ways; a way that did not change one hands on the value it had;
// - each way's ops move out of the frame's graph into a graph of their own.
// Anything else puts every value back as it was at the jump, which then breaks the graph as before.
// An `if` inside a way is not captured (the outer attempt ends), nor one inside an unrolled loop
// (each step would pay for the op: slower than plain Python's branch). One inside a loop body
// captured as a loop op is, where the backend compiles loops natively: the loop op then stays only
// where its native code holds the cond op (loop_capture.cpp, body_needs_native).
#include <algorithm>
#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bytecode/opcode_table.hpp"
#include "core/loaded_module.hpp"
#include "graph/exec/backend.hpp"
#include "graph/exec/cond_op.hpp"
#include "graph/ir/arg_values.hpp"
#include "translator/control/if_site.hpp"
#include "translator/control/loop_site.hpp"
#include "translator/executor_support.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

using graph::Arg;
using graph::ValueInfo;

namespace {

// A jump back from after instruction `pc` to it or before it: `pc` is inside a loop.
bool in_loop(const bytecode::Bytecode& code, std::size_t pc) {
  const auto& ins = code.instructions();
  for (std::size_t k = pc; k < ins.size(); ++k) {
    if (ins[k].target >= 0 && code.index_of(ins[k].target) <= pc) {
      return true;
    }
  }
  return false;
}

}  // namespace

py::object OpcodeExecutor::IfSite::Output::truth(const ValueInfo& info, bool value) {
  return info.python == 'b' ? py::object(py::bool_(value)) : numpy_module().attr("bool_")(value);
}

bool OpcodeExecutor::simulate_way(IfSite* site, std::size_t start, bool first) {
  // The fall-through way (`first`) finds where the ways meet; the other runs to it.
  const auto& code = code_.instructions();
  next_ = start;
  bool past_target = false;  // (the fall-through way jumped over the other's start)
  for (;;) {
    pc_ = next_;
    if (first && pc_ == site->target && !past_target) {
      site->join = pc_;  // (no `else`: the way runs into the other's start)
      return true;
    }
    if (first && pc_ == loop_head_ && loop_head_ < site->jump) {
      site->join = pc_;  // (back at the head of the loop whose body this is: the step's end)
      return true;
    }
    if (!first && pc_ == site->join) {
      return true;
    }
    past_target = past_target || (first && pc_ > site->target);
    if (pc_ >= code.size() || pc_ <= site->jump || (past_target && loop_head_ >= site->jump) ||
        ++result_.simulated > kMaxSteps) {
      return false;  // (a way that leaves the `if`: a break, a jump back from inside it)
    }
    const bytecode::Instruction& at = code[pc_];
    const std::string name = bytecode::opcode_info(at.opcode).name;
    if (bytecode::opcode_info(at.opcode).is_unconditional_jump()) {
      const std::size_t to = code_.index_of(at.target);
      if (first && pc_ + 1 == site->target && (to > pc_ || to <= site->jump)) {
        site->join = to;  // (the `if` block's last jump: past the `else` block, or a loop's head)
        return true;
      }
      if (!first && to == site->join) {
        return true;
      }
    }
    if (name == "RETURN_VALUE" || name == "RETURN_CONST") {
      return false;
    }
    next_ = pc_ + 1;
    const std::uint64_t made = conds_made_;
    step(at);
    if (first && conds_made_ != made && last_cond_target_ == site->target &&
        next_ == last_cond_join_) {
      // (`if a and b: ... else: ...`: the second test's cond op, inside this way, jumped to the
      // same `else` block and met its way where the first's ways meet)
      site->join = next_;
      return true;
    }
  }
}

bool OpcodeExecutor::never_read(int slot, std::size_t skip_from, std::size_t skip_to) const {
  // (after an `if`: whether the local is bound cannot be seen)
  if (cell_slot(slot)) {
    return false;
  }
  const auto& code = code_.instructions();
  for (std::size_t k = 0; k < code.size(); ++k) {
    if (k >= skip_from && k < skip_to) {
      continue;
    }
    const bytecode::Instruction& ins = code[k];
    const auto& info = bytecode::opcode_info(ins.opcode);
    const std::string name = info.name;
    if (info.arg_kind == bytecode::ArgKind::kLocal) {
      if (ins.arg == slot && name != "STORE_FAST") {
        return false;
      }
    } else if (info.arg_kind == bytecode::ArgKind::kLocalPair) {
      const bool first = (ins.arg >> 4) == slot;
      const bool second = (ins.arg & 15) == slot;
      const bool stores_first = name.rfind("STORE_FAST", 0) == 0;
      const bool stores_second = name == "STORE_FAST_STORE_FAST";
      if ((first && !stores_first) || (second && !stores_second)) {
        return false;
      }
    }
  }
  return true;
}

bool OpcodeExecutor::way_ok(IfSite* site, std::size_t w) const {
  // (the stack as at the jump, with the values of a conditional expression above it, or less of it
  // where the way met the other back at the loop's head)
  const std::vector<VarPtr>& at_jump = site->stack_after;
  const std::size_t n = std::min(at_jump.size(), stack_.size());
  site->kept[w] = static_cast<std::size_t>(
      std::mismatch(at_jump.begin(), at_jump.begin() + static_cast<std::ptrdiff_t>(n),
                    stack_.begin())
          .first -
      at_jump.begin());
  const bool stack_ok = site->kept[w] == at_jump.size() || site->join == loop_head_;
  return stack_ok && cleared_.size() == site->mark.cleared &&
         !effects().changed_since(site->mark.effects, site->serial);
}

bool OpcodeExecutor::way_value(const VarPtr& v, int* id, ValueInfo* info, py::object* constant) {
  // A way's value for an output: a value of the graph, or a Python int or float constant.
  if (!v) {
    return false;
  }
  if (v->kind() == Variable::Kind::kConst) {
    const NumberOperand n = number_operand(v);
    if (n.kind == 0) {
      return false;
    }
    *constant = v->value();
    info->dtype = n.kind == 'i' ? graph::DType::kInt64 : graph::DType::kFloat64;
    info->scalar = true;
    info->python = n.kind;
    return true;
  }
  int g = -1;
  if (v->kind() == Variable::Kind::kArray) {
    g = v->graph_id();
  } else if (v->kind() == Variable::Kind::kObject && is_array_like(v)) {
    const ArrayOperand op = array_operand(v);
    g = op.kind == ArrayOperand::Kind::kValue ? op.id : -1;
  }
  if (g < 0 || (arrays().is_loop_index(g) && !index_values_)) {
    return false;
  }
  *id = g;
  *info = array_info(g);
  return !info->is_tuple();
}

bool OpcodeExecutor::cond_output(IfSite* site, const std::array<VarPtr, 2>& way, int slot,
                                 int stack) {
  // One output: both ways' values handed on as one (false when they cannot be).
  IfSite::Output out;
  out.slot = slot;
  out.stack = stack;
  std::array<ValueInfo, 2> infos;
  for (std::size_t w = 0; w < 2; ++w) {
    if (!way_value(way[w], &out.id[w], &infos[w], &out.constant[w])) {
      return false;
    }
  }
  if (!same_array_info(infos[0], infos[1])) {
    return false;
  }
  out.info = infos[0];
  site->outputs.push_back(std::move(out));
  return true;
}

bool OpcodeExecutor::cond_outputs(IfSite* site) {
  // A local the loop being captured binds in its body alone, read nowhere outside the loop (`grad
  // = X.T @ r` after an exit's test): where a way leaves it unbound, it stays unbound (a read
  // later in the step, or on the next before a store, is of an unbound local: the capture ends).
  const auto loop_temporary = [this](std::size_t slot) {
    const LoopSite* loop = body_loop_;
    if (loop == nullptr || slot >= loop->locals.size() || loop->locals[slot]) {
      return false;
    }
    const std::size_t from = loop->is_while ? std::min(loop->top, loop->test_pc) : loop->for_pc;
    const std::size_t to = loop->is_while ? loop->back + 1 : loop->exit;
    return never_read(static_cast<int>(slot), from, to);
  };
  // The locals either way changed, each a value both ways can hand on as one.
  for (std::size_t slot = 0; slot < site->locals.size(); ++slot) {
    const VarPtr& entry = site->locals[slot];
    const std::array<VarPtr, 2> way = {site->way_locals[0][slot], site->way_locals[1][slot]};
    if (way[0] == entry && way[1] == entry) {
      continue;
    }
    if (way[0] && way[1] && way[0]->is_const() && way[1]->is_const() &&
        same_constant(way[0]->value(), way[1]->value())) {
      site->same.emplace_back(static_cast<int>(slot), way[0]);
      continue;
    }
    if ((!way[0] || !way[1]) &&
        (never_read(static_cast<int>(slot)) || (!entry && loop_temporary(slot)))) {
      site->same.emplace_back(static_cast<int>(slot), nullptr);  // (`for _ in ...` in one way)
      continue;
    }
    if (!cond_output(site, way, static_cast<int>(slot), -1)) {
      return false;
    }
  }
  // The values a conditional expression leaves on the stack, as many both ways.
  if (site->way_stack[0].size() != site->way_stack[1].size()) {
    return false;
  }
  for (std::size_t k = 0; k < site->way_stack[0].size(); ++k) {
    const std::array<VarPtr, 2> way = {site->way_stack[0][k], site->way_stack[1][k]};
    if (way[0] == way[1] || (way[0]->is_const() && way[1]->is_const() &&
                             same_constant(way[0]->value(), way[1]->value()))) {
      site->stack_values.push_back(way[0]);
      continue;
    }
    site->stack_values.push_back(nullptr);
    if (!cond_output(site, way, -1, static_cast<int>(k))) {
      return false;
    }
  }
  if (!exit_test_outputs(site)) {
    return false;
  }
  // (a cond op of no outputs only changes arrays in place: `if v > m: h[k] += 1` in a loop body;
  // at the top of a frame such an `if` still breaks)
  if (!site->outputs.empty() || shared_->loop_depth == 0) {
    return !site->outputs.empty();
  }
  const auto& ops = arrays().graph.ops();
  for (std::size_t w = 0; w < 2; ++w) {
    for (std::size_t k = site->ops_from[w]; k < site->ops_to[w]; ++k) {
      if (ops[k].mutates) {
        return true;
      }
    }
  }
  return false;
}

bool OpcodeExecutor::build_cond(IfSite* site, graph::CondSpec* spec, std::vector<int>* outer) {
  // Each way's ops into a graph of its own; `outer`: the op's arguments after the test (ids of the
  // frame's graph as it is now: values from before the `if`, or inputs a way found).
  const graph::Graph& g = arrays().graph;
  std::map<int, int> arg_of;  // frame value -> its position in `outer`
  for (std::size_t w = 0; w < 2; ++w) {
    graph::Graph& body = spec->body[w];
    std::vector<int> body_id(g.values().size(), -1);
    bool ok = true;
    auto body_value = [&](int v) {
      const auto k = static_cast<std::size_t>(v);
      if (body_id[k] >= 0) {
        return body_id[k];
      }
      const graph::Value& value = g.value(v);
      const bool mine = k >= site->values_from[w] && k < site->values_to[w];
      const bool found_input = value.source == graph::Value::Source::kInput && value.input >= 0;
      if (mine && value.source == graph::Value::Source::kConst) {
        body_id[k] = body.add_constant(value.constant, value.info);
      } else if (k < site->values || found_input) {
        body_id[k] = body.add_input(value.info, value.name.empty() ? "input" : value.name);
        auto [it, fresh] = arg_of.emplace(v, static_cast<int>(outer->size()));
        if (fresh) {
          outer->push_back(v);
        }
        spec->args[w].push_back(it->second);
      } else {
        ok = false;  // (a value of the other way, or a placeholder made on the way)
        body_id[k] = body.add_input(value.info, "?");
      }
      return body_id[k];
    };
    graph::copy_ops(g, site->ops_from[w], site->ops_to[w], &body, &body_id, body_value);
    for (const IfSite::Output& out : site->outputs) {
      spec->outputs[w].push_back(out.id[w] >= 0 ? body_value(out.id[w])
                                                : body.add_constant(out.constant[w], out.info));
    }
    if (!ok) {
      return false;
    }
  }
  return true;
}

std::vector<int> OpcodeExecutor::add_cond_op(int test, const std::vector<int>& args,
                                             graph::CondSpec spec,
                                             const std::vector<ValueInfo>& infos,
                                             const bytecode::Instruction& at) {
  ArrayState& a = arrays();
  graph::Op cond;
  cond.name = "cond";
  cond.mutates = spec.body[0].has_mutation() || spec.body[1].has_mutation();
  cond.args.push_back(Arg::of(test));
  for (const int v : args) {
    cond.args.push_back(Arg::of(v));
  }
  cond.line = at.position.line;
  cond.fn = graph::make_cond_callable(std::move(spec));
  ValueInfo tuple;
  tuple.parts = static_cast<int>(infos.size());
  const int cond_id = a.graph.add_op(std::move(cond), tuple);
  std::vector<int> ids;
  for (std::size_t k = 0; k < infos.size(); ++k) {
    graph::Op out;
    out.name = "cond_output";
    out.fn = loaded_module("operator").attr("getitem");
    out.args = {Arg::of(cond_id), Arg::constant_of(py::int_(k))};
    out.view = true;  // (it may be an array the frame also holds: never reused for another result)
    out.line = at.position.line;
    ids.push_back(a.graph.add_op(std::move(out), infos[k]));
  }
  return ids;
}

void OpcodeExecutor::emit_cond_op(IfSite* site) {
  ArrayState& a = arrays();
  graph::CondSpec spec;
  std::vector<int> outer;
  const graph::Graph g = a.graph;
  if (!build_cond(site, &spec, &outer)) {
    throw Stop{};
  }
  const std::vector<int> moved = a.cut_back(g, {site->values, site->ops, site->inputs});
  std::vector<int> args(outer.size());
  std::transform(outer.begin(), outer.end(), args.begin(),
                 [&](int v) { return moved[static_cast<std::size_t>(v)]; });
  std::vector<ValueInfo> infos(site->outputs.size());
  std::transform(site->outputs.begin(), site->outputs.end(), infos.begin(),
                 [](const IfSite::Output& o) { return o.info; });
  const std::vector<int> ids =
      add_cond_op(site->test, args, std::move(spec), infos, code_.instructions()[site->jump]);
  locals_ = site->locals;
  for (std::size_t k = 0; k < site->outputs.size(); ++k) {
    const ValueInfo& info = site->outputs[k].info;
    const int stack = site->outputs[k].stack;
    if (site->outputs[k].test >= 0) {  // (an exit's test inside a way: the loop's test now)
      body_loop_->step_tests[static_cast<std::size_t>(site->outputs[k].test)].value = ids[k];
    } else if (stack >= 0) {
      site->stack_values[static_cast<std::size_t>(stack)] = Variable::array(ids[k], info.text());
    } else {
      locals_[static_cast<std::size_t>(site->outputs[k].slot)] =
          Variable::array(ids[k], info.text());
    }
  }
  for (const auto& [slot, v] : site->same) {
    locals_[static_cast<std::size_t>(slot)] = v;
  }
  stack_.assign(site->stack_after.begin(),
                site->stack_after.begin() + static_cast<std::ptrdiff_t>(site->kept_both));
  for (const VarPtr& v : site->stack_values) {
    push(v);
  }
  next_ = site->join;
  ++conds_made_;
  last_cond_target_ = site->target;
  last_cond_join_ = site->join;
}

bool OpcodeExecutor::capture_if(const bytecode::Instruction& ins, bool jump_if) {
  // (in a loop only while its body is captured for a backend with native loops: a cond op run on
  // every step from Python costs more than plain Python's own branch, 1.5-1.8x plain time on the
  // corpus's row_iteration; there an `if` inside a way is a cond op of its own too: `if a and b:`)
  const graph::Backend* backend = graph::find_backend(shared_->backend);
  const bool loop_body = shared_->loop_depth > 0 && backend != nullptr && backend->compiles_loops();
  if (numpy_module().is_none() || !shared_->arrays || depth_ >= kMaxInlineDepth ||
      under_handler(ins) || shared_->calls_under_handler > 0 || arrays().errors_raise ||
      (shared_->cond_depth > 0 && !loop_body) ||
      (!loop_body && (shared_->loop_depth > 0 || in_loop(code_, pc_))) ||
      !while_test_value(peek(1))) {
    return false;
  }
  IfSite site;
  site.jump = pc_;
  site.target = code_.index_of(ins.target);
  if (site.target <= site.jump + 1) {
    return false;
  }
  site.start = {jump_if ? site.target : site.jump + 1, jump_if ? site.jump + 1 : site.target};
  site.locals = locals_;
  site.stack = stack_;
  site.mark = mark();
  site.test = peek(1)->graph_id();
  pop();
  site.stack_after = stack_;
  ArrayState& a = arrays();
  site.values = a.graph.values().size();
  site.ops = a.graph.ops().size();
  site.inputs = a.graph.inputs().size();
  site.serial = Variable::last_serial();
  // (one way leaving the `for` loop whose body this is: the loop's exit, loop_exits.cpp; what the
  // loop knew of its exits, to put back)
  std::optional<LoopSite> loop_was;
  if (body_loop_ != nullptr) {
    loop_was = *body_loop_;
  }
  const std::size_t exit_way = exit_way_of(site);
  bool ok = false;
  {
    const LoopDepth depth(&shared_->cond_depth);  // (the same guard, on the ifs' count)
    try {
      // (the fall-through way first: it finds where the ways meet)
      const std::size_t first = site.start[0] == site.jump + 1 ? 0 : 1;
      ok = exit_way < 2 ? capture_exit(&site, exit_way) : true;
      for (const std::size_t w : {first, 1 - first}) {
        if (exit_way < 2) {
          break;
        }
        site.ops_from[w] = a.graph.ops().size();
        site.values_from[w] = a.graph.values().size();
        site.tests_from[w] = loop_tests();
        ok = ok && simulate_way(&site, site.start[w], w == first) && way_ok(&site, w);
        site.tests_to[w] = loop_tests();
        site.ops_to[w] = a.graph.ops().size();
        site.values_to[w] = a.graph.values().size();
        site.way_locals[w] = locals_;
        site.way_stack[w] = stack_;
        locals_ = site.locals;
        stack_ = site.stack_after;
      }
      if (exit_way >= 2) {
        site.trim_way_stacks();
        const ScopedSet<bool> indices(&index_values_, true);  // (`k = i` in a way)
        ok = ok && cond_outputs(&site);
        if (ok) {
          emit_cond_op(&site);
        }
      }
    } catch (const Stop&) {
      ok = false;
    }
  }
  if (!ok) {
    if (loop_was) {
      // (what the ways saw appended is kept: the loop's next attempt buffers it, loop_lists.cpp)
      std::vector<LoopSite::Appended> appended = std::move(body_loop_->appended);
      *body_loop_ = std::move(*loop_was);
      body_loop_->appended = std::move(appended);
    }
    rollback(site.mark);
    locals_ = site.locals;
    stack_ = site.stack;
    pc_ = site.jump;
    next_ = pc_ + 1;
    clear_result();
    in_group_ = false;
    kwnames_ = py::object();
    break_stack_ = nullptr;
    return false;
  }
  return true;
}

}  // namespace sot::translator
