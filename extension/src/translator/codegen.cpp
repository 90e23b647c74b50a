#include "translator/codegen.hpp"

#include <pybind11/stl.h>

#include <map>
#include <utility>

#include "bytecode/opcode_table.hpp"
#include "bytecode/version.hpp"

namespace py = pybind11;

namespace sot::translator {

namespace {

using bytecode::Instruction;
namespace version = bytecode::version;

int opcode(const char* name) {
  const int code = bytecode::opcode_by_name(name);
  if (code < 0) {
    throw CodegenError(std::string("this Python has no opcode ") + name);
  }
  return code;
}

bool is_op(const Instruction& ins, const char* name) {
  return ins.opcode == bytecode::opcode_by_name(name);
}

// Index just past the code's prefix (MAKE_CELL, COPY_FREE_VARS, ..., the first RESUME).
std::size_t prefix_end(const bytecode::Bytecode& bc) {
  for (std::size_t i = 0; i < bc.size(); ++i) {
    if (is_op(bc.at(i), "RESUME")) {
      return i + 1;
    }
  }
  throw CodegenError("the code has no RESUME");
}

bool is_plain_local(unsigned char kind) {
  return (kind & version::kFastLocal) != 0 && (kind & (version::kFastCell | version::kFastFree)) == 0;
}

bool is_cell_or_free(unsigned char kind) {
  return (kind & (version::kFastCell | version::kFastFree)) != 0;
}

constexpr std::size_t kForIterExhaustSkip =
    PY_VERSION_HEX >= 0x030D0000 ? 2 : (PY_VERSION_HEX >= 0x030C0000 ? 1 : 0);

}  // namespace

// Builds the instructions appended after the prefix, with labels for forward jumps.
struct CodeGen::Emitter {
  bytecode::Bytecode& bc;
  const std::string& kinds;
  GuardSet* guards;
  bytecode::Position pos;
  std::vector<Instruction> out;
  std::vector<long> labels;                         // label -> index in out (-1: not placed)
  std::vector<std::pair<std::size_t, int>> jumps;   // (index in out, label)
  std::vector<VarPtr> current;      // what each local holds at this point of the generated code
  std::vector<bool> overwritten;    // stored by the generated code (no longer the entry value)
  std::map<const Variable*, int> built;  // mutable containers built so far -> local holding it

  Emitter(bytecode::Bytecode& target, const std::string& k, GuardSet* g)
      : bc(target), kinds(k), guards(g) {}

  void emit(int op, int arg = 0) {
    Instruction ins;
    ins.opcode = op;
    ins.arg = arg;
    ins.position = pos;
    out.push_back(ins);
  }
  void emit(const char* name, int arg = 0) { emit(opcode(name), arg); }
  int new_label() {
    labels.push_back(-1);
    return static_cast<int>(labels.size() - 1);
  }
  void place(int label) { labels[static_cast<std::size_t>(label)] = static_cast<long>(out.size()); }
  void emit_jump(const Instruction& original, int label) {
    Instruction ins;
    ins.opcode = original.opcode;
    ins.arg = original.arg;
    ins.position = original.position;
    jumps.emplace_back(out.size(), label);
    out.push_back(ins);
  }
  std::vector<Instruction> finish() {
    for (const auto& [index, label] : jumps) {
      const long at = labels[static_cast<std::size_t>(label)];
      if (at < 0) {
        throw CodegenError("a label was never placed");
      }
      out[index].target = -static_cast<int>(at + 2);
    }
    return std::move(out);
  }

  void load_const(const py::object& value) { emit("LOAD_CONST", bc.add_const(value)); }

  // Pushes `v` rotated below the `n` values on top of the stack.
  void rotate_down(std::size_t n) {
    for (std::size_t k = n + 1; k >= 2; --k) {
      emit("SWAP", static_cast<int>(k));
    }
  }

  int local_holding(const VarPtr& v) const {
    for (std::size_t j = 0; j < current.size(); ++j) {
      if (current[j] == v && is_plain_local(static_cast<unsigned char>(kinds[j]))) {
        return static_cast<int>(j);
      }
    }
    return -1;
  }

