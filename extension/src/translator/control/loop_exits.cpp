// Exits from a `for` loop op. `if err < tol: break` (or `return x_new`) in the body of a loop being
// captured as a loop op ends the capture in if_capture.cpp, since one way leaves the loop. Here it
// is the loop's exit instead:
// - the test is the loop op's step test: the op runs while steps remain and the test goes on;
// - the rest of the step (from the way that stays to the jump back) is a cond op on the same test,
//   whose other way hands on the values as they were at the test. So the values the op leaves are,
//   either way, the ones plain Python has after the loop: at the test where it left, after the last
//   step where it did not;
// - a `break` way must pop the iterator and then run what the loop's end runs (3.11 jumps there;
//   3.12 and 3.13 copy that code into the way): the frame goes on after the loop as for any loop
//   op;
// - a `return` way must only load a local or a constant and return it, and so must the code after
//   the loop: the frame returns one of the two, as the last test picks (a cond op of the two
//   values), where plain Python returns at the test or after the loop;
// - the loop variable, where read after the loop, is the op's output (its last step's value).
// A `return` is the loop's one exit, from an `if` at the top of the body. `break`s may be more, and
// inside other ifs of the body (`if x[i] < 0: continue` before one, `if a: if b: break`): each
// exit's test is one of the loop's step tests, the cond ops around it hand it out as an output,
// and their ways without it hand on a test that goes on (the op stops where any test says so). An
// exit inside an `if` runs the rest of the step from its way that stays, past that `if`, to the
// loop's head (the code after the `if` is in both ways). Anything else ends the capture as before:
// the loop breaks the graph, or unrolls.
#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "bytecode/opcode_table.hpp"
#include "graph/exec/cond_op.hpp"
#include "translator/control/if_site.hpp"
#include "translator/control/loop_site.hpp"
#include "translator/executor_support.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

using graph::ValueInfo;

namespace {

constexpr std::size_t kMostExitInstructions = 64;  // a way compared with the loop's end, at most
constexpr std::size_t kNoExit = static_cast<std::size_t>(-1);

// An instruction as the two copies of the code after a loop are compared: a load of a local by
// name (3.12 checks a local after a loop, LOAD_FAST_CHECK; 3.13 pairs loads, LOAD_FAST_LOAD_FAST).
struct Plain {
  std::string name;
  int arg = 0;
  std::size_t target = 0;
  bool operator==(const Plain& o) const {
    return name == o.name && arg == o.arg && target == o.target;
  }
};

bool returns(const std::string& name) {
  return name == "RETURN_VALUE" || name == "RETURN_CONST";
}

bool jumps_always(const bytecode::Instruction& ins) {
  return bytecode::opcode_info(ins.opcode).is_unconditional_jump();
}

}  // namespace

std::size_t OpcodeExecutor::exit_way_of(const IfSite& site) {
  LoopSite* loop = body_loop_;
  if (loop == nullptr || (!loop->is_while && loop_head_ != loop->for_pc) || loop->exit_returns) {
    return 2;
  }
  // (a `return` only as a `for` loop's one exit, at the top of the body; a second exit, or one
  // inside an `if` of the body, or a while loop's, a `break`)
  const bool top =
      loop->exit_way == kNoExit && shared_->cond_depth == loop->body_conds && !loop->is_while;
  const std::size_t after = loop_end(*loop);
  for (std::size_t w = 0; w < 2; ++w) {
    const std::size_t start = site.start[w];
    if (start > site.jump && start < loop->exit) {
      if (break_at(start, after) != kNoExit) {
        return w;
      }
      if (!top) {
        continue;
      }
      if (VarPtr value = returned_by(start, site.stack_after)) {
        loop->exit_returns = true;
        loop->exit_value = std::move(value);
        return w;
      }
    }
  }
  return 2;
}

std::size_t OpcodeExecutor::loop_tests() const {
  return body_loop_ != nullptr ? body_loop_->step_tests.size() : 0;
}

