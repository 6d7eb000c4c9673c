#include "tune/screen_run.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <map>

#include "core/interrupt.h"
#include "metrics/keys.h"
#include "recipe/matrix.h"

namespace ib::tune {

namespace {

// The server configurations of stage 2: one per side, at its operating concurrency.
struct ScreenSides {
  sweep::ConfigPlan base;
  std::vector<sweep::ConfigPlan> candidates;  // parallel to the survivors
};

Expected<ScreenSides> screen_sides(const recipe::ConfigEntry& base,
                                   const std::vector<const Candidate*>& survivors,
                                   const Objective& objective, const ScreenOptions& o,
                                   const sweep::SweepOptions& so,
                                   const std::map<std::string, int64_t>& operating_conc) {
  auto config_of = [&](const recipe::ConfigEntry& e) -> Expected<sweep::ConfigPlan> {
    auto it = operating_conc.find(e.key);
    return side_config(e, o.row, {it == operating_conc.end() ? objective.conc : it->second}, so,
                       false, 0);
  };
  auto base_cfg = config_of(base);
  if (!base_cfg) return base_cfg.error();
  ScreenSides sides{std::move(*base_cfg), {}};
  for (const Candidate* c : survivors) {
    auto cfg = config_of(c->entry);
    if (!cfg) return cfg.error();
    sides.candidates.push_back(std::move(*cfg));
  }
  return sides;
}

// What one round measured: the baseline before every pass and after the last, and each active
// candidate's values.
struct RoundValues {
  std::vector<double> baselines;
  std::vector<std::vector<double>> values;  // parallel to the round's active candidates
};

// Stage 2's rounds of successive halving over the survivors: each round's passes, its closing
// baseline and its decisions, recorded in the stage.
class ScreenRounds {
 public:
  ScreenRounds(const recipe::ConfigEntry& base, const std::vector<const Candidate*>& survivors,
               const Objective& objective, const ScreenOptions& o, BlockRunner& runner,
               ScreenSides sides, ScreenStage& stage,
               const std::function<void(const std::string&)>& progress)
      : base_(base),
        survivors_(survivors),
        objective_(objective),
        o_(o),
        runner_(runner),
        sides_(std::move(sides)),
        stage_(stage),
        progress_(progress) {}

  // Every round, until the plan ends, no candidate is left or the stage is interrupted.
  Status run() {
    std::vector<size_t> active(survivors_.size());
    for (size_t i = 0; i < active.size(); ++i) active[i] = i;
    for (int round = 0; round < stage_.plan.rounds() && !stage_.interrupted; ++round) {
      RoundValues rv;
      rv.values.resize(active.size());
      if (auto s = measure_passes(round, active, rv); !s.ok()) return s;
      if (stage_.interrupted) break;
      // The baseline after the round's last pass.
      say(fmt::format("stage 2/3 screen: round {}/{}: closing baseline", round + 1,
                      stage_.plan.rounds()));
      auto closing = run_pass({&sides_.base}, fmt::format("r{}-close", round));
      if (!closing) return closing.error();
      rv.baselines.push_back((*closing)[base_.key]);
      stage_.baselines.push_back(rv.baselines.back());
      active = decide(round, active, rv);
      if (active.empty()) break;
    }
    return Status::Ok();
  }

 private:
  void say(const std::string& line) const {
    if (progress_) progress_(line);
  }

  // One block of `configs`; the objective value of each config key (NaN: not a success).
  Expected<std::map<std::string, double>> run_pass(
      const std::vector<const sweep::ConfigPlan*>& configs, const std::string& tag) {
    std::vector<sweep::ConfigPlan> plan;
    for (const auto* c : configs) plan.push_back(*c);
    auto block = runner_.run("screen", "screen-" + tag, plan);
    if (!block) return block.error();
    stage_.runs.push_back(block->run);
    if (block->interrupted) stage_.interrupted = true;
    std::map<std::string, double> values;
    for (const auto& p : block->points) {
      ++stage_.points;
      values[p.id.config_key] = objective_.value(p);
    }
    stage_.requests += block->requests;
    return values;
  }