  // Loads a value through its tracker; false when that is not possible here.
  bool load_tracked(const VarPtr& v) {
    const Tracker& t = v->tracker();
    switch (t.kind) {
      case Tracker::Kind::kLocal: {
        const auto i = static_cast<std::size_t>(t.index);
        if (i < overwritten.size() && !overwritten[i]) {
          emit("LOAD_FAST", t.index);
          return true;
        }
        const int j = local_holding(v);
        if (j >= 0) {
          emit("LOAD_FAST", j);
          return true;
        }
        return false;
      }
      case Tracker::Kind::kGlobal:
        emit("LOAD_GLOBAL", bc.add_name(py::str(t.key).cast<std::string>())
                                << version::kLoadGlobalNameShift);
        return true;
      case Tracker::Kind::kAttr:
        load(t.base);
        emit("LOAD_ATTR", bc.add_name(py::str(t.key).cast<std::string>())
                              << version::kLoadAttrNameShift);
        return true;
      case Tracker::Kind::kItem:
        load(t.base);
        load_const(t.key);
        emit("BINARY_SUBSCR");
        return true;
      case Tracker::Kind::kCreated:
        return false;
    }
    return false;
  }

  void load(const VarPtr& v) {
    switch (v->kind()) {
      case Variable::Kind::kNull:
        emit("PUSH_NULL");
        return;
      case Variable::Kind::kConst:
        if (v->tracker().is_input() && load_tracked(v)) {
          return;
        }
        guards->value(v);  // the generated code now relies on the value
        load_const(v->value());
        return;
      case Variable::Kind::kObject:
        if (v->tracker().is_input()) {
          if (load_tracked(v)) {
            return;
          }
          throw CodegenError("cannot load " + v->describe() + " again");
        }
        load_const(v->value());
        return;
      case Variable::Kind::kTuple:
        for (const VarPtr& item : v->items()) {
          load(item);
        }
        emit("BUILD_TUPLE", static_cast<int>(v->items().size()));
        return;
      case Variable::Kind::kList: {
        const auto it = built.find(v.get());
        if (it != built.end()) {
          if (it->second < 0) {
            throw CodegenError("a list made in the frame is referenced twice");
          }
          emit("LOAD_FAST", it->second);
          return;
        }
        for (const VarPtr& item : v->items()) {
          load(item);
        }
        emit("BUILD_LIST", static_cast<int>(v->items().size()));
        built[v.get()] = -1;
        return;
      }
      case Variable::Kind::kIter:
        if (v->value().is_none()) {
          for (std::size_t i = static_cast<std::size_t>(v->position()); i < v->items().size(); ++i) {
            load(v->items()[i]);
          }
          emit("BUILD_TUPLE", static_cast<int>(v->items().size() - static_cast<std::size_t>(v->position())));
        } else {
          const py::object rest = v->value()[py::slice(v->position(), PY_SSIZE_T_MAX, 1)];
          load_const(rest);
        }
        emit("GET_ITER");
        return;
    }
  }
};

CodeGen::CodeGen(const bytecode::Bytecode& original, py::dict resume_cache, GuardSet* guards)
    : original_(original), resume_cache_(std::move(resume_cache)), guards_(guards) {}

namespace {

std::vector<Instruction> prefix_of(const bytecode::Bytecode& bc) {
  const std::size_t end = prefix_end(bc);
  return {bc.instructions().begin(), bc.instructions().begin() + static_cast<long>(end)};
}

}  // namespace

py::object CodeGen::for_return(const SimulationResult& r) {
  bytecode::Bytecode bc = bytecode::Bytecode::from_instructions(prefix_of(original_), original_.template_code().ptr());
  Emitter e(bc, original_.localsplus_kinds(), guards_);
  e.pos = original_.at(r.last).position;
  e.current = r.entry_locals;
  e.overwritten.assign(r.entry_locals.size(), false);
  e.load(r.value);
  e.emit("RETURN_VALUE");
  bc.insert(bc.size(), e.finish());
  return bc.assemble();
}

py::object CodeGen::for_break(const SimulationResult& r) {
  bytecode::Bytecode bc = bytecode::Bytecode::from_instructions(prefix_of(original_), original_.template_code().ptr());
  const std::string& kinds = original_.localsplus_kinds();
  Emitter e(bc, kinds, guards_);
  const Instruction& last = original_.at(r.last);
  e.pos = last.position;
  const std::size_t n = kinds.size();
  e.current = r.entry_locals;
  e.current.resize(n);
  e.overwritten.assign(n, false);

  // 1. The locals the simulation changed: every new value is loaded first (reads of entry values
  // happen before any store), then stored.
  std::vector<std::size_t> stored;
  std::vector<std::pair<std::size_t, std::size_t>> aliases;  // (local, local already holding it)
  std::vector<std::size_t> deleted;
  for (std::size_t i = 0; i < n; ++i) {
    if (!is_plain_local(static_cast<unsigned char>(kinds[i])) || r.state.locals[i] == r.entry_locals[i]) {
      continue;
    }
    const VarPtr& v = r.state.locals[i];
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
    if (!alias) {
      e.load(v);
      stored.push_back(i);
    }
  }
  for (auto it = stored.rbegin(); it != stored.rend(); ++it) {
    e.emit("STORE_FAST", static_cast<int>(*it));
    e.overwritten[*it] = true;
    e.current[*it] = r.state.locals[*it];
    if (r.state.locals[*it]->is_mutable_created()) {
      e.built[r.state.locals[*it].get()] = static_cast<int>(*it);
    }
  }
  for (const auto& [i, j] : aliases) {
    e.emit("LOAD_FAST", static_cast<int>(j));
    e.emit("STORE_FAST", static_cast<int>(i));
    e.overwritten[i] = true;
    e.current[i] = r.state.locals[i];
  }
  for (const std::size_t i : deleted) {
    e.emit("DELETE_FAST", static_cast<int>(i));
    e.overwritten[i] = true;
    e.current[i] = nullptr;
  }

  // 2. The value stack at the break.
  for (const VarPtr& v : r.state.stack) {
    if (v->kind() != Variable::Kind::kNull && !v->is_const()) {
      const int j = e.local_holding(v);
      if (j >= 0) {
        e.emit("LOAD_FAST", j);
        continue;
      }
    }
    e.load(v);
  }

  // 3. The breaking instructions, run for real, then a resume function per successor.
  const bytecode::OpcodeInfo& info = bytecode::opcode_info(last.opcode);
  const bool for_iter = is_op(last, "FOR_ITER");
  int effect_before = 0;
  for (std::size_t k = r.first; k < r.last; ++k) {
    const Instruction& ins = original_.at(k);
    int eff = 0;
    if (!bytecode::stack_effect(ins.opcode, ins.arg, false, &eff)) {
      throw CodegenError("no stack effect for an instruction of the break");
    }
    effect_before += eff;
    e.pos = ins.position;
    e.emit(ins.opcode, ins.arg);
  }
  e.pos = last.position;
  const int jump_label = info.is_jump() ? e.new_label() : -1;
  if (info.is_jump()) {
    e.emit_jump(last, jump_label);
  } else {
    e.emit(last.opcode, last.arg);
  }
  const auto depth = static_cast<int>(r.state.stack.size()) + effect_before;
  std::vector<int> live;
  for (std::size_t i = 0; i < n; ++i) {
    if (is_plain_local(static_cast<unsigned char>(kinds[i])) && e.current[i]) {
      live.push_back(static_cast<int>(i));
    }
  }
  std::vector<int> closure;
  for (std::size_t i = 0; i < n; ++i) {
    if (is_cell_or_free(static_cast<unsigned char>(kinds[i]))) {
      closure.push_back(static_cast<int>(i));
    }
  }
  auto resume_call = [&](std::size_t index, int stack) {
    if (stack < 0) {
      throw CodegenError("negative stack depth after the break");
    }
    const auto nstack = static_cast<std::size_t>(stack);
    const py::tuple key = py::make_tuple(index, nstack, py::tuple(py::cast(live)));
    py::object code;
    if (resume_cache_.contains(key)) {
      code = resume_cache_[key];
    } else {
      code = make_resume(original_, index, nstack, live);
      resume_cache_[key] = code;
    }
    ResumeFunction rf;
    rf.code = code;
    rf.index = index;
    rf.offset = original_.at(index).original_offset;
    rf.stack = nstack;
    rf.live = live;
    resumes_.push_back(rf);
    for (const int i : closure) {
      e.emit(version::kMakeFunctionHasFlags ? "LOAD_CLOSURE" : "LOAD_FAST", i);
    }
    if (!closure.empty()) {
      e.emit("BUILD_TUPLE", static_cast<int>(closure.size()));
    }
    e.load_const(code);
    if constexpr (version::kMakeFunctionHasFlags) {
      e.emit("MAKE_FUNCTION", closure.empty() ? 0 : version::kMakeFunctionClosure);
    } else {
      e.emit("MAKE_FUNCTION");
      if (!closure.empty()) {
        e.emit("SET_FUNCTION_ATTRIBUTE", version::kMakeFunctionClosure);
      }
    }
    e.rotate_down(nstack);
    e.emit("PUSH_NULL");
    e.rotate_down(version::kNullBeforeCallable ? nstack + 1 : nstack);
    for (const int i : live) {
      e.emit("LOAD_FAST", i);
    }
    const int argc = static_cast<int>(nstack + live.size());
    if constexpr (version::kHasPrecall) {
      e.emit("PRECALL", argc);
    }
    e.emit("CALL", argc);
    e.emit("RETURN_VALUE");
  };
  if (info.falls_through()) {
    int eff = 0;
    if (!bytecode::stack_effect(last.opcode, last.arg, false, &eff)) {
      throw CodegenError("no stack effect for the breaking instruction");
    }
    resume_call(r.last + 1, depth + eff);
  }
  if (info.is_jump()) {
    e.place(jump_label);
    std::size_t target = original_.index_of(last.target);
    int stack = 0;
    if (for_iter) {
      // Exhausted: the iterator is popped, and 3.12+ skip the END_FOR (and 3.13 the POP_TOP) the
      // jump targets; the same instructions stand at the label for the runtime to skip.
      if constexpr (kForIterExhaustSkip >= 1) {
        e.emit("END_FOR");
      }
      if constexpr (kForIterExhaustSkip >= 2) {
        e.emit("POP_TOP");
      }
      target += kForIterExhaustSkip;
      stack = depth - 1;
    } else {
      int eff = 0;
      if (!bytecode::stack_effect(last.opcode, last.arg, true, &eff)) {
        throw CodegenError("no stack effect for the breaking jump");
      }
      stack = depth + eff;
    }
    resume_call(target, stack);
  }
  bc.insert(bc.size(), e.finish());
  return bc.assemble();
}

py::object CodeGen::make_resume(const bytecode::Bytecode& original, std::size_t index,
                                std::size_t stack, const std::vector<int>& live) {
  const std::string& kinds = original.localsplus_kinds();
  const py::list& names = original.localsplus_names();
  const std::size_t n = kinds.size();
  // New layout: the stack values, the live locals, the other plain locals, then every cell and
  // free variable of the original as a free variable (the closure carries the frame's cells).
  py::list new_names;
  std::string new_kinds;
  std::vector<int> map(n, -1);
  for (std::size_t s = 0; s < stack; ++s) {
    new_names.append(py::str("__sot_stack_" + std::to_string(s)));
    new_kinds.push_back(static_cast<char>(version::kFastLocal));
  }
  std::vector<bool> is_live(n, false);
  for (const int i : live) {
    is_live[static_cast<std::size_t>(i)] = true;
    map[static_cast<std::size_t>(i)] = static_cast<int>(new_names.size());
    new_names.append(names[static_cast<std::size_t>(i)]);
    new_kinds.push_back(kinds[static_cast<std::size_t>(i)]);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const auto kind = static_cast<unsigned char>(kinds[i]);
    if (is_plain_local(kind) && !is_live[i]) {
      map[i] = static_cast<int>(new_names.size());
      new_names.append(names[i]);
      new_kinds.push_back(kinds[i]);
    } else if (!is_plain_local(kind) && !is_cell_or_free(kind)) {
      throw CodegenError("a local of an unknown kind");
    }
  }
  int nfree = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (is_cell_or_free(static_cast<unsigned char>(kinds[i]))) {
      map[i] = static_cast<int>(new_names.size());
      new_names.append(names[i]);
      new_kinds.push_back(static_cast<char>(version::kFastFree));
      ++nfree;
    }
  }

