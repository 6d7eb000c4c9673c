// `inferbench tune RECIPE --key KEY --knob SPEC...` (issue 19, docs/tune.md): options, progress,
// the report's outputs and the exit code. The tuning's folder and state file (tune.json, for
// --resume) are tune/state.h; the stages themselves are in src/tune/.
#include "tune/tune.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/server_options.h"
#include "core/files.h"
#include "core/interrupt.h"
#include "core/json_text.h"
#include "core/redact.h"
#include "store/pg.h"
#include "tune/state.h"

namespace ib::cli {

namespace {

namespace json = boost::json;

struct TuneCliOptions {
  tune::TuneSettings tuning;  // the tuning (kept in tune.json for --resume)
  // The server options every command that starts servers has (copied into `tuning`).
  ServerOptions server = [] {
    ServerOptions d;
    d.startup_timeout_s = tune::TuneSettings{}.startup_timeout_s;
    d.point_timeout_s = tune::TuneSettings{}.point_timeout_s;
    return d;
  }();
  // Where and what to print (not part of the tuning).
  std::string work_dir, resume, markdown, json_file, winner_recipe, changelog_entry;
  bool json = false, exit_code = false;
};

// The options that define a tuning: with --resume they come from tune.json instead.
constexpr const char* kTuningOptions[] = {"recipe",
                                          "--key",
                                          "--knob",
                                          "--objective",
                                          "--slo",
                                          "--conc",
                                          "--minimize",
                                          "--isl",
                                          "--osl",
                                          "--tp",
                                          "--guard",
                                          "--no-guards",
                                          "--guard-tolerance",
                                          "--accuracy-tolerance",
                                          "--eval",
                                          "--eval-limit",
                                          "--top",
                                          "--eta",
                                          "--screen-passes",
                                          "--confirm-repeats",
                                          "--min-effect",
                                          "--confidence",
                                          "--seed",
                                          "--resamples",
                                          "--search-min",
                                          "--search-max",
                                          "--search-tolerance",
                                          "--screen-prompts-per-conc",
                                          "--screen-min-prompts",
                                          "--screen-warmups-per-conc",
                                          "--prompts-per-conc",
                                          "--min-prompts",
                                          "--warmups-per-conc",
                                          "--runs-dir",
                                          "--db",
                                          "--server-arg",
                                          "--ignore-setting",
                                          "--startup-timeout",
                                          "--point-timeout",
                                          "--max-candidates",
                                          "--no-env-trace",
                                          "--work-dir",
                                          "--pairs",
                                          "--max-pairs"};

// Prints `e` as the command's error (when the command goes on to say more).
void print_error(const Error& e) {
  (void)fail("tune", e);
}

// The tuning to run: the one in --resume's folder (with its own options; the stage to stop after
// may be given) or a new one. Errors are usage errors.
Expected<tune::TuneState> tuning_to_run(const TuneCliOptions& o,
                                        const std::vector<std::string>& given) {
  if (o.resume.empty()) {
    if (o.tuning.knobs.empty()) return usage_error("--knob is required (or --resume DIR)");
    if (o.tuning.recipe.empty()) {
      return usage_error("the recipe file is required (or --resume DIR)");
    }
    return tune::new_tuning(o.tuning, o.work_dir);
  }
  // --server-arg may come again, to give back the secrets tune.json hides (below).
  std::vector<std::string> others;
  for (const auto& g : given) {
    if (g != "--server-arg") others.push_back(g);
  }
  if (!others.empty()) {
    return usage_error(
        fmt::format("--resume continues a tuning with its own options (from {}/tune.json); {} "
                    "cannot be given with it",
                    o.resume, fmt::join(others, ", ")));
  }
  auto state = tune::read_state(o.resume);
  if (!state) return state;
  // A tuning stopped after a stage goes on to the end.
  state->settings.stop_after = o.tuning.stop_after;
  // tune.json never holds a secret: a server argument it shows as (redacted) must be given back,
  // the same arguments as the tuning's own, or the resumed servers would get "(redacted)".
  const std::vector<std::string>& stored = state->settings.server_args;
  const bool hidden = std::any_of(stored.begin(), stored.end(), [](const std::string& a) {
    return a.find(kRedacted) != std::string::npos;
  });
  if (std::find(given.begin(), given.end(), "--server-arg") != given.end()) {
    if (redact_argv(o.tuning.server_args) != stored) {
      return usage_error(fmt::format(
          "--resume {}: --server-arg must give the tuning's own server arguments again ({}), "
          "with the values tune.json hides; these are others",
          o.resume, fmt::join(stored, " ")));
    }
    state->settings.server_args = o.tuning.server_args;
  } else if (hidden) {
    return usage_error(fmt::format(
        "--resume {}: tune.json hides a secret among the server's arguments ({}); give them "
        "again, each as --server-arg, so that the resumed servers get its value",
        o.resume, fmt::join(stored, " ")));
  }
  return state;
}

// What the tuning runs with: its settings, folder, id and build, and where progress goes.
tune::TuneOptions run_options(const tune::TuneState& state) {
  tune::TuneOptions t = tune::tune_options(state.settings);
  t.dir = state.dir;
  t.id = state.id;
  t.resume = state.resumed;
  t.expected_build_sha256 = state.server_build_sha256;
  // Stage lines on stderr, terminal or log; a point's live line on a terminal, plain lines every
  // few seconds in a log (core/progress.h).
  t.show_progress = true;
  t.sweep.inferbench_exe = self_executable();
  t.sweep.show_progress = true;
  return t;
}

// A tuning that failed: bad input found before anything was measured leaves nothing behind;
// otherwise tune.json says it failed. Returns the failure's exit code (not 0).
int failed(tune::TuneState& state, bool created, const tune::TuneRun& result) {
  const tune::TuneFailure& failure = *result.failure;
  if (failure.kind == ErrorKind::kUsage && created && !state.resumed) {
    std::error_code ec;
    std::filesystem::remove_all(state.dir, ec);
  } else {
    if (state.server_build_sha256.empty()) {
      state.server_build_sha256 = result.report.server_build.sha256;
    }
    if (auto s = tune::write_state(state, "failed"); !s.ok()) print_error(s.error());
  }
  fmt::print(stderr, "inferbench tune: {}\n", redact_text(failure.message));
  return exit_code(failure);
}

// Writes the report's files (in the tuning's folder, and where the options ask) and prints the
// report on stdout; kExitFailure when a file could not be written.
int write_and_print_report(const TuneCliOptions& o, const std::filesystem::path& dir,
                           const tune::TuneReport& report) {
  const std::string md = report.markdown();
  const std::string js = json_text(report.to_json()) + "\n";
  std::vector<std::pair<std::filesystem::path, std::string>> files = {{dir / "report.md", md},
                                                                      {dir / "report.json", js}};
  if (report.winner) {
    files.emplace_back(dir / "winner.yaml", redact_text(report.winner_yaml));
    files.emplace_back(dir / "changelog-entry.yaml", redact_text(report.changelog));
    if (!o.winner_recipe.empty())
      files.emplace_back(o.winner_recipe, redact_text(report.winner_yaml));
    if (!o.changelog_entry.empty())
      files.emplace_back(o.changelog_entry, redact_text(report.changelog));
  }
  if (!o.markdown.empty()) files.emplace_back(o.markdown, md);
  if (!o.json_file.empty()) files.emplace_back(o.json_file, js);
  int rc = kExitOk;
  for (const auto& [file, text] : files) {
    if (auto s = write_file_atomic(file, text); !s.ok()) {
      print_error(s.error());
      rc = kExitFailure;
    }
  }
  const std::string& out = o.json ? js : md;
  std::fwrite(out.data(), 1, out.size(), stdout);
  return rc;
}

// A tuning that ran to its end, stopped after a stage or was interrupted: tune.json's status, the
// report's files and the report; the exit code.
int finished(const TuneCliOptions& o, tune::TuneState& state, tune::TuneReport& report) {
  const bool interrupted = report.interrupted || interrupt_requested();
  report.interrupted = interrupted;
  report.resume_command = fmt::format("inferbench tune --resume {}", state.dir.string());
  state.server_build_sha256 = report.server_build.sha256;
  int rc = kExitOk;
  if (auto s = tune::write_state(state, interrupted ? "interrupted" : "done"); !s.ok()) {
    print_error(s.error());
    rc = kExitFailure;
  }
  if (write_and_print_report(o, state.dir, report) != kExitOk) rc = kExitFailure;
  if (interrupted) {
    fmt::print(stderr, "inferbench tune: interrupted; continue with {}\n", report.resume_command);
    return interrupted_exit_code();
  }
  if (rc == kExitOk && o.exit_code && !report.winner) rc = kExitFailure;
  return rc;
}

int run(const TuneCliOptions& o, const std::vector<std::string>& given) {
  auto state = tuning_to_run(o, given);
  if (!state) return fail("tune", with_kind(state.error(), ErrorKind::kUsage));
  if (auto s = tune::hash_recipe(*state); !s.ok()) {
    return fail("tune", with_kind(s.error(), ErrorKind::kUsage));
  }
  const tune::TuneOptions t = run_options(*state);
  std::error_code ec;
  const bool created = !std::filesystem::exists(state->dir, ec);
  std::filesystem::create_directories(state->dir, ec);
  if (ec) {
    return fail("tune", usage_error(fmt::format("{}: {}", state->dir.string(), ec.message())));
  }
  if (auto s = tune::write_state(*state, "running"); !s.ok()) return fail("tune", s.error());
  install_interrupt_handlers();
  auto result = tune::run_tune(
      t, [&](const std::string& line) { fmt::print(stderr, "tune: {}\n", redact_text(line)); });
  if (result.failure) return failed(*state, created, result);
  return finished(o, *state, result.report);
}

// The tuned key, row and knobs, and the objective.
void add_target_options(CLI::App* app, tune::TuneSettings& s) {
  app->add_option("recipe", s.recipe, "Recipe file");
  app->add_option("--key", s.key, "The config key to tune (needed when the file has several)");
  app->add_option(
      "--knob", s.knobs,
      "What to vary: env:NAME=a,b ('(unset)' removes it), arg:--flag=a,b ('(absent)' "
      "removes it), arg:--flag (toggle), field:tp=1,2, field:pd=1:1,2:1 (disaggregated P:D), "
      "env:decode.NAME=a (one role's); repeatable");
  app->add_option("--objective", s.objective,
                  "A headline metric (default tput_per_gpu), e2e-intvty[:p50|p90|p99|p99.9], "
                  "tput-at-slo (with --slo), or a formula over headline metrics");
  app->add_option("--slo", s.slos,
                  "tput-at-slo: METRIC<=VALUE or METRIC>=VALUE a point must meet; repeatable");
  app->add_flag("--minimize", s.minimize, "A formula objective is better lower");
  add_integer(app, "--conc", s.conc,
              "The concurrency of the objective (0 = the row's largest; tput-at-slo: where the "
              "search starts, 0 = the row's median)",
              0, 100000);
  add_integer(app, "--isl", s.isl, "The tuned row's input length (0 = the key's first row)", 0,
              10000000);
  add_integer(app, "--osl", s.osl, "The tuned row's output length (0 = any)", 0, 10000000);
  add_integer(app, "--tp", s.tp, "The tuned row's tp (0 = any)", 0, 4096);
}

// tput-at-slo's search for each side's operating point.
void add_search_options(CLI::App* app, tune::TuneSettings& s) {
  add_integer(app, "--search-min", s.search_min, "tput-at-slo: the lowest concurrency", 1, 100000)
      ->capture_default_str();
  add_integer(app, "--search-max", s.search_max, "tput-at-slo: the highest concurrency", 1, 100000)
      ->capture_default_str();
  app->add_option("--search-tolerance", s.search_tolerance,
                  "tput-at-slo: stop when the bracket is within this many percent")
      ->capture_default_str()
      ->transform(real_in(0, 100));
}

// Stage 3's guards and accuracy.
void add_guard_options(CLI::App* app, tune::TuneSettings& s) {
  app->add_option("--guard", s.guards,
                  "Stage 3: METRIC[:TOL%] that must not get worse beyond TOL (default: median "
                  "and p99 TTFT and TPOT, median ITL); repeatable");
  app->add_flag("--no-guards", s.no_guards, "Stage 3: no guard metric");
  app->add_option("--guard-tolerance", s.guard_tolerance, "Stage 3: the guards' tolerance in %")
      ->capture_default_str()
      ->transform(real_in(0, 1000));
  app->add_option("--accuracy-tolerance", s.accuracy_tolerance,
                  "Stage 3: how much exact match may drop (absolute) before it is a doubt")
      ->capture_default_str()
      ->transform(real_in(0, 1));
  app->add_flag("--eval", s.eval,
                "Stage 3: a GSM8K eval on every side (on by itself when the row is an eval row)");
  add_integer(app, "--eval-limit", s.eval_limit, "Stage 3: GSM8K problems per eval (0 = all)", 0,
              100000)
      ->capture_default_str();
}

// The screen's halving, the repeats and the statistics that decide.
void add_decision_options(CLI::App* app, tune::TuneSettings& s) {
  add_integer(app, "--top", s.keep, "Stage 2: candidates kept by each halving round", 1, 64)
      ->capture_default_str();
  add_integer(app, "--eta", s.eta, "Stage 2: each round keeps 1/eta of the candidates", 2, 16)
      ->capture_default_str();
  add_integer(app, "--screen-passes", s.passes,
              "Stage 2: passes of the first round (each later round eta times more)", 1, 100)
      ->capture_default_str();
  add_integer(app, "--confirm-repeats", s.repeats, "Stage 3: repeated runs of the A/B", 2, 100)
      ->capture_default_str();
  app->add_option("--min-effect", s.min_effect, "Minimum effect in percent")
      ->capture_default_str()
      ->transform(real_in(0, 100));
  app->add_option("--confidence", s.confidence,
                  "Confidence level in percent (stage 3 splits it over the finalists)")
      ->capture_default_str()
      ->transform(real_in(50, 99.9));
  add_integer(app, "--seed", s.seed, "Seed of the pass order", 0, kMaxSeed);
  add_integer(app, "--resamples", s.resamples, "Bootstrap resamples (stage 3's compare)", 100,
              1000000)
      ->capture_default_str();
}

// The screening and confirmation workloads, over the recipe's.
void add_workload_options(CLI::App* app, tune::TuneSettings& s) {
  add_integer(app, "--screen-prompts-per-conc", s.screen_prompts_per_conc,
              "Stage 2: measured prompts per unit of concurrency of a screening point", 1, 1000)
      ->capture_default_str();
  add_integer(app, "--screen-min-prompts", s.screen_min_prompts,
              "Stage 2: at least this many measured prompts a screening point", 1, 1000000)
      ->capture_default_str();
  add_integer(app, "--screen-warmups-per-conc", s.screen_warmups_per_conc,
              "Stage 2: warmup prompts per unit of concurrency", 0, 1000)
      ->capture_default_str();
  add_integer(app, "--prompts-per-conc", s.prompts_per_conc,
              "Stage 3: measured prompts per unit of concurrency (0 = the recipe's)", 0, 1000);
  add_integer(app, "--min-prompts", s.min_prompts,
              "Stage 3: at least this many measured prompts a point (0 = the recipe's)", 0,
              1000000);
  add_integer(app, "--warmups-per-conc", s.warmups_per_conc,
              "Stage 3: warmup prompts per unit of concurrency (-1 = the recipe's)", -1, 1000);
}

// Which candidates are tried, and where the tuning stops.
void add_candidate_options(CLI::App* app, tune::TuneSettings& s) {
  app->add_flag("--pairs", s.pairs,
                "Stage 3: also confirm pairs of the finalists (changes of different knobs)");
  add_integer(app, "--max-pairs", s.max_pairs, "Stage 3: at most this many pairs", 1, 64)
      ->capture_default_str();
  add_integer(app, "--max-candidates", s.max_candidates, "At most this many candidates", 1, 4096)
      ->capture_default_str();
  app->add_option("--stop-after", s.stop_after, "Stop after a stage: verify | screen")
      ->check(CLI::IsMember({"verify", "screen"}));
}

// Where the tuning runs and keeps its folder, and how servers are started.
void add_run_options(CLI::App* app, TuneCliOptions& o) {
  app->add_option("--runs-dir", o.tuning.runs_dir, "Where the runs (and the tuning's folder) go")
      ->capture_default_str();
  app->add_option("--db", o.tuning.db, "Results database (default RUNS_DIR/inferbench.db)")
      ->check(database_to_write());
  app->add_option("--work-dir", o.work_dir,
                  "The tuning's folder: state, servers' evidence, reports (default "
                  "RUNS_DIR/tune-<time>)")
      ->check(folder_to_write());
  app->add_option("--resume", o.resume,
                  "Continue an interrupted tuning from its folder: what was measured is kept")
      ->check(CLI::ExistingDirectory);
  add_server_options(app, o.server, ServerOptionSet::kServersAndPoints);
  app->add_option("--ignore-setting", o.tuning.ignore, "Effective setting to ignore when diffing");
}

// Where the report goes, and the exit code.
void add_output_options(CLI::App* app, TuneCliOptions& o) {
  app->add_option("--markdown", o.markdown, "Also write the markdown report to this file")
      ->check(output_file());
  app->add_option("--json-file", o.json_file, "Also write the JSON report to this file")
      ->check(output_file());
  app->add_option("--winner-recipe", o.winner_recipe,
                  "Write the winning entry as a recipe file here (when there is a winner)")
      ->check(output_file());
  app->add_option("--changelog-entry", o.changelog_entry,
                  "Write the winner's perf-changelog entry here (when there is a winner)")
      ->check(output_file());
  app->add_flag("--json", o.json, "Print the report as JSON (default: markdown)");
  app->add_flag("--exit-code", o.exit_code, "Exit 1 when no candidate is confirmed");
}

}  // namespace

RunFn register_tune(CLI::App& root) {
  auto o = std::make_shared<TuneCliOptions>();
  CLI::App* app = root.add_subcommand(
      "tune",
      "Tune a recipe: propose changes (--knob), drop the no-ops before measuring (stage 1: "
      "verify), screen the rest against an interleaved baseline (stage 2), confirm the best with "
      "a repeated A/B (stage 3); reports the winner's recipe diff and a perf-changelog entry");
  add_target_options(app, o->tuning);
  add_search_options(app, o->tuning);
  add_guard_options(app, o->tuning);
  add_decision_options(app, o->tuning);
  add_workload_options(app, o->tuning);
  add_candidate_options(app, o->tuning);
  add_run_options(app, *o);
  add_output_options(app, *o);
  return [o, app]() {
    o->tuning.server_args = o->server.args;
    o->tuning.startup_timeout_s = o->server.startup_timeout_s;
    o->tuning.point_timeout_s = o->server.point_timeout_s;
    o->tuning.no_env_trace = o->server.no_env_trace;
    register_server_secrets(o->server);
    // The tuning keeps --db in its state file (to resume): no password may go there.
    if (store::is_postgres_url(o->tuning.db) &&
        store::redact_pg_url(o->tuning.db) != o->tuning.db) {
      return fail("tune", usage_error("--db: tune keeps the database's URL in its state file; give "
                                      "the password through PGPASSWORD or PGPASSFILE, not in the "
                                      "URL"));
    }
    std::vector<std::string> given;
    for (const char* name : kTuningOptions) {
      if (app->count(name) > 0) given.push_back(name);
    }
    return run(*o, given);
  };
}

}  // namespace ib::cli
