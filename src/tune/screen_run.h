// Stage 2 of `inferbench tune` (docs/tune.md), run: successive halving (tune/screen.h) over the
// candidates stage 1 kept, each pass one sweep run (sweep::run_planned) of the baseline first and
// the candidates in a seeded rotated order, one server start each, at the objective's
// concurrency; a baseline-only pass closes each round so every pass has a baseline after it.
#pragma once

#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/expected.h"
#include "sweep/sweep.h"
#include "tune/knob.h"
#include "tune/screen.h"

namespace ib::tune {

/// What is optimised: a headline metric at one concurrency, in its good direction.
struct Objective {
  std::string metric = "tput_per_gpu";
  int64_t conc = 1;
  bool higher_is_better = true;
  std::string describe() const;  // "tput_per_gpu at concurrency 32 (higher is better)"
};

/// Error names --objective and lists the headline keys.
Expected<Objective> make_objective(const std::string& metric, int64_t conc);

struct ScreenOptions {
  int keep = 2;
  int eta = 2;
  int passes0 = 3;
  uint64_t seed = 0;
  double confidence = 0.95;
  double min_effect_pct = 2;
  /// The sweep settings of every pass (runs folder, database, inferbench, workload overrides for
  /// short screening points); extra_run_options gets the tune's tag.
  sweep::SweepOptions sweep;
  std::string tune_id;  // the tag's id
  std::FILE* points_out = nullptr;  // the sweep's point table; null: discarded
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
  std::vector<std::string> runs;      // the store runs of the passes
  int points = 0;
  int64_t requests = 0;  // benchmark requests sent (measured + warmup)
  double wall_s = 0;
  bool interrupted = false;
};

/// Runs stage 2. Error before anything runs (no row at the objective's concurrency, a workload
/// error) or when the baseline's first point fails (nothing can be scored against it).
Expected<ScreenStage> screen_candidates(const recipe::ConfigEntry& base,
                                        const std::vector<const Candidate*>& survivors,
                                        const Objective& objective, const ScreenOptions& options,
                                        const std::function<void(const std::string&)>& progress);

}  // namespace ib::tune
