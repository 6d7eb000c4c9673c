#include "tune/confirm.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>

#include "core/interrupt.h"
#include "core/strings.h"
#include "metrics/eval_result.h"
#include "metrics/keys.h"
#include "store/store.h"
#include "verdict/sources.h"
#include "verdict/stats.h"

namespace ib::tune {

namespace {

double mean_of(const std::vector<double>& v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

std::vector<double> finite(const std::vector<double>& v) {
  std::vector<double> out;
  for (double x : v) {
    if (std::isfinite(x)) out.push_back(x);
  }
  return out;
}

bool is_eval(const metrics::PointResult& p) {
  return metrics::is_eval_workload_key(p.id.workload_key);
}

std::string ci_pct_text(const verdict::Interval& ci) {
  return ci.valid() ? fmt::format("[{:+.2f}%, {:+.2f}%]", ci.lo, ci.hi) : "no interval";
}

}  // namespace

std::string_view to_string(ConfirmDecision d) {
  switch (d) {
    case ConfirmDecision::kConfirmed:
      return "confirmed";
    case ConfirmDecision::kRejected:
      return "rejected";
    case ConfirmDecision::kInconclusive:
      return "inconclusive";
    case ConfirmDecision::kNotMeasured:
      break;
  }
  return "not measured";
}

Expected<Guard> parse_guard(std::string_view text, double default_tolerance_pct) {
  Guard g;
  g.tolerance_pct = default_tolerance_pct;
  std::string_view metric = text;
  if (const size_t colon = text.find(':'); colon != std::string_view::npos) {
    metric = text.substr(0, colon);
    std::string_view tol = text.substr(colon + 1);
    if (!tol.empty() && tol.back() == '%') tol.remove_suffix(1);
    double v = 0;
    auto [ptr, ec] = std::from_chars(tol.data(), tol.data() + tol.size(), v);
    if (tol.empty() || ec != std::errc() || ptr != tol.data() + tol.size() || !std::isfinite(v) ||
        v < 0 || v > 1000) {
      return Error{
          fmt::format("--guard '{}': the tolerance '{}' is not a percentage from 0 to "
                      "1000",
                      printable(text, 80), printable(tol, 40))};
    }
    g.tolerance_pct = v;
  }
  auto i = metrics::headline_index(metric);
  if (!i) {
    return Error{fmt::format("--guard '{}': '{}' is not a headline metric ({})",
                             printable(text, 80), printable(metric, 40),
                             metrics::headline_keys_text())};
  }
  g.metric = std::string(metric);
  g.higher_is_better = metrics::kHeadlineMetrics[*i].higher_is_better;
  return g;
}

std::vector<Guard> default_guards(const Objective& objective, double tolerance_pct) {
  std::vector<Guard> out;
  const auto used = objective.metrics();
  for (const char* m :
       {"median_ttft_ms", "p99_ttft_ms", "median_tpot_ms", "p99_tpot_ms", "median_itl_ms"}) {
    if (std::find(used.begin(), used.end(), m) != used.end()) continue;
    if (objective.kind == Objective::Kind::kTputAtSlo) {
      bool constrained = false;
      for (const auto& s : objective.slos) constrained = constrained || s.metric == m;
      if (constrained) continue;  // the SLO already bounds it
    }
    auto g = parse_guard(m, tolerance_pct);
    if (g) out.push_back(*g);
  }
  return out;
}

void decide_confirmation(ConfirmResult& r, const Objective& objective, double confidence,
                         double min_effect_pct, double accuracy_tolerance, int repeats) {
  const auto b = finite(r.base_values), h = finite(r.head_values);
  if (b.empty() || h.empty() || b.size() + h.size() < 3) {
    r.decision = ConfirmDecision::kNotMeasured;
    r.reason = fmt::format("too few measured repeats (baseline {}, candidate {}): see the runs",
                           b.size(), h.size());
    return;
  }
  r.base_mean = mean_of(b);
  r.head_mean = mean_of(h);
  r.delta_pct = 100 * (r.head_mean - r.base_mean) / r.base_mean;
  r.ci_pct = {};
  if (auto w = verdict::welch_interval(b, h, confidence)) {
    r.ci_pct = {100 * w->ci.lo / r.base_mean, 100 * w->ci.hi / r.base_mean};
  }
  r.objective_verdict = decide(r.ci_pct, objective.higher_is_better, min_effect_pct);
  const std::string obj =
      fmt::format("{} {:+.2f}% {}", objective.name(), r.delta_pct, ci_pct_text(r.ci_pct));
  auto reject = [&](std::string why) {
    r.decision = ConfirmDecision::kRejected;
    r.reason = std::move(why);
  };
  if (r.objective_verdict == verdict::Verdict::kRegressed) {
    return reject(fmt::format("the objective regressed: {}", obj));
  }
  if (r.objective_verdict == verdict::Verdict::kNoChange) {
    return reject(
        fmt::format("no significant change in the objective: {} (minimum effect "
                    "{}%)",
                    obj, min_effect_pct));
  }
  if (r.objective_verdict == verdict::Verdict::kNoInterval) {
    r.decision = ConfirmDecision::kNotMeasured;
    r.reason = fmt::format("no interval for the objective ({})", obj);
    return;
  }
  std::vector<std::string> regressed, inconclusive;
  for (const auto& g : r.guards) {
    const std::string line = fmt::format("{} {:+.2f}% {} (tolerance {}%)", g.guard.metric,
                                         g.delta_pct, ci_pct_text(g.ci_pct), g.guard.tolerance_pct);
    if (g.verdict == "regressed") regressed.push_back(line);
    if (g.verdict == "inconclusive") inconclusive.push_back(line);
  }
  std::vector<std::string> acc_bad, acc_unsure;
  for (const auto& a : r.accuracy) {
    const std::string line =
        fmt::format("{} {:+.3f} [{:+.3f}, {:+.3f}]", a.filter, a.delta, a.ci.lo, a.ci.hi);
    if (a.verdict == verdict::Verdict::kRegressed) {
      acc_bad.push_back(line);
    } else if (!a.ci.valid() || a.ci.lo < -accuracy_tolerance) {
      acc_unsure.push_back(line);
    }
  }
  if (!regressed.empty()) {
    return reject(fmt::format("{} improved, but guard {} regressed beyond tolerance", obj,
                              fmt::join(regressed, "; ")));
  }
  if (!acc_bad.empty()) {
    return reject(
        fmt::format("{} improved, but accuracy regressed: {}", obj, fmt::join(acc_bad, "; ")));
  }
  // The operating point is the edge the search found, so single repeats fall on either side of
  // the bound; the mean over the repeats must meet it, within the minimum effect.
  for (size_t k = 0; k < objective.slos.size() && k < r.slo_values.size(); ++k) {
    const Slo& slo = objective.slos[k];
    const auto v = finite(r.slo_values[k]);
    const double m = mean_of(v);
    const double slack = std::abs(slo.bound * min_effect_pct / 100);
    const double bound = slo.upper ? slo.bound + slack : slo.bound - slack;
    if (v.empty() || !(slo.upper ? m <= bound : m >= bound)) {
      return reject(
          fmt::format("{} improved, but its operating point misses the SLO: {} "
                      "averages {:.4g} over {} repeats ({} {:.4g} within the minimum "
                      "effect)",
                      obj, slo.metric, m, v.size(), slo.upper ? "<=" : ">=", bound));
    }
  }
  std::vector<std::string> unsure;
  if (r.confounded) unsure.push_back("the comparison is confounded: " + r.compare_verdict);
  for (const auto& g : inconclusive) {
    unsure.push_back(fmt::format("guard {} is not shown within tolerance", g));
  }
  for (const auto& a : acc_unsure) {
    unsure.push_back(fmt::format("accuracy {} is not shown within -{}", a, accuracy_tolerance));
  }
  if (!unsure.empty()) {
    r.decision = ConfirmDecision::kInconclusive;
    r.reason = fmt::format("{} improved, but {}; rerun with --confirm-repeats {}", obj,
                           fmt::join(unsure, "; "), 2 * std::max(repeats, 1));
    return;
  }
  r.decision = ConfirmDecision::kConfirmed;
  r.reason = fmt::format("{} improved; {} guard{} within tolerance{}", obj, r.guards.size(),
                         r.guards.size() == 1 ? "" : "s",
                         r.accuracy.empty() ? "" : "; accuracy within tolerance");
}

namespace {

// A side's operating concurrency: its search's (tput-at-slo), else the objective's.
int64_t confirm_conc_of(const std::map<std::string, int64_t>& operating_conc,
                        const std::string& key, int64_t objective_conc) {
  auto it = operating_conc.find(key);
  return it == operating_conc.end() ? objective_conc : it->second;
}

// The server configurations of stage 3: the baseline's at its operating concurrency, and each
// finalist's at its own.
struct ConfirmSides {
  sweep::ConfigPlan base;
  std::vector<sweep::ConfigPlan> finalists;  // parallel to the finalists
};

// The sides' configurations; each finalist's result gets its id, concurrencies and (tput-at-slo)
// its count of repeats that met the SLO.
Expected<ConfirmSides> confirm_sides(const recipe::ConfigEntry& base,
                                     const std::vector<const Candidate*>& finalists,
                                     const Objective& objective, const ConfirmOptions& o,
                                     const sweep::SweepOptions& so,
                                     const std::map<std::string, int64_t>& operating_conc,
                                     int64_t base_conc, ConfirmStage& stage) {
  auto base_cfg = side_config(base, o.row, {base_conc}, so, o.eval, base_conc);
  if (!base_cfg) return base_cfg.error();
  ConfirmSides sides{std::move(*base_cfg), {}};
  for (size_t i = 0; i < finalists.size(); ++i) {
    const int64_t c = confirm_conc_of(operating_conc, finalists[i]->config_key, objective.conc);
    // At the baseline's concurrency too, so the guards compare like with like.
    std::vector<int64_t> concs{base_conc};
    if (c != base_conc) concs.push_back(c);
    std::sort(concs.begin(), concs.end());
    auto cfg = side_config(finalists[i]->entry, o.row, concs, so, o.eval, base_conc);
    if (!cfg) return cfg.error();
    sides.finalists.push_back(std::move(*cfg));
    stage.results[i].candidate_id = finalists[i]->id;
    stage.results[i].base_conc = base_conc;
    stage.results[i].head_conc = c;
    if (objective.kind == Objective::Kind::kTputAtSlo) stage.results[i].slo_met = 0;
  }
  return sides;
}

// The objective's values of one confirmation block: the baseline's, and each finalist's with its
// SLO metrics, appended to the stage.
void record_repeat(const BlockOutcome& block, const recipe::ConfigEntry& base, int64_t base_conc,
                   const std::vector<const Candidate*>& finalists, const Objective& objective,
                   ConfirmStage& stage) {
  stage.runs.push_back(block.run);
  stage.points += static_cast<int>(block.points.size());
  stage.requests += block.requests;
  double bv = std::numeric_limits<double>::quiet_NaN();
  for (const auto& p : block.points) {
    if (p.id.config_key == base.key && p.id.concurrency == base_conc && !is_eval(p)) {
      bv = objective.value(p);
    }
  }
  stage.baselines.push_back(bv);
  for (size_t i = 0; i < finalists.size(); ++i) {
    auto& r = stage.results[i];
    double hv = std::numeric_limits<double>::quiet_NaN();
    for (const auto& p : block.points) {
      if (p.id.config_key == finalists[i]->config_key && p.id.concurrency == r.head_conc &&
          !is_eval(p)) {
        hv = objective.value(p);
        if (r.slo_met >= 0 && objective.meets(p)) ++r.slo_met;
        r.slo_values.resize(objective.slos.size());
        for (size_t k = 0; k < objective.slos.size(); ++k) {
          r.slo_values[k].push_back(point_metric(p, objective.slos[k].metric));
        }
      }
    }
    r.base_values.push_back(bv);
    r.head_values.push_back(hv);
  }
}

// Runs the repeats, each one block of the baseline first and every finalist in a rotated order.
Status run_repeats(const recipe::ConfigEntry& base, const std::vector<const Candidate*>& finalists,
                   const Objective& objective, const ConfirmOptions& o, BlockRunner& runner,
                   const ConfirmSides& sides, int64_t base_conc, ConfirmStage& stage,
                   const std::function<void(const std::string&)>& progress) {
  for (int rep = 0; rep < o.repeats; ++rep) {
    if (interrupt_requested()) {
      stage.interrupted = true;
      break;
    }
    std::vector<sweep::ConfigPlan> configs{sides.base};
    for (int k : pass_order(static_cast<int>(finalists.size()), o.seed + 1000, rep)) {
      configs.push_back(sides.finalists[static_cast<size_t>(k)]);
    }
    if (progress) {
      progress(fmt::format("stage 3/3 confirm: repeat {}/{}: baseline and {} finalist{}", rep + 1,
                           o.repeats, finalists.size(), finalists.size() == 1 ? "" : "s"));
    }
    auto block = runner.run("confirm", fmt::format("confirm-{}", rep), configs);
    if (!block) return block.error();
    record_repeat(*block, base, base_conc, finalists, objective, stage);
    if (block->interrupted) {
      stage.interrupted = true;
      break;
    }
  }
  return Status::Ok();
}

// Every point the stage's runs stored, as one compare side.
Expected<verdict::Side> stored_confirm_points(const sweep::SweepOptions& so,
                                              const std::vector<std::string>& run_names) {
  auto st = store::Store::open_read_only(so.database());
  if (!st) return st.error();
  std::vector<store::RunRecord> runs;
  for (const auto& name : run_names) {
    auto rs = verdict::runs_of(*st, name);
    if (!rs) return rs.error();
    for (auto& r : *rs) {
      if (std::none_of(runs.begin(), runs.end(), [&](const auto& x) { return x.id == r.id; })) {
        runs.push_back(std::move(r));
      }
    }
  }
  verdict::Side all;
  if (!runs.empty()) {
    auto side = verdict::side_from_runs(*st, runs, "tune confirmation");
    if (!side) return side.error();
    all = std::move(*side);
  }
  return all;
}

// A guard judged on compare's delta of its metric: regressed beyond the tolerance, within it
// (non-inferiority: the interval's bad end within it), or inconclusive.
GuardResult judge_guard(const Guard& g, const verdict::MetricDelta& m) {
  GuardResult gr;
  gr.guard = g;
  gr.base = m.base;
  gr.head = m.head;
  gr.delta_pct = m.delta_pct;
  gr.interval = m.interval;
  gr.ci_pct = m.interval == "welch"       ? m.welch_pct
              : m.interval == "bootstrap" ? m.bootstrap_pct
                                          : verdict::Interval{};
  if (!gr.ci_pct.valid()) {
    gr.verdict = "inconclusive";
  } else if (decide(gr.ci_pct, g.higher_is_better, g.tolerance_pct) ==
             verdict::Verdict::kRegressed) {
    gr.verdict = "regressed";
  } else if (g.higher_is_better ? gr.ci_pct.lo >= -g.tolerance_pct
                                : gr.ci_pct.hi <= g.tolerance_pct) {
    gr.verdict = "within";
  } else {
    gr.verdict = "inconclusive";
  }
  return gr;
}

// compare's semantics for one finalist against the baseline over the stored points: confounders,
// accuracy and the guards at the baseline's concurrency.
void compare_finalist(const recipe::ConfigEntry& base, const Candidate& finalist,
                      const verdict::Side& all, const ConfirmOptions& o, const ConfirmStage& stage,
                      int64_t base_conc, ConfirmResult& r) {
  verdict::Side bs{"baseline " + base.key, stage.runs, {}};
  verdict::Side hs{finalist.describe(), stage.runs, {}};
  for (const auto& p : all.points) {
    if (p.config_key == base.key) bs.points.push_back(p);
    if (p.config_key == finalist.config_key) hs.points.push_back(p);
  }
  verdict::CompareOptions co;
  co.confidence = stage.confidence_each;
  co.min_effect_pct = o.min_effect_pct;
  co.resamples = o.resamples;
  co.pairs[base.key] = finalist.config_key;
  const auto cmp = verdict::compare(bs, hs, co);
  r.confounded = cmp.confounded;
  r.compare_verdict = cmp.verdict_line();
  r.compare = verdict::comparison_json(cmp);
  for (const auto& pair : cmp.pairs) {
    for (const auto& a : pair.accuracy) r.accuracy.push_back(a);
    if (pair.concurrency != base_conc || pair.metrics.empty()) continue;
    for (const auto& g : o.guards) {
      for (const auto& m : pair.metrics) {
        if (m.key == g.metric) r.guards.push_back(judge_guard(g, m));
      }
    }
  }
}

// Each finalist compared and decided; the winner is the confirmed one with the largest effect.
Status decide_finalists(const recipe::ConfigEntry& base,
                        const std::vector<const Candidate*>& finalists, const Objective& objective,
                        const ConfirmOptions& o, const sweep::SweepOptions& so, int64_t base_conc,
                        ConfirmStage& stage) {
  // compare's semantics over the stored points: guards, accuracy, confounders.
  auto all = stored_confirm_points(so, stage.runs);
  if (!all) return all.error();
  for (size_t i = 0; i < finalists.size(); ++i) {
    auto& r = stage.results[i];
    compare_finalist(base, *finalists[i], *all, o, stage, base_conc, r);
    decide_confirmation(r, objective, stage.confidence_each, o.min_effect_pct, o.accuracy_tolerance,
                        o.repeats);
    if (stage.interrupted && r.decision != ConfirmDecision::kRejected) {
      r.decision = ConfirmDecision::kInconclusive;
      r.reason = "interrupted before every repeat was measured: " + r.reason;
    }
    if (r.decision == ConfirmDecision::kConfirmed &&
        (!stage.winner ||
         r.delta_pct * (objective.higher_is_better ? 1 : -1) >
             stage.results[*stage.winner].delta_pct * (objective.higher_is_better ? 1 : -1))) {
      stage.winner = i;
    }
  }
  return Status::Ok();
}

}  // namespace

Expected<ConfirmStage> confirm_candidates(const recipe::ConfigEntry& base,
                                          const std::vector<const Candidate*>& finalists,
                                          const Objective& objective, const ConfirmOptions& o,
                                          BlockRunner& runner,
                                          const std::map<std::string, int64_t>& operating_conc,
                                          const std::function<void(const std::string&)>& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  ConfirmStage stage;
  stage.repeats = o.repeats;
  stage.results.resize(finalists.size());
  if (finalists.empty()) return stage;
  stage.confidence_each = 1 - (1 - o.confidence) / static_cast<double>(finalists.size());
  const int64_t base_conc = confirm_conc_of(operating_conc, base.key, objective.conc);
  sweep::SweepOptions so = runner.sweep();
  so.workload = o.workload;
  auto sides = confirm_sides(base, finalists, objective, o, so, operating_conc, base_conc, stage);
  if (!sides) return sides.error();
  if (auto s =
          run_repeats(base, finalists, objective, o, runner, *sides, base_conc, stage, progress);
      !s.ok()) {
    return s.error();
  }
  stage.drift = baseline_drift(stage.baselines, o.min_effect_pct);
  if (auto s = decide_finalists(base, finalists, objective, o, so, base_conc, stage); !s.ok()) {
    return s.error();
  }
  stage.wall_s = seconds_since(t0);
  return stage;
}

}  // namespace ib::tune
