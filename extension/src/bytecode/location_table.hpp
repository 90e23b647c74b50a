// The location table (co_linetable, PEP 626/657 format of 3.11+): per-instruction positions out,
// bytes in, with the version's entry-splitting rule (version::kMergeEqualLocations) so assembled
// tables match the compiler's.
#pragma once

#include <string>
#include <vector>

#include "bytecode/instruction.hpp"

namespace sot::bytecode {

// Positions of each code unit of a code object of `n_units` units, from its co_linetable bytes.
// Throws BytecodeError on a malformed table.
std::vector<Position> decode_location_table(const std::string& table, int first_line, int n_units);

// A location table for instructions of the given sizes (in code units, caches and EXTENDED_ARGs
// included) and positions.
std::string encode_location_table(const std::vector<Position>& positions,
                                  const std::vector<int>& sizes, int first_line);

}  // namespace sot::bytecode
