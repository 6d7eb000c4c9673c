#include "metrics/stats.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace ib::metrics {

double percentile_sorted(std::span<const double> sorted, double q) {
  assert(!sorted.empty());
  if (sorted.size() == 1) return sorted[0];
  double h = (static_cast<double>(sorted.size()) - 1.0) * q / 100.0;
  h = std::clamp(h, 0.0, static_cast<double>(sorted.size() - 1));
  auto lo = static_cast<size_t>(std::floor(h));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = h - static_cast<double>(lo);
  return sorted[lo] + frac * (sorted[hi] - sorted[lo]);
}

Summary summarize(std::vector<double>& values, std::span<const double> percentile_points) {
  Summary s;
  s.percentiles.assign(percentile_points.size(), 0.0);
  s.count = values.size();
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  // Two-pass mean and variance: exact enough for latencies, and immune to cancellation.
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  double sq = 0;
  for (double v : values) sq += (v - s.mean) * (v - s.mean);
  s.std = std::sqrt(sq / static_cast<double>(values.size()));
  s.min = values.front();
  s.max = values.back();
  s.median = percentile_sorted(values, 50.0);
  for (size_t i = 0; i < percentile_points.size(); ++i) {
    s.percentiles[i] = percentile_sorted(values, percentile_points[i]);
  }
  return s;
}

}  // namespace ib::metrics
