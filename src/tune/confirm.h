// Stage 3 of `inferbench tune` (docs/tune.md): a full A/B of the finalists against the baseline
// with `inferbench compare`'s semantics. Each repeat is one block holding the baseline first and
// every finalist in a rotated order, on the recipe's own workload with one seed, so the repeats
// pair as `sweep --repeat` runs do. A finalist wins only when the objective improved beyond the
// minimum effect with a Welch interval at the Bonferroni-corrected level, no guard metric
// regressed beyond its tolerance (non-inferiority: the interval's bad end within it), accuracy
// (when evals run) is not worse beyond its tolerance, and nothing confounds the comparison.
// Screening values are never reused here: the winner's curse would bias the confirmation.
#pragma once

#include <boost/json/object.hpp>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/expected.h"
#include "tune/blocks.h"
#include "tune/knob.h"
#include "tune/objective.h"
#include "tune/screen.h"
#include "verdict/compare.h"

namespace ib::tune {

/// A metric that must not get worse by more than `tolerance_pct`.
struct Guard {
  std::string metric;
  double tolerance_pct = 5;
  bool higher_is_better = false;
};

/// `--guard METRIC[:TOL]` (TOL in percent); error names the option and lists the headline keys.
Expected<Guard> parse_guard(std::string_view text, double default_tolerance_pct);

/// The default guards: median and p99 TTFT and TPOT, median ITL, less the objective's metrics.
std::vector<Guard> default_guards(const Objective& objective, double tolerance_pct);

struct GuardResult {
  Guard guard;
  double base = 0, head = 0, delta_pct = 0;
  verdict::Interval
      ci_pct;            // the deciding interval of compare (welch over repeats, else bootstrap)
  std::string interval;  // welch | bootstrap | none
  std::string verdict;   // within | regressed | inconclusive
};

enum class ConfirmDecision { kConfirmed, kRejected, kInconclusive, kNotMeasured };
std::string_view to_string(
    ConfirmDecision d);  // confirmed | rejected | inconclusive | not measured

struct ConfirmResult {
  std::string candidate_id;
  ConfirmDecision decision = ConfirmDecision::kNotMeasured;
  std::string reason;                            // one line: why
  int64_t base_conc = 0, head_conc = 0;          // where each side's objective was measured
  std::vector<double> base_values, head_values;  // the objective per repeat
  double base_mean = 0, head_mean = 0, delta_pct = 0;
  verdict::Interval ci_pct;  // Welch, relative to the baseline's mean
  verdict::Verdict objective_verdict = verdict::Verdict::kNoInterval;
  std::vector<GuardResult> guards;
  std::vector<verdict::AccuracyDelta> accuracy;
  int slo_met = -1;  // tput-at-slo: repeats whose point met every SLO (-1: not an SLO objective)
  /// tput-at-slo: each SLO metric of the candidate's point per repeat (parallel to the SLOs).
  std::vector<std::vector<double>> slo_values;
  bool confounded = false;
  std::string compare_verdict;  // compare's verdict line
  boost::json::object compare;  // verdict::comparison_json
};

struct ConfirmOptions {
  int repeats = 5;
  double confidence = 0.95;  // family-wise: each finalist gets 1 - (1 - c) / finalists
  double min_effect_pct = 2;
  std::vector<Guard> guards;
  double accuracy_tolerance = 0.01;  // absolute exact-match
  bool eval = false;                 // a GSM8K eval on every server start
  uint64_t seed = 0;                 // the order of the finalists
  int resamples = 2000;
  RowSelector row;
  sweep::WorkloadOverrides workload;  // over the recipe's
};

struct ConfirmStage {
  std::vector<ConfirmResult> results;  // parallel to the finalists
  std::vector<double> baselines;       // the baseline's objective per repeat
  Drift drift;
  double confidence_each = 0.95;
  int repeats = 0;
  std::optional<size_t> winner;  // index into results: confirmed, with the largest delta
  std::vector<std::string> runs;
  int points = 0;
  int64_t requests = 0;
  double wall_s = 0;
  bool interrupted = false;
};

/// Runs stage 3 in blocks "confirm-<i>". `operating_conc`: each side's concurrency by config
/// key (tput-at-slo); others at the objective's.
Expected<ConfirmStage> confirm_candidates(const recipe::ConfigEntry& base,
                                          const std::vector<const Candidate*>& finalists,
                                          const Objective& objective, const ConfirmOptions& options,
                                          BlockRunner& runner,
                                          const std::map<std::string, int64_t>& operating_conc,
                                          const std::function<void(const std::string&)>& progress);

/// The decision from the measured parts (pure; the unit tests drive it): the objective's Welch
/// interval at `confidence` over the per-repeat values (set here), the guards, the accuracy
/// deltas, confounding and the SLO values.
void decide_confirmation(ConfirmResult& r, const Objective& objective, double confidence,
                         double min_effect_pct, double accuracy_tolerance, int repeats);

}  // namespace ib::tune
