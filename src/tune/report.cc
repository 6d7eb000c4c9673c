#include "tune/report.h"

#include <fmt/format.h>

#include <cmath>

#include "core/redact.h"

namespace ib::tune {

namespace json = boost::json;

int64_t TuneReport::requests_saved() const {
  int64_t dropped = 0;
  for (const auto& i : verify.items) dropped += i.outcome == VerifyOutcome::kNoOp ? 1 : 0;
  return dropped * requests_per_candidate;
}

namespace {

std::string identity_line(const verify::ServerObservation& base) {
  std::vector<std::string> parts;
  for (const char* f : {"image", "model", "framework", "precision", "runner", "engine-version"}) {
    if (const auto* v = base.identity.if_contains(f); v && v->is_string()) {
      parts.push_back(fmt::format("{} `{}`", f, std::string_view(v->get_string())));
    }
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

std::string TuneReport::markdown() const {
  std::string md = fmt::format("### inferbench tune: {} ({})\n\n", key, recipe);
  md += fmt::format(
      "Measured for **{}** on {}. Evidence for this recipe on this image, model and hardware "
      "only.\n\n",
      key, identity_line(verify.base));
  md += "| candidate | change | stage 1: verify | evidence |\n|---|---|---|---|\n";
  for (size_t i = 0; i < candidates.size() && i < verify.items.size(); ++i) {
    const auto& c = candidates[i];
    const auto& item = verify.items[i];
    std::string evidence;
    if (item.outcome == VerifyOutcome::kFailedToStart) {
      evidence = item.error;
    } else {
      for (const auto& f : item.verdict.fields) {
        if (!evidence.empty()) evidence += "; ";
        evidence += fmt::format("{}: {} ({})", f.field, f.verdict, f.evidence);
      }
      for (const auto& cf : item.verdict.confounders) evidence += "; confounder: " + cf;
    }
    for (char& ch : evidence) {
      if (ch == '|' || ch == '\n') ch = ' ';
    }
    md += fmt::format("| `{}` | {} | {} | {} |\n", c.id, c.describe(), to_string(item.outcome),
                      evidence);
  }
  int no_op = 0, survive = 0, failed = 0;
  for (const auto& i : verify.items) {
    no_op += i.outcome == VerifyOutcome::kNoOp;
    survive += i.outcome == VerifyOutcome::kSurvives;
    failed += i.outcome == VerifyOutcome::kFailedToStart;
  }
  md += fmt::format(
      "\nStage 1 started {} servers in {:.1f} s and sent no benchmark request: {} candidate{} "
      "dropped as no-op{}, {} failed to start, {} survive{}.\n",
      verify.servers_started, verify.wall_s, no_op, no_op == 1 ? "" : "s", no_op == 1 ? "" : "s",
      failed, survive, survive == 1 ? "s" : "");
  if (no_op > 0 && requests_per_candidate > 0) {
    md += fmt::format(
        "Benchmark requests not sent for the no-ops: {} (one sweep of a candidate's row: {} "
        "point{}, {} requests).\n",
        requests_saved(), points_per_candidate, points_per_candidate == 1 ? "" : "s",
        requests_per_candidate);
  }
  if (screen && objective) {
    md += fmt::format(
        "\n#### Stage 2: screen ({}; {} round{}, baseline first in every pass, ratios to the "
        "adjacent baselines, {:.0f}% t intervals, minimum effect {}%)\n\n",
        objective->describe(), screen->plan.rounds(), screen->plan.rounds() == 1 ? "" : "s",
        confidence * 100, min_effect_pct);
    md += "| candidate | change | Δ objective | interval | passes | decision |\n"
          "|---|---|---|---|---|---|\n";
    for (const auto& r : screen->results) {
      std::string change;
      for (const auto& c : candidates) {
        if (c.id == r.candidate_id) change = c.describe();
      }
      const std::string delta = r.score ? fmt::format("{:+.2f}%", r.score->delta_pct) : "–";
      const std::string ci = r.score && r.score->ci_pct.valid()
                                 ? fmt::format("[{:+.2f}, {:+.2f}]", r.score->ci_pct.lo,
                                               r.score->ci_pct.hi)
                                 : "–";
      md += fmt::format("| `{}` | {} | {} | {} | {} | {} (round {}) |\n", r.candidate_id, change,
                        delta, ci, r.score ? r.score->passes : 0, to_string(r.decision),
                        r.round + 1);
    }
    md += fmt::format(
        "\nStage 2 measured {} points ({} benchmark requests) in {:.1f} s; baseline drift over the "
        "stage {:+.2f}%{}.\n",
        screen->points, screen->requests, screen->wall_s, screen->drift.pct,
        screen->drift.significant ? " (beyond the minimum effect: ratios to adjacent baselines "
                                    "cancel a steady drift)"
                                  : "");
    if (screen->interrupted) md += "Interrupted: the screen is incomplete.\n";
  }
  for (const auto& n : notes) md += "\n- " + n;
  if (!notes.empty()) md += "\n";
  if (!stages_not_run.empty()) {
    md += fmt::format("\nNot run: {}.\n", fmt::join(stages_not_run, ", "));
  }
  return redact_text(md);
}

json::object TuneReport::to_json() const {
  json::object o;
  o["recipe"] = recipe;
  o["key"] = key;
  o["identity"] = verify.base.identity;
  json::array cands;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const auto& c = candidates[i];
    json::object j;
    j["id"] = c.id;
    j["config_key"] = c.config_key;
    j["change"] = c.describe();
    json::array changes;
    for (const auto& ch : c.changes) {
      json::object x;
      x["kind"] = to_string(ch.kind);
      x["name"] = ch.name;
      x["value"] = ch.value ? json::value(*ch.value) : json::value(nullptr);
      x["base_value"] = ch.base_value ? json::value(*ch.base_value) : json::value(nullptr);
      changes.push_back(std::move(x));
    }
    j["changes"] = std::move(changes);
    if (i < verify.items.size()) {
      const auto& item = verify.items[i];
      json::object s1;
      s1["outcome"] = to_string(item.outcome);
      if (!item.error.empty()) s1["error"] = item.error;
      s1["verdict"] = item.verdict.to_json();
      s1["evidence_dir"] = item.evidence_dir;
      s1["wall_s"] = item.wall_s;
      j["verify"] = std::move(s1);
    }
    cands.push_back(std::move(j));
  }
  o["candidates"] = std::move(cands);
  json::array notes_json;
  for (const auto& n : notes) notes_json.emplace_back(n);
  o["notes"] = std::move(notes_json);
  json::object cost;
  cost["verify_wall_s"] = verify.wall_s;
  cost["servers_started"] = verify.servers_started;
  cost["benchmark_requests_sent"] = 0;
  cost["requests_saved"] = requests_saved();
  cost["requests_per_candidate"] = requests_per_candidate;
  cost["points_per_candidate"] = points_per_candidate;
  o["cost"] = std::move(cost);
  if (screen && objective) {
    json::object s;
    s["objective"] = objective->describe();
    s["metric"] = objective->metric;
    s["conc"] = objective->conc;
    json::array rounds;
    for (int r = 0; r < screen->plan.rounds(); ++r) {
      rounds.push_back(json::object{{"candidates", screen->plan.candidates[static_cast<size_t>(r)]},
                                    {"passes", screen->plan.passes[static_cast<size_t>(r)]}});
    }
    s["rounds"] = std::move(rounds);
    json::array results;
    for (const auto& r : screen->results) {
      json::object x;
      x["id"] = r.candidate_id;
      x["decision"] = to_string(r.decision);
      x["round"] = r.round + 1;
      if (r.score) {
        x["delta_pct"] = r.score->delta_pct;
        x["ci_pct"] = r.score->ci_pct.valid()
                          ? json::value(json::array{r.score->ci_pct.lo, r.score->ci_pct.hi})
                          : json::value(nullptr);
        x["passes"] = r.score->passes;
      }
      json::array values;
      for (double v : r.values) values.push_back(std::isfinite(v) ? json::value(v) : json::value(nullptr));
      x["values"] = std::move(values);
      results.push_back(std::move(x));
    }
    s["candidates"] = std::move(results);
    json::array baselines;
    for (double v : screen->baselines) {
      baselines.push_back(std::isfinite(v) ? json::value(v) : json::value(nullptr));
    }
    s["baselines"] = std::move(baselines);
    s["drift_pct"] = screen->drift.pct;
    s["points"] = screen->points;
    s["requests"] = screen->requests;
    s["wall_s"] = screen->wall_s;
    s["interrupted"] = screen->interrupted;
    json::array runs;
    for (const auto& r : screen->runs) runs.emplace_back(r);
    s["runs"] = std::move(runs);
    o["screen"] = std::move(s);
    o["cost"].as_object()["benchmark_requests_sent"] = screen->requests;
  }
  json::array not_run;
  for (const auto& s : stages_not_run) not_run.emplace_back(s);
  o["stages_not_run"] = std::move(not_run);
  return redacted(o);
}

}  // namespace ib::tune
