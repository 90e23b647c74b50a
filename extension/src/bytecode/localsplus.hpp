// The kinds of a code object's localsplus slots (Include/internal/pycore_code.h), the same on 3.11,
// 3.12 and 3.13, and the questions asked of them.
#pragma once

namespace sot::bytecode::localsplus {

inline constexpr unsigned char kHidden = 0x10;  // 3.12+: an inlined comprehension's local
inline constexpr unsigned char kLocal = 0x20;
inline constexpr unsigned char kCell = 0x40;
inline constexpr unsigned char kFree = 0x80;

inline unsigned char of(char kind) {
  return static_cast<unsigned char>(kind);
}
// A local that holds its value (not a cell).
inline bool is_plain_local(char kind) {
  return (of(kind) & kLocal) != 0 && (of(kind) & (kCell | kFree)) == 0;
}
// A slot that holds a cell: made by MAKE_CELL, or received in the closure.
inline bool is_cell_or_free(char kind) {
  return (of(kind) & (kCell | kFree)) != 0;
}
inline bool is_cell(char kind) {
  return (of(kind) & kCell) != 0;
}
// A free variable's slot (the closure's cell), not also a cell of this code.
inline bool is_free(char kind) {
  return (of(kind) & kFree) != 0 && (of(kind) & kCell) == 0;
}

}  // namespace sot::bytecode::localsplus
