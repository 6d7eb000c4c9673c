// Descriptive statistics exactly as docs/architecture.md ("Metric definitions"): population
// standard deviation and percentiles by linear interpolation between order statistics (numpy's
// default "linear" method).
#pragma once

#include <span>
#include <vector>

namespace ib::metrics {

/// The q-th percentile (0 ≤ q ≤ 100) of ascending `sorted` values, numpy `linear` method:
/// position h = (n−1)·q/100, result = x[⌊h⌋] + (h−⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋]).
/// REQUIRES: !sorted.empty(), sorted ascending.
double percentile_sorted(std::span<const double> sorted, double q);

struct Summary {
  size_t count = 0;
  double mean = 0, median = 0, std = 0, min = 0, max = 0;
  std::vector<double> percentiles;  // values at the requested percentile points, same order
};

/// Summarizes `values` (sorted in place). Empty input gives count 0 and zeros, as numpy-based
/// tools report 0 for a metric with no samples.
Summary summarize(std::vector<double>& values, std::span<const double> percentile_points);

}  // namespace ib::metrics
