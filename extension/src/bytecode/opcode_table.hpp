// The opcode table of the Python this core is compiled for, generated at build time from that
// interpreter's own `opcode` module (gen_opcode_table.py), plus the interpreter's own stack-effect
// function.
#pragma once

#include <cstdint>
#include <string_view>

namespace sot::bytecode {

// What an instruction's argument means.
enum class ArgKind : std::uint8_t {
  kNone,         // no argument
  kRaw,          // an integer with an opcode-specific meaning (counts, flags, operator numbers)
  kConst,        // index into co_consts
  kName,         // index into co_names (some opcodes pack flags into the low bits; see version.hpp)
  kLocal,        // index into localsplus (a local variable)
  kFree,         // index into localsplus (a cell or free variable)
  kLocalPair,    // two 4-bit localsplus indices (3.13 LOAD_FAST_LOAD_FAST and friends)
  kCompare,      // comparison operator (shifted; see version.hpp)
  kJumpForward,  // relative jump forward, in code units after the instruction and its caches
  kJumpBackward,  // relative jump backward, same base
  kJumpAbsolute,  // absolute jump, in code units
};

enum OpcodeFlag : std::uint8_t {
  kJump = 1U << 0U,  // the argument is a jump target
  kNoFallthrough =
      1U << 1U,  // control never reaches the next instruction (return, raise, unconditional jump)
  kSpecialised = 1U << 2U,  // a specialised or instrumented form of `base`
};

struct OpcodeInfo {
  const char* name = nullptr;  // e.g. "LOAD_FAST"
  int code = -1;               // the opcode number; -1 for an unused number
  int base = -1;               // the base (deoptimised) opcode
  int cache_entries = 0;       // inline cache code units that follow the instruction
  ArgKind arg_kind = ArgKind::kNone;
  std::uint8_t flags = 0;

  bool valid() const { return code >= 0; }
  bool has_arg() const { return arg_kind != ArgKind::kNone; }
  bool is_jump() const { return (flags & kJump) != 0; }
  bool falls_through() const { return (flags & kNoFallthrough) == 0; }
  // An unconditional transfer: a jump that never falls through (JUMP_FORWARD, JUMP_BACKWARD, ...).
  bool is_unconditional_jump() const { return is_jump() && !falls_through(); }
  // Ends the flow without a jump target: return, raise, re-raise.
  bool is_terminator() const { return !is_jump() && !falls_through(); }
};

namespace detail {
extern const OpcodeInfo kInvalidOpcode;
extern const OpcodeInfo* const kOpcodeByCode;  // 256 entries, filled when the library loads
}  // namespace detail

// Info for opcode `code` (0..255); an invalid entry for unused numbers.
inline const OpcodeInfo& opcode_info(int code) {
  return (code < 0 || code > 255) ? detail::kInvalidOpcode : detail::kOpcodeByCode[code];
}
// Opcode number of `name`, or -1.
int opcode_by_name(std::string_view name);
// Python version string the table was generated from.
const char* opcode_table_python();
// The EXTENDED_ARG opcode.
int extended_arg_opcode();

// Stack effect of `opcode` with `oparg`, when the jump is taken (jump=true) or not, from the
// interpreter's own PyCompile_OpcodeStackEffectWithJump. Returns false for an opcode the
// interpreter does not know.
bool stack_effect(int opcode, int oparg, bool jump, int* effect);

}  // namespace sot::bytecode
