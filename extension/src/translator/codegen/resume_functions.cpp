// Resume functions: the code that continues a frame after a graph break (the original's
// instructions from the break on, its stack and live locals as arguments), and the registry that
// remembers which user function and offset each one resumes.
#include "translator/code_data.hpp"
#include "translator/codegen/codegen_emitter.hpp"

#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bytecode/localsplus.hpp"
#include "bytecode/opcode_table.hpp"
#include "capture/code_cache.hpp"
#include "core/loaded_module.hpp"
#include "graph/exec/backend.hpp"
#include "translator/codegen/codegen_emitter.hpp"

namespace py = pybind11;

namespace sot::translator {

using bytecode::Instruction;

py::object resume_info(PyObject* code) {
  capture::CodeCache* cache = capture::existing_cache(code);
  if (cache == nullptr || !cache->translator_data) {
    return py::none();
  }
  return code_data(cache).resume_of;
}

void register_resume(const py::object& resume, const py::object& of, int offset) {
  // A resume function of a resume function belongs to the same user function.
  const py::object outer = resume_info(of.ptr());
  const py::object user = outer.is_none() ? of : py::object(py::tuple(outer)[0]);
  capture::CodeCache* cache = capture::cache_for(resume.ptr());
  if (cache == nullptr) {
    throw py::error_already_set();
  }
  code_data(cache).resume_of = py::make_tuple(user, offset);
}

namespace {

// The resume function's localsplus: one argument (the list of values the caller passes), the
// stack values, the live locals, the other plain locals; then the original's cells as cells of the
// resume function (the caller passes its cell objects, stored into them: an unbound one still
// raises UnboundLocalError); then the original's free variables (the closure).
struct ResumeLayout {
  py::list new_names;
  std::string new_kinds;
  std::vector<int> map;      // original localsplus index -> new index
  std::vector<int> targets;  // new localsplus index of each list item, in list order
  int nfree = 0;
};

ResumeLayout resume_layout(const bytecode::Bytecode& original, std::size_t stack,
                           const std::vector<int>& live) {
  const std::string& kinds = original.localsplus_kinds();
  const py::list& names = original.localsplus_names();
  const std::size_t n = kinds.size();
  ResumeLayout out;
  py::list& new_names = out.new_names;
  std::string& new_kinds = out.new_kinds;
  std::vector<int>& map = out.map;
  map.assign(n, -1);
  std::vector<int>& targets = out.targets;
  int& nfree = out.nfree;
  new_names.append(py::str("__sot_args"));
  new_kinds.push_back(static_cast<char>(bytecode::localsplus::kLocal));
  for (std::size_t s = 0; s < stack; ++s) {
    targets.push_back(static_cast<int>(new_names.size()));
    new_names.append(py::str("__sot_stack_" + std::to_string(s)));
    new_kinds.push_back(static_cast<char>(bytecode::localsplus::kLocal));
  }
  std::vector<bool> is_live(n, false);
  for (const int i : live) {
    is_live[static_cast<std::size_t>(i)] = true;
    map[static_cast<std::size_t>(i)] = static_cast<int>(new_names.size());
    targets.push_back(map[static_cast<std::size_t>(i)]);
    new_names.append(names[static_cast<std::size_t>(i)]);
    new_kinds.push_back(kinds[static_cast<std::size_t>(i)]);
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (bytecode::localsplus::is_plain_local(kinds[i]) && !is_live[i]) {
      map[i] = static_cast<int>(new_names.size());
      new_names.append(names[i]);
      new_kinds.push_back(kinds[i]);
    } else if (!bytecode::localsplus::is_plain_local(kinds[i]) &&
               !bytecode::localsplus::is_cell_or_free(kinds[i])) {
      throw CodegenError("a local of an unknown kind");
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    const auto kind = static_cast<unsigned char>(kinds[i]);
    if (bytecode::localsplus::is_cell(kinds[i])) {
      map[i] = static_cast<int>(new_names.size());
      targets.push_back(map[i]);
      new_names.append(names[i]);
      new_kinds.push_back(
          static_cast<char>(bytecode::localsplus::kCell | (kind & bytecode::localsplus::kHidden)));
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (bytecode::localsplus::is_free(kinds[i])) {
      map[i] = static_cast<int>(new_names.size());
      new_names.append(names[i]);
      new_kinds.push_back(static_cast<char>(bytecode::localsplus::kFree));
      ++nfree;
    }
  }
  return out;
}

// The original's body after the prologue, its local arguments renumbered by `map` (a packed pair
// that no longer fits is split in two).
void append_remapped_body(const bytecode::Bytecode& original, const std::vector<int>& map,
                          std::vector<Instruction>* out_list, int* next_id_io) {
  std::vector<Instruction>& out = *out_list;
  int& next_id = *next_id_io;
  const std::size_t body_start = prefix_end(original);
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
        first.opcode = bytecode::opcode_named(load_first ? "LOAD_FAST" : "STORE_FAST");
        first.arg = a;
        Instruction second = ins;
        second.id = next_id++;
        second.opcode = bytecode::opcode_named(both_store ? "STORE_FAST" : "LOAD_FAST");
        second.arg = b;
        second.is_new = true;
        out.push_back(first);
        out.push_back(second);
        continue;
      }
      ins.arg = (a << 4) | b;
    }
    out.push_back(ins);
  }
}

}  // namespace

