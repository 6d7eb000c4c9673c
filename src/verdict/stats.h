// Statistics for A/B verdicts (docs/compare.md): percentile bootstrap intervals, Welch's
// t-distribution interval over repeated runs, and the verdict rule. Pure functions; no I/O.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace ib::verdict {

/// A two-sided confidence interval; both ends NaN when there is none.
struct Interval {
  double lo = std::numeric_limits<double>::quiet_NaN();
  double hi = std::numeric_limits<double>::quiet_NaN();
  bool valid() const { return std::isfinite(lo) && std::isfinite(hi); }
};

/// The percentile interval [(1-c)/2, (1+c)/2] of bootstrap replicates (NaN replicates dropped;
/// no interval when fewer than 2 remain). `confidence` in (0, 1).
Interval percentile_interval(std::vector<double> replicates, double confidence);

/// Percentile bootstrap of the mean of `samples`: `resamples` resamples with replacement from a
/// fixed `seed` (std::mt19937_64), so the same input always gives the same interval.
Interval bootstrap_mean(std::span<const double> samples, int resamples, uint64_t seed,
                        double confidence);

/// Regularized incomplete beta I_x(a, b) (continued fraction; a, b > 0, x in [0, 1]).
double incomplete_beta(double a, double b, double x);
/// Student t CDF with `df` > 0 degrees of freedom (df need not be an integer).
double student_t_cdf(double t, double df);
/// The p-quantile of Student's t, p in (0, 1).
double student_t_quantile(double p, double df);

/// Welch's interval for mean(head) - mean(base).
struct WelchInterval {
  double diff = 0;  // mean(head) - mean(base)
  double se = 0;    // standard error of diff
  double df = 0;    // Welch-Satterthwaite degrees of freedom
  Interval ci;      // diff ± t_{(1+c)/2, df} · se
};

/// REQUIRES: both sides non-empty and at least one with 2 or more values. A side with a single
/// value borrows the other side's sample variance (equal-variance assumption; df then that
/// side's n-1). nullopt when the inputs do not allow an interval.
std::optional<WelchInterval> welch_interval(std::span<const double> base,
                                            std::span<const double> head, double confidence);

/// kDescriptive: a metric with an interval but no good direction (metrics::descriptive_metric):
/// its change is shown, never called better or worse.
enum class Verdict { kImproved, kRegressed, kNoChange, kNoInterval, kDescriptive };
std::string_view verdict_name(Verdict v);  // improved | regressed | no significant change | ...

/// The verdict rule on an interval of the relative change in percent ((head-base)/base·100):
/// improved when the whole interval lies beyond +min_effect_pct in the metric's good direction,
/// regressed when it lies wholly beyond it in the bad direction, else no significant change;
/// no interval (invalid `ci_pct`) gives kNoInterval. The bounds themselves count as beyond
/// (an interval [2, 5] with min effect 2 is improved for a higher-is-better metric).
Verdict decide(const Interval& ci_pct, bool higher_is_better, double min_effect_pct);

}  // namespace ib::verdict