bool OpcodeExecutor::exit_test_outputs(IfSite* site) {
  // (each exit's test a value of its way; the other way, where no exit of it is taken, goes on)
  for (std::size_t w = 0; w < 2; ++w) {
    for (std::size_t t = site->tests_from[w]; t < site->tests_to[w]; ++t) {
      const LoopSite::Test& test = body_loop_->step_tests[t];
      IfSite::Output out;
      out.test = static_cast<int>(t);
      out.id[w] = test.value;
      out.info = array_info(test.value);
      const ValueInfo& i = out.info;
      if (i.is_tuple() || i.dtype != graph::DType::kBool || !i.scalar ||
          (i.python != 0 && i.python != 'b')) {
        return false;
      }
      out.constant[1 - w] = IfSite::Output::truth(i, test.go_on_if);
      site->outputs.push_back(std::move(out));
    }
  }
  return true;
}

void OpcodeExecutor::exit_needs_var(LoopSite* site) const {
  // (a body that may leave the loop, a `break` or a `return` in it, and the loop variable read
  // after the loop: the variable's last value is an output of the op, so the body reads it)
  if (site->reads_var || site->var < 0 || never_read(site->var, site->for_pc, site->exit)) {
    return;
  }
  const auto& code = code_.instructions();
  for (std::size_t k = site->for_pc + 1; k < site->exit; ++k) {
    if (returns(bytecode::opcode_info(code[k].opcode).name) ||
        (code[k].target >= 0 && code_.index_of(code[k].target) >= site->exit)) {
      site->reads_var = true;
      return;
    }
  }
}

std::size_t OpcodeExecutor::loop_end(const LoopSite& loop) {
  return loop.is_while ? loop.exit : loop.after_loop();
}

std::size_t OpcodeExecutor::break_at(std::size_t start, std::size_t after) const {
  // (straight code - no jump, no return - up to the break: `k = i; break`)
  const auto& code = code_.instructions();
  const LoopSite& loop = *body_loop_;
  const std::size_t last = loop.is_while ? loop.back : loop.exit;
  for (std::size_t k = start; k < last && k < start + kMostExitInstructions; ++k) {
    if (loop.is_while ? runs_end(k, after) : breaks_out(k, after)) {
      return k;
    }
    if (code[k].target >= 0 || returns(bytecode::opcode_info(code[k].opcode).name)) {
      break;
    }
  }
  return kNoExit;
}

bool OpcodeExecutor::breaks_out(std::size_t start, std::size_t after) const {
  const auto& code = code_.instructions();
  return start + 1 < code.size() &&
         std::string(bytecode::opcode_info(code[start].opcode).name) == "POP_TOP" &&
         runs_end(start + 1, after);
}

bool OpcodeExecutor::runs_end(std::size_t start, std::size_t after) const {
  const auto& code = code_.instructions();
  auto name = [&](std::size_t k) {
    return std::string(bytecode::opcode_info(code[k].opcode).name);
  };
  if (start >= code.size()) {
    return false;
  }
  // (the way's instructions after the pop and the loop end's, loads of locals one at a time)
  auto plain = [&](std::size_t from, std::vector<Plain>* out) {
    for (std::size_t k = from; k < code.size() && out->size() < kMostExitInstructions; ++k) {
      const std::string n = name(k);
      const std::size_t target =
          code[k].target >= 0 ? code_.index_of(code[k].target) : static_cast<std::size_t>(-1);
      if (n == "NOP") {
        continue;
      }
      if (n == "LOAD_FAST_LOAD_FAST") {
        out->push_back({"LOAD_FAST", code[k].arg >> 4, target});
        out->push_back({"LOAD_FAST", code[k].arg & 15, target});
        continue;
      }
      out->push_back({n == "LOAD_FAST_CHECK" ? "LOAD_FAST" : n, code[k].arg, target});
      if (returns(n) || jumps_always(code[k])) {
        return;
      }
    }
    out->clear();  // (too long to compare)
  };
  if (jumps_always(code[start])) {
    return code_.index_of(code[start].target) == after;  // (3.11: the jump to the loop's end)
  }
  std::vector<Plain> way;
  std::vector<Plain> end;
  plain(start, &way);
  plain(after, &end);
  return !way.empty() && way == end && returns(way.back().name);
}