  const std::size_t body_start = prefix_end(original);
  const Instruction& target = original.at(index);
  int next_id = 0;
  for (const Instruction& ins : original.instructions()) {
    next_id = std::max(next_id, ins.id + 1);
  }
  std::vector<Instruction> out;
  auto add = [&](const char* name, int arg, int jump_target = -1) {
    Instruction ins;
    ins.id = next_id++;
    ins.opcode = opcode(name);
    ins.arg = arg;
    ins.target = jump_target;
    ins.position = target.position;
    out.push_back(ins);
  };
  if (nfree > 0) {
    add("COPY_FREE_VARS", nfree);
  }
  add("RESUME", 0);
  for (std::size_t s = 0; s < stack; ++s) {
    add("LOAD_FAST", static_cast<int>(s));
  }
  add("JUMP_FORWARD", 0, target.id);
  for (std::size_t k = body_start; k < original.size(); ++k) {
    Instruction ins = original.at(k);
    const bytecode::ArgKind ak = bytecode::opcode_info(ins.opcode).arg_kind;
    if (ak == bytecode::ArgKind::kLocal || ak == bytecode::ArgKind::kFree) {
      ins.arg = map.at(static_cast<std::size_t>(ins.arg));
    } else if (ak == bytecode::ArgKind::kLocalPair) {
      const int a = map.at(static_cast<std::size_t>(ins.arg >> 4));
      const int b = map.at(static_cast<std::size_t>(ins.arg & 15));
      if (a > 15 || b > 15) {
        // Split the packed pair into its two halves.
        const bool load_first = is_op(ins, "LOAD_FAST_LOAD_FAST");
        const bool both_store = is_op(ins, "STORE_FAST_STORE_FAST");
        Instruction first = ins;
        first.opcode = opcode(load_first ? "LOAD_FAST" : "STORE_FAST");
        first.arg = a;
        Instruction second = ins;
        second.id = next_id++;
        second.opcode = opcode(both_store ? "STORE_FAST" : "LOAD_FAST");
        second.arg = b;
        second.is_new = true;
        out.push_back(first);
        out.push_back(second);
        continue;
      }
      ins.arg = (a << 4) | b;
    }
    if (ak == bytecode::ArgKind::kFree && is_op(ins, "MAKE_CELL")) {
      continue;  // the cell comes in through the closure
    }
    out.push_back(ins);
  }
  bytecode::Bytecode bc = bytecode::Bytecode::from_instructions(std::move(out), original.template_code().ptr());
  bc.set_localsplus(new_names, new_kinds);
  auto* co = reinterpret_cast<PyCodeObject*>(original.template_code().ptr());
  const std::string suffix = "__sot_resume_" + std::to_string(target.original_offset);
  bytecode::Bytecode::CodeOverrides o;
  o.name = suffix;
  o.qualname = py::str(co->co_qualname).cast<std::string>() + "." + suffix;
  o.argcount = static_cast<int>(stack + live.size());
  o.posonlyargcount = 0;
  o.kwonlyargcount = 0;
  o.flags = co->co_flags & ~(CO_VARARGS | CO_VARKEYWORDS);
  return bc.assemble(o);
}

}  // namespace sot::translator
