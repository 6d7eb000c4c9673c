// Stage 2 of `inferbench tune` (docs/tune.md), the arithmetic: successive halving over the
// candidates that survived stage 1, each pass measuring the baseline first and the candidates in a
// seeded order rotated every pass, and every candidate scored against the baselines measured just
// before and after its pass, which cancels a steady drift of the machine. Pure functions: the
// orchestration (servers, points, the store) is elsewhere.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "verdict/stats.h"

namespace ib::tune {

/// Rounds of successive halving: round r screens candidates[r] candidates over passes[r]
/// passes; each round keeps max(keep, ceil(n / eta)) of them. With n0 <= keep there is one round.
struct HalvingPlan {
  std::vector<int> candidates;  // per round
  std::vector<int> passes;      // per round: passes0 · eta^r
  int rounds() const { return static_cast<int>(candidates.size()); }
  /// Points measured, baselines included: Σ passes · (candidates + 1), plus one closing baseline
  /// a round (the baseline after a round's last pass).
  int points() const;
};

/// REQUIRES: n0 >= 1, keep >= 1, eta >= 2, passes0 >= 1.
HalvingPlan plan_halving(int n0, int keep, int eta, int passes0);

/// The candidates' order in pass `pass` (0-based indexes into the round's candidates): a shuffle
/// seeded by `seed`, rotated by the pass index so each candidate takes every position in turn.
std::vector<int> pass_order(int n, uint64_t seed, int pass);

struct Score {
  double delta_pct = 0;       // mean of the ratios, as a change in percent (good side positive)
  verdict::Interval ci_pct;   // one-sample t interval of that mean; invalid with one pass
  int passes = 0;
  verdict::Verdict verdict = verdict::Verdict::kNoInterval;
};

/// `values[p]`: the candidate's objective in pass p; `baselines[p]`: the baseline's in pass p,
/// and `baselines[P]` the one after the last pass (the next pass's or a closing one), so
/// baselines has one more value. Ratio r_p = values[p] / ((baselines[p] + baselines[p+1]) / 2),
/// inverted when lower is better. nullopt when a needed value is missing (NaN) or not positive.
std::optional<Score> score(std::span<const double> values, std::span<const double> baselines,
                           bool higher_is_better, double confidence, double min_effect_pct);

/// The baseline's drift over the stage: the least-squares slope over its measurements in time
/// order, times their span, as a percentage of their mean. `significant` when beyond the minimum
/// effect: the ratios to adjacent baselines still cancel a steady drift, and the report says so.
struct Drift {
  double pct = 0;
  bool significant = false;
};
Drift baseline_drift(std::span<const double> baselines, double min_effect_pct);

enum class ScreenDecision {
  kAdvance,      // among the best `keep`
  kRegressed,    // significantly worse than the baseline
  kNoChange,     // its interval cannot reach the minimum effect: no significant change
  kRankedOut,    // measured, not regressed, but others scored higher
  kNotMeasured,  // no score (a point failed or was invalid)
};
std::string_view to_string(ScreenDecision d);

/// Decides a round: regressed and no-change candidates go first, then the rest are ranked by
/// delta and the best `keep` advance. Ties keep the earlier candidate.
std::vector<ScreenDecision> decide_round(const std::vector<std::optional<Score>>& scores, int keep,
                                         double min_effect_pct);

}  // namespace ib::tune
