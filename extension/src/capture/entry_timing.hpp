// Whether a cache entry pays: its transformed code's run time against the original code's, taken in
// turns at the entry's hits, so that an entry whose original code runs faster (a graph of one op on
// a small array, whose call costs more than the op) runs the original from then on: never slower
// than plain. Both codes compute the same, so the choice changes only the time.
//
// Rounds of samples start at the entry's kFirstRound-th hit, then at geometric intervals (x4, at
// most kMaxInterval hits apart): a choice made while a compiled kernel was still being built, or on
// a loaded machine, is made again later. A round times kSamples runs of each code, alternately; the
// original is chosen when its median is below the transformed code's by kMargin, and the
// transformed code again when its median is the lower.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace sot::capture {

class EntryTiming {
 public:
  static constexpr std::uint64_t kFirstRound = 64;
  static constexpr std::uint64_t kMaxInterval = std::uint64_t{1} << 16;
  static constexpr std::size_t kSamples = 8;
  static constexpr double kMargin = 0.97;  // (3%: a graph a little slower than plain is one)

  enum class Run : std::uint8_t { kTransformed, kOriginal, kTimedTransformed, kTimedOriginal };

  // What this hit runs (a timed run is followed by took()). A hit inside a timed run of the same
  // entry (recursion) is not timed.
  Run next();
  // The nanoseconds of the timed run that next() chose; true when a round ended with a new choice.
  bool took(Run run, std::uint64_t ns);

  bool runs_original() const { return runs_original_; }
  // The last round's medians ("original 310 ns, transformed 790 ns"), empty before the first.
  std::string verdict() const;

 private:
  std::uint64_t hits_ = 0;
  std::uint64_t next_round_ = kFirstRound;
  std::uint64_t interval_ = kFirstRound;
  std::size_t taken_ = 0;  // samples of this round (both codes), 0 outside a round
  std::array<std::uint64_t, kSamples> transformed_{};
  std::array<std::uint64_t, kSamples> original_{};
  std::uint64_t transformed_median_ = 0;
  std::uint64_t original_median_ = 0;
  bool runs_original_ = false;
  bool timing_ = false;  // a timed run is under way
};

}  // namespace sot::capture
