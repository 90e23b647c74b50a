// The exception table (co_exceptiontable, 3.11+): entries in code units.
#pragma once

#include <string>
#include <vector>

namespace sot::bytecode {

struct ExceptionTableEntry {
  int start = 0;   // first covered code unit
  int end = 0;     // one past the last covered code unit
  int target = 0;  // handler code unit
  int depth = 0;
  bool lasti = false;
};

// Throws BytecodeError on a malformed table.
std::vector<ExceptionTableEntry> decode_exception_table(const std::string& table);
std::string encode_exception_table(const std::vector<ExceptionTableEntry>& entries);

}  // namespace sot::bytecode
