// `inferbench tune RECIPE --key KEY --knob SPEC...` (issue 19, docs/tune.md): options, the
// tuning's folder and state file (tune.json, for --resume), progress, and the report's outputs.
// The stages themselves are in src/tune/.
#include "tune/tune.h"

#include <fmt/format.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "core/clock.h"
#include "core/files.h"
#include "core/interrupt.h"
#include "core/redact.h"
#include "core/sha256.h"
#include "core/strings.h"

namespace ib::cli {

namespace {

namespace json = boost::json;

struct TuneCliOptions {
  // The tuning (kept in tune.json for --resume).
  std::string recipe, key, objective, stop_after;
  std::vector<std::string> knobs, slos, guards, server_args, ignore;
  int64_t conc = 0, isl = 0, osl = 0, tp = 0;
  bool minimize = false, no_guards = false, eval = false, no_env_trace = false, pairs = false;
  int max_pairs = 6;
  int64_t search_min = 1, search_max = 1024;
  double search_tolerance = 10;
  int keep = 2, eta = 2, passes = 3, repeats = 5, max_candidates = 64;
  double min_effect = 2, confidence = 95, guard_tolerance = 5, accuracy_tolerance = 0.01;
  int64_t seed = 0;
  int resamples = 2000;
  int screen_prompts_per_conc = 2, screen_min_prompts = 16, screen_warmups_per_conc = 1;
  int prompts_per_conc = 0, min_prompts = 0, warmups_per_conc = -1;
  int64_t eval_limit = 0;
  double startup_timeout_s = 600, point_timeout_s = 1800;
  std::string runs_dir = "runs", db;
  // Where and what to print (not part of the tuning).
  std::string work_dir, resume, markdown, json_file, winner_recipe, changelog_entry;
  bool json = false, exit_code = false;

  json::object state() const {
    json::array k(knobs.begin(), knobs.end()), s(slos.begin(), slos.end()),
        g(guards.begin(), guards.end()), a(server_args.begin(), server_args.end()),
        ig(ignore.begin(), ignore.end());
    return json::object{{"recipe", recipe},
                        {"key", key},
                        {"objective", objective},
                        {"stop_after", stop_after},
                        {"knobs", k},
                        {"slos", s},
                        {"guards", g},
                        {"server_args", a},
                        {"ignore", ig},
                        {"conc", conc},
                        {"isl", isl},
                        {"osl", osl},
                        {"tp", tp},
                        {"minimize", minimize},
                        {"no_guards", no_guards},
                        {"eval", eval},
                        {"no_env_trace", no_env_trace},
                        {"search_min", search_min},
                        {"search_max", search_max},
                        {"search_tolerance", search_tolerance},
                        {"keep", keep},
                        {"eta", eta},
                        {"passes", passes},
                        {"repeats", repeats},
                        {"max_candidates", max_candidates},
                        {"min_effect", min_effect},
                        {"confidence", confidence},
                        {"guard_tolerance", guard_tolerance},
                        {"accuracy_tolerance", accuracy_tolerance},
                        {"seed", seed},
                        {"resamples", resamples},
                        {"screen_prompts_per_conc", screen_prompts_per_conc},
                        {"screen_min_prompts", screen_min_prompts},
                        {"screen_warmups_per_conc", screen_warmups_per_conc},
                        {"prompts_per_conc", prompts_per_conc},
                        {"min_prompts", min_prompts},
                        {"warmups_per_conc", warmups_per_conc},
                        {"eval_limit", eval_limit},
                        {"startup_timeout_s", startup_timeout_s},
                        {"point_timeout_s", point_timeout_s},
                        {"runs_dir", runs_dir},
                        {"db", db},
                        {"pairs", pairs},
                        {"max_pairs", max_pairs}};
  }

