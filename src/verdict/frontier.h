// Pareto frontiers of throughput per GPU against interactivity, and how two of them differ
// (docs/compare.md, "Curves"). Both axes are better higher (dashboard.md §1.2: throughput or
// tok/s/MW vs interactivity maximises both). Pure functions; no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace ib::verdict {

struct CurvePoint {
  double x = 0;     // interactivity (tok/s/user), or E2E-normalized interactivity (agentic)
  double y = 0;     // throughput per GPU (tok/s/GPU)
  int64_t tag = 0;  // the caller's id for the point (e.g. its concurrency)
};

/// The non-dominated points (no other point has x' >= x and y' >= y with one strictly greater),
/// sorted by x ascending; y is then strictly decreasing. Points with a non-finite value or
/// x <= 0 are left out (InferenceX PR #517). Of equal points, the first given is kept.
std::vector<CurvePoint> pareto_frontier(std::vector<CurvePoint> points);

/// A monotone cubic (Steffen's method, the interpolant of d3.curveMonotoneX) through points
/// sorted by strictly increasing x. It never overshoots: between two points it stays between
/// their y values. Evaluation outside [x_min, x_max] is refused (no extrapolation).
class MonotoneCurve {
 public:
  /// REQUIRES: x strictly increasing (a pareto_frontier result is).
  explicit MonotoneCurve(std::vector<CurvePoint> points);

  bool empty() const { return pts_.empty(); }
  double x_min() const;
  double x_max() const;
  /// y at x; nullopt outside [x_min, x_max] or on an empty curve.
  std::optional<double> at(double x) const;
  /// The integral of y over [a, b] (exact for the cubic pieces); nullopt when [a, b] is not
  /// inside the covered range.
  std::optional<double> area(double a, double b) const;

 private:
  double integral_to(double x) const;  // from x_min to x, x inside the range
  std::vector<CurvePoint> pts_;
  std::vector<double> slopes_;
};

/// Throughput at equal interactivity, one level.
struct LevelDelta {
  double x = 0;
  double base_y = 0, head_y = 0;
  double delta_pct = 0;  // (head_y - base_y) / base_y · 100
};

/// Two frontiers compared where both are defined.
struct FrontierComparison {
  bool overlap = false;   // the covered interactivity ranges share at least one level
  double lo = 0, hi = 0;  // the common range (when overlap)
  /// At every frontier x of either side inside the common range, ascending.
  std::vector<LevelDelta> levels;
  double mean_delta_pct = 0;  // mean of levels' delta_pct (0 when none)
  /// Area under each frontier over the common range and its relative change (NaN when the
  /// common range has no width, or the base area is 0).
  double base_area = 0, head_area = 0, area_delta_pct = 0;
};

FrontierComparison compare_frontiers(const std::vector<CurvePoint>& base_frontier,
                                     const std::vector<CurvePoint>& head_frontier);

}  // namespace ib::verdict
