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
  using F = metrics::IdentityField;
  std::vector<std::string> parts;
  for (F f : {F::kModel, F::kImage, F::kHardware, F::kEngine, F::kEngineVersion, F::kPrecision,
              F::kRunner}) {
    const std::string& v = base.identity.get(f);
    if (!v.empty()) parts.push_back(fmt::format("{} `{}`", metrics::field_info(f).title, v));
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

namespace {

// The report's title: the key, and the winner (its effect and interval) or that there is none.
std::string md_title(const TuneReport& t) {
  std::string title = fmt::format("### inferbench tune: {}", t.key);
  if (t.winner && t.confirm) {
    const auto& c = t.candidates[*t.winner];
    const auto* r = confirm_of(t.confirm, c.id);
    const std::string where =
        r->head_conc == r->base_conc
            ? fmt::format("at concurrency {}", r->head_conc)
            : fmt::format("(concurrency {} against the baseline's {})", r->head_conc, r->base_conc);
    title += fmt::format(" — winner: {} ({:+.2f}% {} {}, {:.1f}% CI {})", c.describe(),
                         r->delta_pct, t.objective ? t.objective->name() : "", where,
                         100 * t.confirm->confidence_each, ci_text(r->ci_pct));
  } else if (t.confirm) {
    title += " — no winner";
  }
  return title + "\n\n";
}

// What was measured where (the identity and the server build), the objective, the guards and the
// statistics.
std::string md_preamble(const TuneReport& t) {
  std::string md = fmt::format(
      "Measured for **{}** ({}) on {}{}. Evidence for this recipe on this image, model and "
      "hardware only.\n\n",
      t.key, shown_value(t.recipe), identity_line(t.verify.base),
      t.server_build.recorded() ? fmt::format(", server build `{}`", t.server_build.describe())
                                : "");
  if (!t.objective) return md;
  md += fmt::format("Objective: {}. ", t.objective->describe());
  if (!t.guards.empty()) {
    std::vector<std::string> g;
    for (const auto& x : t.guards) g.push_back(fmt::format("{} ±{}%", x.metric, x.tolerance_pct));
    md += fmt::format("Guards: {}. ", fmt::join(g, ", "));
  }
  md += fmt::format("Minimum effect {}%, confidence {:.1f}%", t.min_effect_pct, t.confidence * 100);
  if (t.confirm && t.confirm->results.size() > 1) {
    md += fmt::format(" (Bonferroni: {:.2f}% per finalist)", 100 * t.confirm->confidence_each);
  }
  return md + ".\n\n";
}

// One row per candidate: what each stage said of it, and its outcome.
std::string md_candidate_table(const TuneReport& t) {
  std::string md =
      "| candidate | change | stage 1: verify | stage 2: screen | stage 3: confirm | outcome |\n"
      "|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < t.candidates.size(); ++i) {
    const auto& c = t.candidates[i];
    const std::string s1 =
        i < t.verify.items.size() ? std::string(to_string(t.verify.items[i].outcome)) : "–";
    std::string s2 = "–", s3 = "–";
    if (const auto* r = screen_of(t.screen, c.id)) {
      s2 = r->score ? fmt::format("{:+.2f}% {}, {}", r->score->delta_pct, ci_text(r->score->ci_pct),
                                  to_string(r->decision))
                    : std::string(to_string(r->decision));
    }
    if (const auto* r = confirm_of(t.confirm, c.id)) {
      s3 = fmt::format("{:+.2f}% {}, {}", r->delta_pct, ci_text(r->ci_pct), to_string(r->decision));
    }
    const std::string outcome = t.outcome_of(i);
    md += fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", c.id, markdown_cell(c.describe()), s1,
                      s2, s3, outcome == "winner" ? "**winner**" : outcome);
  }
  return md;
}

// Stage 1's evidence of one candidate: why it failed to start, or each field's verdict.
std::string verify_evidence(const VerifyItem& item) {
  std::string evidence;
  if (item.outcome == VerifyOutcome::kFailedToStart) {
    evidence = item.error;
  } else {
    for (const auto& f : item.verdict.fields) {
      if (!evidence.empty()) evidence += "; ";
      evidence += fmt::format("{} → {} ({})", f.field, f.verdict, f.evidence);
    }
    for (const auto& cf : item.verdict.confounders) evidence += "; confounder: " + cf.text();
  }
  if (!item.evidence_dir.empty())
    evidence += fmt::format(" — `{}`", shown_value(item.evidence_dir));
  return evidence;
}