  // Reads back what state() wrote; false when a field is missing or of another type.
  bool load(const json::object& j) {
    try {
      auto str = [&](const char* k, std::string& v) { v = std::string(j.at(k).as_string()); };
      auto strs = [&](const char* k, std::vector<std::string>& v) {
        v.clear();
        for (const auto& x : j.at(k).as_array()) v.emplace_back(x.as_string());
      };
      auto i64 = [&](const char* k, int64_t& v) { v = j.at(k).as_int64(); };
      auto i32 = [&](const char* k, int& v) { v = static_cast<int>(j.at(k).as_int64()); };
      auto dbl = [&](const char* k, double& v) { v = j.at(k).to_number<double>(); };
      auto bol = [&](const char* k, bool& v) { v = j.at(k).as_bool(); };
      str("recipe", recipe), str("key", key), str("objective", objective);
      str("stop_after", stop_after), str("runs_dir", runs_dir), str("db", db);
      strs("knobs", knobs), strs("slos", slos), strs("guards", guards);
      strs("server_args", server_args), strs("ignore", ignore);
      i64("conc", conc), i64("isl", isl), i64("osl", osl), i64("tp", tp);
      bol("minimize", minimize), bol("no_guards", no_guards), bol("eval", eval);
      bol("no_env_trace", no_env_trace), bol("pairs", pairs), i32("max_pairs", max_pairs);
      i64("search_min", search_min), i64("search_max", search_max);
      dbl("search_tolerance", search_tolerance);
      i32("keep", keep), i32("eta", eta), i32("passes", passes), i32("repeats", repeats);
      i32("max_candidates", max_candidates), i32("resamples", resamples);
      dbl("min_effect", min_effect), dbl("confidence", confidence);
      dbl("guard_tolerance", guard_tolerance), dbl("accuracy_tolerance", accuracy_tolerance);
      i64("seed", seed);
      i32("screen_prompts_per_conc", screen_prompts_per_conc);
      i32("screen_min_prompts", screen_min_prompts);
      i32("screen_warmups_per_conc", screen_warmups_per_conc);
      i32("prompts_per_conc", prompts_per_conc), i32("min_prompts", min_prompts);
      i32("warmups_per_conc", warmups_per_conc), i64("eval_limit", eval_limit);
      dbl("startup_timeout_s", startup_timeout_s), dbl("point_timeout_s", point_timeout_s);
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }
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

Status write_state(const std::filesystem::path& dir, const std::string& id, const TuneCliOptions& o,
                   const std::string& recipe_sha, const std::string& status,
                   const std::string& build_sha) {
  json::object s{{"version", 1},
                 {"id", id},
                 {"dir", dir.string()},
                 {"recipe_sha256", recipe_sha},
                 {"server_build_sha256", build_sha},
                 {"status", status},
                 {"updated", utc_time_text("%Y-%m-%dT%H:%M:%SZ")},
                 {"options", o.state()}};
  return write_file_atomic(dir / "tune.json", json::serialize(redacted(s)) + "\n");
}

int run(TuneCliOptions o, const std::vector<std::string>& given) {
  std::filesystem::path dir;
  std::string tune_id, build_sha, started_recipe_sha;
  bool resume = false;
  if (!o.resume.empty()) {
    if (!given.empty()) {
      fmt::print(stderr,
                 "inferbench tune: --resume continues a tuning with its own options (from "
                 "{}/tune.json); {} cannot be given with it\n",
                 o.resume, fmt::join(given, ", "));
      return kExitUsage;
    }
    dir = o.resume;
    auto text = read_file(dir / "tune.json");
    if (!text) {
      fmt::print(stderr, "inferbench tune: --resume {}: no tuning there ({})\n", o.resume,
                 text.error().message);
      return kExitUsage;
    }
    json::error_code ec;
    auto v = json::parse(*text, ec);
    TuneCliOptions loaded;
    if (ec || !v.is_object() || !v.as_object().contains("options") ||
        !v.at("options").is_object() || !loaded.load(v.at("options").as_object())) {
      fmt::print(stderr, "inferbench tune: {}/tune.json: not a tuning's state file\n", o.resume);
      return kExitUsage;
    }
    loaded.resume = o.resume;
    loaded.stop_after = o.stop_after;  // a tuning stopped after a stage goes on to the end
    loaded.markdown = o.markdown;
    loaded.json_file = o.json_file;
    loaded.json = o.json;
    loaded.exit_code = o.exit_code;
    loaded.winner_recipe = o.winner_recipe;
    loaded.changelog_entry = o.changelog_entry;
    // Read without throwing: an edited state file is refused with a message, not a crash.
    auto text_of = [&](const char* k) {
      const auto* f = v.as_object().if_contains(k);
      return f && f->is_string() ? std::string(f->as_string()) : std::string();
    };
    tune_id = text_of("id");
    build_sha = text_of("server_build_sha256");
    started_recipe_sha = text_of("recipe_sha256");
    if (tune_id.empty() || started_recipe_sha.empty()) {
      fmt::print(stderr,
                 "inferbench tune: {}/tune.json: not a tuning's state file (no id or "
                 "recipe_sha256)\n",
                 o.resume);
      return kExitUsage;
    }
    o = std::move(loaded);
    resume = true;
  } else {
    if (o.knobs.empty()) {
      fmt::print(stderr, "inferbench tune: --knob is required (or --resume DIR)\n");
      return kExitUsage;
    }
    if (o.recipe.empty()) {
      fmt::print(stderr, "inferbench tune: the recipe file is required (or --resume DIR)\n");
      return kExitUsage;
    }
    const std::string started = utc_time_text("%Y%m%d-%H%M%S");
    dir = o.work_dir.empty() ? std::filesystem::path(o.runs_dir) / ("tune-" + started)
                             : std::filesystem::path(o.work_dir);
    // Paths are kept absolute, so --resume works from any folder.
    std::error_code aec;
    dir = std::filesystem::absolute(dir, aec);
    o.recipe = std::filesystem::absolute(o.recipe, aec).string();
    o.runs_dir = std::filesystem::absolute(o.runs_dir, aec).string();
    if (!o.db.empty()) o.db = std::filesystem::absolute(o.db, aec).string();
    // The tag of this tuning's runs in the database: unique even when folders share a name.
    tune_id = fmt::format(
        "tune-{}-{}", started,
        sha256_hex(fmt::format("{} {} {}", dir.string(), getpid(),
                               std::chrono::steady_clock::now().time_since_epoch().count()))
            .substr(0, 6));
  }
  auto recipe_text = read_file(o.recipe);
  if (!recipe_text) {
    fmt::print(stderr, "inferbench tune: {}{}\n",
               resume ? fmt::format("--resume {}: the recipe: ", dir.string()) : "",
               recipe_text.error().message);
    return kExitUsage;
  }
  const std::string recipe_sha = sha256_hex(*recipe_text);
  if (resume && recipe_sha != started_recipe_sha) {
    fmt::print(stderr,
               "inferbench tune: --resume {}: {} changed since the tuning started (sha256 {} → "
               "{}); its measurements are of the old recipe: start a new tune\n",
               dir.string(), o.recipe, started_recipe_sha.substr(0, 12), recipe_sha.substr(0, 12));
    return kExitUsage;
  }

  tune::TuneOptions t;
  t.recipe = o.recipe;
  t.key = o.key;
  t.knobs = o.knobs;
  t.objective = o.objective;
  t.slos = o.slos;
  t.conc = o.conc;
  t.minimize = o.minimize;
  t.row = {o.isl, o.osl, o.tp};
  t.search_min = o.search_min;
  t.search_max = o.search_max;
  t.search_tolerance = o.search_tolerance / 100;
  t.keep = o.keep;
  t.eta = o.eta;
  t.passes = o.passes;
  t.screen_workload.prompts_per_conc = o.screen_prompts_per_conc;
  t.screen_workload.min_prompts = o.screen_min_prompts;
  t.screen_workload.warmups_per_conc = o.screen_warmups_per_conc;
  if (o.prompts_per_conc > 0) t.confirm_workload.prompts_per_conc = o.prompts_per_conc;
  if (o.min_prompts > 0) t.confirm_workload.min_prompts = o.min_prompts;
  if (o.warmups_per_conc >= 0) t.confirm_workload.warmups_per_conc = o.warmups_per_conc;
  t.confirm_workload.eval_limit = static_cast<size_t>(o.eval_limit);
  t.repeats = o.repeats;
  t.guards = o.guards;
  t.no_guards = o.no_guards;
  t.guard_tolerance = o.guard_tolerance;
  t.accuracy_tolerance = o.accuracy_tolerance;
  t.eval = o.eval;
  t.confidence = o.confidence / 100;
  t.min_effect = o.min_effect;
  t.seed = static_cast<uint64_t>(o.seed);
  t.resamples = o.resamples;
  t.max_candidates = o.max_candidates;
  t.pairs = o.pairs;
  t.max_pairs = o.max_pairs;
  t.stop_after = o.stop_after;
  t.dir = dir;
  t.id = tune_id;
  t.resume = resume;
  t.expected_build_sha256 = build_sha;
  t.ignore_settings = o.ignore;
  const bool tty = isatty(STDERR_FILENO);
  t.show_progress = tty;
  t.sweep.recipes = {o.recipe};
  t.sweep.runs_dir = o.runs_dir;
  t.sweep.db = o.db;
  t.sweep.inferbench_exe = self_executable();
  t.sweep.extra_server_args = o.server_args;
  t.sweep.startup_timeout_s = o.startup_timeout_s;
  t.sweep.point_timeout_s = o.point_timeout_s;
  t.sweep.env_trace = !o.no_env_trace;
  t.sweep.show_progress = tty;

  std::error_code ec;
  const bool created = !std::filesystem::exists(dir, ec);
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    fmt::print(stderr, "inferbench tune: {}: {}\n", dir.string(), ec.message());
    return kExitUsage;
  }
  if (auto s = write_state(dir, t.id, o, recipe_sha, "running", build_sha); !s.ok()) {
    fmt::print(stderr, "inferbench tune: {}\n", s.error().message);
    return kExitFailure;
  }
  install_interrupt_handlers();
  auto result = tune::run_tune(t, [&](const std::string& line) {
    if (tty) fmt::print(stderr, "tune: {}\n", redact_text(line));
  });
  if (result.failure) {
    // Bad input found before anything was measured leaves nothing behind.
    if (result.failure->exit_code == kExitUsage && created && !resume) {
      std::filesystem::remove_all(dir, ec);
    } else {
      (void)write_state(dir, t.id, o, recipe_sha, "failed",
                        build_sha.empty() ? result.report.server_build.sha256 : build_sha);
    }
    fmt::print(stderr, "inferbench tune: {}\n", redact_text(result.failure->message));
    return result.failure->exit_code;
  }
  auto& report = result.report;
  const bool interrupted = report.interrupted || interrupt_requested();
  report.interrupted = interrupted;
  report.resume_command = fmt::format("inferbench tune --resume {}", dir.string());
  (void)write_state(dir, t.id, o, recipe_sha, interrupted ? "interrupted" : "done",
                    report.server_build.sha256);
  const std::string md = report.markdown();
  const std::string js = json::serialize(report.to_json()) + "\n";
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
      fmt::print(stderr, "inferbench tune: {}\n", s.error().message);
      rc = kExitFailure;
    }
  }
  const std::string& out = o.json ? js : md;
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (interrupted) {
    fmt::print(stderr, "inferbench tune: interrupted; continue with {}\n", report.resume_command);
    return interrupted_exit_code();
  }
  if (rc == kExitOk && o.exit_code && !report.winner) rc = kExitFailure;
  return rc;
}

}  // namespace

