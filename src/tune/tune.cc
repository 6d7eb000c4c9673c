#include "tune/tune.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "core/files.h"
#include "core/interrupt.h"
#include "core/redact.h"
#include "core/strings.h"
#include "recipe/matrix.h"
#include "recipe/recipe.h"
#include "sweep/planner.h"
#include "tune/winner.h"
#include "workload/fixed_seq_len.h"

namespace ib::tune {

namespace {

// What one sweep of the tuned row's configuration would measure and send: each dropped no-op
// saves at least that much.
void sweep_cost(const recipe::RecipeRow& row, const recipe::ConfigEntry& entry,
                const std::vector<int64_t>& concs, TuneReport& report) {
  auto w = sweep::workload_for_row(row, &entry, {});
  if (!w) return;
  const auto* fixed = dynamic_cast<const workload::FixedSeqLenWorkload*>(w->get());
  if (fixed == nullptr) return;
  report.points_per_candidate = static_cast<int>(concs.size());
  for (int64_t c : concs) {
    report.requests_per_candidate += fixed->prompts_at(c) + fixed->warmups_at(c);
  }
}

int64_t row_field_of(const recipe::RecipeRow& r, const char* k) {
  const auto* v = r.fields.if_contains(k);
  return v && v->is_int64() ? v->as_int64() : 0;
}

// The rows of the tuned row's configuration (same scenario, isl, osl and tp): their
// concurrencies, and whether any of them is an eval row.
struct RowFacts {
  std::vector<int64_t> concs;  // sorted, unique
  bool eval = false;
};

RowFacts row_facts(const recipe::ConfigEntry& entry, const recipe::RecipeRow& row) {
  RowFacts out;
  for (const auto& r : recipe::expand({entry}, nullptr)) {
    if (r.scenario != row.scenario || row_field_of(r, "isl") != row_field_of(row, "isl") ||
        row_field_of(r, "osl") != row_field_of(row, "osl") || row_field_of(r, "tp") != row_field_of(row, "tp")) {
      continue;
    }
    if (const int64_t c = row_field_of(r, "conc"); c > 0) out.concs.push_back(c);
    const auto* e = r.fields.if_contains("run-eval");
    out.eval = out.eval || (e && e->is_bool() && e->as_bool());
  }
  std::sort(out.concs.begin(), out.concs.end());
  out.concs.erase(std::unique(out.concs.begin(), out.concs.end()), out.concs.end());
  return out;
}

}  // namespace

TuneRun run_tune(const TuneOptions& o, const std::function<void(const std::string&)>& progress) {
  TuneRun out;
  TuneReport& report = out.report;
  auto fail = [&](int code, std::string message) {
    out.failure = TuneFailure{code, std::move(message)};
    return std::move(out);
  };
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  std::vector<Knob> knobs;
  for (const auto& spec : o.knobs) {
    auto k = parse_knob(spec);
    if (!k) return fail(2, k.error().message);
    knobs.push_back(std::move(*k));
  }
  if (knobs.empty()) return fail(2, "--knob: at least one knob is needed");
  auto entries = recipe::load_master_configs({o.recipe});
  if (!entries) return fail(2, entries.error().message);
  const recipe::ConfigEntry* base = nullptr;
  std::vector<std::string> keys;
  for (const auto& e : *entries) {
    keys.push_back(e.key);
    if (e.key == o.key || (o.key.empty() && entries->size() == 1)) base = &e;
  }
  if (base == nullptr) {
    return fail(2,
                fmt::format("{}: {} (keys: {})", o.recipe.string(),
                            o.key.empty() ? "several config keys: choose one with --key"
                                          : fmt::format("no config key '{}'", printable(o.key, 80)),
                            fmt::join(keys, ", ")));
  }
  auto set = single_candidates(*base, knobs, static_cast<size_t>(o.max_candidates));
  if (!set) return fail(2, set.error().message);
  report.recipe = o.recipe.string();
  report.key = base->key;
  report.id = o.id;
  report.dir = o.dir.string();
  report.candidates = set->candidates;
  // Pairs are added after the screen; pointers into the list (the runner's entries, the
  // finalists) must stay valid.
  report.candidates.reserve(report.candidates.size() +
                            static_cast<size_t>(std::max(o.max_pairs, 0)));
  report.notes = set->notes;
  report.min_effect_pct = o.min_effect;
  report.confidence = o.confidence;
  if (set->candidates.empty()) return fail(2, "no candidate: every knob value is the base's");
  auto row = tuned_row(*base, o.row);
  if (!row) return fail(2, row.error().message);
  const RowFacts facts = row_facts(*base, *row);
  const auto& concs = facts.concs;
  sweep_cost(*row, *base, concs, report);
  int64_t conc = o.conc;
  if (conc == 0) conc = concs.empty() ? 1 : concs.back();
  auto objective = make_objective(o.objective, o.slos, conc, o.minimize);
  if (!objective) return fail(2, objective.error().message);
  if (objective->kind == Objective::Kind::kTputAtSlo && o.conc == 0 && !concs.empty()) {
    objective->conc = concs[concs.size() / 2];  // the search starts at the row's median
  }
  if (o.search_min > o.search_max) {
    return fail(
        2, fmt::format("--search-min {} is above --search-max {}", o.search_min, o.search_max));
  }
  report.objective = *objective;
  report.server_build = server_build(*base, o.row, o.sweep);
  if (!o.expected_build_sha256.empty() && report.server_build.recorded() &&
      report.server_build.sha256 != o.expected_build_sha256) {
    return fail(2, fmt::format("the server program {} is not the build the tuning started with "
                               "(sha256 {} → {}): its measurements would mix two builds; start a "
                               "new tune",
                               report.server_build.program, o.expected_build_sha256.substr(0, 12),
                               report.server_build.sha256.substr(0, 12)));
  }
  if (!o.no_guards) {
    if (o.guards.empty()) {
      report.guards = default_guards(*objective, o.guard_tolerance);
    } else {
      for (const auto& g : o.guards) {
        auto parsed = parse_guard(g, o.guard_tolerance);
        if (!parsed) return fail(2, parsed.error().message);
        report.guards.push_back(*parsed);
      }
    }
  }
  std::vector<std::string> not_run;
  if (o.stop_after == "verify") not_run = {"screen", "confirm"};
  if (o.stop_after == "screen") not_run = {"confirm"};
  report.stages_not_run = not_run;

  // Stage 1.
  sweep::VerifyOptions vo;
  vo.inferbench_exe = o.sweep.inferbench_exe;
  vo.extra_server_args = o.sweep.extra_server_args;
  vo.startup_timeout = std::chrono::seconds(static_cast<int64_t>(o.sweep.startup_timeout_s));
  vo.env_trace = o.sweep.env_trace;
  vo.ignore_settings.insert(o.ignore_settings.begin(), o.ignore_settings.end());
  // A resumed tuning reads stage 1 back instead of starting every server again.
  const auto stage1_file = o.dir / "verify" / "stage1.json";
  std::optional<VerifyStage> kept;
  if (o.resume) {
    if (auto text = read_file(stage1_file)) {
      boost::json::error_code ec;
      auto j = boost::json::parse(*text, ec);
      if (!ec) {
        if (auto st = stage_from_json(j, report.candidates)) {
          kept = std::move(*st);
          say("stage 1/3 verify: read back from " + stage1_file.string());
        }
      }
    }
  }
  if (kept) {
    report.verify = std::move(*kept);
  } else {
    auto stage1 = verify_candidates(*base, report.candidates, o.dir / "verify", vo,
                                    [&](const std::string& line) { say(line); });
    if (!stage1) return fail(1, stage1.error().message);
    report.verify = std::move(*stage1);
    if (!interrupt_requested()) {
      if (auto w = write_file_atomic(
              stage1_file, boost::json::serialize(redacted(stage_to_json(report.verify))) + "\n");
          !w.ok()) {
        return fail(1, w.error().message);
      }
    }
  }
  if (o.stop_after == "verify") return out;
  if (interrupt_requested()) {
    report.interrupted = true;
    return out;
  }

  std::vector<const Candidate*> survivors;
  std::map<std::string, const recipe::ConfigEntry*> by_key{{base->key, base}};
  for (size_t i = 0; i < report.candidates.size(); ++i) {
    if (report.verify.items[i].outcome == VerifyOutcome::kSurvives) {
      survivors.push_back(&report.candidates[i]);
      by_key[report.candidates[i].config_key] = &report.candidates[i].entry;
    }
  }
  if (survivors.empty()) {
    report.stages_not_run = {"screen", "confirm"};
    report.notes.push_back("no candidate survived stage 1: nothing to measure");
    return out;
  }
  // Every block's point table; closed when the tuning returns.
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> points(
      std::fopen((o.dir / "points.txt").c_str(), "a"), &std::fclose);
  BlockRunner runner(o.sweep, o.id, o.dir.string(), by_key, o.resume, points.get());
  runner.pin_build(report.server_build);

  // The SLO search: each side's operating point.
  if (objective->kind == Objective::Kind::kTputAtSlo) {
    SearchOptions so;
    so.start = objective->conc;
    so.min = o.search_min;
    so.max = o.search_max;
    so.tolerance = o.search_tolerance;
    so.row = o.row;
    so.workload = o.screen_workload;
    auto search = search_operating_points(*base, survivors, *objective, so, runner,
                                          [&](const std::string& line) { say(line); });
    if (!search) return fail(1, search.error().message);
    report.search = std::move(*search);
    report.operating_conc = report.search->operating_conc();
    if (report.search->interrupted) {
      report.interrupted = true;
      return out;
    }
    if (report.search->sides.front().lo == 0) {
      return fail(1, fmt::format("the baseline meets the SLO at no concurrency from {} to {} "
                                 "({}): nothing to tune against",
                                 o.search_min, o.search_max, report.search->sides.front().text));
    }
    std::erase_if(survivors, [&](const Candidate* c) {
      return !report.operating_conc.contains(c->config_key);
    });
  }

  // Stage 2.
  ScreenOptions sc;
  sc.keep = o.keep;
  sc.eta = o.eta;
  sc.passes0 = o.passes;
  sc.seed = o.seed;
  sc.confidence = o.confidence;
  sc.min_effect_pct = o.min_effect;
  sc.row = o.row;
  sc.workload = o.screen_workload;
  auto screen = screen_candidates(*base, survivors, *objective, sc, runner, report.operating_conc,
                                  [&](const std::string& line) { say(line); });
  if (!screen) return fail(1, screen.error().message);
  report.screen = std::move(*screen);
  if (report.screen->interrupted) {
    report.interrupted = true;
    return out;
  }
  if (o.stop_after == "screen") return out;

  // Stage 3.
  std::vector<const Candidate*> finalists;
  for (const auto& r : report.screen->results) {
    if (r.decision == ScreenDecision::kAdvance)
      finalists.push_back(report.candidate(r.candidate_id));
  }
  // Pairs of finalists from different knobs: verified as the singles were (a pair whose server
  // does not start, or that changes nothing, is dropped), then confirmed next to the singles.
  if (o.pairs && finalists.size() >= 2) {
    std::vector<Candidate> pairs;
    for (size_t a = 0; a < finalists.size(); ++a) {
      for (size_t b = a + 1; b < finalists.size(); ++b) {
        if (static_cast<int>(pairs.size()) >= o.max_pairs) break;
        auto pair = pair_candidate(*base, *finalists[a], *finalists[b]);
        if (!pair) {
          report.notes.push_back(fmt::format("pair not tried: {}", pair.error().message));
          continue;
        }
        pairs.push_back(std::move(*pair));
      }
    }
    if (!pairs.empty()) {
      say(fmt::format("stage 3/3 pairs: verifying {} pair{}", pairs.size(),
                      pairs.size() == 1 ? "" : "s"));
      auto pv = verify_candidates(*base, pairs, o.dir / "verify", vo,
                                  [&](const std::string& line) { say(line); });
      if (!pv) return fail(1, pv.error().message);
      report.verify.servers_started += pv->servers_started;
      report.verify.wall_s += pv->wall_s;
      for (size_t i = 0; i < pairs.size(); ++i) {
        report.verify.items.push_back(pv->items[i]);
        report.candidates.push_back(std::move(pairs[i]));
        const Candidate& c = report.candidates.back();
        if (pv->items[i].outcome == VerifyOutcome::kSurvives) {
          runner.add_entry(c.config_key, &c.entry);
          finalists.push_back(&c);
        }
      }
    }
  }
  if (finalists.empty()) {
    report.notes.push_back("no candidate advanced from the screen: nothing to confirm");
    report.stages_not_run = {"confirm"};
    return out;
  }
  ConfirmOptions co;
  co.repeats = o.repeats;
  co.confidence = o.confidence;
  co.min_effect_pct = o.min_effect;
  co.guards = report.guards;
  co.accuracy_tolerance = o.accuracy_tolerance;
  co.eval = o.eval || facts.eval;
  co.seed = o.seed;
  co.resamples = o.resamples;
  co.row = o.row;
  co.workload = o.confirm_workload;
  auto confirm = confirm_candidates(*base, finalists, *objective, co, runner, report.operating_conc,
                                    [&](const std::string& line) { say(line); });
  if (!confirm) return fail(1, confirm.error().message);
  report.confirm = std::move(*confirm);
  if (report.confirm->interrupted) report.interrupted = true;
  if (report.confirm->winner && !report.interrupted) {
    const auto& r = report.confirm->results[*report.confirm->winner];
    for (size_t i = 0; i < report.candidates.size(); ++i) {
      if (report.candidates[i].id == r.candidate_id) report.winner = i;
    }
    const Candidate& w = report.candidates[*report.winner];
    report.winner_diff = recipe_diff(*base, w.entry);
    report.winner_yaml = winner_recipe_yaml(base->key, w.entry);
    std::string where;
    for (const char* f : {"image", "model", "hardware", "runner"}) {
      if (const auto* v = report.verify.base.identity.if_contains(f); v && v->is_string()) {
        where +=
            fmt::format("{}{} {}", where.empty() ? "" : ", ", f, std::string_view(v->get_string()));
      }
    }
    std::vector<std::string> guard_names;
    for (const auto& g : r.guards) guard_names.push_back(g.guard.metric);
    report.changelog = changelog_entry(
        base->key,
        {fmt::format("{} (inferbench tune)", w.describe()),
         fmt::format("{} {:+.2f}% [{:.1f}% CI {:+.2f}, {:+.2f}], {} repeats at concurrency {}; "
                     "guards within tolerance ({}); measured on {}",
                     objective->name(), r.delta_pct, 100 * report.confirm->confidence_each,
                     r.ci_pct.lo, r.ci_pct.hi, report.confirm->repeats, r.head_conc,
                     guard_names.empty() ? "none" : fmt::format("{}", fmt::join(guard_names, ", ")),
                     where)});
  }
  return out;
}

}  // namespace ib::tune
