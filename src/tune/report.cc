#include "tune/report.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "core/redact.h"
#include "core/strings.h"

namespace ib::tune {

namespace json = boost::json;

namespace {

json::value num(double v) {
  return std::isfinite(v) ? json::value(v) : json::value(nullptr);
}

json::value interval(const verdict::Interval& ci) {
  return ci.valid() ? json::value(json::array{ci.lo, ci.hi}) : json::value(nullptr);
}

std::string ci_text(const verdict::Interval& ci) {
  return ci.valid() ? fmt::format("[{:+.2f}, {:+.2f}]", ci.lo, ci.hi) : "–";
}

std::string identity_line(const verify::ServerObservation& base) {
  std::vector<std::string> parts;
  for (const char* f :
       {"image", "model", "hardware", "framework", "precision", "runner", "engine-version"}) {
    if (const auto* v = base.identity.if_contains(f); v && v->is_string()) {
      parts.push_back(fmt::format("{} `{}`", f, std::string_view(v->get_string())));
    }
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

// A path as people read it: relative to the current folder when inside it (the tuning keeps
// absolute paths so that --resume works from anywhere).
std::string shown_value(const std::string& path) {
  std::error_code ec;
  const std::string cwd = std::filesystem::current_path(ec).string();
  if (!ec && path.size() > cwd.size() + 1 && path.compare(0, cwd.size(), cwd) == 0 &&
      path[cwd.size()] == '/') {
    return path.substr(cwd.size() + 1);
  }
  return path;
}

const ScreenResult* screen_of(const std::optional<ScreenStage>& s, const std::string& id) {
  if (!s) return nullptr;
  for (const auto& r : s->results) {
    if (r.candidate_id == id) return &r;
  }
  return nullptr;
}

const ConfirmResult* confirm_of(const std::optional<ConfirmStage>& s, const std::string& id) {
  if (!s) return nullptr;
  for (const auto& r : s->results) {
    if (r.candidate_id == id) return &r;
  }
  return nullptr;
}

}  // namespace

const Candidate* TuneReport::candidate(const std::string& cid) const {
  for (const auto& c : candidates) {
    if (c.id == cid) return &c;
  }
  return nullptr;
}

int64_t TuneReport::requests_saved() const {
  int64_t dropped = 0;
  for (const auto& i : verify.items) dropped += i.outcome == VerifyOutcome::kNoOp ? 1 : 0;
  return dropped * requests_per_candidate;
}

std::string TuneReport::outcome_of(size_t i) const {
  const auto& c = candidates[i];
  if (i >= verify.items.size()) return "not verified";
  const auto& item = verify.items[i];
  if (item.outcome == VerifyOutcome::kNoOp) return "dropped at stage 1: no-op";
  if (item.outcome == VerifyOutcome::kFailedToStart) return "failed to start";
  if (item.outcome == VerifyOutcome::kConfounded) return "dropped at stage 1: confounded";
  if (winner && *winner == i) return "winner";
  if (const auto* r = confirm_of(confirm, c.id)) {
    return std::string(to_string(r->decision)) +
           (r->decision == ConfirmDecision::kConfirmed ? " (not the largest effect)" : "");
  }
  if (search) {
    for (const auto& s : search->sides) {
      if (s.config_key == c.config_key && s.lo == 0 && !search->interrupted) {
        return "SLO not met at any concurrency";
      }
    }
  }
  if (const auto* r = screen_of(screen, c.id)) {
    if (r->decision == ScreenDecision::kAdvance) return "advanced; not confirmed";
    return fmt::format("screened out: {}", to_string(r->decision));
  }
  return "survived stage 1";
}

std::string TuneReport::markdown() const {
  std::string title = fmt::format("### inferbench tune: {}", key);
  if (winner && confirm) {
    const auto& c = candidates[*winner];
    const auto* r = confirm_of(confirm, c.id);
    const std::string where =
        r->head_conc == r->base_conc
            ? fmt::format("at concurrency {}", r->head_conc)
            : fmt::format("(concurrency {} against the baseline's {})", r->head_conc, r->base_conc);
    title += fmt::format(" — winner: {} ({:+.2f}% {} {}, {:.1f}% CI {})", c.describe(),
                         r->delta_pct, objective ? objective->name() : "", where,
                         100 * confirm->confidence_each, ci_text(r->ci_pct));
  } else if (confirm) {
    title += " — no winner";
  }
  std::string md = title + "\n\n";
  md += fmt::format(
      "Measured for **{}** ({}) on {}{}. Evidence for this recipe on this image, model and "
      "hardware only.\n\n",
      key, shown_value(recipe), identity_line(verify.base),
      server_build.recorded() ? fmt::format(", server build `{}`", server_build.describe()) : "");
  if (objective) {
    md += fmt::format("Objective: {}. ", objective->describe());
    if (!guards.empty()) {
      std::vector<std::string> g;
      for (const auto& x : guards) g.push_back(fmt::format("{} ±{}%", x.metric, x.tolerance_pct));
      md += fmt::format("Guards: {}. ", fmt::join(g, ", "));
    }
    md += fmt::format("Minimum effect {}%, confidence {:.1f}%", min_effect_pct, confidence * 100);
    if (confirm && confirm->results.size() > 1) {
      md += fmt::format(" (Bonferroni: {:.2f}% per finalist)", 100 * confirm->confidence_each);
    }
    md += ".\n\n";
  }
  md +=
      "| candidate | change | stage 1: verify | stage 2: screen | stage 3: confirm | outcome |\n"
      "|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < candidates.size(); ++i) {
    const auto& c = candidates[i];
    const std::string s1 =
        i < verify.items.size() ? std::string(to_string(verify.items[i].outcome)) : "–";
    std::string s2 = "–", s3 = "–";
    if (const auto* r = screen_of(screen, c.id)) {
      s2 = r->score ? fmt::format("{:+.2f}% {}, {}", r->score->delta_pct, ci_text(r->score->ci_pct),
                                  to_string(r->decision))
                    : std::string(to_string(r->decision));
    }
    if (const auto* r = confirm_of(confirm, c.id)) {
      s3 = fmt::format("{:+.2f}% {}, {}", r->delta_pct, ci_text(r->ci_pct), to_string(r->decision));
    }
    const std::string outcome = outcome_of(i);
    md += fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", c.id, markdown_cell(c.describe()), s1,
                      s2, s3, outcome == "winner" ? "**winner**" : outcome);
  }

