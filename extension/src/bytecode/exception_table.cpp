#include "bytecode/exception_table.hpp"

#include "bytecode/bytecode.hpp"

namespace sot::bytecode {

namespace {

constexpr unsigned kStartBit = 0x80;
constexpr unsigned kMoreBit = 0x40;

// Big-endian groups of 6 bits, bit 6 = more follow; the first byte of an entry has bit 7 set.
int read_item(const std::string& t, std::size_t* pos, bool first_of_entry) {
  if (*pos >= t.size()) {
    throw BytecodeError("exception table ends inside an entry");
  }
  unsigned b = static_cast<unsigned char>(t[(*pos)++]);
  if (first_of_entry != ((b & kStartBit) != 0)) {
    throw BytecodeError("exception table entry boundary misplaced");
  }
  unsigned value = b & 63U;
  int groups = 1;
  while ((b & kMoreBit) != 0) {
    if (*pos >= t.size() || ++groups > 5) {
      throw BytecodeError("exception table item malformed");
    }
    b = static_cast<unsigned char>(t[(*pos)++]);
    if ((b & kStartBit) != 0) {
      throw BytecodeError("exception table entry boundary misplaced");
    }
    value = (value << 6U) | (b & 63U);
  }
  return static_cast<int>(value);
}

void write_item(std::string& out, unsigned value, unsigned msb) {
  for (int shift = 24; shift > 0; shift -= 6) {
    if (value >= (1U << static_cast<unsigned>(shift))) {
      out.push_back(
          static_cast<char>(((value >> static_cast<unsigned>(shift)) & 63U) | kMoreBit | msb));
      msb = 0;
    }
  }
  out.push_back(static_cast<char>((value & 63U) | msb));
}

}  // namespace

std::vector<ExceptionTableEntry> decode_exception_table(const std::string& table) {
  std::vector<ExceptionTableEntry> entries;
  std::size_t pos = 0;
  while (pos < table.size()) {
    ExceptionTableEntry e;
    e.start = read_item(table, &pos, true);
    e.end = e.start + read_item(table, &pos, false);
    e.target = read_item(table, &pos, false);
    const int depth_lasti = read_item(table, &pos, false);
    e.depth = depth_lasti >> 1;
    e.lasti = (depth_lasti & 1) != 0;
    entries.push_back(e);
  }
  return entries;
}

std::string encode_exception_table(const std::vector<ExceptionTableEntry>& entries) {
  std::string out;
  for (const ExceptionTableEntry& e : entries) {
    write_item(out, static_cast<unsigned>(e.start), kStartBit);
    write_item(out, static_cast<unsigned>(e.end - e.start), 0);
    write_item(out, static_cast<unsigned>(e.target), 0);
    write_item(out, (static_cast<unsigned>(e.depth) << 1U) | (e.lasti ? 1U : 0U), 0);
  }
  return out;
}

}  // namespace sot::bytecode
