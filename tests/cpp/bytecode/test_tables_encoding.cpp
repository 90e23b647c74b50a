// Location and exception tables: encode/decode round trips on hand-made positions, every entry form
// included.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bytecode/bytecode.hpp"
#include "bytecode/exception_table.hpp"
#include "bytecode/location_table.hpp"

namespace sb = sot::bytecode;

namespace {
std::vector<sb::Position> expand(const std::vector<sb::Position>& per_instruction,
                                 const std::vector<int>& sizes) {
  std::vector<sb::Position> units;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    units.insert(units.end(), static_cast<std::size_t>(sizes[i]), per_instruction[i]);
  }
  return units;
}
}  // namespace

TEST(LocationTable, EveryEntryFormRoundTrips) {
  const std::vector<sb::Position> positions = {
      {10, 10, 4, 9},      // short form (same line, small columns)
      {11, 11, 0, 100},    // one-line form (line + 1, column span over 15)
      {13, 13, 2, 7},      // one-line form, line + 2
      {20, 23, 1, 5},      // long form (spans lines)
      {-1, -1, -1, -1},    // no location
      {21, 21, -1, -1},    // no columns
      {21, 21, 200, 210},  // long form (columns past 127)
      {5, 5, 0, 3},        // backward line delta
      {5, 5, 0, 3},        // equal to the previous one
  };
  const std::vector<int> sizes = {1, 3, 2, 12, 1, 9, 1, 2, 20};  // some over 8 units: split entries
  const std::string table = sb::encode_location_table(positions, sizes, 10);
  int units = 0;
  for (int s : sizes) {
    units += s;
  }
  EXPECT_EQ(sb::decode_location_table(table, 10, units), expand(positions, sizes));
}

TEST(LocationTable, MalformedTablesAreRejected) {
  EXPECT_THROW(sb::decode_location_table(std::string("\x01", 1), 1, 1), sb::BytecodeError);
  // an entry covering 2 units for code of 1 unit
  const std::string two_units = sb::encode_location_table({{1, 1, 0, 1}}, {2}, 1);
  EXPECT_THROW(sb::decode_location_table(two_units, 1, 1), sb::BytecodeError);
  // truncated long form
  const std::string long_form = sb::encode_location_table({{1, 3, 0, 1}}, {1}, 1);
  EXPECT_THROW(sb::decode_location_table(long_form.substr(0, 2), 1, 1), sb::BytecodeError);
}

TEST(ExceptionTable, RoundTripsSmallAndLargeValues) {
  const std::vector<sb::ExceptionTableEntry> entries = {{0, 4, 10, 0, false},
                                                        {4, 70, 200, 3, true},
                                                        {300, 5000, 90000, 17, false},
                                                        {90001, 90002, 1 << 24, 1, true}};
  const std::vector<sb::ExceptionTableEntry> back =
      sb::decode_exception_table(sb::encode_exception_table(entries));
  ASSERT_EQ(back.size(), entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(back[i].start, entries[i].start);
    EXPECT_EQ(back[i].end, entries[i].end);
    EXPECT_EQ(back[i].target, entries[i].target);
    EXPECT_EQ(back[i].depth, entries[i].depth);
    EXPECT_EQ(back[i].lasti, entries[i].lasti);
  }
}

TEST(ExceptionTable, MalformedTablesAreRejected) {
  EXPECT_THROW(sb::decode_exception_table(std::string("\x01\x02", 2)),
               sb::BytecodeError);  // no start bit
  EXPECT_THROW(sb::decode_exception_table(std::string("\x80\x02", 2)),
               sb::BytecodeError);  // truncated
}