// Stage 1: each candidate's outcome and evidence, the counts, and what the no-ops saved.
std::string md_verify_section(const TuneReport& t) {
  std::string md = "\n#### Stage 1: verify (no benchmark request)\n\n";
  md += "| candidate | change | outcome | evidence |\n|---|---|---|---|\n";
  for (size_t i = 0; i < t.candidates.size() && i < t.verify.items.size(); ++i) {
    const auto& c = t.candidates[i];
    const auto& item = t.verify.items[i];
    md += fmt::format("| `{}` | {} | {} | {} |\n", c.id, markdown_cell(c.describe()),
                      to_string(item.outcome), markdown_cell(verify_evidence(item)));
  }
  int no_op = 0, survive = 0, failed = 0;
  for (const auto& i : t.verify.items) {
    no_op += i.outcome == VerifyOutcome::kNoOp;
    survive += i.outcome == VerifyOutcome::kSurvives;
    failed += i.outcome == VerifyOutcome::kFailedToStart;
  }
  md += fmt::format(
      "\nStage 1 started {} servers in {:.1f} s and sent no benchmark request: {} candidate{} "
      "dropped as no-op{}, {} failed to start, {} survive{}.\n",
      t.verify.servers_started, t.verify.wall_s, no_op, no_op == 1 ? "" : "s",
      no_op == 1 ? "" : "s", failed, survive, survive == 1 ? "s" : "");
  if (no_op > 0 && t.requests_per_candidate > 0) {
    md += fmt::format(
        "Benchmark requests not sent for the no-ops: at least {} (one sweep of a candidate's row: "
        "{} point{}, {} requests).\n",
        t.requests_saved(), t.points_per_candidate, t.points_per_candidate == 1 ? "" : "s",
        t.requests_per_candidate);
  }
  return md;
}

// The SLO search: each side's operating point and its probes.
std::string md_search_section(const TuneReport& t, const SearchStage& search) {
  std::string md = fmt::format("\n#### Stage 2: SLO search ({} points, {:.1f} s)\n\n",
                               search.points, search.wall_s);
  md += "| side | operating point | probes |\n|---|---|---|\n";
  for (const auto& s : search.sides) {
    std::vector<std::string> probes;
    for (const auto& p : s.probed) {
      probes.push_back(fmt::format("{} {}", p.conc, p.meets ? "meets" : "misses (" + p.why + ")"));
    }
    std::string side = s.config_key == t.key ? "baseline" : s.config_key;
    if (s.config_key != t.key) {
      for (const auto& c : t.candidates) {
        if (c.config_key == s.config_key) side = fmt::format("`{}` {}", c.id, c.describe());
      }
    }
    md += fmt::format("| {} | {} | {} |\n", markdown_cell(side), s.text,
                      markdown_cell(fmt::format("{}", fmt::join(probes, "; "))));
  }
  return md;
}

// Stage 2: the screen's rounds, each candidate's score and decision, and the baseline's drift.
std::string md_screen_section(const TuneReport& t, const ScreenStage& screen,
                              const Objective& objective) {
  std::string md = fmt::format(
      "\n#### Stage 2: screen ({}; {} round{}, baseline first in every pass, ratios to the "
      "adjacent baselines, {:.0f}% t intervals, minimum effect {}%)\n\n",
      objective.describe(), screen.plan.rounds(), screen.plan.rounds() == 1 ? "" : "s",
      t.confidence * 100, t.min_effect_pct);
  md +=
      "| candidate | change | Δ objective | interval | passes | decision |\n"
      "|---|---|---|---|---|---|\n";
  for (const auto& r : screen.results) {
    const Candidate* c = t.candidate(r.candidate_id);
    const std::string delta = r.score ? fmt::format("{:+.2f}%", r.score->delta_pct) : "–";
    md += fmt::format("| `{}` | {} | {} | {} | {} | {} (round {}) |\n", r.candidate_id,
                      c ? markdown_cell(c->describe()) : "", delta,
                      r.score ? ci_text(r.score->ci_pct) : "–", r.score ? r.score->passes : 0,
                      to_string(r.decision), r.round + 1);
  }
  md += fmt::format(
      "\nStage 2 measured {} points ({} benchmark requests) in {:.1f} s; baseline drift over the "
      "stage {:+.2f}%{}.\n",
      screen.points, screen.requests, screen.wall_s, screen.drift.pct,
      screen.drift.significant ? " (beyond the minimum effect: ratios to adjacent baselines "
                                 "cancel a steady drift)"
                               : "");
  if (screen.interrupted) md += "Interrupted: the screen is incomplete.\n";
  return md;
}

