// One decoded instruction: EXTENDED_ARG folded into `arg`, inline caches implicit, jump and
// exception-handler targets as references to other instructions (by id), and its source position.
#pragma once

#include <cstdint>
#include <optional>

namespace sot::bytecode {

// Source location of an instruction. -1 stands for "none" in each field; line == -1 is "no
// location".
struct Position {
  int line = -1;
  int end_line = -1;
  int col = -1;
  int end_col = -1;

  bool operator==(const Position& o) const {
    return line == o.line && end_line == o.end_line && col == o.col && end_col == o.end_col;
  }
  bool operator!=(const Position& o) const { return !(*this == o); }
};

// The exception handler covering an instruction (an entry of the exception table, bound to
// instructions).
struct Handler {
  int target = -1;     // id of the handler's first instruction
  int depth = 0;       // stack depth at the handler, below the exception
  bool lasti = false;  // the handler also gets the offset of the raising instruction pushed

  bool operator==(const Handler& o) const {
    return target == o.target && depth == o.depth && lasti == o.lasti;
  }
  bool operator!=(const Handler& o) const { return !(*this == o); }
};

struct Instruction {
  int id = -1;      // stable identity within its Bytecode; jump targets and handlers refer to it
  int opcode = 0;   // base (deoptimised) opcode
  int arg = 0;      // full argument; for jumps it is recomputed from `target` when assembling
  int target = -1;  // for jumps: id of the target instruction
  std::optional<Handler> handler;
  Position position;
  int original_offset =
      -1;  // byte offset in the decoded code (of its first EXTENDED_ARG); -1 for new ones
  bool is_new = false;  // inserted by an edit
};

}  // namespace sot::bytecode
