#include "capture/entry_timing.hpp"

#include <algorithm>

namespace sot::capture {

namespace {

std::uint64_t median(std::array<std::uint64_t, EntryTiming::kSamples> samples) {
  std::nth_element(samples.begin(), samples.begin() + EntryTiming::kSamples / 2, samples.end());
  return samples[EntryTiming::kSamples / 2];
}

}  // namespace

EntryTiming::Run EntryTiming::next() {
  ++hits_;
  if (timing_ || (taken_ == 0 && hits_ < next_round_)) {
    return runs_original_ ? Run::kOriginal : Run::kTransformed;
  }
  timing_ = true;
  // (in turns, the transformed code first)
  return taken_ % 2 == 0 ? Run::kTimedTransformed : Run::kTimedOriginal;
}

bool EntryTiming::took(Run run, std::uint64_t ns) {
  timing_ = false;
  const std::size_t i = taken_ / 2;
  (run == Run::kTimedTransformed ? transformed_ : original_)[i] = ns;
  if (++taken_ < 2 * kSamples) {
    return false;
  }
  taken_ = 0;
  interval_ = std::min(interval_ * 4, kMaxInterval);
  next_round_ = hits_ + interval_;
  transformed_median_ = median(transformed_);
  original_median_ = median(original_);
  const bool before = runs_original_;
  if (static_cast<double>(original_median_) < kMargin * static_cast<double>(transformed_median_)) {
    runs_original_ = true;
  } else if (transformed_median_ <= original_median_) {
    runs_original_ = false;
  }
  return runs_original_ != before;
}

std::string EntryTiming::verdict() const {
  if (transformed_median_ == 0 && original_median_ == 0) {
    return {};
  }
  return "original " + std::to_string(original_median_) + " ns, transformed " +
         std::to_string(transformed_median_) + " ns (medians of " + std::to_string(kSamples) +
         " runs each)";
}

}  // namespace sot::capture
