// Bytecode::assemble: instructions back into a code object.
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "bytecode/bytecode.hpp"
#include "bytecode/exception_table.hpp"
#include "bytecode/location_table.hpp"
#include "bytecode/opcode_table.hpp"
#include "bytecode/stack_depth.hpp"
#include "bytecode/version.hpp"

namespace py = pybind11;

namespace sot::bytecode {

namespace {

int prefix_count(int arg) {
  const auto a = static_cast<unsigned>(arg);
  return a > 0xFFFFFFU ? 3 : a > 0xFFFFU ? 2 : a > 0xFFU ? 1 : 0;
}

py::bytes to_bytes(const std::string& s) {
  return py::bytes(s.data(), s.size());
}

// The jump arguments, iterated to a fixed point: an argument's size (EXTENDED_ARG prefixes) moves
// the offsets the arguments are computed from. Starts where the compiler starts
// (version::kJumpArgStartsAtTargetIndex).
void resolve_jumps(const std::vector<Instruction>& ins,
                   const std::function<std::size_t(int)>& index_of, std::vector<int>* args,
                   std::vector<int>* starts, std::vector<int>* sizes) {
  const std::size_t n = ins.size();
  std::vector<std::size_t> target_index(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const OpcodeInfo& info = opcode_info(ins[i].opcode);
    if (info.is_jump()) {
      target_index[i] = index_of(ins[i].target);
      (*args)[i] = version::kJumpArgStartsAtTargetIndex ? static_cast<int>(target_index[i]) : 0;
    } else {
      if (ins[i].arg < 0) {
        throw BytecodeError(std::string("negative argument for ") + info.name);
      }
      (*args)[i] = ins[i].arg;
    }
  }
  constexpr int kMaxRounds = 64;
  for (int round = 0;; ++round) {
    int unit = 0;
    for (std::size_t i = 0; i < n; ++i) {
      (*starts)[i] = unit;
      (*sizes)[i] = prefix_count((*args)[i]) + 1 + opcode_info(ins[i].opcode).cache_entries;
      unit += (*sizes)[i];
    }
    bool size_changed = false;
    for (std::size_t i = 0; i < n; ++i) {
      const OpcodeInfo& info = opcode_info(ins[i].opcode);
      if (!info.is_jump()) {
        continue;
      }
      const int end = (*starts)[i] + (*sizes)[i];
      const int target = (*starts)[target_index[i]];
      int arg = 0;
      switch (info.arg_kind) {
        case ArgKind::kJumpForward:
          arg = target - end;
          break;
        case ArgKind::kJumpBackward:
          arg = end - target;
          break;
        default:
          arg = target;
          break;
      }
      if (arg < 0) {
        throw BytecodeError(
            std::string(info.name) + " at instruction " + std::to_string(i) +
            (info.arg_kind == ArgKind::kJumpForward ? " jumps backward" : " jumps forward") +
            "; use the opcode for the other direction");
      }
      // Past the round limit sizes may only grow, which must end.
      if (round >= kMaxRounds && prefix_count(arg) < prefix_count((*args)[i])) {
        continue;
      }
      if (prefix_count(arg) != prefix_count((*args)[i])) {
        size_changed = true;
      }
      (*args)[i] = arg;
    }
    if (!size_changed) {
      return;
    }
  }
}

}  // namespace

Bytecode::Layout Bytecode::layout() const {
  check_targets();
  const std::size_t n = instructions_.size();
  Layout layout{std::vector<int>(n), std::vector<int>(n), std::vector<int>(n)};
  resolve_jumps(
      instructions_, [this](int id) { return index_of(id); }, &layout.args, &layout.starts,
      &layout.sizes);
  return layout;
}

std::vector<ExceptionTableEntry> Bytecode::exception_entries(const Layout& layout) const {
  const std::vector<Instruction>& ins = instructions_;
  const std::size_t n = ins.size();
  std::vector<ExceptionTableEntry> entries;
  for (std::size_t i = 0; i < n;) {
    if (!ins[i].handler) {
      ++i;
      continue;
    }
    std::size_t j = i + 1;
    while (j < n && ins[j].handler == ins[i].handler) {
      ++j;
    }
    const Handler& h = *ins[i].handler;
    const int end = layout.starts[j - 1] + layout.sizes[j - 1];
    entries.push_back({layout.starts[i], end, layout.starts[index_of(h.target)], h.depth, h.lasti});
    i = j;
  }
  return entries;
}

py::object Bytecode::assemble(const CodeOverrides& overrides) const {
  const std::vector<Instruction>& ins = instructions_;
  const std::size_t n = ins.size();
  auto index = [this](int id) { return index_of(id); };
  const Layout placed = layout();
  const std::vector<int>& args = placed.args;
  const std::vector<int>& sizes = placed.sizes;

  // co_code: prefixes, opcode and low byte, zeroed caches.
  const int extended_arg = extended_arg_opcode();
  std::string code;
  code.reserve(static_cast<std::size_t>(n) * 4);
  for (std::size_t i = 0; i < n; ++i) {
    const auto arg = static_cast<unsigned>(args[i]);
    for (int k = prefix_count(args[i]); k > 0; --k) {
      code.push_back(static_cast<char>(extended_arg));
      code.push_back(static_cast<char>((arg >> (8U * static_cast<unsigned>(k))) & 0xFFU));
    }
    code.push_back(static_cast<char>(ins[i].opcode));
    code.push_back(static_cast<char>(arg & 0xFFU));
    code.append(2 * static_cast<std::size_t>(opcode_info(ins[i].opcode).cache_entries), '\0');
  }

  const std::vector<ExceptionTableEntry> entries = exception_entries(placed);

  auto* template_code = reinterpret_cast<PyCodeObject*>(code_.ptr());
  std::vector<Position> positions(n);
  bool any_position = false;
  for (std::size_t i = 0; i < n; ++i) {
    positions[i] = ins[i].position;
    any_position = any_position || ins[i].position.line >= 0 || ins[i].position.col >= 0;
  }
  // A code object made without a location table keeps none, unless positions were given.
  const bool keep_empty_linetable =
      !any_position && PyBytes_GET_SIZE(template_code->co_linetable) == 0;
  const std::string linetable =
      keep_empty_linetable
          ? std::string()
          : encode_location_table(positions, sizes,
                                  overrides.first_line.value_or(template_code->co_firstlineno));

  const int stacksize = compute_stack_depth(ins, args, index);

  py::dict kwargs;
  kwargs["co_code"] = to_bytes(code);
  kwargs["co_consts"] = py::tuple(consts_);
  kwargs["co_names"] = py::tuple(names_);
  kwargs["co_exceptiontable"] = to_bytes(encode_exception_table(entries));
  kwargs["co_linetable"] = to_bytes(linetable);
  kwargs["co_stacksize"] = stacksize;
  if (overrides.name) {
    kwargs["co_name"] = *overrides.name;
  }
  if (overrides.qualname) {
    kwargs["co_qualname"] = *overrides.qualname;
  }
  if (overrides.filename) {
    kwargs["co_filename"] = *overrides.filename;
  }
  if (overrides.first_line) {
    kwargs["co_firstlineno"] = *overrides.first_line;
  }
  if (overrides.flags) {
    kwargs["co_flags"] = *overrides.flags;
  }
  if (overrides.argcount) {
    kwargs["co_argcount"] = *overrides.argcount;
  }
  if (overrides.posonlyargcount) {
    kwargs["co_posonlyargcount"] = *overrides.posonlyargcount;
  }
  if (overrides.kwonlyargcount) {
    kwargs["co_kwonlyargcount"] = *overrides.kwonlyargcount;
  }
  if (locals_changed_) {
    py::list varnames;
    py::list cellvars;
    py::list freevars;
    for (std::size_t i = 0; i < localsplus_kinds_.size(); ++i) {
      const auto kind = static_cast<unsigned char>(localsplus_kinds_[i]);
      if ((kind & version::kFastLocal) != 0) {
        varnames.append(localsplus_names_[i]);
      }
      if ((kind & version::kFastCell) != 0) {
        cellvars.append(localsplus_names_[i]);
      }
      if ((kind & version::kFastFree) != 0) {
        freevars.append(localsplus_names_[i]);
      }
    }
    kwargs["co_nlocals"] = py::int_(varnames.size());
    kwargs["co_varnames"] = py::tuple(varnames);
    kwargs["co_cellvars"] = py::tuple(cellvars);
    kwargs["co_freevars"] = py::tuple(freevars);
  }
  return code_.attr("replace")(**kwargs);
}

}  // namespace sot::bytecode