VarPtr OpcodeExecutor::returned_by(std::size_t start, const std::vector<VarPtr>& stack) {
  // (simulated on a copy of the stack: loads, the iterator's pop, the return; nothing else)
  const auto& code = code_.instructions();
  const std::vector<VarPtr> saved_stack = stack_;
  const std::size_t saved_next = next_;
  const std::size_t saved_pc = pc_;
  const std::size_t ops = arrays().graph.ops().size();
  stack_ = stack;
  VarPtr value;
  try {
    for (std::size_t k = start; k < code.size() && k < start + kMostExitInstructions; ++k) {
      const std::string n = bytecode::opcode_info(code[k].opcode).name;
      if (n == "RETURN_VALUE") {
        value = peek(1);
        break;
      }
      if (n == "RETURN_CONST") {
        value =
            Variable::from_input(code_.consts()[static_cast<std::size_t>(code[k].arg)], Tracker{});
        break;
      }
      if (n != "LOAD_FAST" && n != "LOAD_FAST_CHECK" && n != "LOAD_FAST_LOAD_FAST" &&
          n != "LOAD_CONST" && n != "SWAP" && n != "POP_TOP" && n != "COPY" && n != "NOP") {
        break;
      }
      pc_ = k;
      next_ = k + 1;
      step(code[k]);
    }
  } catch (const Stop&) {
    value = nullptr;  // (an unbound local: the way raises)
    clear_result();
  }
  stack_ = saved_stack;
  next_ = saved_next;
  pc_ = saved_pc;
  if (arrays().graph.ops().size() != ops) {
    return nullptr;
  }
  return value;
}

bool OpcodeExecutor::simulate_to_head(IfSite* site, std::size_t start) {
  // (the way that stays in the loop: to the jump back to the loop's head, where the step ends)
  const auto& code = code_.instructions();
  next_ = start;
  for (;;) {
    pc_ = next_;
    if (pc_ == loop_head_) {
      site->join = pc_;
      return true;
    }
    if (pc_ >= code.size() || pc_ <= site->jump || pc_ >= body_loop_->exit ||
        ++result_.simulated > kMaxSteps || returns(bytecode::opcode_info(code[pc_].opcode).name)) {
      return false;
    }
    next_ = pc_ + 1;
    step(code[pc_]);
  }
}

