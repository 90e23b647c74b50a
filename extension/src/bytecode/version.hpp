// Everything about the bytecode format that differs between the Python versions this core supports,
// in one place, selected by the headers the core is compiled against. The opcode table itself is
// generated (opcode_table.hpp).
#pragma once

#include <Python.h>

#include <cstddef>

#include "bytecode/localsplus.hpp"

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

// Calls. 3.11 and 3.12 lay a call out as [NULL, callable, args...]; 3.13 as [callable, NULL,
// args...]. 3.11 has PRECALL before CALL; 3.11 and 3.12 pass keyword names with KW_NAMES, 3.13
// with CALL_KW.
inline constexpr bool kNullBeforeCallable = PY_VERSION_HEX < 0x030D0000;
inline constexpr bool kHasPrecall = PY_VERSION_HEX < 0x030C0000;
inline constexpr bool kHasKwNames = PY_VERSION_HEX < 0x030D0000;
// MAKE_FUNCTION takes its flags as argument before 3.13; 3.13 sets them with
// SET_FUNCTION_ATTRIBUTE, and LOAD_CLOSURE is a pseudo-instruction (LOAD_FAST loads the cell).
inline constexpr bool kMakeFunctionHasFlags = PY_VERSION_HEX < 0x030D0000;
inline constexpr int kMakeFunctionClosure = 0x08;
// RETURN_CONST exists from 3.12.
inline constexpr bool kHasReturnConst = PY_VERSION_HEX >= 0x030C0000;
// 3.13's POP_JUMP_IF_TRUE/FALSE and UNARY_NOT test for the exact bool objects: the compiler puts
// TO_BOOL (or COMPARE_OP's coerce-to-bool flag) before them. Earlier versions take the truth of any
// object.
inline constexpr bool kBoolConsumersNeedExactBool = PY_VERSION_HEX >= 0x030D0000;
// 3.12+: FOR_ITER at exhaustion skips the END_FOR it targets (3.13: END_FOR and POP_TOP).
inline constexpr bool kHasEndFor = PY_VERSION_HEX >= 0x030C0000;
// FOR_ITER at exhaustion continues this many instructions past its target.
inline constexpr std::size_t kForIterExhaustSkip =
    PY_VERSION_HEX >= 0x030D0000 ? 2 : (PY_VERSION_HEX >= 0x030C0000 ? 1 : 0);
// The values END_FOR pops (3.12: the iterator and the last item; 3.13: one, POP_TOP the other).
inline constexpr int kEndForPops = PY_VERSION_HEX >= 0x030D0000 ? 1 : 2;

// Localsplus kinds (the same on every version: bytecode/localsplus.hpp).
inline constexpr unsigned char kFastHidden = localsplus::kHidden;
inline constexpr unsigned char kFastLocal = localsplus::kLocal;
inline constexpr unsigned char kFastCell = localsplus::kCell;
inline constexpr unsigned char kFastFree = localsplus::kFree;

}  // namespace sot::bytecode::version
