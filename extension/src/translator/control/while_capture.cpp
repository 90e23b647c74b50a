// While loops as loop ops. A `while` loop whose test jumps on a value of the graph
// (`while err > tol and it < max_iter:` once a step has made `err` a NumPy scalar) would break the
// graph at that jump; instead the loop becomes one loop op whose trip count is known only where the
// graph runs:
// - the shape: the jump is one of the loop's tests, at its top (before the body) or at its bottom
//   (3.11-3.13 test again after the body, then jump back to the body's first instruction); it
//   leaves to the loop's exit;
// - the entry: from that jump to the body's first instruction only tests may follow (loads,
//   comparisons, jumps on truth to the exit): each one on a value of the graph is recorded, a
//   constant one must say "go on";
// - the step: Python ints and floats the body stores become values of the graph (a counter
//   `it += 1`, a time `t += dt`), then the body and its tests are simulated once, as a `for` loop's
//   body is (loop_capture.cpp: what it changes must be carried, nothing else may change); after
//   its first test only tests may follow, so that the step's tests can all be computed at its end;
// - the op: runs while every test goes on, the entry's first, then each step's (loop_op.hpp);
// - a test followed by more work in the step (`if bad: break` in its middle) is left to the jump's
//   handler: an exit of the loop (loop_exits.cpp), its test one of the step's; a local unbound
//   before the loop that nothing outside it reads (`x_new`) stays unbound after the op.
// Anything else puts every value back as it was at the jump, which then breaks the graph as before.
#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bytecode/opcode_table.hpp"
#include "translator/control/if_site.hpp"
#include "translator/control/loop_site.hpp"
#include "translator/executor_support.hpp"
#include "translator/opcode_executor.hpp"

namespace py = pybind11;