bool OpcodeExecutor::capture_exit(IfSite* site, std::size_t exit_way) {
  LoopSite* loop = body_loop_;
  ArrayState& a = arrays();
  const std::size_t stay = 1 - exit_way;
  if (loop->exit_way == kNoExit) {
    loop->exit_way = site->start[exit_way];  // (the first exit; a `return`'s value: exit_way_of's)
  }
  // The way that stays, then the exit's as a way that changes nothing.
  site->ops_from[stay] = a.graph.ops().size();
  site->values_from[stay] = a.graph.values().size();
  site->tests_from[stay] = loop->step_tests.size();
  if (loop->is_while) {  // (the rest of the step and the loop's tests after it, to the jump back)
    site->join = loop->for_pc;
    if (!simulate_while_step(loop, site->start[stay]) || !way_ok(site, stay)) {
      return false;
    }
  } else if (!simulate_to_head(site, site->start[stay]) || !way_ok(site, stay)) {
    return false;
  }
  site->tests_to[stay] = loop->step_tests.size();
  site->ops_to[stay] = a.graph.ops().size();
  site->values_to[stay] = a.graph.values().size();
  site->way_locals[stay] = locals_;
  site->way_stack[stay] = stack_;
  if (loop->exit_returns && site->ops_to[stay] == site->ops_from[stay]) {
    // (a `return`'s loop whose rest of the step only rebinds locals, `x = x_new`: run on every
    // step, as no code after a return reads them; where the loop ends without returning, they are
    // what plain Python's last step left)
    loop->step_tests.push_back({site->test, exit_way == 1});
    next_ = site->join;
    return true;
  }
  locals_ = site->locals;
  stack_ = site->stack_after;
  site->ops_from[exit_way] = a.graph.ops().size();
  site->values_from[exit_way] = a.graph.values().size();
  if (!loop->exit_returns) {  // (a break's work before it: `k = i; break`)
    const std::size_t at = break_at(site->start[exit_way], loop_end(*loop));
    for (next_ = site->start[exit_way]; next_ < at;) {
      pc_ = next_;
      next_ = pc_ + 1;
      step(code_.instructions()[pc_]);
    }
    if (next_ != at || !way_ok(site, exit_way)) {
      return false;
    }
  }
  site->ops_to[exit_way] = a.graph.ops().size();
  site->values_to[exit_way] = a.graph.values().size();
  site->way_locals[exit_way] = locals_;
  site->way_stack[exit_way] = stack_;
  site->kept[exit_way] = site->stack_after.size();
  site->trim_way_stacks();
  loop->step_tests.push_back({site->test, exit_way == 1});  // (going on where the exit is not)
  const bool nothing = site->ops_to[stay] == site->ops_from[stay] &&
                       site->ops_to[exit_way] == site->ops_from[exit_way] &&
                       site->way_locals[stay] == site->locals &&
                       site->way_locals[exit_way] == site->locals && site->way_stack[0].empty() &&
                       site->way_stack[1].empty() && site->tests_from[stay] == site->tests_to[stay];
  if (!nothing) {  // (`if done: break` last in the step: no cond op)
    const ScopedSet<bool> indices(&index_values_, true);  // (`k = i; break`)
    if (!cond_outputs(site)) {
      return false;
    }
    emit_cond_op(site);
  }
  next_ = site->join;
  if (loop->is_while) {
    pc_ = loop->back;  // (the step ended at the jump back: simulate_while_step's end)
  }
  return true;
}

bool OpcodeExecutor::loop_exit_ok(LoopSite* site, const VarPtr& it) {
  if (site->exit_way == kNoExit) {
    return true;
  }
  const auto& code = code_.instructions();
  // (the iterator where only the loop holds it: where it stopped is seen nowhere)
  if (std::find(site->locals.begin(), site->locals.end(), it) != site->locals.end()) {
    site->why = "the loop's iterator is a local and the body may leave the loop";
    return false;
  }
  if (!never_read(site->var, site->for_pc, site->exit)) {
    if (site->index < 0 || site->rows || site->stored.count(site->var) != 0) {
      site->why = "the loop variable is read after a loop the body may leave";
      return false;
    }
    site->var_out = true;
    site->exit_values.push_back(site->index);
  }
  if (site->counter >= 0 && !never_read(site->counter, site->for_pc, site->exit)) {
    site->why = "the loop's counter is read after a loop the body may leave";
    return false;
  }
  if (!site->exit_returns) {
    return true;
  }
  // A `return`: the code after the loop returns a local or a constant too.
  const std::size_t after = site->after_loop();
  auto name = [&](std::size_t k) {
    return k < code.size() ? std::string(bytecode::opcode_info(code[k].opcode).name) : "";
  };
  const bool constant = name(after) == "RETURN_CONST" ||
                        (name(after + 1) == "RETURN_VALUE" && name(after) == "LOAD_CONST");
  if (constant) {
    site->after_constant = code_.consts()[static_cast<std::size_t>(code[after].arg)];
  } else if (name(after + 1) == "RETURN_VALUE" &&
             (name(after) == "LOAD_FAST" || name(after) == "LOAD_FAST_CHECK")) {
    site->after_slot = code[after].arg;
  } else {
    site->why = "the body may return from the loop, and the code after it does more than return";
    return false;
  }
  if (site->start_value >= 0 || (site->after_slot >= 0 && site->after_slot == site->var)) {
    site->why = "the body may return from a loop of no steps";
    return false;
  }
  // Both values handed on as one: of one kind, dtype and shape (the loop's index one of them).
  const ScopedSet<bool> indices(&index_values_, true);
  std::array<ValueInfo, 2> infos;
  std::array<int, 2> ids{-1, -1};
  std::array<py::object, 2> constants;
  VarPtr after_value = site->after_slot >= 0
                           ? locals_[static_cast<std::size_t>(site->after_slot)]
                           : Variable::from_input(site->after_constant, Tracker{});
  if (!way_value(site->exit_value, &ids[0], &infos[0], &constants[0]) ||
      !way_value(after_value, &ids[1], &infos[1], &constants[1]) ||
      !same_array_info(infos[0], infos[1])) {
    site->why = "the body returns from the loop a value of another kind than after it";
    return false;
  }
  site->exit_values.push_back(site->step_tests.back().value);
  // (the step's value of a carried local, the op's output for it: `return x_new` after `x = x_new`)
  for (const LoopSite::Carried& c : site->carried) {
    if (c.out >= 0 && c.out == ids[0] &&
        locals_[static_cast<std::size_t>(c.slot)] == site->exit_value) {
      site->exit_slot = c.slot;
      return true;
    }
  }
  if (ids[0] >= 0) {
    site->exit_values.push_back(ids[0]);
  }
  return true;
}

