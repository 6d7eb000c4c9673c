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

Expected<ScreenStage> screen_candidates(const recipe::ConfigEntry& base,
                                        const std::vector<const Candidate*>& survivors,
                                        const Objective& objective, const ScreenOptions& o,
                                        BlockRunner& runner,
                                        const std::map<std::string, int64_t>& operating_conc,
                                        const std::function<void(const std::string&)>& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  ScreenStage stage;
  stage.results.resize(survivors.size());
  for (size_t i = 0; i < survivors.size(); ++i) stage.results[i].candidate_id = survivors[i]->id;
  if (survivors.empty()) return stage;

  // One server configuration per side, at its operating concurrency.
  sweep::SweepOptions so = runner.sweep();
  so.workload = o.workload;
  auto config_of = [&](const recipe::ConfigEntry& e) -> Expected<sweep::ConfigPlan> {
    auto it = operating_conc.find(e.key);
    return side_config(e, o.row, {it == operating_conc.end() ? objective.conc : it->second}, so,
                       false, 0);
  };
  auto base_cfg = config_of(base);
  if (!base_cfg) return base_cfg.error();
  std::vector<sweep::ConfigPlan> cand_cfg;
  for (const Candidate* c : survivors) {
    auto cfg = config_of(c->entry);
    if (!cfg) return cfg.error();
    cand_cfg.push_back(std::move(*cfg));
  }

  std::vector<size_t> active(survivors.size());
  for (size_t i = 0; i < active.size(); ++i) active[i] = i;
  stage.plan = plan_halving(static_cast<int>(active.size()), o.keep, o.eta, o.passes0);
  int global_pass = 0;
  // One block of `configs`; the objective value of each config key (NaN: not a success).
  auto run_pass = [&](const std::vector<const sweep::ConfigPlan*>& configs,
                      const std::string& tag) -> Expected<std::map<std::string, double>> {
    std::vector<sweep::ConfigPlan> plan;
    for (const auto* c : configs) plan.push_back(*c);
    auto block = runner.run("screen", "screen-" + tag, plan);
    if (!block) return block.error();
    stage.runs.push_back(block->run);
    if (block->interrupted) stage.interrupted = true;
    std::map<std::string, double> values;
    for (const auto& p : block->points) {
      ++stage.points;
      values[p.id.config_key] = objective.value(p);
    }
    stage.requests += block->requests;
    return values;
  };

  for (int round = 0; round < stage.plan.rounds() && !stage.interrupted; ++round) {
    const int passes = stage.plan.passes[static_cast<size_t>(round)];
    std::vector<double> round_baselines;
    std::vector<std::vector<double>> round_values(active.size());
    for (int pass = 0; pass < passes && !stage.interrupted; ++pass, ++global_pass) {
      if (interrupt_requested()) {
        stage.interrupted = true;
        break;
      }
      const auto order = pass_order(static_cast<int>(active.size()), o.seed + round, global_pass);
      std::vector<const sweep::ConfigPlan*> configs{&*base_cfg};
      for (int k : order) configs.push_back(&cand_cfg[active[static_cast<size_t>(k)]]);
      say(fmt::format("stage 2/3 screen: round {}/{} pass {}/{}: baseline and {} candidate{}",
                      round + 1, stage.plan.rounds(), pass + 1, passes, active.size(),
                      active.size() == 1 ? "" : "s"));
      auto values = run_pass(configs, fmt::format("r{}-p{}", round, pass));
      if (!values) return values.error();
      const double b = (*values)[base.key];
      if (global_pass == 0 && !std::isfinite(b)) {
        return Error{
            fmt::format("the baseline's first screening point failed ({} at concurrency "
                        "{}); nothing can be scored against it (see the run {})",
                        base.key, objective.conc, stage.runs.back())};
      }
      round_baselines.push_back(b);
      stage.baselines.push_back(b);
      for (size_t a = 0; a < active.size(); ++a) {
        const double v = (*values)[survivors[active[a]]->config_key];
        round_values[a].push_back(v);
        stage.results[active[a]].values.push_back(v);
      }
    }
    if (stage.interrupted) break;
    // The baseline after the round's last pass.
    say(fmt::format("stage 2/3 screen: round {}/{}: closing baseline", round + 1,
                    stage.plan.rounds()));
    auto closing = run_pass({&*base_cfg}, fmt::format("r{}-close", round));
    if (!closing) return closing.error();
    round_baselines.push_back((*closing)[base.key]);
    stage.baselines.push_back(round_baselines.back());
    std::vector<std::optional<Score>> scores;
    for (size_t a = 0; a < active.size(); ++a) {
      auto s = score(round_values[a], round_baselines, objective.higher_is_better, o.confidence,
                     o.min_effect_pct);
      stage.results[active[a]].score = s;
      stage.results[active[a]].round = round;
      scores.push_back(s);
    }
    const bool last = round + 1 == stage.plan.rounds();
    const int keep = last ? static_cast<int>(active.size())
                          : stage.plan.candidates[static_cast<size_t>(round) + 1];
    const auto decisions = decide_round(scores, keep, o.min_effect_pct);
    std::vector<size_t> next;
    for (size_t a = 0; a < active.size(); ++a) {
      stage.results[active[a]].decision = decisions[a];
      if (decisions[a] == ScreenDecision::kAdvance) next.push_back(active[a]);
    }
    active = std::move(next);
    if (active.empty()) break;
  }
  stage.drift = baseline_drift(stage.baselines, o.min_effect_pct);
  stage.wall_s = seconds_since(t0);
  return stage;
}

}  // namespace ib::tune