namespace sot::translator {

namespace {

// A jump on truth: whether it jumps when true; nullopt for other instructions.
std::optional<bool> truth_jump(const std::string& name) {
  if (name == "POP_JUMP_IF_TRUE" || name == "POP_JUMP_FORWARD_IF_TRUE" ||
      name == "POP_JUMP_BACKWARD_IF_TRUE") {
    return true;
  }
  if (name == "POP_JUMP_IF_FALSE" || name == "POP_JUMP_FORWARD_IF_FALSE" ||
      name == "POP_JUMP_BACKWARD_IF_FALSE") {
    return false;
  }
  return std::nullopt;
}

// What a loop's tests are made of: loads, comparisons, truth and the jumps (nothing that changes a
// value, nothing that needs work where the graph runs beyond a comparison).
bool test_instruction(const std::string& name) {
  static const std::set<std::string> kNames = {"LOAD_FAST",
                                               "LOAD_FAST_CHECK",
                                               "LOAD_FAST_LOAD_FAST",
                                               "LOAD_CONST",
                                               "LOAD_GLOBAL",
                                               "LOAD_DEREF",
                                               "COMPARE_OP",
                                               "TO_BOOL",
                                               "UNARY_NOT",
                                               "NOP",
                                               "EXTENDED_ARG",
                                               "JUMP_BACKWARD",
                                               "JUMP_BACKWARD_NO_INTERRUPT"};
  return kNames.count(name) != 0 || truth_jump(name).has_value();
}

// Work a loop's test may do between its jumps, where one jump's way goes on to the next test
// (`a[j] > key`, `x[i] + y[i] < t`): the ops of a cond op's way.
bool test_work(const std::string& name) {
  return name == "BINARY_SUBSCR" || name == "BINARY_OP" || name == "UNARY_NEGATIVE" ||
         name == "UNARY_INVERT" || name == "BUILD_TUPLE" || name == "LOAD_ATTR";
}

std::string name_of(const bytecode::Instruction& ins) {
  return bytecode::opcode_info(ins.opcode).name;
}

// From instruction `k` work and loads alone come before the next jump on truth, work among them.
bool work_before_test(const bytecode::Bytecode& code, std::size_t k) {
  const auto& ins = code.instructions();
  bool work = false;
  for (; k < ins.size(); ++k) {
    const std::string name = name_of(ins[k]);
    if (truth_jump(name)) {
      return work;
    }
    if (bytecode::opcode_info(ins[k].opcode).is_unconditional_jump() ||
        (!test_instruction(name) && !test_work(name))) {
      return false;
    }
    work = work || test_work(name);
  }
  return false;
}

// Whether the straight line from instruction `k` (instructions that do not jump, and unconditional
// jumps, at most a few dozen) leaves the loop [top, back]: past it, before it, or a return; not
// when it comes to the jump back or to a branch.
bool leaves(const bytecode::Bytecode& code, std::size_t k, std::size_t top, std::size_t back) {
  const auto& ins = code.instructions();
  for (int n = 0; n < 64; ++n) {
    if (k < top || k > back || k >= ins.size()) {
      return true;
    }
    const std::string name = name_of(ins[k]);
    if (k == back) {
      return false;
    }
    if (name == "RETURN_VALUE" || name == "RETURN_CONST") {
      return true;
    }
    if (bytecode::opcode_info(ins[k].opcode).is_unconditional_jump()) {
      k = code.index_of(ins[k].target);
    } else if (ins[k].target < 0) {
      ++k;  // (the code after the loop, inlined here: it runs after the loop op, whatever it is)
    } else {
      return false;
    }
  }
  return false;
}

}  // namespace

bool OpcodeExecutor::while_shape(LoopSite* site) const {
  const auto& code = code_.instructions();
  const std::size_t j = pc_;
  // The loop around the test: the first jump back after it, when it goes back to the test or
  // before it (the test is at the loop's bottom); else the test is at the loop's top, and the
  // body's first instruction is the first one after it that a later jump goes back to, with only
  // tests in between.
  const std::size_t none = code.size();
  std::size_t back = none;
  for (std::size_t k = j; k < code.size() && back == none; ++k) {
    if (code[k].target >= 0 && code_.index_of(code[k].target) <= k) {
      back = k;
    }
  }
  std::size_t body = back == none ? none : code_.index_of(code[back].target);
  if (back != none && body > j) {
    back = none;
    for (std::size_t q = j + 1; q < code.size() && back == none; ++q) {
      for (std::size_t k = q; k < code.size(); ++k) {
        if (code[k].target >= 0 && code_.index_of(code[k].target) == q) {
          back = k;  // (the last jump back to it closes the loop)
        }
      }
      body = q;
      const std::string name = name_of(code[q]);
      if (back == none && !test_instruction(name) && !test_work(name)) {
        return false;
      }
    }
  }
  if (back == none || name_of(code[body]) == "FOR_ITER" || yields_in(std::min(body, j), back + 1)) {
    return false;  // (no loop, a `for` loop's jump back, or a generator's loop)
  }
  site->for_pc = body;
  site->top = std::min(body, j);
  site->back = back;
  slots_stored(body, back + 1, site);
  return true;
}

std::optional<OpcodeExecutor::LoopTest> OpcodeExecutor::loop_test(const LoopSite& site,
                                                                  const bytecode::Instruction& ins,
                                                                  bool jump_if) const {
  // A jump on truth at pc_ is a test of the loop when one way goes on with the loop and the other
  // leaves it: 3.11's jump back while true; a jump out of the loop (`while a and b`: the first
  // test's other way is the second test); a jump to the jump back whose other way leaves (`if
  // done: break` as the body's last statement).
  const std::size_t target = code_.index_of(ins.target);
  const std::size_t fall = pc_ + 1;
  LoopTest t;
  if (pc_ == site.back) {
    t.leave = fall;
    t.go_on_if = jump_if;
    return t;
  }
  const bool target_out = leaves(code_, target, site.top, site.back);
  const bool fall_out = leaves(code_, fall, site.top, site.back);
  if (target_out && !fall_out) {
    t.leave = target;
    t.go_on_if = !jump_if;
  } else if (fall_out && !target_out) {
    t.leave = fall;
    t.go_on_if = jump_if;
  } else {
    return std::nullopt;
  }
  return t;
}

bool OpcodeExecutor::while_test_value(const VarPtr& v) {
  if (v->kind() != Variable::Kind::kArray || !shared_->arrays ||
      arrays().is_loop_index(v->graph_id())) {
    return false;
  }
  const graph::ValueInfo& info = arrays().graph.value(v->graph_id()).info;
  return !info.is_tuple() && (info.scalar || info.ndim() == 0) && info.python != 's';
}

bool OpcodeExecutor::while_test(LoopSite* site, const bytecode::Instruction& ins, bool jump_if,
                                bool entry) {
  // One test at pc_: recorded when it jumps on a value of the graph, passed when on a constant
  // that goes on; false when it is no test of the loop, leaves for sure, or leaves to another
  // place than the loop's other tests.
  const std::optional<LoopTest> t = loop_test(*site, ins, jump_if);
  if (!t || (site->exit != 0 && t->leave != site->exit)) {
    return false;
  }
  site->exit = t->leave;
  const VarPtr v = peek(1);
  const std::size_t go_on_at = pc_ == site->back ? site->for_pc
                               : t->leave == code_.index_of(ins.target)
                                   ? pc_ + 1
                                   : code_.index_of(ins.target);
  if (v->kind() == Variable::Kind::kArray) {
    if (!while_test_value(v)) {
      return false;
    }
    if (pc_ != site->back && go_on_at != site->for_pc && work_before_test(code_, go_on_at)) {
      return short_circuit_test(site, *t, go_on_at);  // (work follows before the next test)
    }
    (entry ? site->entry_tests : site->step_tests).push_back({v->graph_id(), t->go_on_if});
  } else {
    bool value = false;
    if (!truth(v, &value) || value != t->go_on_if) {
      return false;
    }
  }
  pop();
  next_ = go_on_at;
  return true;
}

bool OpcodeExecutor::simulate_test_work(LoopSite* loop, IfSite* site, std::size_t from) {
  // From `from` to the next jump on truth: work and loads only; that jump a test of the loop that
  // leaves where the others do, on a bool of the graph; nothing else changed.
  const auto& code = code_.instructions();
  next_ = from;
  for (;;) {
    pc_ = next_;
    if (pc_ <= site->jump || pc_ >= code.size() || ++result_.simulated > kMaxSteps) {
      return false;
    }
    const std::string name = name_of(code[pc_]);
    if (truth_jump(name)) {
      break;
    }
    if ((!test_instruction(name) && !test_work(name)) ||
        bytecode::opcode_info(code[pc_].opcode).is_unconditional_jump()) {
      return false;
    }
    next_ = pc_ + 1;
    step(code[pc_]);
  }
  const std::optional<LoopTest> t = loop_test(*loop, code[pc_], *truth_jump(name_of(code[pc_])));
  if (!t || t->leave != loop->exit || stack_.size() != site->stack_after.size() + 1 ||
      !std::equal(site->stack_after.begin(), site->stack_after.end(), stack_.begin()) ||
      locals_ != site->locals || cleared_.size() != site->mark.cleared ||
      effects().changed_since(site->mark.effects, site->serial) || !while_test_value(peek(1))) {
    return false;
  }
  const int value = peek(1)->graph_id();
  const graph::ValueInfo& info = arrays().graph.value(value).info;
  if (info.dtype != graph::DType::kBool) {
    return false;
  }
  // (the way that leaves at the first test hands on the truth that leaves at this one)
  const std::size_t go = site->start[0] == from ? 0 : 1;
  IfSite::Output out;
  out.stack = 0;
  out.info = info;
  out.id[go] = value;
  out.constant[1 - go] = IfSite::Output::truth(info, !t->go_on_if);
  site->outputs.push_back(std::move(out));
  site->stack_values = {nullptr};
  site->join = pc_;
  return true;
}

bool OpcodeExecutor::short_circuit_test(LoopSite* loop, const LoopTest& first,
                                        std::size_t go_on_at) {
  IfSite site;
  site.jump = pc_;
  site.target = code_.index_of(code_.instructions()[pc_].target);
  site.start = first.go_on_if ? std::array<std::size_t, 2>{go_on_at, first.leave}
                              : std::array<std::size_t, 2>{first.leave, go_on_at};
  site.locals = locals_;
  site.stack = stack_;
  site.mark = mark();
  site.test = peek(1)->graph_id();
  pop();
  site.stack_after = stack_;
  site.kept_both = stack_.size();
  ArrayState& a = arrays();
  site.values = a.graph.values().size();
  site.ops = a.graph.ops().size();
  site.inputs = a.graph.inputs().size();
  site.serial = Variable::last_serial();
  const std::size_t go = first.go_on_if ? 0 : 1;
  bool ok = false;
  try {
    site.ops_from[go] = a.graph.ops().size();
    site.values_from[go] = a.graph.values().size();
    ok = simulate_test_work(loop, &site, go_on_at);
    site.ops_to[go] = a.graph.ops().size();
    site.values_to[go] = a.graph.values().size();
    site.ops_from[1 - go] = site.ops_to[1 - go] = site.ops_to[go];
    site.values_from[1 - go] = site.values_to[1 - go] = site.values_to[go];
    if (ok) {
      emit_cond_op(&site);  // (next_: the second test's jump, on the op's value)
    }
  } catch (const Stop&) {
    ok = false;
  }
  if (!ok) {
    rollback(site.mark);
    locals_ = site.locals;
    stack_ = site.stack;
    pc_ = site.jump;
    clear_result();
  }
  return ok;
}

bool OpcodeExecutor::while_entry(LoopSite* site, const bytecode::Instruction& ins, bool jump_if) {
  // From the jump that started the capture to the body's first instruction: tests only.
  const auto& code = code_.instructions();
  if (!while_test(site, ins, jump_if, true)) {
    return false;
  }
  while (next_ != site->for_pc) {
    pc_ = next_;
    if (pc_ >= code.size() || ++result_.simulated > kMaxSteps) {
      return false;
    }
    const bytecode::Instruction& at = code[pc_];
    const std::string name = name_of(at);
    if (!test_instruction(name)) {
      return false;
    }
    next_ = pc_ + 1;
    if (const auto j = truth_jump(name)) {
      if (!while_test(site, at, *j, true)) {
        return false;
      }
    } else {
      step(at);
    }
  }
  return true;
}

bool OpcodeExecutor::simulate_while_body(LoopSite* site) {
  // (an `if` in this body may leave this loop with a `break`: loop_exits.cpp)
  const ScopedSet<LoopSite*> body(&body_loop_, site);
  site->body_conds = shared_->cond_depth;
  return simulate_while_step(site, site->for_pc);
}

bool OpcodeExecutor::simulate_while_step(LoopSite* site, std::size_t from) {
  // From `from` to the jump back: a test of the loop followed by more work in the step is left to
  // the jump's handler (a `break` there is the loop's exit, loop_exits.cpp); after the other tests
  // only tests may follow.
  const auto& code = code_.instructions();
  next_ = from;
  for (;;) {
    pc_ = next_;
    if (pc_ < site->for_pc || pc_ > site->back) {
      site->why = "the body leaves the loop";
      return false;
    }
    if (++result_.simulated > kMaxSteps) {
      site->why = "the body is too long";
      return false;
    }
    const bytecode::Instruction& at = code[pc_];
    const std::string name = name_of(at);
    if (site->in_tests && !test_instruction(name)) {
      site->why = "work after the loop's first test";
      return false;
    }
    next_ = pc_ + 1;
    const auto j = truth_jump(name);
    const std::optional<LoopTest> t = j ? loop_test(*site, at, *j) : std::nullopt;
    if (t && (site->in_tests || tests_only(*site, *t, at))) {
      site->in_tests = true;
      if (!while_test(site, at, *j, false)) {
        site->why = "a test that leaves the loop for sure";
        return false;
      }
    } else {
      step(at);
    }
    if (next_ == site->for_pc) {
      return pc_ == site->back;  // (the jump back; from elsewhere, a `continue`: not one step)
    }
  }
}

bool OpcodeExecutor::tests_only(const LoopSite& site, const LoopTest& t,
                                const bytecode::Instruction& at) const {
  // (the way a test goes on by: tests alone, and the work between them, up to the jump back; or
  // more work of the step)
  if (pc_ == site.back) {
    return true;
  }
  const auto& code = code_.instructions();
  std::size_t k = t.leave == pc_ + 1 ? code_.index_of(at.target) : pc_ + 1;
  for (; k < code.size() && k <= site.back; ++k) {
    if (k == site.back) {
      return true;
    }
    const std::string name = name_of(code[k]);
    if (!test_instruction(name) && !test_work(name)) {  // (a test's work: short_circuit_test's)
      return false;
    }
  }
  return true;
}

bool OpcodeExecutor::long_while(const bytecode::Instruction& ins, bool jump_if) {
  // (whether the test goes on is while_test's to tell; each jump is tried once)
  if (!shared_->arrays || while_tried_.count(pc_) != 0 ||
      ++constant_tests_[pc_] <= kLoopUnrollMax) {
    return false;
  }
  while_tried_.insert(pc_);
  return capture_while(ins, jump_if);
}

bool OpcodeExecutor::capture_while(const bytecode::Instruction& ins, bool jump_if) {
  if (numpy_module().is_none() || !shared_->arrays || depth_ >= kMaxInlineDepth ||
      under_handler(ins) || shared_->calls_under_handler > 0 || arrays().errors_raise) {
    return false;
  }
  LoopSite site;
  site.is_while = true;
  if (!while_shape(&site) ||
      (body_loop_ != nullptr && body_loop_->is_while && body_loop_->back == site.back)) {
    return false;  // (no loop, or a jump in the body of the while loop being captured: an `if`)
  }
  site.test_pc = pc_;
  site.test_stack = stack_;
  site.locals = locals_;
  site.mark = mark();
  bool ok = false;
  {
    const LoopDepth depth(&shared_->loop_depth);
    try {
      ok = while_entry(&site, ins, jump_if);
      if (ok) {
        site.stack = stack_;
        loop_numbers(&site);
        loop_placeholders(&site);
        ok = simulate_while_body(&site) && loop_state_ok(&site);
      }
    } catch (const Stop&) {
      ok = false;
    }
  }
  if (!ok) {
    abandon_loop(site);
    return false;
  }
  scalar_loop(site);  // (a while loop of single elements: breaks the graph there)
  if (body_needs_native(site)) {
    return false;
  }
  emit_loop_op(&site);
  next_ = site.exit;
  return true;
}

}  // namespace sot::translator
