// co_stacksize by flow analysis over an instruction list, the way the compiler computes it: every
// reachable instruction's depth after its effect, jump targets with the taken-jump effect, and
// exception handlers at the depth their table entry records (+1 for the exception, +1 when the
// raising offset is pushed too).
#pragma once

#include <functional>
#include <vector>

#include "bytecode/instruction.hpp"

namespace sot::bytecode {

// `args` are the final arguments (jump arguments included); `index_of` maps an instruction id to
// its index. Throws BytecodeError when two paths reach an instruction with different depths or the
// stack underflows.
int compute_stack_depth(const std::vector<Instruction>& instructions, const std::vector<int>& args,
                        const std::function<std::size_t(int)>& index_of);

}  // namespace sot::bytecode
