#include "bytecode/stack_depth.hpp"

#include <algorithm>
#include <optional>
#include <string>

#include "bytecode/bytecode.hpp"
#include "bytecode/opcode_table.hpp"

namespace sot::bytecode {

int compute_stack_depth(const std::vector<Instruction>& instructions, const std::vector<int>& args,
                        const std::function<std::size_t(int)>& index_of) {
  const std::size_t n = instructions.size();
  // Far above any real code's depth, and small enough that depth sums stay far from int overflow.
  constexpr int kMaxDepth = 1 << 24;
  std::vector<int> depth_at(n, -1);
  std::vector<std::size_t> worklist;
  int max_depth = 0;
  bool in_dead_code = false;  // set once the flow from the entry is done (see below)

  auto reach = [&](std::size_t index, int depth, const char* how) {
    if (depth > kMaxDepth) {
      throw BytecodeError("stack depth out of range reaching instruction " + std::to_string(index));
    }
    if (depth < 0 && in_dead_code) {
      return;  // a dead path that cannot run; it sets no depth
    }
    if (depth < 0) {
      throw BytecodeError(std::string("stack underflow reaching instruction ") +
                          std::to_string(index) + " (" + how + ")");
    }
    max_depth = std::max(max_depth, depth);
    if (depth_at[index] < 0) {
      depth_at[index] = depth;
      worklist.push_back(index);
    } else if (depth_at[index] != depth && !in_dead_code) {
      throw BytecodeError("instruction " + std::to_string(index) +
                          " is reached with stack depths " + std::to_string(depth_at[index]) +
                          " and " + std::to_string(depth) + " (" + how + ")");
    }
  };
  static const int kReturnGenerator = opcode_by_name("RETURN_GENERATOR");
  auto effect_of = [&](std::size_t i, bool jump) {
    // RETURN_GENERATOR returns the new generator; when the generator is resumed, execution
    // continues after it with the sent value pushed (the POP_TOP that follows drops it). The
    // interpreter's table says 0.
    if (instructions[i].opcode == kReturnGenerator) {
      return 1;
    }
    int effect = 0;
    if (!stack_effect(instructions[i].opcode, args[i], jump, &effect)) {
      throw BytecodeError(std::string("no stack effect known for ") +
                          opcode_info(instructions[i].opcode).name);
    }
    // Arguments come from anywhere (edits, fuzzing): an effect no real code has is an error, and
    // keeps depth sums far from int overflow.
    if (effect > kMaxDepth || effect < -kMaxDepth) {
      throw BytecodeError(std::string("stack effect ") + std::to_string(effect) + " of " +
                          opcode_info(instructions[i].opcode).name + " is out of range");
    }
    return effect;
  };

  for (std::size_t i = 0; i < n; ++i) {
    const std::optional<Handler>& h = instructions[i].handler;
    if (h && (h->depth < 0 || h->depth > kMaxDepth)) {
      throw BytecodeError("exception handler depth " + std::to_string(h->depth) +
                          " of instruction " + std::to_string(i) + " is out of range");
    }
  }
  if (n > 0) {
    reach(0, 0, "entry");
  }
  // Dead code: the compiler can optimise a try body away (a constant return, a pass) after it
  // computed the stack depth, leaving handler code that no table entry leads to any more. The
  // compiler counted that code at the depth it had; to get the same co_stacksize, a dead region
  // gets the depth it must have where it rejoins live code (walking its straight-line path), or,
  // when it never rejoins, the depth of the cleanup entry covering its first instruction (the depth
  // an orphaned handler starts at).
  auto dead_region_depth = [&](std::size_t first, int* depth) {
    int sum = 0;
    for (std::size_t j = first; j < n; ++j) {
      if (depth_at[j] >= 0) {
        *depth = depth_at[j] - sum;
        return *depth >= 0 && *depth <= kMaxDepth;
      }
      const OpcodeInfo& info = opcode_info(instructions[j].opcode);
      if (!info.falls_through()) {
        if (info.is_jump() && depth_at[index_of(instructions[j].target)] >= 0) {
          *depth = depth_at[index_of(instructions[j].target)] - (sum + effect_of(j, true));
          return *depth >= 0 && *depth <= kMaxDepth;
        }
        break;
      }
      sum += effect_of(j, false);
      if (sum > kMaxDepth || sum < -kMaxDepth) {
        return false;  // no real code; leave this dead region out
      }
    }
    if (instructions[first].handler) {
      *depth = instructions[first].handler->depth;
      return true;
    }
    return false;
  };
  std::size_t dead_scan = 0;
  auto next_dead_region = [&]() -> bool {
    for (; dead_scan < n; ++dead_scan) {
      int depth = 0;
      if (depth_at[dead_scan] < 0 && (dead_scan == 0 || depth_at[dead_scan - 1] >= 0) &&
          dead_region_depth(dead_scan, &depth)) {
        in_dead_code = true;
        depth_at[dead_scan] = depth;
        max_depth = std::max(max_depth, depth);
        worklist.push_back(dead_scan);
        return true;
      }
    }
    return false;
  };
  while (!worklist.empty() || next_dead_region()) {
    std::size_t i = worklist.back();
    worklist.pop_back();
    int depth = depth_at[i];
    for (;;) {
      const Instruction& ins = instructions[i];
      const OpcodeInfo& info = opcode_info(ins.opcode);
      if (ins.handler) {
        reach(index_of(ins.handler->target), ins.handler->depth + 1 + (ins.handler->lasti ? 1 : 0),
              "handler");
      }
      const int next_depth = depth + effect_of(i, false);
      max_depth = std::max(max_depth, next_depth);
      if (info.is_jump()) {
        reach(index_of(ins.target), depth + effect_of(i, true), "jump");
      }
      if (!info.falls_through() || i + 1 >= n) {
        break;
      }
      if (depth_at[i + 1] >= 0) {
        reach(i + 1, next_depth, "fall-through");
        break;
      }
      if (next_depth < 0) {
        reach(i + 1, next_depth, "fall-through");
        break;
      }
      depth_at[i + 1] = next_depth;
      depth = next_depth;
      ++i;
    }
  }
  return max_depth;
}

}  // namespace sot::bytecode