// Stage 3 of one finalist: its decision and why, the objective, the SLO, the guards, accuracy
// and compare's verdict.
std::string md_confirm_result(const TuneReport& t, const ConfirmResult& r,
                              const Objective& objective) {
  const Candidate* c = t.candidate(r.candidate_id);
  std::string md = fmt::format("**`{}` {}: {}.** {}\n\n", r.candidate_id, c ? c->describe() : "",
                               to_string(r.decision), r.reason);
  md += fmt::format(
      "- objective {}: baseline {:.4g} (conc {}), candidate {:.4g} (conc {}), "
      "{:+.2f}% {}\n",
      objective.name(), r.base_mean, r.base_conc, r.head_mean, r.head_conc, r.delta_pct,
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
                        g.guard.metric, g.base, g.head, g.delta_pct, ci_text(g.ci_pct), g.interval,
                        g.guard.tolerance_pct, g.verdict);
    }
  }
  for (const auto& a : r.accuracy) {
    md += fmt::format("- accuracy {}: {:.3f} → {:.3f} ({:+.3f} [{:+.3f}, {:+.3f}]), {}\n", a.filter,
                      a.base, a.head, a.delta, a.ci.lo, a.ci.hi, verdict::verdict_name(a.verdict));
  }
  md += fmt::format("\n- compare: {}\n\n", r.compare_verdict);
  return md;
}

// Stage 3: every finalist's confirmation and the baseline's drift.
std::string md_confirm_section(const TuneReport& t, const ConfirmStage& confirm,
                               const Objective& objective) {
  std::string md = fmt::format(
      "\n#### Stage 3: confirm ({} repeat{}, the recipe's workload, baseline first in every "
      "repeat; Welch intervals at {:.2f}% per finalist)\n\n",
      confirm.repeats, confirm.repeats == 1 ? "" : "s", 100 * confirm.confidence_each);
  for (const auto& r : confirm.results) md += md_confirm_result(t, r, objective);
  md += fmt::format(
      "Stage 3 measured {} points ({} benchmark requests) in {:.1f} s; baseline drift "
      "{:+.2f}%{}.\n",
      confirm.points, confirm.requests, confirm.wall_s, confirm.drift.pct,
      confirm.drift.significant ? " (beyond the minimum effect)" : "");
  if (confirm.interrupted) md += "Interrupted: the confirmation is incomplete.\n";
  return md;
}

// The winner: its changes, the recipe diff as `inferbench changed` reports it, and its
// perf-changelog entry.
std::string md_winner_section(const TuneReport& t) {
  std::string md = "\n#### Winning recipe diff\n\n";
  for (const auto& ch : t.candidates[*t.winner].changes) {
    md += fmt::format("Change: `{}` (the base: {}).\n", ch.describe(),
                      ch.base_value ? fmt::format("`{}`", *ch.base_value) : "absent");
  }
  md += "\nAs `inferbench changed` will report it:\n\n";
  for (const auto& f : t.winner_diff) md += fmt::format("- `{}`: {}\n", f.path, f.detail);
  md += fmt::format(
      "\nThe whole entry: `{}/winner.yaml`. Perf-changelog entry "
      "(`{}/changelog-entry.yaml`):\n\n```yaml\n{}```\n",
      shown_value(t.dir), shown_value(t.dir), std::string(trim(t.changelog)) + "\n");
  md +=
      "If other keys share this serve block (YAML anchors), run `inferbench changed` after "
      "applying the diff.\n";
  return md;
}

// What each stage cost; then the notes, how to continue when interrupted and the stages not run.
std::string md_cost_section(const TuneReport& t) {
  std::string md =
      "\n#### Cost\n\n| stage | wall time | points | benchmark requests |\n|---|---|---|---|\n";
  md += fmt::format("| 1 verify | {:.1f} s | 0 ({} servers) | 0 |\n", t.verify.wall_s,
                    t.verify.servers_started);
  if (t.search) {
    md += fmt::format("| 2 SLO search | {:.1f} s | {} | {} |\n", t.search->wall_s, t.search->points,
                      t.search->requests);
  }
  if (t.screen) {
    md += fmt::format("| 2 screen | {:.1f} s | {} | {} |\n", t.screen->wall_s, t.screen->points,
                      t.screen->requests);
  }
  if (t.confirm) {
    md += fmt::format("| 3 confirm | {:.1f} s | {} | {} |\n", t.confirm->wall_s, t.confirm->points,
                      t.confirm->requests);
  }
  for (const auto& n : t.notes) md += "\n- " + n;
  if (!t.notes.empty()) md += "\n";
  if (t.interrupted) {
    md += fmt::format("\nInterrupted; continue with `{}`.\n", t.resume_command);
  }
  if (!t.stages_not_run.empty()) {
    md += fmt::format("\nNot run: {}.\n", fmt::join(t.stages_not_run, ", "));
  }
  return md;
}

