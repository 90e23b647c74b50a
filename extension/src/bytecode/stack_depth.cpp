#include "bytecode/stack_depth.hpp"

#include <algorithm>
#include <optional>
#include <string>

#include "bytecode/bytecode.hpp"
#include "bytecode/opcode_table.hpp"

namespace sot::bytecode {

namespace {

// Far above any real code's depth, and small enough that depth sums stay far from int overflow.
constexpr int kMaxDepth = 1 << 24;

// The flow analysis: a worklist of instructions whose depth is known, each walked along its
// straight-line path.
class DepthFlow {
 public:
  DepthFlow(const std::vector<Instruction>& instructions, const std::vector<int>& args,
            const std::function<std::size_t(int)>& index_of)
      : instructions_(instructions),
        args_(args),
        index_of_(index_of),
        n_(instructions.size()),
        depth_at_(instructions.size(), -1) {}

  int run() {
    check_handlers();
    if (n_ > 0) {
      reach(0, 0, "entry");
    }
    while (!worklist_.empty() || next_dead_region()) {
      const std::size_t i = worklist_.back();
      worklist_.pop_back();
      walk(i);
    }
    return max_depth_;
  }

 private:
  void check_handlers() const {
    for (std::size_t i = 0; i < n_; ++i) {
      const std::optional<Handler>& h = instructions_[i].handler;
      if (h && (h->depth < 0 || h->depth > kMaxDepth)) {
        throw BytecodeError("exception handler depth " + std::to_string(h->depth) +
                            " of instruction " + std::to_string(i) + " is out of range");
      }
    }
  }

  void reach(std::size_t index, int depth, const char* how) {
    if (depth > kMaxDepth) {
      throw BytecodeError("stack depth out of range reaching instruction " + std::to_string(index));
    }
    if (depth < 0 && in_dead_code_) {
      return;  // a dead path that cannot run; it sets no depth
    }
    if (depth < 0) {
      throw BytecodeError(std::string("stack underflow reaching instruction ") +
                          std::to_string(index) + " (" + how + ")");
    }
    max_depth_ = std::max(max_depth_, depth);
    if (depth_at_[index] < 0) {
      depth_at_[index] = depth;
      worklist_.push_back(index);
    } else if (depth_at_[index] != depth && !in_dead_code_) {
      throw BytecodeError("instruction " + std::to_string(index) +
                          " is reached with stack depths " + std::to_string(depth_at_[index]) +
                          " and " + std::to_string(depth) + " (" + how + ")");
    }
  }

  int effect_of(std::size_t i, bool jump) const {
    static const int kReturnGenerator = opcode_by_name("RETURN_GENERATOR");
    // RETURN_GENERATOR returns the new generator; when the generator is resumed, execution
    // continues after it with the sent value pushed (the POP_TOP that follows drops it). The
    // interpreter's table says 0.
    if (instructions_[i].opcode == kReturnGenerator) {
      return 1;
    }
    int effect = 0;
    if (!stack_effect(instructions_[i].opcode, args_[i], jump, &effect)) {
      throw BytecodeError(std::string("no stack effect known for ") +
                          opcode_info(instructions_[i].opcode).name);
    }
    // Arguments come from anywhere (edits, fuzzing): an effect no real code has is an error, and
    // keeps depth sums far from int overflow.
    if (effect > kMaxDepth || effect < -kMaxDepth) {
      throw BytecodeError(std::string("stack effect ") + std::to_string(effect) + " of " +
                          opcode_info(instructions_[i].opcode).name + " is out of range");
    }
    return effect;
  }

  // Walks the straight-line path from instruction `i` (its depth known), reaching handlers and
  // jump targets on the way.
  void walk(std::size_t i) {
    int depth = depth_at_[i];
    for (;;) {
      const Instruction& ins = instructions_[i];
      const OpcodeInfo& info = opcode_info(ins.opcode);
      if (ins.handler) {
        reach(index_of_(ins.handler->target), ins.handler->depth + 1 + (ins.handler->lasti ? 1 : 0),
              "handler");
      }
      const int next_depth = depth + effect_of(i, false);
      max_depth_ = std::max(max_depth_, next_depth);
      if (info.is_jump()) {
        reach(index_of_(ins.target), depth + effect_of(i, true), "jump");
      }
      if (!info.falls_through() || i + 1 >= n_) {
        return;
      }
      if (depth_at_[i + 1] >= 0 || next_depth < 0) {
        reach(i + 1, next_depth, "fall-through");
        return;
      }
      depth_at_[i + 1] = next_depth;
      depth = next_depth;
      ++i;
    }
  }

  // Dead code: the compiler can optimise a try body away (a constant return, a pass) after it
  // computed the stack depth, leaving handler code that no table entry leads to any more. The
  // compiler counted that code at the depth it had; to get the same co_stacksize, a dead region
  // gets the depth it must have where it rejoins live code (walking its straight-line path), or,
  // when it never rejoins, the depth of the cleanup entry covering its first instruction (the depth
  // an orphaned handler starts at).
  bool dead_region_depth(std::size_t first, int* depth) const {
    int sum = 0;
    for (std::size_t j = first; j < n_; ++j) {
      if (depth_at_[j] >= 0) {
        *depth = depth_at_[j] - sum;
        return *depth >= 0 && *depth <= kMaxDepth;
      }
      const OpcodeInfo& info = opcode_info(instructions_[j].opcode);
      if (!info.falls_through()) {
        if (info.is_jump() && depth_at_[index_of_(instructions_[j].target)] >= 0) {
          *depth = depth_at_[index_of_(instructions_[j].target)] - (sum + effect_of(j, true));
          return *depth >= 0 && *depth <= kMaxDepth;
        }
        break;
      }
      sum += effect_of(j, false);
      if (sum > kMaxDepth || sum < -kMaxDepth) {
        return false;  // no real code; leave this dead region out
      }
    }
    if (instructions_[first].handler) {
      *depth = instructions_[first].handler->depth;
      return true;
    }
    return false;
  }

  bool next_dead_region() {
    for (; dead_scan_ < n_; ++dead_scan_) {
      int depth = 0;
      if (depth_at_[dead_scan_] < 0 && (dead_scan_ == 0 || depth_at_[dead_scan_ - 1] >= 0) &&
          dead_region_depth(dead_scan_, &depth)) {
        in_dead_code_ = true;
        depth_at_[dead_scan_] = depth;
        max_depth_ = std::max(max_depth_, depth);
        worklist_.push_back(dead_scan_);
        return true;
      }
    }
    return false;
  }

  const std::vector<Instruction>& instructions_;
  const std::vector<int>& args_;
  const std::function<std::size_t(int)>& index_of_;
  std::size_t n_;
  std::vector<int> depth_at_;
  std::vector<std::size_t> worklist_;
  int max_depth_ = 0;
  bool in_dead_code_ = false;  // set once the flow from the entry is done
  std::size_t dead_scan_ = 0;
};

}  // namespace

int compute_stack_depth(const std::vector<Instruction>& instructions, const std::vector<int>& args,
                        const std::function<std::size_t(int)>& index_of) {
  return DepthFlow(instructions, args, index_of).run();
}

}  // namespace sot::bytecode