  // Stage 1.
  md += "\n#### Stage 1: verify (no benchmark request)\n\n";
  md += "| candidate | change | outcome | evidence |\n|---|---|---|---|\n";
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
    if (!item.evidence_dir.empty()) evidence += fmt::format(" — `{}`", shown_value(item.evidence_dir));
    md += fmt::format("| `{}` | {} | {} | {} |\n", c.id, markdown_cell(c.describe()),
                      to_string(item.outcome), markdown_cell(evidence));
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
        "Benchmark requests not sent for the no-ops: at least {} (one sweep of a candidate's row: "
        "{} point{}, {} requests).\n",
        requests_saved(), points_per_candidate, points_per_candidate == 1 ? "" : "s",
        requests_per_candidate);
  }

  // SLO search.
  if (search) {
    md += fmt::format("\n#### Stage 2: SLO search ({} points, {:.1f} s)\n\n", search->points,
                      search->wall_s);
    md += "| side | operating point | probes |\n|---|---|---|\n";
    for (const auto& s : search->sides) {
      std::vector<std::string> probes;
      for (const auto& p : s.probed) {
        probes.push_back(
            fmt::format("{} {}", p.conc, p.meets ? "meets" : "misses (" + p.why + ")"));
      }
      std::string side = s.config_key == key ? "baseline" : s.config_key;
      if (s.config_key != key) {
        for (const auto& c : candidates) {
          if (c.config_key == s.config_key) side = fmt::format("`{}` {}", c.id, c.describe());
        }
      }
      md += fmt::format("| {} | {} | {} |\n", markdown_cell(side), s.text,
                        markdown_cell(fmt::format("{}", fmt::join(probes, "; "))));
    }
  }

  // Stage 2.
  if (screen && objective) {
    md += fmt::format(
        "\n#### Stage 2: screen ({}; {} round{}, baseline first in every pass, ratios to the "
        "adjacent baselines, {:.0f}% t intervals, minimum effect {}%)\n\n",
        objective->describe(), screen->plan.rounds(), screen->plan.rounds() == 1 ? "" : "s",
        confidence * 100, min_effect_pct);
    md +=
        "| candidate | change | Δ objective | interval | passes | decision |\n"
        "|---|---|---|---|---|---|\n";
    for (const auto& r : screen->results) {
      const Candidate* c = candidate(r.candidate_id);
      const std::string delta = r.score ? fmt::format("{:+.2f}%", r.score->delta_pct) : "–";
      md += fmt::format("| `{}` | {} | {} | {} | {} | {} (round {}) |\n", r.candidate_id,
                        c ? markdown_cell(c->describe()) : "", delta,
                        r.score ? ci_text(r.score->ci_pct) : "–", r.score ? r.score->passes : 0,
                        to_string(r.decision), r.round + 1);
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

  // Stage 3.
  if (confirm && objective) {
    md += fmt::format(
        "\n#### Stage 3: confirm ({} repeat{}, the recipe's workload, baseline first in every "
        "repeat; Welch intervals at {:.2f}% per finalist)\n\n",
        confirm->repeats, confirm->repeats == 1 ? "" : "s", 100 * confirm->confidence_each);
    for (const auto& r : confirm->results) {
      const Candidate* c = candidate(r.candidate_id);
      md += fmt::format("**`{}` {}: {}.** {}\n\n", r.candidate_id, c ? c->describe() : "",
                        to_string(r.decision), r.reason);
      md += fmt::format(
          "- objective {}: baseline {:.4g} (conc {}), candidate {:.4g} (conc {}), "
          "{:+.2f}% {}\n",
          objective->name(), r.base_mean, r.base_conc, r.head_mean, r.head_conc, r.delta_pct,
          ci_text(r.ci_pct));
      if (r.slo_met >= 0) {
        md += fmt::format("- SLO met in {} of {} repeats at its operating point\n", r.slo_met,
                          r.head_values.size());
      }
      if (!r.guards.empty()) {
        md +=
            "\n| guard | baseline | candidate | Δ | interval | tolerance | verdict |\n"
            "|---|---|---|---|---|---|---|\n";
        for (const auto& g : r.guards) {
          md += fmt::format("| {} | {:.4g} | {:.4g} | {:+.2f}% | {} ({}) | {}% | {} |\n",
                            g.guard.metric, g.base, g.head, g.delta_pct, ci_text(g.ci_pct),
                            g.interval, g.guard.tolerance_pct, g.verdict);
        }
      }
      for (const auto& a : r.accuracy) {
        md += fmt::format("- accuracy {}: {:.3f} → {:.3f} ({:+.3f} [{:+.3f}, {:+.3f}]), {}\n",
                          a.filter, a.base, a.head, a.delta, a.ci.lo, a.ci.hi,
                          verdict::verdict_name(a.verdict));
      }
      md += fmt::format("\n- compare: {}\n\n", r.compare_verdict);
    }
    md += fmt::format(
        "Stage 3 measured {} points ({} benchmark requests) in {:.1f} s; baseline drift "
        "{:+.2f}%{}.\n",
        confirm->points, confirm->requests, confirm->wall_s, confirm->drift.pct,
        confirm->drift.significant ? " (beyond the minimum effect)" : "");
    if (confirm->interrupted) md += "Interrupted: the confirmation is incomplete.\n";
  }

  // The winner.
  if (winner) {
    md += "\n#### Winning recipe diff\n\n";
    for (const auto& ch : candidates[*winner].changes) {
      md += fmt::format("Change: `{}` (the base: {}).\n", ch.describe(),
                        ch.base_value ? fmt::format("`{}`", *ch.base_value) : "absent");
    }
    md += "\nAs `inferbench changed` will report it:\n\n";
    for (const auto& f : winner_diff) md += fmt::format("- `{}`: {}\n", f.path, f.detail);
    md += fmt::format(
        "\nThe whole entry: `{}/winner.yaml`. Perf-changelog entry "
        "(`{}/changelog-entry.yaml`):\n\n```yaml\n{}```\n",
        shown_value(dir), shown_value(dir), std::string(trim(changelog)) + "\n");
    md +=
        "If other keys share this serve block (YAML anchors), run `inferbench changed` after "
        "applying the diff.\n";
  }

  // Cost.
  md += "\n#### Cost\n\n| stage | wall time | points | benchmark requests |\n|---|---|---|---|\n";
  md += fmt::format("| 1 verify | {:.1f} s | 0 ({} servers) | 0 |\n", verify.wall_s,
                    verify.servers_started);
  if (search) {
    md += fmt::format("| 2 SLO search | {:.1f} s | {} | {} |\n", search->wall_s, search->points,
                      search->requests);
  }
  if (screen) {
    md += fmt::format("| 2 screen | {:.1f} s | {} | {} |\n", screen->wall_s, screen->points,
                      screen->requests);
  }
  if (confirm) {
    md += fmt::format("| 3 confirm | {:.1f} s | {} | {} |\n", confirm->wall_s, confirm->points,
                      confirm->requests);
  }
  for (const auto& n : notes) md += "\n- " + n;
  if (!notes.empty()) md += "\n";
  if (interrupted) {
    md += fmt::format("\nInterrupted; continue with `{}`.\n", resume_command);
  }
  if (!stages_not_run.empty()) {
    md += fmt::format("\nNot run: {}.\n", fmt::join(stages_not_run, ", "));
  }
  return redact_text(md);
}

json::object TuneReport::to_json() const {
  json::object o;
  o["tune"] = json::object{{"id", id}, {"dir", dir}, {"recipe", recipe}, {"key", key}};
  o["recipe"] = recipe;
  o["key"] = key;
  o["identity"] = verify.base.identity;
  if (server_build.recorded()) {
    o["identity"].as_object()["server_build"] =
        json::object{{"program", server_build.program}, {"sha256", server_build.sha256}};
  }
  if (objective) {
    o["objective"] = json::object{{"name", objective->name()},
                                  {"describe", objective->describe()},
                                  {"conc", objective->conc},
                                  {"higher_is_better", objective->higher_is_better}};
  }
  json::array gj;
  for (const auto& g : guards) {
    gj.push_back(json::object{{"metric", g.metric}, {"tolerance_pct", g.tolerance_pct}});
  }
  o["guards"] = std::move(gj);
  o["settings"] = json::object{{"confidence", confidence}, {"min_effect_pct", min_effect_pct}};
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
    if (const auto* r = confirm_of(confirm, c.id)) {
      json::object s3;
      s3["decision"] = to_string(r->decision);
      s3["reason"] = r->reason;
      json::array bv, hv;
      for (double v : r->base_values) bv.push_back(num(v));
      for (double v : r->head_values) hv.push_back(num(v));
      s3["objective"] = json::object{{"base", num(r->base_mean)},
                                     {"head", num(r->head_mean)},
                                     {"base_conc", r->base_conc},
                                     {"head_conc", r->head_conc},
                                     {"delta_pct", num(r->delta_pct)},
                                     {"ci_pct", interval(r->ci_pct)},
                                     {"verdict", verdict::verdict_name(r->objective_verdict)},
                                     {"base_values", std::move(bv)},
                                     {"head_values", std::move(hv)}};
      json::array guards_json;
      for (const auto& g : r->guards) {
        guards_json.push_back(json::object{{"metric", g.guard.metric},
                                           {"base", num(g.base)},
                                           {"head", num(g.head)},
                                           {"delta_pct", num(g.delta_pct)},
                                           {"ci_pct", interval(g.ci_pct)},
                                           {"interval", g.interval},
                                           {"tolerance_pct", g.guard.tolerance_pct},
                                           {"verdict", g.verdict}});
      }
      s3["guards"] = std::move(guards_json);
      json::array acc;
      for (const auto& a : r->accuracy) {
        acc.push_back(json::object{{"filter", a.filter},
                                   {"base", a.base},
                                   {"head", a.head},
                                   {"delta", a.delta},
                                   {"ci", interval(a.ci)},
                                   {"verdict", verdict::verdict_name(a.verdict)}});
      }
      s3["accuracy"] = std::move(acc);
      if (r->slo_met >= 0) s3["slo_met"] = r->slo_met;
      s3["confounded"] = r->confounded;
      s3["compare"] = r->compare;
      j["confirm"] = std::move(s3);
    }
    j["outcome"] = outcome_of(i);
    cands.push_back(std::move(j));
  }
  o["candidates"] = std::move(cands);
  json::array notes_json;
  for (const auto& n : notes) notes_json.emplace_back(n);
  o["notes"] = std::move(notes_json);
  int64_t sent = 0;
  json::array stages;
  stages.push_back(json::object{{"name", "verify"},
                                {"wall_s", verify.wall_s},
                                {"servers", verify.servers_started},
                                {"points", 0},
                                {"requests", 0}});
  if (search) {
    json::object s;
    json::array sides;
    for (const auto& side : search->sides) {
      json::array probes;
      for (const auto& p : side.probed) {
        probes.push_back(json::object{
            {"conc", p.conc}, {"meets", p.meets}, {"value", num(p.value)}, {"why", p.why}});
      }
      sides.push_back(json::object{{"config_key", side.config_key},
                                   {"lo", side.lo},
                                   {"hi", side.hi},
                                   {"probes", std::move(probes)},
                                   {"text", side.text}});
    }
    s["sides"] = std::move(sides);
    s["points"] = search->points;
    s["requests"] = search->requests;
    s["wall_s"] = search->wall_s;
    json::array runs;
    for (const auto& r : search->runs) runs.emplace_back(r);
    s["runs"] = std::move(runs);
    o["search"] = std::move(s);
    sent += search->requests;
    stages.push_back(json::object{{"name", "search"},
                                  {"wall_s", search->wall_s},
                                  {"points", search->points},
                                  {"requests", search->requests}});
  }
  if (screen && objective) {
    json::object s;
    s["objective"] = objective->describe();
    s["metric"] = objective->name();
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
        x["ci_pct"] = interval(r.score->ci_pct);
        x["passes"] = r.score->passes;
      }
      json::array values;
      for (double v : r.values) values.push_back(num(v));
      x["values"] = std::move(values);
      results.push_back(std::move(x));
    }
    s["candidates"] = std::move(results);
    json::array baselines;
    for (double v : screen->baselines) baselines.push_back(num(v));
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
    sent += screen->requests;
    stages.push_back(json::object{{"name", "screen"},
                                  {"wall_s", screen->wall_s},
                                  {"points", screen->points},
                                  {"requests", screen->requests}});
  }
  if (confirm) {
    json::object s;
    s["repeats"] = confirm->repeats;
    s["confidence_each"] = confirm->confidence_each;
    json::array baselines;
    for (double v : confirm->baselines) baselines.push_back(num(v));
    s["baselines"] = std::move(baselines);
    s["drift_pct"] = confirm->drift.pct;
    s["points"] = confirm->points;
    s["requests"] = confirm->requests;
    s["wall_s"] = confirm->wall_s;
    s["interrupted"] = confirm->interrupted;
    json::array runs;
    for (const auto& r : confirm->runs) runs.emplace_back(r);
    s["runs"] = std::move(runs);
    o["confirm"] = std::move(s);
    sent += confirm->requests;
    stages.push_back(json::object{{"name", "confirm"},
                                  {"wall_s", confirm->wall_s},
                                  {"points", confirm->points},
                                  {"requests", confirm->requests}});
  }
  if (winner) {
    const auto& c = candidates[*winner];
    json::array diff;
    for (const auto& f : winner_diff) {
      diff.push_back(json::object{{"path", f.path}, {"kind", f.kind}, {"detail", f.detail}});
    }
    o["winner"] = json::object{{"id", c.id},
                               {"change", c.describe()},
                               {"recipe_diff", std::move(diff)},
                               {"recipe_file", dir + "/winner.yaml"},
                               {"changelog_entry", changelog}};
  } else {
    o["winner"] = nullptr;
  }
  json::object cost;
  cost["verify_wall_s"] = verify.wall_s;
  cost["servers_started"] = verify.servers_started;
  cost["benchmark_requests_sent"] = sent;
  cost["requests_saved"] = requests_saved();
  cost["requests_per_candidate"] = requests_per_candidate;
  cost["points_per_candidate"] = points_per_candidate;
  cost["stages"] = std::move(stages);
  o["cost"] = std::move(cost);
  o["interrupted"] = interrupted;
  if (interrupted) o["resume_command"] = resume_command;
  json::array not_run;
  for (const auto& s : stages_not_run) not_run.emplace_back(s);
  o["stages_not_run"] = std::move(not_run);
  return redacted(o);
}

}  // namespace ib::tune
