#include "tune/tune.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "core/files.h"
#include "core/interrupt.h"
#include "core/json_text.h"
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
        row_field_of(r, "osl") != row_field_of(row, "osl") ||
        row_field_of(r, "tp") != row_field_of(row, "tp")) {
      continue;
    }
    // A multi-node row carries its whole conc list (InferenceX's matrix shape).
    if (const int64_t c = row_field_of(r, "conc"); c > 0) out.concs.push_back(c);
    if (const auto* list = r.fields.if_contains("conc"); list && list->is_array()) {
      for (const auto& c : list->as_array()) {
        if (c.is_int64() && c.as_int64() > 0) out.concs.push_back(c.as_int64());
      }
    }
    const auto* e = r.fields.if_contains("run-eval");
    out.eval = out.eval || (e && e->is_bool() && e->as_bool());
  }
  std::sort(out.concs.begin(), out.concs.end());
  out.concs.erase(std::unique(out.concs.begin(), out.concs.end()), out.concs.end());
  return out;
}

using Say = std::function<void(const std::string&)>;

// How a step of the tuning ended: nullopt when it went on, else the tuning's failure.
using Failed = std::optional<TuneFailure>;
// Bad options or recipe, found before anything runs.
TuneFailure bad_input(std::string message) {
  return usage_error(std::move(message));
}
// The tuning could not run.
TuneFailure cannot_run(std::string message) {
  return Error{std::move(message), ErrorKind::kRun};
}

// What the stages share: the recipe's entries and the base among them, the tuned row's facts and
// the objective.
struct TuneSetup {
  std::vector<recipe::ConfigEntry> entries;
  const recipe::ConfigEntry* base = nullptr;  // in entries
  RowFacts facts;
  Objective objective;
};

// The knobs, the base entry and its candidates.
Failed make_candidates(const TuneOptions& o, TuneSetup& setup, TuneReport& report) {
  std::vector<Knob> knobs;
  for (const auto& spec : o.knobs) {
    auto k = parse_knob(spec);
    if (!k) return bad_input(k.error().message);
    knobs.push_back(std::move(*k));
  }
  if (knobs.empty()) return bad_input("--knob: at least one knob is needed");
  auto entries = recipe::load_master_configs({o.recipe});
  if (!entries) return bad_input(entries.error().message);
  setup.entries = std::move(*entries);
  std::vector<std::string> keys;
  for (const auto& e : setup.entries) {
    keys.push_back(e.key);
    if (e.key == o.key || (o.key.empty() && setup.entries.size() == 1)) setup.base = &e;
  }
  if (setup.base == nullptr) {
    return bad_input(fmt::format("{}: {} (keys: {})", o.recipe.string(),
                                 o.key.empty()
                                     ? "several config keys: choose one with --key"
                                     : fmt::format("no config key '{}'", printable(o.key, 80)),
                                 fmt::join(keys, ", ")));
  }
  auto set = single_candidates(*setup.base, knobs, static_cast<size_t>(o.max_candidates));
  if (!set) return bad_input(set.error().message);
  report.recipe = o.recipe.string();
  report.key = setup.base->key;
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
  if (set->candidates.empty()) return bad_input("no candidate: every knob value is the base's");
  return std::nullopt;
}

// The tuned row and what one sweep of it costs, the objective, and the server build (on --resume,
// the one the tuning started with).
Failed tuned_row_and_objective(const TuneOptions& o, TuneSetup& setup, TuneReport& report) {
  const recipe::ConfigEntry& base = *setup.base;
  auto row = tuned_row(base, o.row);
  if (!row) return bad_input(row.error().message);
  setup.facts = row_facts(base, *row);
  const auto& concs = setup.facts.concs;
  sweep_cost(*row, base, concs, report);
  int64_t conc = o.conc;
  if (conc == 0) conc = concs.empty() ? 1 : concs.back();
  auto objective = make_objective(o.objective, o.slos, conc, o.minimize);
  if (!objective) return bad_input(objective.error().message);
  if (objective->kind == Objective::Kind::kTputAtSlo && o.conc == 0 && !concs.empty()) {
    objective->conc = concs[concs.size() / 2];  // the search starts at the row's median
  }
  if (o.search_min > o.search_max) {
    return bad_input(
        fmt::format("--search-min {} is above --search-max {}", o.search_min, o.search_max));
  }
  setup.objective = *objective;
  report.objective = *objective;
  report.server_build = server_build(base, o.row, o.sweep);
  if (!o.expected_build_sha256.empty() && report.server_build.recorded() &&
      report.server_build.sha256 != o.expected_build_sha256) {
    return bad_input(fmt::format(
        "the server program {} is not the build the tuning started with (sha256 {} → {}): its "
        "measurements would mix two builds; start a new tune",
        report.server_build.program, o.expected_build_sha256.substr(0, 12),
        report.server_build.sha256.substr(0, 12)));
  }
  return std::nullopt;
}