json::array json_strings(const std::vector<std::string>& v) {
  json::array out;
  for (const auto& s : v) out.emplace_back(s);
  return out;
}

// Numbers, NaN as null.
json::array json_numbers(const std::vector<double>& v) {
  json::array out;
  for (double x : v) out.push_back(num(x));
  return out;
}

json::array json_changes(const Candidate& c) {
  json::array changes;
  for (const auto& ch : c.changes) {
    json::object x;
    x["kind"] = to_string(ch.kind);
    x["name"] = ch.name;
    x["value"] = ch.value ? json::value(*ch.value) : json::value(nullptr);
    x["base_value"] = ch.base_value ? json::value(*ch.base_value) : json::value(nullptr);
    changes.push_back(std::move(x));
  }
  return changes;
}

json::object json_verify_item(const VerifyItem& item) {
  json::object s1;
  s1["outcome"] = to_string(item.outcome);
  if (!item.error.empty()) s1["error"] = item.error;
  s1["verdict"] = item.verdict.to_json();
  s1["evidence_dir"] = item.evidence_dir;
  s1["wall_s"] = item.wall_s;
  return s1;
}

json::object json_confirm_result(const ConfirmResult& r) {
  json::object s3;
  s3["decision"] = to_string(r.decision);
  s3["reason"] = r.reason;
  s3["objective"] = json::object{{"base", num(r.base_mean)},
                                 {"head", num(r.head_mean)},
                                 {"base_conc", r.base_conc},
                                 {"head_conc", r.head_conc},
                                 {"delta_pct", num(r.delta_pct)},
                                 {"ci_pct", interval(r.ci_pct)},
                                 {"verdict", verdict::verdict_name(r.objective_verdict)},
                                 {"base_values", json_numbers(r.base_values)},
                                 {"head_values", json_numbers(r.head_values)}};
  json::array guards_json;
  for (const auto& g : r.guards) {
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
  for (const auto& a : r.accuracy) {
    acc.push_back(json::object{{"filter", a.filter},
                               {"base", a.base},
                               {"head", a.head},
                               {"delta", a.delta},
                               {"ci", interval(a.ci)},
                               {"verdict", verdict::verdict_name(a.verdict)}});
  }
  s3["accuracy"] = std::move(acc);
  if (r.slo_met >= 0) s3["slo_met"] = r.slo_met;
  s3["confounded"] = r.confounded;
  s3["compare"] = r.compare;
  return s3;
}

// One candidate: its changes, stage 1's item, stage 3's result and its outcome.
json::object json_candidate(const TuneReport& t, size_t i) {
  const auto& c = t.candidates[i];
  json::object j;
  j["id"] = c.id;
  j["config_key"] = c.config_key;
  j["change"] = c.describe();
  j["changes"] = json_changes(c);
  if (i < t.verify.items.size()) j["verify"] = json_verify_item(t.verify.items[i]);
  if (const auto* r = confirm_of(t.confirm, c.id)) j["confirm"] = json_confirm_result(*r);
  j["outcome"] = t.outcome_of(i);
  return j;
}

json::object json_search(const SearchStage& search) {
  json::object s;
  json::array sides;
  for (const auto& side : search.sides) {
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
  s["points"] = search.points;
  s["requests"] = search.requests;
  s["wall_s"] = search.wall_s;
  s["runs"] = json_strings(search.runs);
  return s;
}

json::object json_screen(const ScreenStage& screen, const Objective& objective) {
  json::object s;
  s["objective"] = objective.describe();
  s["metric"] = objective.name();
  s["conc"] = objective.conc;
  json::array rounds;
  for (int r = 0; r < screen.plan.rounds(); ++r) {
    rounds.push_back(json::object{{"candidates", screen.plan.candidates[static_cast<size_t>(r)]},
                                  {"passes", screen.plan.passes[static_cast<size_t>(r)]}});
  }
  s["rounds"] = std::move(rounds);
  json::array results;
  for (const auto& r : screen.results) {
    json::object x;
    x["id"] = r.candidate_id;
    x["decision"] = to_string(r.decision);
    x["round"] = r.round + 1;
    if (r.score) {
      x["delta_pct"] = r.score->delta_pct;
      x["ci_pct"] = interval(r.score->ci_pct);
      x["passes"] = r.score->passes;
    }
    x["values"] = json_numbers(r.values);
    results.push_back(std::move(x));
  }
  s["candidates"] = std::move(results);
  s["baselines"] = json_numbers(screen.baselines);
  s["drift_pct"] = screen.drift.pct;
  s["points"] = screen.points;
  s["requests"] = screen.requests;
  s["wall_s"] = screen.wall_s;
  s["interrupted"] = screen.interrupted;
  s["runs"] = json_strings(screen.runs);
  return s;
}

json::object json_confirm_stage(const ConfirmStage& confirm) {
  json::object s;
  s["repeats"] = confirm.repeats;
  s["confidence_each"] = confirm.confidence_each;
  s["baselines"] = json_numbers(confirm.baselines);
  s["drift_pct"] = confirm.drift.pct;
  s["points"] = confirm.points;
  s["requests"] = confirm.requests;
  s["wall_s"] = confirm.wall_s;
  s["interrupted"] = confirm.interrupted;
  s["runs"] = json_strings(confirm.runs);
  return s;
}

// The winner (null when there is none): its change, recipe diff, recipe file and changelog entry.
json::value json_winner(const TuneReport& t) {
  if (!t.winner) return nullptr;
  const auto& c = t.candidates[*t.winner];
  json::array diff;
  for (const auto& f : t.winner_diff) {
    diff.push_back(json::object{{"path", f.path}, {"kind", f.kind}, {"detail", f.detail}});
  }
  return json::object{{"id", c.id},
                      {"change", c.describe()},
                      {"recipe_diff", std::move(diff)},
                      {"recipe_file", t.dir + "/winner.yaml"},
                      {"changelog_entry", t.changelog}};
}

json::object stage_cost(const char* name, double wall_s, int points, int64_t requests) {
  return json::object{
      {"name", name}, {"wall_s", wall_s}, {"points", points}, {"requests", requests}};
}

// What the tuning cost: stage 1's servers, the benchmark requests sent and saved, and each stage
// that ran.
json::object json_cost(const TuneReport& t) {
  int64_t sent = 0;
  json::array stages;
  stages.push_back(json::object{{"name", "verify"},
                                {"wall_s", t.verify.wall_s},
                                {"servers", t.verify.servers_started},
                                {"points", 0},
                                {"requests", 0}});
  if (t.search) {
    sent += t.search->requests;
    stages.push_back(stage_cost("search", t.search->wall_s, t.search->points, t.search->requests));
  }
  if (t.screen && t.objective) {
    sent += t.screen->requests;
    stages.push_back(stage_cost("screen", t.screen->wall_s, t.screen->points, t.screen->requests));
  }
  if (t.confirm) {
    sent += t.confirm->requests;
    stages.push_back(
        stage_cost("confirm", t.confirm->wall_s, t.confirm->points, t.confirm->requests));
  }
  json::object cost;
  cost["verify_wall_s"] = t.verify.wall_s;
  cost["servers_started"] = t.verify.servers_started;
  cost["benchmark_requests_sent"] = sent;
  cost["requests_saved"] = t.requests_saved();
  cost["requests_per_candidate"] = t.requests_per_candidate;
  cost["points_per_candidate"] = t.points_per_candidate;
  cost["stages"] = std::move(stages);
  return cost;
}

}  // namespace

std::string TuneReport::markdown() const {
  std::string md = md_title(*this) + md_preamble(*this) + md_candidate_table(*this);
  md += md_verify_section(*this);
  if (search) md += md_search_section(*this, *search);
  if (screen && objective) md += md_screen_section(*this, *screen, *objective);
  if (confirm && objective) md += md_confirm_section(*this, *confirm, *objective);
  if (winner) md += md_winner_section(*this);
  md += md_cost_section(*this);
  return redact_text(md);
}

json::object TuneReport::to_json() const {
  json::object o;
  o["tune"] = json::object{{"id", id}, {"dir", dir}, {"recipe", recipe}, {"key", key}};
  o["recipe"] = recipe;
  o["key"] = key;
  o["identity"] = verify.base.identity.to_json();
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
  for (size_t i = 0; i < candidates.size(); ++i) cands.push_back(json_candidate(*this, i));
  o["candidates"] = std::move(cands);
  o["notes"] = json_strings(notes);
  if (search) o["search"] = json_search(*search);
  if (screen && objective) o["screen"] = json_screen(*screen, *objective);
  if (confirm) o["confirm"] = json_confirm_stage(*confirm);
  o["winner"] = json_winner(*this);
  o["cost"] = json_cost(*this);
  o["interrupted"] = interrupted;
  if (interrupted) o["resume_command"] = resume_command;
  o["stages_not_run"] = json_strings(stages_not_run);
  return redacted(o);
}

}  // namespace ib::tune
