// Code generation's orchestration: code for a frame that returns, for a graph break (the state
// rebuilt, the breaking instructions run for real, a resume function per successor) and for a
// break that continues in place.
#include "translator/codegen/codegen.hpp"

#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "bytecode/localsplus.hpp"
#include "bytecode/opcode_table.hpp"
#include "bytecode/stack_inputs.hpp"
#include "capture/code_cache.hpp"
#include "graph/exec/backend.hpp"
#include "translator/codegen/codegen_emitter.hpp"

namespace py = pybind11;

namespace sot::translator {

namespace {

using bytecode::Instruction;

}  // namespace

CodeGen::CodeGen(const bytecode::Bytecode& original, py::dict resume_cache, GuardSet* guards)
    : original_(original), resume_cache_(std::move(resume_cache)), guards_(guards) {}

namespace {

// The values the replayed side effects load (see Emitter::emit_effects), added to `roots`.
void add_effect_values(const SimulationResult& r, std::vector<VarPtr>* roots) {
  for (const auto& store : r.effects.global_stores) {
    roots->push_back(store.second);
  }
  for (const ModelOp& op : r.effects.model_ops) {
    roots->insert(roots->end(), op.args.begin(), op.args.end());
  }
  for (const AttrStore& a : r.effects.attr_stores) {
    roots->push_back(a.value);
  }
  for (const VarPtr& cell : r.effects.cells) {
    if (cell->slot() >= 0) {  // the writes replayed (other cells are built where referenced)
      roots->push_back(cell->contents());
    }
  }
}

std::vector<Instruction> prefix_of(const bytecode::Bytecode& bc) {
  const std::size_t end = prefix_end(bc);
  return {bc.instructions().begin(), bc.instructions().begin() + static_cast<long>(end)};
}

}  // namespace

py::object CodeGen::for_return(const SimulationResult& r) {
  bytecode::Bytecode bc =
      bytecode::Bytecode::from_instructions(prefix_of(original_), original_.template_code().ptr());
  Emitter e(bc, original_.localsplus_kinds(), guards_, r.entry_locals);
  e.pos = original_.at(r.last).position;
  {
    // Values made in the frame referred to more than once are built once into a local (the frame
    // returns: any plain local serves, best one that was unbound at entry).
    std::vector<VarPtr> roots = {r.value};
    add_effect_values(r, &roots);
    std::vector<int> scratch;
    const std::string& kinds = original_.localsplus_kinds();
    for (const bool unbound_first : {true, false}) {
      for (std::size_t i = 0; i < kinds.size(); ++i) {
        if (bytecode::localsplus::is_plain_local(kinds[i]) &&
            (!r.entry_locals[i]) == unbound_first) {
          scratch.push_back(static_cast<int>(i));
        }
      }
    }
    homes_and_graph(e, r, &roots, {}, scratch);
  }
  e.load(r.value);
  e.emit_effects(r, [&r](const Variable* v) -> std::size_t {
    return v == r.value.get() ? 1 : 0;  // the returned value is on top
  });
  e.remove_graph_result();
  e.emit("RETURN_VALUE");
  e.finish_into(bc);
  return bc.assemble();
}

// Rebuilds the frame's state at a break: the value stack (loaded first: reads of the locals' entry
// values happen before any store), then the locals the simulation changed, then the side effects.
// NULLs below `keep` are left out (a resume function's prologue pushes them; returned as true).
std::vector<bool> CodeGen::emit_state(Emitter& e, const SimulationResult& r, std::size_t keep) {
  const std::vector<int> scratch_used = homes_for_state(e, r);
  StackState st;
  std::vector<bool> kept_null(keep, false);
  const std::size_t depth_before = r.state.stack.size();
  for (std::size_t k = 0; k < depth_before; ++k) {
    const VarPtr& v = r.state.stack[k];
    if (k < keep && v->kind() == Variable::Kind::kNull) {
      kept_null[k] = true;
      continue;
    }
    if (v->is_mutable_created() && st.on_stack.count(v.get()) == 0 && e.built.count(v.get()) == 0) {
      st.on_stack[v.get()] = st.pushed;
    }
    e.load(v);
    ++st.pushed;
  }

  std::vector<std::size_t> deleted;
  store_locals(e, r, st, &deleted);
  e.emit_effects(r, [&](const Variable* v) -> std::size_t {
    const auto it = st.on_stack.find(v);
    return it == st.on_stack.end() ? 0 : st.pushed - it->second;
  });
  for (const std::size_t i : deleted) {
    e.emit("DELETE_FAST", static_cast<int>(i));
    e.overwritten[i] = true;
    e.current[i] = nullptr;
  }
  for (const int i : scratch_used) {
    // A scratch local unbound at the break is unbound again (one that got its value is kept).
    const auto u = static_cast<std::size_t>(i);
    if (!r.state.locals[u] && std::find(deleted.begin(), deleted.end(), u) == deleted.end()) {
      e.emit("DELETE_FAST", i);
      e.current[u] = nullptr;
    }
  }
  e.remove_graph_result();
  return kept_null;
}

std::vector<int> CodeGen::homes_for_state(Emitter& e, const SimulationResult& r) {
  const std::string& kinds = original_.localsplus_kinds();
  const std::size_t n = kinds.size();
  // Values made in the frame that the state holds in more than one place: built once, into the
  // local that ends up holding them, or into a local unbound at the break (deleted again below).
  std::vector<VarPtr> roots = r.state.stack;
  std::map<const Variable*, int> preferred;
  std::vector<int> scratch;
  for (std::size_t i = 0; i < n; ++i) {
    if (!bytecode::localsplus::is_plain_local(kinds[i])) {
      continue;
    }
    const VarPtr& v = r.state.locals[i];
    if (!v) {
      scratch.push_back(static_cast<int>(i));
    } else if (v != r.entry_locals[i]) {
      roots.push_back(v);
      preferred.emplace(v.get(), static_cast<int>(i));
    }
  }
  // A local that gets a new value at the end can hold another value until then.
  for (std::size_t i = 0; i < n; ++i) {
    const VarPtr& v = r.state.locals[i];
    if (bytecode::localsplus::is_plain_local(kinds[i]) && v && v != r.entry_locals[i]) {
      scratch.push_back(static_cast<int>(i));
    }
  }
  add_effect_values(r, &roots);
  return homes_and_graph(e, r, &roots, preferred, scratch);
}

void CodeGen::store_locals(Emitter& e, const SimulationResult& r, const StackState& st,
                           std::vector<std::size_t>* deleted_out) {
  const std::string& kinds = original_.localsplus_kinds();
  const std::size_t n = kinds.size();
  std::vector<std::size_t>& deleted = *deleted_out;
  // The locals the simulation changed: their values are pushed, then stored. A list made in the
  // frame that is also on the stack is copied from there (one object, as in the original).
  std::vector<std::size_t> stored;
  std::vector<std::pair<std::size_t, std::size_t>> aliases;  // (local, local already holding it)
  std::size_t extra = 0;                                     // values pushed in this phase
  for (std::size_t i = 0; i < n; ++i) {
    // Plain locals, and cell slots a resume function's prologue filled with its caller's cells.
    const bool cell_slot = bytecode::localsplus::is_cell(kinds[i]);
    if ((!bytecode::localsplus::is_plain_local(kinds[i]) && !cell_slot) ||
        r.state.locals[i] == r.entry_locals[i]) {
      continue;
    }
    const VarPtr& v = r.state.locals[i];
    if (v && v->kind() == Variable::Kind::kCell && v->slot() == static_cast<int>(i)) {
      continue;  // the cell the prefix made (MAKE_CELL)
    }
    if (cell_slot && !v) {
      throw CodegenError("a cell slot was emptied");
    }
    if (!v) {
      deleted.push_back(i);
      continue;
    }
    bool alias = false;
    if (v->is_mutable_created()) {
      for (const std::size_t j : stored) {
        if (r.state.locals[j] == v) {
          aliases.emplace_back(i, j);
          alias = true;
          break;
        }
      }
    }
    if (alias) {
      continue;
    }
    const auto it = st.on_stack.find(v.get());
    if (it != st.on_stack.end()) {
      e.emit("COPY", static_cast<int>(st.pushed + extra - it->second));
    } else {
      e.load(v);
    }
    ++extra;
    stored.push_back(i);
  }
  for (auto it = stored.rbegin(); it != stored.rend(); ++it) {
    e.emit("STORE_FAST", static_cast<int>(*it));
    e.overwritten[*it] = true;
    e.current[*it] = r.state.locals[*it];
    for (auto& [value, slot] : e.built) {
      if (slot == static_cast<int>(*it) && value != r.state.locals[*it].get()) {
        slot = -1;  // that value's scratch home is overwritten: no more references to it
      }
    }
    if (r.state.locals[*it]->is_mutable_created()) {
      e.built[r.state.locals[*it].get()] = static_cast<int>(*it);  // loaded from there from now on
    }
  }
  for (const auto& [i, j] : aliases) {
    e.emit("LOAD_FAST", static_cast<int>(j));
    e.emit("STORE_FAST", static_cast<int>(i));
    e.overwritten[i] = true;
    e.current[i] = r.state.locals[i];
  }
}

py::object CodeGen::for_continuation(const SimulationResult& r) {
  // The whole original, with the state rebuilt between its prefix and its body and a jump to the
  // breaking instruction: the rest of the frame runs as is, in this frame (its handlers and loops
  // included).
  const std::size_t body_start = prefix_end(original_);
  bytecode::Bytecode bc = bytecode::Bytecode::from_instructions(original_.instructions(),
                                                                original_.template_code().ptr());
  const std::string& kinds = original_.localsplus_kinds();
  Emitter e(bc, kinds, guards_, r.entry_locals);
  e.pos = original_.at(r.first).position;
  emit_state(e, r, 0);
  if (!r.state.stack.empty() && bytecode::takes_exact_bool(original_.at(r.first))) {
    e.emit("TO_BOOL");  // (a NumPy bool from a graph, as in for_break)
  }
  e.emit_jump_to_id("JUMP_FORWARD", original_.at(r.first).id);
  e.finish_into(bc, body_start);
  return bc.assemble();
}

py::object CodeGen::for_break(const SimulationResult& r) {
  bytecode::Bytecode bc =
      bytecode::Bytecode::from_instructions(prefix_of(original_), original_.template_code().ptr());
  const std::string& kinds = original_.localsplus_kinds();
  Emitter e(bc, kinds, guards_, r.entry_locals);
  const Instruction& last = original_.at(r.last);
  e.pos = last.position;
  BreakSite site;
  site.keep = break_keep(r);
  site.kept_null = emit_state(e, r, site.keep);
  const bytecode::OpcodeInfo& info = bytecode::opcode_info(last.opcode);
  const bool for_iter = is_op(last, "FOR_ITER");
  const int jump_label = info.is_jump() ? e.new_label() : -1;
  site.pushed_null = emit_breaking(e, r, jump_label);
  resume_arguments(e, r, &site);
  const std::size_t depth_before = r.state.stack.size();
  // The original's stack depth after the group on each path (NULLs included).
  int effect_before = 0;
  for (std::size_t k = r.first; k < r.last; ++k) {
    int eff = 0;
    if (!bytecode::stack_effect(original_.at(k).opcode, original_.at(k).arg, false, &eff)) {
      throw CodegenError("no stack effect for an instruction of the break");
    }
    effect_before += eff;
  }
  const int depth = static_cast<int>(depth_before) + effect_before;
  if (info.falls_through()) {
    int eff = 0;
    if (!bytecode::stack_effect(last.opcode, last.arg, false, &eff)) {
      throw CodegenError("no stack effect for the breaking instruction");
    }
    std::size_t next = r.last + 1;
    int after = depth + eff;
    // A result dropped at once (a call's unused value: POP_TOP) is dropped here, before the resume
    // function is called: plain Python frees it there (its __del__ runs before what follows),
    // where passing it on would keep it alive until the resume function returns.
    if (site.pushed_null < 0 && eff >= 1 && next < original_.size() &&
        is_op(original_.at(next), "POP_TOP") && after - 1 >= static_cast<int>(site.keep)) {
      e.pos = original_.at(next).position;
      e.emit("POP_TOP");
      ++next;
      --after;
      e.pos = last.position;
    }
    emit_resume_call(e, site, next, after);
  }
  if (info.is_jump()) {
    e.place(jump_label);
    std::size_t target = original_.index_of(last.target);
    int stack = 0;
    if (for_iter) {
      // Exhausted: the iterator is popped, and 3.12+ skip the END_FOR (and 3.13 the POP_TOP) the
      // jump targets; the same instructions stand at the label for the runtime to skip.
      target += e.emit_for_iter_exit();
      stack = depth - 1;
    } else {
      int eff = 0;
      if (!bytecode::stack_effect(last.opcode, last.arg, true, &eff)) {
        throw CodegenError("no stack effect for the breaking jump");
      }
      stack = depth + eff;
    }
    emit_resume_call(e, site, target, stack);
  }
  e.finish_into(bc);
  return bc.assemble();
}

std::size_t CodeGen::break_keep(const SimulationResult& r) {
  const std::string& kinds = original_.localsplus_kinds();
  const Instruction& last = original_.at(r.last);
  // The value stack at the break is loaded first (emit_state): reads of the locals' entry values
  // happen before any store. NULLs (of calls pending below the breaking instruction's inputs)
  // cannot be passed to a resume function: they are left out and pushed again by the resume
  // function's prologue, so the instruction's inputs must be known.
  // An instruction that reads or writes a cell slot as a plain local (3.12's inlined comprehensions
  // save and restore a cell that way) would leave the frame's cells unfit to pass on.
  {
    const bytecode::ArgKind ak = bytecode::opcode_info(last.opcode).arg_kind;
    auto cell = [&kinds](int i) {
      return i >= 0 && static_cast<std::size_t>(i) < kinds.size() &&
             bytecode::localsplus::is_cell_or_free(kinds[static_cast<std::size_t>(i)]);
    };
    if ((ak == bytecode::ArgKind::kLocal && cell(last.arg)) ||
        (ak == bytecode::ArgKind::kLocalPair && (cell(last.arg >> 4) || cell(last.arg & 15)))) {
      throw CodegenError("a graph break at a plain access to a cell slot");
    }
  }
  const int consumed = bytecode::values_taken(last);
  const std::size_t depth_before = r.state.stack.size();
  bool any_null = false;
  for (const VarPtr& v : r.state.stack) {
    any_null = any_null || v->kind() == Variable::Kind::kNull;
  }
  if (consumed < 0 && any_null) {
    throw CodegenError(std::string("a graph break at ") + bytecode::opcode_info(last.opcode).name +
                       " while a call is pending");
  }
  if (consumed > static_cast<int>(depth_before)) {
    throw CodegenError("the breaking instruction takes more values than the stack holds");
  }
  // DICT_MERGE names the callable in its TypeError, reading it below its own inputs. The stack
  // emitted here leaves NULLs out, and from 3.13 (NULL above the callable) the call's NULL lies
  // between the callable and the dict: the read would miss, so the original code runs instead.
  if (bytecode::call_null_above_callable() && any_null && is_op(last, "DICT_MERGE")) {
    throw CodegenError("a graph break at DICT_MERGE while a call is pending");
  }
  const std::size_t keep =
      consumed < 0 ? depth_before : depth_before - static_cast<std::size_t>(consumed);
  return keep;
}

int CodeGen::emit_breaking(Emitter& e, const SimulationResult& r, int jump_label) {
  const Instruction& last = original_.at(r.last);
  // The breaking instructions, run for real (a resume function per successor follows).
  const bytecode::OpcodeInfo& info = bytecode::opcode_info(last.opcode);
  for (std::size_t k = r.first; k < r.last; ++k) {
    const Instruction& ins = original_.at(k);
    e.pos = ins.position;
    e.emit(ins.opcode, ins.arg);
  }
  e.pos = last.position;
  // A load that pushes a NULL for a call (LOAD_GLOBAL with its NULL bit, a method load) runs
  // without it: the resume function pushes the NULL (method loads become plain attribute loads:
  // the bound method is called instead, with the same result).
  int pushed_null = -1;  // position of that NULL among the instruction's results
  Instruction emitted = last;
  if (bytecode::strip_call_null(last, &emitted, &pushed_null)) {
    // (emitted without it)
  } else if (is_op(last, "LOAD_SUPER_ATTR") && (last.arg & 1) != 0) {
    throw CodegenError("a graph break at a method load through super()");
  }
  // A value from a graph (a NumPy bool where the original had made a Python bool) reaches a 3.13
  // consumer of exact bools: coerce it as the original's TO_BOOL would have.
  if (bytecode::takes_exact_bool(last)) {
    e.emit("TO_BOOL");
  }
  if (info.is_jump()) {
    e.emit_jump(emitted, jump_label);
  } else {
    e.emit(emitted.opcode, emitted.arg);
  }
  return pushed_null;
}

void CodeGen::resume_arguments(Emitter& e, const SimulationResult& r, BreakSite* site) {
  const std::string& kinds = original_.localsplus_kinds();
  const std::size_t n = kinds.size();
  const Instruction& last = original_.at(r.last);
  // The locals bound after the instruction: as before it, but for the locals it stores or deletes.
  std::vector<bool> bound(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    bound[i] = static_cast<bool>(e.current[i]);
  }
  auto set_bound = [&](int i, bool value) {
    if (i >= 0 && static_cast<std::size_t>(i) < n) {
      bound[static_cast<std::size_t>(i)] = value;
    }
  };
  if (is_op(last, "STORE_FAST") || is_op(last, "DELETE_FAST")) {
    set_bound(last.arg, is_op(last, "STORE_FAST"));
  } else if (is_op(last, "STORE_FAST_LOAD_FAST") || is_op(last, "STORE_FAST_STORE_FAST")) {
    set_bound(last.arg >> 4, true);
    set_bound(is_op(last, "STORE_FAST_STORE_FAST") ? last.arg & 15 : -1, true);
  }
  std::vector<int>& live = site->live;
  for (std::size_t i = 0; i < n; ++i) {
    if (bytecode::localsplus::is_plain_local(kinds[i]) && bound[i]) {
      live.push_back(static_cast<int>(i));
    }
  }
  // The frame's cells are passed as arguments (cells of the resume function: an unbound one
  // still raises UnboundLocalError); its free variables make the resume function's closure.
  std::vector<int>& cells = site->cells;
  std::vector<int>& closure = site->closure;
  for (std::size_t i = 0; i < n; ++i) {
    if (bytecode::localsplus::is_cell(kinds[i])) {
      cells.push_back(static_cast<int>(i));
    } else if (bytecode::localsplus::is_free(kinds[i])) {
      closure.push_back(static_cast<int>(i));
    }
  }
}

// `after`: values on the original's stack after the instruction on this path.
void CodeGen::emit_resume_call(Emitter& e, const BreakSite& site, std::size_t index, int after) {
  const std::size_t keep = site.keep;
  const std::vector<int>& live = site.live;
  const std::vector<int>& cells = site.cells;
  const std::vector<int>& closure = site.closure;
  if (after < static_cast<int>(keep)) {
    throw CodegenError("the stack after the break is shallower than what it kept");
  }
  std::vector<bool> nulls = site.kept_null;
  nulls.resize(static_cast<std::size_t>(after), false);
  if (site.pushed_null >= 0) {
    nulls.at(keep + static_cast<std::size_t>(site.pushed_null)) = true;
  }
  std::size_t values = 0;
  py::list null_slots;
  for (std::size_t k = 0; k < nulls.size(); ++k) {
    if (nulls[k]) {
      null_slots.append(k);
    } else {
      ++values;
    }
  }
  const py::tuple key =
      py::make_tuple(index, nulls.size(), py::tuple(null_slots), py::tuple(py::cast(live)));
  py::object code;
  if (resume_cache_.contains(key)) {
    code = resume_cache_[key];
  } else {
    code = make_resume(original_, index, nulls, live);
    resume_cache_[key] = code;
    register_resume(code, original_.template_code(), original_.at(index).original_offset);
  }
  ResumeFunction rf;
  rf.code = code;
  rf.index = index;
  rf.offset = original_.at(index).original_offset;
  rf.stack = values;
  rf.live = live;
  resumes_.push_back(rf);
  // The arguments travel in one list that the resume function empties first: the values move
  // into its frame, and neither this frame nor its value stack (which CPython keeps until the
  // call returns) holds them while it runs - `del x` there frees x as in the original.
  for (const int i : live) {
    e.emit("LOAD_FAST", i);
    e.emit("DELETE_FAST", i);
  }
  for (const int i : cells) {
    e.load_cell(i);
  }
  e.emit("BUILD_LIST", static_cast<int>(values + live.size() + cells.size()));
  // A second reference to the list stays on this frame's stack during the call: if the call
  // fails before the resume function has emptied the list (a RecursionError at the call), the
  // handler below puts the live locals back, so that this frame - in the traceback - holds them
  // as the user's frame would.
  e.emit("COPY", 1);
  e.make_function(
      code, 0, !closure.empty(), [](int /*bit*/) {},
      [&] {
        for (const int i : closure) {
          e.load_cell(i);
        }
        e.emit("BUILD_TUPLE", static_cast<int>(closure.size()));
      });
  e.callable_over_argument();  // [list, list, fn] -> a call of fn(list)
  // The call is covered by a handler that drops this frame's traceback entry before the
  // exception leaves: the resume function's frame stands for the user's frame in tracebacks,
  // which then read as if the function had run in one piece.
  const int strip = e.new_label();
  const int cleanup = e.new_label();
  const std::size_t call_first = e.out.size();
  e.call(1);
  e.cover(call_first, strip, 1, false);
  e.emit("SWAP", 2);  // result, list
  e.emit("POP_TOP");
  e.emit("RETURN_VALUE");
  emit_restore_handler(e, site, values, strip, cleanup);
}

// The handler around a resume call: puts the live locals back when the list was not emptied,
// drops this frame's traceback entry, re-raises.
void CodeGen::emit_restore_handler(Emitter& e, const BreakSite& site, std::size_t values, int strip,
                                   int cleanup) {
  const std::vector<int>& live = site.live;
  const std::vector<int>& cells = site.cells;
  const int reraise = e.new_label();
  const int keep_tb = e.new_label();
  const int emptied = e.new_label();
  e.place(strip);
  const std::size_t handler_first = e.out.size();
  e.emit("PUSH_EXC_INFO");  // list, prev, exc
  e.emit("COPY", 3);        // list, prev, exc, list
  if (bytecode::opcode_by_name("TO_BOOL") >= 0) {
    e.emit("TO_BOOL");
  }
  e.emit_jump_op("POP_JUMP_IF_FALSE", emptied);  // the resume function ran: nothing to restore
  e.emit("COPY", 3);
  e.emit("UNPACK_SEQUENCE", static_cast<int>(values + live.size() + cells.size()));
  for (std::size_t k = 0; k < values; ++k) {
    e.emit("POP_TOP");
  }
  for (const int i : live) {
    e.emit("STORE_FAST", i);
  }
  for (std::size_t k = 0; k < cells.size(); ++k) {
    e.emit("POP_TOP");
  }
  e.place(emptied);
  e.emit("COPY", 1);  // list, prev, exc, exc
  e.load_attr("__traceback__");
  e.load_attr("tb_next");
  e.emit("COPY", 1);                                     // list, prev, exc, next, next
  e.emit_jump_op("POP_JUMP_IF_NONE", keep_tb);           // list, prev, exc, next
  e.emit("COPY", 2);                                     // list, prev, exc, next, exc
  e.emit("STORE_ATTR", e.bc.add_name("__traceback__"));  // list, prev, exc
  e.emit_jump_op("JUMP_FORWARD", reraise);
  e.place(keep_tb);
  e.emit("POP_TOP");  // list, prev, exc
  e.place(reraise);
  e.emit("RERAISE", 0);
  e.cover(handler_first, cleanup, 2, true);
  e.place(cleanup);  // list, prev, lasti, exc
  e.emit("COPY", 3);
  e.emit("POP_EXCEPT");
  e.emit("RERAISE", 1);
}

}  // namespace sot::translator