// Stage 3's guards: --guard's, else the defaults; none with --no-guards.
Failed choose_guards(const TuneOptions& o, const Objective& objective, TuneReport& report) {
  if (o.no_guards) return std::nullopt;
  if (o.guards.empty()) {
    report.guards = default_guards(objective, o.guard_tolerance);
    return std::nullopt;
  }
  for (const auto& g : o.guards) {
    auto parsed = parse_guard(g, o.guard_tolerance);
    if (!parsed) return bad_input(parsed.error().message);
    for (const auto& earlier : report.guards) {
      if (earlier.metric == parsed->metric) {
        return bad_input(fmt::format("--guard {}: {} is guarded twice; give one --guard per metric",
                                     printable(g, 80), parsed->metric));
      }
    }
    report.guards.push_back(*parsed);
  }
  return std::nullopt;
}

// Everything found before a server starts: candidates, row, objective, build, guards and the
// stages --stop-after leaves out.
Failed set_up(const TuneOptions& o, TuneSetup& setup, TuneReport& report) {
  if (auto f = make_candidates(o, setup, report)) return f;
  if (auto f = tuned_row_and_objective(o, setup, report)) return f;
  if (auto f = choose_guards(o, setup.objective, report)) return f;
  if (o.stop_after == "verify") report.stages_not_run = {"screen", "confirm"};
  if (o.stop_after == "screen") report.stages_not_run = {"confirm"};
  return std::nullopt;
}

// How stage 1 (and the pairs' verification) starts each server.
sweep::VerifyOptions verify_options(const TuneOptions& o) {
  sweep::VerifyOptions vo;
  vo.inferbench_exe = o.sweep.inferbench_exe;
  vo.extra_server_args = o.sweep.extra_server_args;
  vo.startup_timeout = std::chrono::seconds(static_cast<int64_t>(o.sweep.startup_timeout_s));
  vo.env_trace = o.sweep.env_trace;
  vo.ignore_settings.insert(o.ignore_settings.begin(), o.ignore_settings.end());
  return vo;
}

// Stage 1 as `file` keeps it, when it is there and of these candidates.
std::optional<VerifyStage> kept_stage1(const std::filesystem::path& file,
                                       const std::vector<Candidate>& candidates) {
  auto text = read_file(file);
  if (!text) return std::nullopt;
  boost::json::error_code ec;
  auto j = boost::json::parse(*text, ec);
  if (ec) return std::nullopt;
  auto st = stage_from_json(j, candidates);
  if (!st) return std::nullopt;
  return std::move(*st);
}

// Stage 1: every candidate's server started next to the base's and judged, and the stage kept in
// the tuning's folder (unless interrupted). A resumed tuning reads stage 1 back instead of
// starting every server again.
Failed run_stage1(const TuneOptions& o, const recipe::ConfigEntry& base,
                  const sweep::VerifyOptions& vo, TuneReport& report, const Say& say) {
  const auto stage1_file = o.dir / "verify" / "stage1.json";
  if (o.resume) {
    if (auto kept = kept_stage1(stage1_file, report.candidates)) {
      say("stage 1/3 verify: read back from " + stage1_file.string());
      report.verify = std::move(*kept);
      return std::nullopt;
    }
  }
  auto stage1 = verify_candidates(base, report.candidates, o.dir / "verify", vo, say);
  if (!stage1) return cannot_run(stage1.error().message);
  report.verify = std::move(*stage1);
  if (!interrupt_requested()) {
    if (auto w = write_file_atomic(stage1_file,
                                   json_text(redacted(stage_to_json(report.verify))) + "\n");
        !w.ok()) {
      return cannot_run(w.error().message);
    }
  }
  return std::nullopt;
}

// The candidates that survived stage 1; each one's entry is added to `by_key`.
std::vector<const Candidate*> stage1_survivors(
    const TuneReport& report, std::map<std::string, const recipe::ConfigEntry*>& by_key) {
  std::vector<const Candidate*> survivors;
  for (size_t i = 0; i < report.candidates.size(); ++i) {
    if (report.verify.items[i].outcome == VerifyOutcome::kSurvives) {
      survivors.push_back(&report.candidates[i]);
      by_key[report.candidates[i].config_key] = &report.candidates[i].entry;
    }
  }
  return survivors;
}

