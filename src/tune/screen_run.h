// Stage 2 of `inferbench tune` (docs/tune.md), run: successive halving (tune/screen.h) over the
// candidates stage 1 kept, each pass one sweep run (sweep::run_planned) of the baseline first and
// the candidates in a seeded rotated order, one server start each, at the objective's
// concurrency; a baseline-only pass closes each round so every pass has a baseline after it.
#pragma once

#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/expected.h"
#include "sweep/sweep.h"
#include "tune/blocks.h"
#include "tune/knob.h"
#include "tune/objective.h"
#include "tune/screen.h"

namespace ib::tune {

struct ScreenOptions {
  int keep = 2;
  int eta = 2;
  int passes0 = 3;
  uint64_t seed = 0;
  double confidence = 0.95;
  double min_effect_pct = 2;
  RowSelector row;  // the tuned row
  /// Short screening points: these over the recipe's workload.
  sweep::WorkloadOverrides workload;
};

struct ScreenResult {
  std::string candidate_id;
  ScreenDecision decision = ScreenDecision::kNotMeasured;
  std::optional<Score> score;  // of the last round it was in
  int round = 0;               // the last round it was in (0-based)
  std::vector<double> values;  // its objective values, in pass order
};

struct ScreenStage {
  HalvingPlan plan;
  std::vector<ScreenResult> results;  // parallel to the survivors given
  std::vector<double> baselines;      // every baseline value, in time order
  Drift drift;
  std::vector<std::string> runs;  // the store runs of the passes
  int points = 0;
  int64_t requests = 0;  // benchmark requests sent (measured + warmup)
  double wall_s = 0;
  bool interrupted = false;
};

/// Runs stage 2, each pass a block of `runner` ("screen-r<R>-p<P>", "screen-r<R>-close").
/// `operating_conc` gives each side's concurrency by config key (the SLO search's operating
/// points); a side not in it is measured at the objective's. Error before anything runs (no row
/// to measure, a workload error) or when the baseline's first point fails (nothing can be scored
/// against it).
Expected<ScreenStage> screen_candidates(const recipe::ConfigEntry& base,
                                        const std::vector<const Candidate*>& survivors,
                                        const Objective& objective, const ScreenOptions& options,
                                        BlockRunner& runner,
                                        const std::map<std::string, int64_t>& operating_conc,
                                        const std::function<void(const std::string&)>& progress);

}  // namespace ib::tune
