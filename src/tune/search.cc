#include "tune/search.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>

namespace ib::tune {

SloSearch::SloSearch(int64_t start, int64_t min, int64_t max, double tolerance)
    : start_(start), min_(min), max_(max), tolerance_(tolerance) {
  assert(1 <= min && min <= start && start <= max);
  assert(tolerance >= 0);
}

std::optional<int64_t> SloSearch::next() const {
  if (probes_ == 0) return start_;
  if (hi_ == 0) {  // everything probed met: double, up to the maximum
    if (lo_ >= max_) return std::nullopt;
    return lo_ > max_ / 2 ? max_ : 2 * lo_;
  }
  if (lo_ == 0) {  // everything probed failed: halve, down to the minimum
    if (hi_ <= min_) return std::nullopt;
    return std::max(hi_ / 2, min_);
  }
  // Both ends known: bisect the ratio. Every value probed so far is <= lo or >= hi, so a value
  // strictly between them is new.
  if (hi_ - lo_ <= 1) return std::nullopt;
  // In the gap, exact in an int64, rather than as hi <= lo * (1 + tolerance): near 2^63 a double
  // cannot tell neighbouring integers apart, and tolerance 0 would stop at once.
  const auto lo = static_cast<double>(lo_);
  const auto gap = static_cast<double>(hi_ - lo_);
  if (gap <= lo * tolerance_) return std::nullopt;
  // sqrt(lo * hi) as lo plus an offset, gap / (1 + sqrt(hi / lo)), for the same reason (and the
  // product could overflow): the offset still halves a narrow bracket instead of creeping in.
  const int64_t mid = lo_ + std::llround(gap / (1 + std::sqrt(static_cast<double>(hi_) / lo)));
  return std::clamp(mid, lo_ + 1, hi_ - 1);
}

void SloSearch::record(int64_t conc, bool meets) {
  assert(next() == conc);
  ++probes_;
  if (meets) {
    lo_ = std::max(lo_, conc);
  } else {
    hi_ = hi_ == 0 ? conc : std::min(hi_, conc);
  }
}

std::string SloSearch::describe() const {
  const std::string probes = fmt::format("{} probe{}", probes_, probes_ == 1 ? "" : "s");
  if (done()) {
    if (hi_ == 0) return fmt::format("meets even at the maximum {}", max_);
    if (lo_ == 0) return fmt::format("not met even at concurrency {}", min_);
    return fmt::format("meets at {}, not at {} ({})", lo_, hi_, probes);
  }
  if (probes_ == 0) return "searching: nothing probed yet";
  if (hi_ == 0) return fmt::format("searching: meets at {} ({})", lo_, probes);
  if (lo_ == 0) return fmt::format("searching: not met at {} ({})", hi_, probes);
  return fmt::format("searching: meets at {}, not at {} ({})", lo_, hi_, probes);
}

}  // namespace ib::tune