// The SLO search (tput-at-slo): each side's operating point. The survivors without one are
// dropped; report.interrupted when the search was.
Failed run_slo_search(const TuneOptions& o, const TuneSetup& setup, BlockRunner& runner,
                      std::vector<const Candidate*>& survivors, TuneReport& report,
                      const Say& say) {
  SearchOptions so;
  so.start = setup.objective.conc;
  so.min = o.search_min;
  so.max = o.search_max;
  so.tolerance = o.search_tolerance;
  so.row = o.row;
  so.workload = o.screen_workload;
  auto search = search_operating_points(*setup.base, survivors, setup.objective, so, runner, say);
  if (!search) return cannot_run(search.error().message);
  report.search = std::move(*search);
  report.operating_conc = report.search->operating_conc();
  if (report.search->interrupted) {
    report.interrupted = true;
    return std::nullopt;
  }
  if (report.search->sides.front().lo == 0) {
    return cannot_run(fmt::format(
        "the baseline meets the SLO at no concurrency from {} to {} ({}): nothing to tune against",
        o.search_min, o.search_max, report.search->sides.front().text));
  }
  std::erase_if(survivors,
                [&](const Candidate* c) { return !report.operating_conc.contains(c->config_key); });
  return std::nullopt;
}

// Stage 2: the screen of the survivors; report.interrupted when it was interrupted.
Failed run_stage2(const TuneOptions& o, const TuneSetup& setup,
                  const std::vector<const Candidate*>& survivors, BlockRunner& runner,
                  TuneReport& report, const Say& say) {
  ScreenOptions sc;
  sc.keep = o.keep;
  sc.eta = o.eta;
  sc.passes0 = o.passes;
  sc.seed = o.seed;
  sc.confidence = o.confidence;
  sc.min_effect_pct = o.min_effect;
  sc.row = o.row;
  sc.workload = o.screen_workload;
  auto screen = screen_candidates(*setup.base, survivors, setup.objective, sc, runner,
                                  report.operating_conc, say);
  if (!screen) return cannot_run(screen.error().message);
  report.screen = std::move(*screen);
  if (report.screen->interrupted) report.interrupted = true;
  return std::nullopt;
}

// The pairs of finalists from different knobs, at most --max-pairs; a pair that cannot be made
// is a note.
std::vector<Candidate> make_pairs(const TuneOptions& o, const recipe::ConfigEntry& base,
                                  const std::vector<const Candidate*>& finalists,
                                  TuneReport& report) {
  std::vector<Candidate> pairs;
  for (size_t a = 0; a < finalists.size(); ++a) {
    for (size_t b = a + 1; b < finalists.size(); ++b) {
      if (static_cast<int>(pairs.size()) >= o.max_pairs) break;
      auto pair = pair_candidate(base, *finalists[a], *finalists[b]);
      if (!pair) {
        report.notes.push_back(fmt::format("pair not tried: {}", pair.error().message));
        continue;
      }
      pairs.push_back(std::move(*pair));
    }
  }
  return pairs;
}

// Pairs of finalists from different knobs: verified as the singles were (a pair whose server
// does not start, or that changes nothing, is dropped), then confirmed next to the singles.
Failed add_pairs(const TuneOptions& o, const recipe::ConfigEntry& base,
                 const sweep::VerifyOptions& vo, BlockRunner& runner,
                 std::vector<const Candidate*>& finalists, TuneReport& report, const Say& say) {
  std::vector<Candidate> pairs = make_pairs(o, base, finalists, report);
  if (pairs.empty()) return std::nullopt;
  say(fmt::format("stage 3/3 pairs: verifying {} pair{}", pairs.size(),
                  pairs.size() == 1 ? "" : "s"));
  auto pv = verify_candidates(base, pairs, o.dir / "verify", vo, say);
  if (!pv) return cannot_run(pv.error().message);
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
  return std::nullopt;
}

// Stage 3: the repeated A/B of the finalists against the baseline; report.interrupted when it was
// interrupted.
Failed run_stage3(const TuneOptions& o, const TuneSetup& setup,
                  const std::vector<const Candidate*>& finalists, BlockRunner& runner,
                  TuneReport& report, const Say& say) {
  ConfirmOptions co;
  co.repeats = o.repeats;
  co.confidence = o.confidence;
  co.min_effect_pct = o.min_effect;
  co.guards = report.guards;
  co.accuracy_tolerance = o.accuracy_tolerance;
  co.eval = o.eval || setup.facts.eval;
  co.seed = o.seed;
  co.resamples = o.resamples;
  co.row = o.row;
  co.workload = o.confirm_workload;
  auto confirm = confirm_candidates(*setup.base, finalists, setup.objective, co, runner,
                                    report.operating_conc, say);
  if (!confirm) return cannot_run(confirm.error().message);
  report.confirm = std::move(*confirm);
  if (report.confirm->interrupted) report.interrupted = true;
  return std::nullopt;
}