py::object CodeGen::make_resume(const bytecode::Bytecode& original, std::size_t index,
                                const std::vector<bool>& nulls, const std::vector<int>& live) {
  std::size_t stack = 0;  // values passed as arguments (the NULL slots are pushed by the prologue)
  for (const bool null : nulls) {
    stack += null ? 0 : 1;
  }
  const ResumeLayout layout = resume_layout(original, stack, live);
  const std::vector<int>& targets = layout.targets;
  const int nfree = layout.nfree;

  const Instruction& target = original.at(index);
  int next_id = 0;
  for (const Instruction& ins : original.instructions()) {
    next_id = std::max(next_id, ins.id + 1);
  }
  std::vector<Instruction> out;
  auto add = [&](const char* name, int arg, int jump_target = -1) {
    Instruction ins;
    ins.id = next_id++;
    ins.opcode = bytecode::opcode_named(name);
    ins.arg = arg;
    ins.target = jump_target;
    ins.position = target.position;
    out.push_back(ins);
  };
  if (nfree > 0) {
    add("COPY_FREE_VARS", nfree);
  }
  add("RESUME", 0);
  add("LOAD_FAST", 0);
  add("UNPACK_SEQUENCE", static_cast<int>(targets.size()));
  for (const int t : targets) {
    add("STORE_FAST", t);
  }
  // del __sot_args[:]; del __sot_args (the caller's stack keeps the list until the call returns).
  add("LOAD_FAST", 0);
  // slice(None, None) built (a slice constant would leave the code object unhashable before 3.12):
  // two LOAD_CONST None, completed once the Bytecode can add constants.
  out.emplace_back();
  const std::size_t clear_at = out.size() - 1;
  out.emplace_back();
  add("BUILD_SLICE", 2);
  add("DELETE_SUBSCR", 0);
  add("DELETE_FAST", 0);
  int next_stack = 1;
  for (const bool null : nulls) {
    if (null) {
      add("PUSH_NULL", 0);
    } else {
      add("LOAD_FAST", next_stack++);
    }
  }
  // The stack temporaries are unbound again: locals() and debuggers see the user's variables only.
  for (int k = 1; k < next_stack; ++k) {
    add("DELETE_FAST", k);
  }
  add("JUMP_FORWARD", 0, target.id);
  append_remapped_body(original, layout.map, &out, &next_id);
  for (const std::size_t at : {clear_at, clear_at + 1}) {
    Instruction& ins = out[at];  // LOAD_CONST None: its index is set below
    ins.id = next_id++;
    ins.opcode = bytecode::opcode_named("LOAD_CONST");
    ins.position = target.position;
  }
  bytecode::Bytecode bc =
      bytecode::Bytecode::from_instructions(std::move(out), original.template_code().ptr());
  bc.set_localsplus(layout.new_names, layout.new_kinds);
  {
    const int k = bc.add_const(py::none());
    for (const std::size_t at : {clear_at, clear_at + 1}) {
      Instruction ins = bc.at(at);
      ins.arg = k;
      bc.replace(at, ins);
    }
  }
  auto* co = reinterpret_cast<PyCodeObject*>(original.template_code().ptr());
  bytecode::Bytecode::CodeOverrides o;
  // The user's names (tracebacks and frame introspection see them); resume_info() tells a resume
  // function apart.
  o.name = py::str(co->co_name).cast<std::string>();
  o.qualname = py::str(co->co_qualname).cast<std::string>();
  o.argcount = 1;
  o.posonlyargcount = 0;
  o.kwonlyargcount = 0;
  o.flags = co->co_flags & ~(CO_VARARGS | CO_VARKEYWORDS);
  return bc.assemble(o);
}

}  // namespace sot::translator