RunFn register_tune(CLI::App& root) {
  auto o = std::make_shared<TuneCliOptions>();
  CLI::App* app = root.add_subcommand(
      "tune",
      "Tune a recipe: propose changes (--knob), drop the no-ops before measuring (stage 1: "
      "verify), screen the rest against an interleaved baseline (stage 2), confirm the best with "
      "a repeated A/B (stage 3); reports the winner's recipe diff and a perf-changelog entry");
  app->add_option("recipe", o->recipe, "Recipe file");
  app->add_option("--key", o->key, "The config key to tune (needed when the file has several)");
  app->add_option("--knob", o->knobs,
                  "What to vary: env:NAME=a,b ('(unset)' removes it), arg:--flag=a,b ('(absent)' "
                  "removes it), arg:--flag (toggle), field:tp=1,2; repeatable");
  app->add_option("--objective", o->objective,
                  "A headline metric (default tput_per_gpu), e2e-intvty[:p50|p90|p99|p99.9], "
                  "tput-at-slo (with --slo), or a formula over headline metrics");
  app->add_option("--slo", o->slos,
                  "tput-at-slo: METRIC<=VALUE or METRIC>=VALUE a point must meet; repeatable");
  app->add_flag("--minimize", o->minimize, "A formula objective is better lower");
  add_integer(app, "--conc", o->conc,
              "The concurrency of the objective (0 = the row's largest; tput-at-slo: where the "
              "search starts, 0 = the row's median)",
              0, 100000);
  add_integer(app, "--isl", o->isl, "The tuned row's input length (0 = the key's first row)", 0,
              10000000);
  add_integer(app, "--osl", o->osl, "The tuned row's output length (0 = any)", 0, 10000000);
  add_integer(app, "--tp", o->tp, "The tuned row's tp (0 = any)", 0, 4096);
  add_integer(app, "--search-min", o->search_min, "tput-at-slo: the lowest concurrency", 1, 100000)
      ->capture_default_str();
  add_integer(app, "--search-max", o->search_max, "tput-at-slo: the highest concurrency", 1, 100000)
      ->capture_default_str();
  app->add_option("--search-tolerance", o->search_tolerance,
                  "tput-at-slo: stop when the bracket is within this many percent")
      ->capture_default_str()
      ->transform(real_in(0, 100));
  app->add_option("--guard", o->guards,
                  "Stage 3: METRIC[:TOL%] that must not get worse beyond TOL (default: median "
                  "and p99 TTFT and TPOT, median ITL); repeatable");
  app->add_flag("--no-guards", o->no_guards, "Stage 3: no guard metric");
  app->add_option("--guard-tolerance", o->guard_tolerance, "Stage 3: the guards' tolerance in %")
      ->capture_default_str()
      ->transform(real_in(0, 1000));
  app->add_option("--accuracy-tolerance", o->accuracy_tolerance,
                  "Stage 3: how much exact match may drop (absolute) before it is a doubt")
      ->capture_default_str()
      ->transform(real_in(0, 1));
  app->add_flag("--eval", o->eval,
                "Stage 3: a GSM8K eval on every side (on by itself when the row is an eval row)");
  add_integer(app, "--eval-limit", o->eval_limit, "Stage 3: GSM8K problems per eval (0 = all)", 0,
              100000)
      ->capture_default_str();
  add_integer(app, "--top", o->keep, "Stage 2: candidates kept by each halving round", 1, 64)
      ->capture_default_str();
  add_integer(app, "--eta", o->eta, "Stage 2: each round keeps 1/eta of the candidates", 2, 16)
      ->capture_default_str();
  add_integer(app, "--screen-passes", o->passes,
              "Stage 2: passes of the first round (each later round eta times more)", 1, 100)
      ->capture_default_str();
  add_integer(app, "--confirm-repeats", o->repeats, "Stage 3: repeated runs of the A/B", 2, 100)
      ->capture_default_str();
  app->add_option("--min-effect", o->min_effect, "Minimum effect in percent")
      ->capture_default_str()
      ->transform(real_in(0, 100));
  app->add_option("--confidence", o->confidence,
                  "Confidence level in percent (stage 3 splits it over the finalists)")
      ->capture_default_str()
      ->transform(real_in(50, 99.9));
  add_integer(app, "--seed", o->seed, "Seed of the pass order", 0, INT64_MAX);
  add_integer(app, "--resamples", o->resamples, "Bootstrap resamples (stage 3's compare)", 100,
              1000000)
      ->capture_default_str();
  add_integer(app, "--screen-prompts-per-conc", o->screen_prompts_per_conc,
              "Stage 2: measured prompts per unit of concurrency of a screening point", 1, 1000)
      ->capture_default_str();
  add_integer(app, "--screen-min-prompts", o->screen_min_prompts,
              "Stage 2: at least this many measured prompts a screening point", 1, 1000000)
      ->capture_default_str();
  add_integer(app, "--screen-warmups-per-conc", o->screen_warmups_per_conc,
              "Stage 2: warmup prompts per unit of concurrency", 0, 1000)
      ->capture_default_str();
  add_integer(app, "--prompts-per-conc", o->prompts_per_conc,
              "Stage 3: measured prompts per unit of concurrency (0 = the recipe's)", 0, 1000);
  add_integer(app, "--min-prompts", o->min_prompts,
              "Stage 3: at least this many measured prompts a point (0 = the recipe's)", 0,
              1000000);
  add_integer(app, "--warmups-per-conc", o->warmups_per_conc,
              "Stage 3: warmup prompts per unit of concurrency (-1 = the recipe's)", -1, 1000);
  app->add_flag("--pairs", o->pairs,
                "Stage 3: also confirm pairs of the finalists (changes of different knobs)");
  add_integer(app, "--max-pairs", o->max_pairs, "Stage 3: at most this many pairs", 1, 64)
      ->capture_default_str();
  add_integer(app, "--max-candidates", o->max_candidates, "At most this many candidates", 1, 4096)
      ->capture_default_str();
  app->add_option("--stop-after", o->stop_after, "Stop after a stage: verify | screen")
      ->check(CLI::IsMember({"verify", "screen"}));
  app->add_option("--runs-dir", o->runs_dir, "Where the runs (and the tuning's folder) go")
      ->capture_default_str();
  app->add_option("--db", o->db, "Results database (default RUNS_DIR/inferbench.db)");
  app->add_option("--work-dir", o->work_dir,
                  "The tuning's folder: state, servers' evidence, reports (default "
                  "RUNS_DIR/tune-<time>)")
      ->check(folder_to_write());
  app->add_option("--resume", o->resume,
                  "Continue an interrupted tuning from its folder: what was measured is kept")
      ->check(CLI::ExistingDirectory);
  app->add_option("--server-arg", o->server_args, "Extra argument for every server command")
      ->allow_extra_args(false);
  app->add_option("--ignore-setting", o->ignore, "Effective setting to ignore when diffing");
  app->add_option("--startup-timeout", o->startup_timeout_s, "Seconds to wait for each server")
      ->capture_default_str()
      ->transform(positive_real(kMaxSeconds));
  app->add_option("--point-timeout", o->point_timeout_s, "Seconds a point may take")
      ->capture_default_str()
      ->transform(positive_real(kMaxSeconds));
  app->add_flag("--no-env-trace", o->no_env_trace, "Do not trace environment reads");
  app->add_option("--markdown", o->markdown, "Also write the markdown report to this file")
      ->check(output_file());
  app->add_option("--json-file", o->json_file, "Also write the JSON report to this file")
      ->check(output_file());
  app->add_option("--winner-recipe", o->winner_recipe,
                  "Write the winning entry as a recipe file here (when there is a winner)")
      ->check(output_file());
  app->add_option("--changelog-entry", o->changelog_entry,
                  "Write the winner's perf-changelog entry here (when there is a winner)")
      ->check(output_file());
  app->add_flag("--json", o->json, "Print the report as JSON (default: markdown)");
  app->add_flag("--exit-code", o->exit_code, "Exit 1 when no candidate is confirmed");
  return [o, app]() {
    std::vector<std::string> given;
    for (const char* name : kTuningOptions) {
      if (app->count(name) > 0) given.push_back(name);
    }
    return run(*o, given);
  };
}

}  // namespace ib::cli
