#include "bytecode/location_table.hpp"

#include <climits>
#include <cstdint>

#include "bytecode/bytecode.hpp"
#include "bytecode/version.hpp"

namespace sot::bytecode {

namespace {

// Entry codes (Objects/locations.md in CPython).
constexpr int kShortFormMax = 9;
constexpr int kOneLine0 = 10;
constexpr int kNoColumns = 13;
constexpr int kLongForm = 14;
constexpr int kNoLocation = 15;
constexpr int kMaxEntryUnits = 8;

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  bool done() const { return pos_ >= bytes_.size(); }
  unsigned next() {
    if (done()) {
      throw BytecodeError("location table ends inside an entry");
    }
    return static_cast<unsigned char>(bytes_[pos_++]);
  }
  // Little-endian groups of 6 bits, bit 6 = more follow.
  long long varint() {
    unsigned b = next();
    unsigned long long value = b & 63U;
    unsigned shift = 0;
    while ((b & 64U) != 0) {
      shift += 6;
      if (shift > 30) {
        throw BytecodeError("location table varint too long");
      }
      b = next();
      value |= static_cast<unsigned long long>(b & 63U) << shift;
    }
    return static_cast<long long>(value);
  }
  long long svarint() {
    const long long u = varint();
    return (u & 1) != 0 ? -(u >> 1) : (u >> 1);
  }

 private:
  const std::string& bytes_;
  std::size_t pos_ = 0;
};

class Writer {
 public:
  void byte(unsigned b) { out_.push_back(static_cast<char>(b & 0xFFU)); }
  void varint(unsigned value) {
    while (value >= 64) {
      byte(64U | (value & 63U));
      value >>= 6U;
    }
    byte(value);
  }
  void svarint(int value) {
    varint(value < 0 ? ((static_cast<unsigned>(-value) << 1U) | 1U)
                     : (static_cast<unsigned>(value) << 1U));
  }
  void header(int code, int units) {
    byte(0x80U | (static_cast<unsigned>(code) << 3U) | (units - 1U));
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// One entry of at most 8 units (CPython's write_location_info_entry).
void write_entry(Writer& w, const Position& p, int units, int* prev_line) {
  if (p.line < 0) {
    w.header(kNoLocation, units);
    return;
  }
  const int line_delta = p.line - *prev_line;
  if (p.col < 0 || p.end_col < 0) {
    if (p.end_line == p.line || p.end_line == -1) {
      w.header(kNoColumns, units);
      w.svarint(line_delta);
      *prev_line = p.line;
      return;
    }
  } else if (p.end_line == p.line) {
    if (line_delta == 0 && p.col < 80 && p.end_col - p.col < 16 && p.end_col >= p.col) {
      const int column_low_bits = p.col & 7;
      w.header(p.col >> 3, units);
      w.byte(static_cast<unsigned>((column_low_bits << 4) | (p.end_col - p.col)));
      return;
    }
    if (line_delta >= 0 && line_delta < 3 && p.col < 128 && p.end_col < 128) {
      w.header(kOneLine0 + line_delta, units);
      w.byte(static_cast<unsigned>(p.col));
      w.byte(static_cast<unsigned>(p.end_col));
      *prev_line = p.line;
      return;
    }
  }
  w.header(kLongForm, units);
  w.svarint(line_delta);
  w.varint(static_cast<unsigned>(p.end_line - p.line));
  w.varint(static_cast<unsigned>(p.col + 1));
  w.varint(static_cast<unsigned>(p.end_col + 1));
  *prev_line = p.line;
}

void write_run(Writer& w, const Position& p, int units, int* prev_line) {
  while (units > kMaxEntryUnits) {
    write_entry(w, p, kMaxEntryUnits, prev_line);
    units -= kMaxEntryUnits;
  }
  if (units > 0) {
    write_entry(w, p, units, prev_line);
  }
}

// a + b, or a BytecodeError when that leaves int's range (a malformed table).
int add_checked(int a, long long b) {
  const long long sum = static_cast<long long>(a) + b;
  if (sum < INT_MIN || sum > INT_MAX) {
    throw BytecodeError("location table line or column out of range");
  }
  return static_cast<int>(sum);
}

}  // namespace

std::vector<Position> decode_location_table(const std::string& table, int first_line, int n_units) {
  std::vector<Position> out;
  out.reserve(static_cast<std::size_t>(n_units));
  Reader r(table);
  int line = first_line;
  while (!r.done()) {
    const unsigned first = r.next();
    if ((first & 0x80U) == 0) {
      throw BytecodeError("location table entry without its start bit");
    }
    const int code = static_cast<int>((first >> 3U) & 15U);
    const int units = static_cast<int>(first & 7U) + 1;
    Position p;
    if (code == kNoLocation) {
      // all fields stay -1
    } else if (code == kLongForm) {
      line = add_checked(line, r.svarint());
      p.line = line;
      p.end_line = add_checked(line, r.varint());
      p.col = add_checked(-1, r.varint());
      p.end_col = add_checked(-1, r.varint());
    } else if (code == kNoColumns) {
      line = add_checked(line, r.svarint());
      p.line = line;
      p.end_line = line;
    } else if (code >= kOneLine0) {
      line = add_checked(line, code - kOneLine0);
      p.line = line;
      p.end_line = line;
      p.col = static_cast<int>(r.next());
      p.end_col = static_cast<int>(r.next());
    } else {
      static_assert(kShortFormMax == 9);
      const unsigned second = r.next();
      p.line = line;
      p.end_line = line;
      p.col = code * 8 + static_cast<int>((second >> 4U) & 7U);
      p.end_col = p.col + static_cast<int>(second & 15U);
    }
    for (int i = 0; i < units; ++i) {
      out.push_back(p);
    }
  }
  if (static_cast<int>(out.size()) != n_units) {
    throw BytecodeError("location table covers " + std::to_string(out.size()) +
                        " code units, the code has " + std::to_string(n_units));
  }
  return out;
}

std::string encode_location_table(const std::vector<Position>& positions,
                                  const std::vector<int>& sizes, int first_line) {
  Writer w;
  int prev_line = first_line;
  if constexpr (version::kMergeEqualLocations) {
    Position run;
    int run_units = 0;
    for (std::size_t i = 0; i < positions.size(); ++i) {
      if (run_units > 0 && positions[i] != run) {
        write_run(w, run, run_units, &prev_line);
        run_units = 0;
      }
      if (run_units == 0) {
        run = positions[i];
      }
      run_units += sizes[i];
    }
    write_run(w, run, run_units, &prev_line);
  } else {
    for (std::size_t i = 0; i < positions.size(); ++i) {
      write_run(w, positions[i], sizes[i], &prev_line);
    }
  }
  return w.take();
}

}  // namespace sot::bytecode
