// Disassembly of a Bytecode: text in the format of dis.dis (3.11/3.12 style, EXTENDED_ARG folded
// into its instruction), and structured rows for the notebook's side-by-side view.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "bytecode/bytecode.hpp"

namespace sot::bytecode {

// Needs the GIL (argument descriptions use the interpreter's repr and its dis/opcode data).
std::string disassemble_text(const Bytecode& bytecode);

// One dict per instruction: id, offset, opname, opcode, arg (None without argument), argrepr, line,
// starts_line, jump_target (offset or None), is_jump_target, is_new, original_offset (None for new
// instructions).
pybind11::list disassemble_rows(const Bytecode& bytecode);

}  // namespace sot::bytecode