void OpcodeExecutor::loop_exit_values(const LoopSite& site, const std::vector<int>& outs,
                                      const std::vector<ValueInfo>& out_infos, std::size_t k) {
  if (site.var_out) {
    locals_[static_cast<std::size_t>(site.var)] = Variable::array(outs[k], out_infos[k].text());
    ++k;
  }
  if (!site.exit_returns) {
    return;
  }
  const ScopedSet<bool> indices(&index_values_, true);
  ExitReturn r;
  r.test = outs[k];
  r.go_on_if = site.step_tests.back().go_on_if;
  int id = -1;
  ValueInfo info;
  py::object constant;
  if (site.exit_slot >= 0) {
    r.exit_value = locals_[static_cast<std::size_t>(site.exit_slot)];
  } else {
    r.exit_value = way_value(site.exit_value, &id, &info, &constant) && id < 0
                       ? site.exit_value
                       : Variable::array(outs[k + 1], out_infos[k + 1].text());
  }
  r.after_value = site.after_slot >= 0 ? locals_[static_cast<std::size_t>(site.after_slot)]
                                       : Variable::from_input(site.after_constant, Tracker{});
  exit_return_ = r;
}

void OpcodeExecutor::return_at_exit() {
  const ExitReturn r = *exit_return_;
  exit_return_.reset();
  if (r.exit_value == r.after_value) {
    finish(r.exit_value);
  }
  // way 0 of a cond op is its test's truth: the exit's where the loop goes on while false
  const std::array<VarPtr, 2> way = r.go_on_if ? std::array<VarPtr, 2>{r.after_value, r.exit_value}
                                               : std::array<VarPtr, 2>{r.exit_value, r.after_value};
  graph::CondSpec spec;
  std::vector<int> outer;
  ValueInfo info;
  const ScopedSet<bool> indices(&index_values_, true);
  for (std::size_t w = 0; w < 2; ++w) {
    int id = -1;
    py::object constant;
    if (!way_value(way[w], &id, &info, &constant)) {
      graph_break("a return from a loop of values of other kinds");
    }
    graph::Graph& body = spec.body[w];
    if (id < 0) {
      spec.outputs[w].push_back(body.add_constant(constant, info));
      continue;
    }
    auto at = std::find(outer.begin(), outer.end(), id);
    if (at == outer.end()) {
      at = outer.insert(outer.end(), id);
    }
    spec.args[w].push_back(static_cast<int>(at - outer.begin()));
    spec.outputs[w].push_back(body.add_input(info, "returned"));
  }
  // (the array either way is the object plain Python returns: the output is a view)
  const std::vector<int> ids =
      add_cond_op(r.test, outer, std::move(spec), {info}, code_.instructions()[pc_]);
  finish(Variable::array(ids[0], info.text()));
}

}  // namespace sot::translator
