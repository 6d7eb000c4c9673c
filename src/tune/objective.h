// What `inferbench tune` optimises (docs/tune.md, "Objectives"): a headline metric at one
// concurrency, E2E-normalized interactivity at a percentile, a user formula over headline
// metrics, or throughput per GPU at the highest concurrency that meets SLOs (found by search,
// tune/search.h). A point that failed, is invalid or lacks a metric has no value (NaN), never 0.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"
#include "metrics/point.h"
#include "tune/formula.h"

namespace ib::tune {

/// One `--slo METRIC<=V` or `METRIC>=V` over a headline metric.
struct Slo {
  std::string metric;
  bool upper = true;  // <=: the metric must stay at or below `bound`
  double bound = 0;
  /// NaN (not measured) never meets.
  bool meets(double value) const;
  bool meets(const metrics::PointResult& p) const;
  std::string describe() const;  // "median_tpot_ms <= 11.1"
};

/// Error names --slo and the text.
Expected<Slo> parse_slo(std::string_view text);

struct Objective {
  enum class Kind { kMetric, kFormula, kE2eIntvty, kTputAtSlo };
  Kind kind = Kind::kMetric;
  /// kMetric: the headline key; kE2eIntvty: the result key ("p90_e2e_norm_intvty"); kTputAtSlo:
  /// tput_per_gpu.
  std::string metric = "tput_per_gpu";
  std::shared_ptr<const Formula> formula;  // kFormula
  std::vector<Slo> slos;                   // kTputAtSlo
  int64_t conc = 1;  // the operating point (kTputAtSlo: where the search starts)
  bool higher_is_better = true;

  /// The name in tables and JSON: the metric, the formula's text, "tput_per_gpu at SLO".
  std::string name() const;
  /// "tput_per_gpu at concurrency 32 (higher is better)", "tput_per_gpu at the highest
  /// concurrency meeting median_tpot_ms <= 11.1 (higher is better)".
  std::string describe() const;
  /// The objective's value of a point; NaN when the point is not a valid success or lacks it.
  double value(const metrics::PointResult& p) const;
  /// kTputAtSlo: whether the point meets every SLO (false when not a valid success).
  bool meets(const metrics::PointResult& p) const;
  /// The metrics the objective reads (guards leave them out).
  std::vector<std::string> metrics() const;
};

/// `--objective TEXT` with `--slo` values and `--conc`. TEXT: a headline key, `e2e-intvty`
/// (`:p50|p90|p99|p99.9`), `tput-at-slo`, or a formula; `minimize` turns a formula's direction.
/// Errors name the option: an unknown metric lists the headline keys.
Expected<Objective> make_objective(const std::string& text, const std::vector<std::string>& slos,
                                   int64_t conc, bool minimize);

/// Measured and valid: a point whose numbers the objective and the SLOs may read.
bool usable(const metrics::PointResult& p);

/// A headline metric or an e2e-normalized interactivity key of a point's result; NaN when absent.
double point_metric(const metrics::PointResult& p, std::string_view key);

}  // namespace ib::tune