// Where the base was measured, for the changelog: "image X, model Y, hardware Z, runner W".
std::string measured_on(const metrics::Identity& identity) {
  using F = metrics::IdentityField;
  std::string where;
  for (F f : {F::kModel, F::kImage, F::kHardware, F::kRunner}) {
    if (identity.get(f).empty()) continue;
    where += fmt::format("{}{} {}", where.empty() ? "" : ", ", metrics::field_info(f).title,
                         identity.get(f));
  }
  return where;
}

// The confirmed winner: its recipe diff, recipe file and perf-changelog entry.
void record_winner(const recipe::ConfigEntry& base, const Objective& objective,
                   TuneReport& report) {
  const auto& r = report.confirm->results[*report.confirm->winner];
  for (size_t i = 0; i < report.candidates.size(); ++i) {
    if (report.candidates[i].id == r.candidate_id) report.winner = i;
  }
  const Candidate& w = report.candidates[*report.winner];
  report.winner_diff = recipe_diff(base, w.entry);
  report.winner_yaml = winner_recipe_yaml(base.key, w.entry);
  const std::string where = measured_on(report.verify.base.identity);
  std::vector<std::string> guard_names;
  for (const auto& g : r.guards) guard_names.push_back(g.guard.metric);
  report.changelog = changelog_entry(
      base.key,
      {fmt::format("{} (inferbench tune)", w.describe()),
       fmt::format("{} {:+.2f}% [{:.1f}% CI {:+.2f}, {:+.2f}], {} repeats at concurrency {}; "
                   "guards within tolerance ({}); measured on {}",
                   objective.name(), r.delta_pct, 100 * report.confirm->confidence_each,
                   r.ci_pct.lo, r.ci_pct.hi, report.confirm->repeats, r.head_conc,
                   guard_names.empty() ? "none" : fmt::format("{}", fmt::join(guard_names, ", ")),
                   where)});
}

// The finalists of stage 2: the candidates it advanced.
std::vector<const Candidate*> screen_finalists(const TuneReport& report) {
  std::vector<const Candidate*> finalists;
  for (const auto& r : report.screen->results) {
    if (r.decision == ScreenDecision::kAdvance)
      finalists.push_back(report.candidate(r.candidate_id));
  }
  return finalists;
}

}  // namespace

TuneRun run_tune(const TuneOptions& o, const std::function<void(const std::string&)>& progress) {
  TuneRun out;
  TuneReport& report = out.report;
  auto fail = [&](TuneFailure failure) {
    out.failure = std::move(failure);
    return std::move(out);
  };
  const Say say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  TuneSetup setup;
  if (auto f = set_up(o, setup, report)) return fail(std::move(*f));
  const recipe::ConfigEntry& base = *setup.base;

  // Stage 1.
  const sweep::VerifyOptions vo = verify_options(o);
  if (auto f = run_stage1(o, base, vo, report, say)) return fail(std::move(*f));
  if (o.stop_after == "verify") return out;
  if (interrupt_requested()) {
    report.interrupted = true;
    return out;
  }
  std::map<std::string, const recipe::ConfigEntry*> by_key{{base.key, &base}};
  std::vector<const Candidate*> survivors = stage1_survivors(report, by_key);
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
  if (setup.objective.kind == Objective::Kind::kTputAtSlo) {
    if (auto f = run_slo_search(o, setup, runner, survivors, report, say)) {
      return fail(std::move(*f));
    }
    if (report.interrupted) return out;
  }

  // Stage 2.
  if (auto f = run_stage2(o, setup, survivors, runner, report, say)) return fail(std::move(*f));
  if (report.interrupted) return out;
  if (o.stop_after == "screen") return out;

  // Stage 3.
  std::vector<const Candidate*> finalists = screen_finalists(report);
  if (o.pairs && finalists.size() >= 2) {
    if (auto f = add_pairs(o, base, vo, runner, finalists, report, say)) {
      return fail(std::move(*f));
    }
  }
  if (finalists.empty()) {
    report.notes.push_back("no candidate advanced from the screen: nothing to confirm");
    report.stages_not_run = {"confirm"};
    return out;
  }
  if (auto f = run_stage3(o, setup, finalists, runner, report, say)) return fail(std::move(*f));
  if (report.confirm->winner && !report.interrupted) record_winner(base, setup.objective, report);
  return out;
}

}  // namespace ib::tune
