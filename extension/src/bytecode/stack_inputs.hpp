// How many values an instruction takes from the stack before it pushes its results (the stack
// effect alone does not tell: a graph break must know which values the breaking instruction
// consumes), for the opcodes a break can stop at.
#pragma once

#include "bytecode/instruction.hpp"

namespace sot::bytecode {

// The values `ins` takes from the stack, or -1 when not known here.
int values_taken(const Instruction& ins);

}  // namespace sot::bytecode
