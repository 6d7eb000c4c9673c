// The concurrency search of `inferbench tune` (docs/tune.md): the highest concurrency whose point
// still meets an SLO, assuming meeting it is monotone (meets at c implies meets at every lower c).
// Doubles from the start while it meets, halves while it fails, then bisects the bracket
// geometrically, since a concurrency's effect on latency is closer to proportional than additive.
// A pure state machine: the caller measures what next() names and records the answer, so the
// search is tested without a server and resumed or reported from its state alone.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ib::tune {

class SloSearch {
 public:
  /// REQUIRES: 1 <= min <= start <= max, tolerance >= 0. The search stops once the bracket is one
  /// apart or within the tolerance: hi <= lo * (1 + tolerance).
  SloSearch(int64_t start, int64_t min, int64_t max, double tolerance);

  /// The next concurrency to probe, never one probed before; nullopt when done.
  std::optional<int64_t> next() const;
  /// The result of probing `conc`. REQUIRES: conc == next().
  void record(int64_t conc, bool meets);
  bool done() const { return !next().has_value(); }

  /// The highest concurrency known to meet (0 when nothing met: at the end, even `min` fails).
  int64_t lo() const { return lo_; }
  /// The lowest concurrency known to fail (0 when nothing failed: at the end, `max` meets).
  int64_t hi() const { return hi_; }
  int probes() const { return probes_; }

  /// "meets at 30, not at 31 (6 probes)", "meets even at the maximum 1024", "not met even at
  /// concurrency 1"; while searching, "searching: meets at 64, not at 128 (3 probes)".
  std::string describe() const;

 private:
  int64_t start_;
  int64_t min_;
  int64_t max_;
  double tolerance_;
  int64_t lo_ = 0;
  int64_t hi_ = 0;
  int probes_ = 0;
};

}  // namespace ib::tune
