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

namespace json = boost::json;

std::string Objective::describe() const {
  return fmt::format("{} at concurrency {} ({} is better)", metric, conc,
                     higher_is_better ? "higher" : "lower");
}

Expected<Objective> make_objective(const std::string& metric, int64_t conc) {
  auto i = metrics::headline_index(metric);
  if (!i) {
    std::string keys;
    for (const auto& k : metrics::kHeadlineMetrics) keys += (keys.empty() ? "" : ", ") + std::string(k.key);
    return Error{fmt::format("--objective: '{}' is not a headline metric ({})", metric, keys)};
  }
  Objective o;
  o.metric = metric;
  o.conc = conc;
  o.higher_is_better = metrics::kHeadlineMetrics[*i].higher_is_better;
  return o;
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The requests a measured point sent (measured + warmup), from its result JSON.
int64_t requests_of(const metrics::PointResult& p) {
  int64_t n = 0;
  for (const char* k : {"num_prompts", "num_warmups"}) {
    if (const auto* v = p.result.if_contains(k); v && v->is_int64()) n += v->as_int64();
  }
  return n;
}

}  // namespace

Expected<ScreenStage> screen_candidates(const recipe::ConfigEntry& base,
                                        const std::vector<const Candidate*>& survivors,
                                        const Objective& objective, const ScreenOptions& o,
                                        const std::function<void(const std::string&)>& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  ScreenStage stage;
  stage.results.resize(survivors.size());
  for (size_t i = 0; i < survivors.size(); ++i) stage.results[i].candidate_id = survivors[i]->id;
  if (survivors.empty()) return stage;

  // One server configuration per side, at the objective's concurrency.
  std::map<std::string, const recipe::ConfigEntry*> by_key{{base.key, &base}};
  for (const Candidate* c : survivors) by_key[c->config_key] = &c->entry;
  sweep::PlanOptions po;
  po.concurrencies = {objective.conc};
  po.extra_server_args = o.sweep.extra_server_args;
  po.launcher = o.sweep.launcher.empty() ? "local" : o.sweep.launcher;
  po.workload = o.sweep.workload;
  po.workload.api = std::string(openai::api_name(o.sweep.api));
  auto config_of = [&](const recipe::ConfigEntry& e) -> Expected<sweep::ConfigPlan> {
    auto rows = recipe::expand({e}, nullptr);
    std::vector<recipe::RecipeRow> first;
    for (auto& r : rows) {
      if (r.scenario == "fixed-seq-len") {
        first.push_back(std::move(r));
        break;
      }
    }
    if (first.empty()) return Error{fmt::format("{}: no fixed-seq-len row to screen", e.key)};
    auto configs = sweep::group_configs(first, by_key, po);
    if (!configs) return configs.error();
    if (configs->empty() || !configs->front().unsupported.empty()) {
      return Error{fmt::format("{}: cannot be measured here: {}", e.key,
                               configs->empty() ? "no configuration" : configs->front().unsupported)};
    }
    return configs->front();
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
  // One sweep run of `configs`; the objective value of each config key (NaN: not a success).
  auto run_pass = [&](const std::vector<const sweep::ConfigPlan*>& configs, const std::string& tag)
      -> Expected<std::map<std::string, double>> {
    sweep::SweepPlanned planned;
    sweep::GroupPlan g;
    g.name = "tune-screen";
    for (const auto* c : configs) g.configs.push_back(*c);
    planned.groups.push_back(std::move(g));
    sweep::SweepOptions so = o.sweep;
    so.extra_run_options["tune"] = json::object{{"id", o.tune_id}, {"stage", "screen"}, {"pass", tag}};
    std::FILE* out = o.points_out;
    std::FILE* sink = nullptr;
    if (out == nullptr) out = sink = std::fopen("/dev/null", "w");
    auto outcome = sweep::run_planned(so, planned, by_key, {}, out);
    if (sink) std::fclose(sink);
    if (!outcome) return outcome.error();
    stage.runs.push_back(outcome->run_name);
    if (outcome->interrupted) stage.interrupted = true;
    std::map<std::string, double> values;
    for (const auto& p : outcome->points) {
      ++stage.points;
      stage.requests += requests_of(p);
      const bool ok = metrics::is_success(p.status) && p.validity.valid();
      values[p.id.config_key] = ok ? p.headline.get(objective.metric) : kNaN;
    }
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
        return Error{fmt::format("the baseline's first screening point failed ({} at concurrency "
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