  // The round's passes, each the baseline first and the active candidates in the pass's order.
  // Error when the baseline's first screening point failed: nothing can be scored against it.
  Status measure_passes(int round, const std::vector<size_t>& active, RoundValues& rv) {
    const int passes = stage_.plan.passes[static_cast<size_t>(round)];
    for (int pass = 0; pass < passes && !stage_.interrupted; ++pass, ++global_pass_) {
      if (interrupt_requested()) {
        stage_.interrupted = true;
        break;
      }
      const auto order = pass_order(static_cast<int>(active.size()), o_.seed + round, global_pass_);
      std::vector<const sweep::ConfigPlan*> configs{&sides_.base};
      for (int k : order) configs.push_back(&sides_.candidates[active[static_cast<size_t>(k)]]);
      say(fmt::format("stage 2/3 screen: round {}/{} pass {}/{}: baseline and {} candidate{}",
                      round + 1, stage_.plan.rounds(), pass + 1, passes, active.size(),
                      active.size() == 1 ? "" : "s"));
      auto values = run_pass(configs, fmt::format("r{}-p{}", round, pass));
      if (!values) return values.error();
      const double b = (*values)[base_.key];
      if (global_pass_ == 0 && !std::isfinite(b)) {
        return Error{
            fmt::format("the baseline's first screening point failed ({} at concurrency "
                        "{}); nothing can be scored against it (see the run {})",
                        base_.key, objective_.conc, stage_.runs.back())};
      }
      rv.baselines.push_back(b);
      stage_.baselines.push_back(b);
      for (size_t a = 0; a < active.size(); ++a) {
        const double v = (*values)[survivors_[active[a]]->config_key];
        rv.values[a].push_back(v);
        stage_.results[active[a]].values.push_back(v);
      }
    }
    return Status::Ok();
  }

  // Scores the round's candidates and decides which advance; returns those.
  std::vector<size_t> decide(int round, const std::vector<size_t>& active, const RoundValues& rv) {
    std::vector<std::optional<Score>> scores;
    for (size_t a = 0; a < active.size(); ++a) {
      auto s = score(rv.values[a], rv.baselines, objective_.higher_is_better, o_.confidence,
                     o_.min_effect_pct);
      stage_.results[active[a]].score = s;
      stage_.results[active[a]].round = round;
      scores.push_back(s);
    }
    const bool last = round + 1 == stage_.plan.rounds();
    const int keep = last ? static_cast<int>(active.size())
                          : stage_.plan.candidates[static_cast<size_t>(round) + 1];
    const auto decisions = decide_round(scores, keep, o_.min_effect_pct);
    std::vector<size_t> next;
    for (size_t a = 0; a < active.size(); ++a) {
      stage_.results[active[a]].decision = decisions[a];
      if (decisions[a] == ScreenDecision::kAdvance) next.push_back(active[a]);
    }
    return next;
  }

  const recipe::ConfigEntry& base_;
  const std::vector<const Candidate*>& survivors_;
  const Objective& objective_;
  const ScreenOptions& o_;
  BlockRunner& runner_;
  const ScreenSides sides_;
  ScreenStage& stage_;
  const std::function<void(const std::string&)>& progress_;
  int global_pass_ = 0;  // passes over all rounds
};

}  // namespace

Expected<ScreenStage> screen_candidates(const recipe::ConfigEntry& base,
                                        const std::vector<const Candidate*>& survivors,
                                        const Objective& objective, const ScreenOptions& o,
                                        BlockRunner& runner,
                                        const std::map<std::string, int64_t>& operating_conc,
                                        const std::function<void(const std::string&)>& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  ScreenStage stage;
  stage.results.resize(survivors.size());
  for (size_t i = 0; i < survivors.size(); ++i) stage.results[i].candidate_id = survivors[i]->id;
  if (survivors.empty()) return stage;

  // One server configuration per side, at its operating concurrency.
  sweep::SweepOptions so = runner.sweep();
  so.workload = o.workload;
  auto sides = screen_sides(base, survivors, objective, o, so, operating_conc);
  if (!sides) return sides.error();
  stage.plan = plan_halving(static_cast<int>(survivors.size()), o.keep, o.eta, o.passes0);
  ScreenRounds rounds(base, survivors, objective, o, runner, std::move(*sides), stage, progress);
  if (auto s = rounds.run(); !s.ok()) return s.error();
  stage.drift = baseline_drift(stage.baselines, o.min_effect_pct);
  stage.wall_s = seconds_since(t0);
  return stage;
}

}  // namespace ib::tune
