// Everything about the bytecode format that differs between the Python versions this core supports,
// in one place, selected by the headers the core is compiled against. The opcode table itself is
// generated (opcode_table.hpp).
#pragma once

#include <Python.h>

namespace sot::bytecode::version {

static_assert(PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000,
              "the bytecode layer supports Python 3.11, 3.12 and 3.13");

// 3.11 writes one location entry per instruction; 3.12+ merges consecutive instructions with equal
// locations.
inline constexpr bool kMergeEqualLocations = PY_VERSION_HEX >= 0x030C0000;

// Where the assembler's fixed point for jump arguments starts: a jump whose argument sits at an
// EXTENDED_ARG boundary has two consistent sizes, and the compiler's starting point picks
// one. 3.11/3.12 start from the smallest sizes; 3.13 starts from the index of the target
// instruction (its label map's value).
inline constexpr bool kJumpArgStartsAtTargetIndex = PY_VERSION_HEX >= 0x030D0000;

// Flags packed into the low bits of name arguments (the name index is arg >> shift).
inline constexpr int kLoadGlobalNameShift = 1;  // 3.11+: bit 0 = push NULL
inline constexpr int kLoadAttrNameShift =
    PY_VERSION_HEX >= 0x030C0000 ? 1 : 0;          // 3.12+: bit 0 = method
inline constexpr int kLoadSuperAttrNameShift = 2;  // 3.12+

// COMPARE_OP: the operator is arg >> shift (3.12 packs a mask in the low 4 bits, 3.13 in the low
// 5).
inline constexpr int kCompareOpShift =
    PY_VERSION_HEX >= 0x030D0000 ? 5 : (PY_VERSION_HEX >= 0x030C0000 ? 4 : 0);

// dis shows the value of constant arguments only for LOAD_CONST on 3.11 (KW_NAMES too from 3.12).
inline constexpr bool kDisShowsOnlyLoadConstValue = PY_VERSION_HEX < 0x030C0000;

// Localsplus kinds (Include/internal/pycore_code.h), stable across 3.11-3.13.
inline constexpr unsigned char kFastHidden = 0x10;
inline constexpr unsigned char kFastLocal = 0x20;
inline constexpr unsigned char kFastCell = 0x40;
inline constexpr unsigned char kFastFree = 0x80;

}  // namespace sot::bytecode::version
