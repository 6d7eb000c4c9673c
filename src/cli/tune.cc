// `inferbench tune RECIPE --key KEY --knob SPEC...` (issue 19, docs/tune.md). This version runs
// stage 1 (verify: candidates that change nothing are dropped before any benchmark request) and
// stage 2 (screen: successive halving against an interleaved baseline); confirmation is not built
// yet, so it asks for `--stop-after verify|screen` and says so.
#include <fmt/format.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "core/files.h"
#include "core/interrupt.h"
#include "core/redact.h"
#include "core/strings.h"
#include "core/clock.h"
#include "recipe/matrix.h"
#include "recipe/recipe.h"
#include "sweep/planner.h"
#include "tune/knob.h"
#include "tune/report.h"
#include "tune/verify_stage.h"
#include "workload/fixed_seq_len.h"

namespace ib::cli {

namespace {

struct TuneCliOptions {
  std::string recipe, key, stop_after, work_dir, markdown;
  std::vector<std::string> knobs, server_args, ignore;
  double startup_timeout_s = 600;
  bool no_env_trace = false, json = false;
  int max_candidates = 64;
  // Stage 2.
  std::string objective = "tput_per_gpu";
  int64_t conc = 0;  // 0: the base row's largest concurrency
  int keep = 2, eta = 2, passes = 3;
  double min_effect = 2, confidence = 95;
  int64_t seed = 0;
  int screen_prompts_per_conc = 2, screen_min_prompts = 16, screen_warmups_per_conc = 1;
  std::string runs_dir = "runs", db;
};

// What one sweep of the base row would measure and send: each dropped no-op saves that much.
void sweep_cost(const recipe::RecipeRow& row, const recipe::ConfigEntry& entry,
                tune::TuneReport& report) {
  auto w = sweep::workload_for_row(row, &entry, {});
  if (!w) return;
  const auto* fixed = dynamic_cast<const workload::FixedSeqLenWorkload*>(w->get());
  if (fixed == nullptr) return;
  std::vector<int64_t> concs;
  for (const auto& r : recipe::expand({entry}, nullptr)) {
    if (const auto* c = r.fields.if_contains("conc"); c && c->is_int64()) {
      concs.push_back(c->as_int64());
    }
  }
  report.points_per_candidate = static_cast<int>(concs.size());
  for (int64_t c : concs) {
    report.requests_per_candidate += fixed->prompts_at(c) + fixed->warmups_at(c);
  }
}

int run(const TuneCliOptions& o) {
  if (o.stop_after != "verify" && o.stop_after != "screen") {
    fmt::print(stderr,
               "inferbench tune: stage 3 (confirm) is not in this version yet: run with "
               "--stop-after verify or --stop-after screen\n");
    return kExitUsage;
  }
  std::vector<tune::Knob> knobs;
  for (const auto& spec : o.knobs) {
    auto k = tune::parse_knob(spec);
    if (!k) {
      fmt::print(stderr, "inferbench tune: {}\n", k.error().message);
      return kExitUsage;
    }
    knobs.push_back(std::move(*k));
  }
  auto entries = recipe::load_master_configs({o.recipe});
  if (!entries) {
    fmt::print(stderr, "inferbench tune: {}\n", entries.error().message);
    return kExitUsage;
  }
  const recipe::ConfigEntry* base = nullptr;
  std::vector<std::string> keys;
  for (const auto& e : *entries) {
    keys.push_back(e.key);
    if (e.key == o.key || (o.key.empty() && entries->size() == 1)) base = &e;
  }
  if (base == nullptr) {
    fmt::print(stderr, "inferbench tune: {}: {} (keys: {})\n", o.recipe,
               o.key.empty() ? "several config keys: choose one with --key"
                             : fmt::format("no config key '{}'", printable(o.key, 80)),
               fmt::join(keys, ", "));
    return kExitUsage;
  }
  auto set = tune::single_candidates(*base, knobs, static_cast<size_t>(o.max_candidates));
  if (!set) {
    fmt::print(stderr, "inferbench tune: {}\n", set.error().message);
    return kExitUsage;
  }
  tune::TuneReport report;
  report.recipe = o.recipe;
  report.key = base->key;
  report.candidates = set->candidates;
  report.notes = set->notes;
  report.stages_not_run = o.stop_after == "verify" ? std::vector<std::string>{"screen", "confirm"}
                                                    : std::vector<std::string>{"confirm"};
  const auto rows = recipe::expand({*base}, nullptr);
  if (rows.empty()) {
    fmt::print(stderr, "inferbench tune: {}: the key has no benchmark row\n", base->key);
    return kExitUsage;
  }
  sweep_cost(rows.front(), *base, report);
  int64_t conc = o.conc;
  if (conc == 0) {
    // The largest concurrency of the base row's configuration.
    for (const auto& r : rows) {
      const auto* c = r.fields.if_contains("conc");
      if (c && c->is_int64() && r.fingerprint == rows.front().fingerprint) {
        conc = std::max(conc, c->as_int64());
      }
    }
  }
  auto objective = tune::make_objective(o.objective, std::max<int64_t>(conc, 1));
  if (!objective) {
    fmt::print(stderr, "inferbench tune: {}\n", objective.error().message);
    return kExitUsage;
  }
  if (set->candidates.empty()) {
    fmt::print(stderr, "inferbench tune: no candidate: every knob value is the base's\n");
    return kExitUsage;
  }
  install_interrupt_handlers();
  sweep::VerifyOptions vo;
  vo.inferbench_exe = self_executable();
  vo.extra_server_args = o.server_args;
  vo.startup_timeout = std::chrono::seconds(static_cast<int64_t>(o.startup_timeout_s));
  vo.env_trace = !o.no_env_trace;
  vo.ignore_settings.insert(o.ignore.begin(), o.ignore.end());
  const std::string dir =
      o.work_dir.empty() ? utc_time_text("runs/tune-%Y%m%d-%H%M%S") : o.work_dir;
  const bool tty = isatty(STDERR_FILENO);
  auto stage = tune::verify_candidates(*base, set->candidates, std::filesystem::path(dir) / "verify",
                                       vo, [&](const std::string& line) {
                                         if (tty) fmt::print(stderr, "tune {}: {}\n", base->key, redact_text(line));
                                       });
  if (!stage) {
    fmt::print(stderr, "inferbench tune: {}\n", stage.error().message);
    return kExitFailure;
  }
  report.verify = std::move(*stage);
  if (o.stop_after == "screen" && !interrupt_requested()) {
    std::vector<const tune::Candidate*> survivors;
    for (size_t i = 0; i < report.candidates.size(); ++i) {
      if (report.verify.items[i].outcome == tune::VerifyOutcome::kSurvives) {
        survivors.push_back(&report.candidates[i]);
      }
    }
    tune::ScreenOptions so;
    so.keep = o.keep;
    so.eta = o.eta;
    so.passes0 = o.passes;
    so.seed = static_cast<uint64_t>(o.seed);
    so.confidence = o.confidence / 100;
    so.min_effect_pct = o.min_effect;
    so.tune_id = std::filesystem::path(dir).filename().string();
    so.sweep.recipes = {o.recipe};
    so.sweep.runs_dir = o.runs_dir;
    so.sweep.db = o.db;
    so.sweep.inferbench_exe = self_executable();
    so.sweep.extra_server_args = o.server_args;
    so.sweep.startup_timeout_s = o.startup_timeout_s;
    so.sweep.env_trace = !o.no_env_trace;
    so.sweep.show_progress = tty;
    so.sweep.workload.prompts_per_conc = o.screen_prompts_per_conc;
    so.sweep.workload.min_prompts = o.screen_min_prompts;
    so.sweep.workload.warmups_per_conc = o.screen_warmups_per_conc;
    so.sweep.command_line = "inferbench tune (screen)";
    std::FILE* points = std::fopen((std::filesystem::path(dir) / "points.txt").c_str(), "a");
    so.points_out = points;
    auto screen = tune::screen_candidates(*base, survivors, *objective, so,
                                          [&](const std::string& line) {
                                            if (tty) fmt::print(stderr, "tune {}: {}\n", base->key, redact_text(line));
                                          });
    if (points) std::fclose(points);
    if (!screen) {
      fmt::print(stderr, "inferbench tune: {}\n", screen.error().message);
      return kExitFailure;
    }
    report.objective = *objective;
    report.screen = std::move(*screen);
    report.min_effect_pct = o.min_effect;
    report.confidence = o.confidence / 100;
  }
  const std::string md = report.markdown();
  if (auto s = write_file_atomic(std::filesystem::path(dir) / "report.md", md); !s.ok()) {
    fmt::print(stderr, "inferbench tune: {}\n", s.error().message);
  }
  const std::string js = boost::json::serialize(report.to_json());
  (void)write_file_atomic(std::filesystem::path(dir) / "report.json", js + "\n");
  if (!o.markdown.empty()) {
    if (auto s = write_file_atomic(o.markdown, md); !s.ok()) {
      fmt::print(stderr, "inferbench tune: {}\n", s.error().message);
      return kExitUsage;
    }
  }
  const std::string out = o.json ? js + "\n" : md;
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (interrupt_requested()) return interrupted_exit_code();
  return kExitOk;
}

}  // namespace

RunFn register_tune(CLI::App& root) {
  auto o = std::make_shared<TuneCliOptions>();
  CLI::App* app = root.add_subcommand(
      "tune",
      "Propose recipe changes, drop the no-ops before measuring (stage 1: verify) and screen "
      "the rest against the baseline (stage 2); confirmation is not in this version yet");
  app->add_option("recipe", o->recipe, "Recipe file")->required();
  app->add_option("--key", o->key, "The config key to tune (needed when the file has several)");
  app->add_option("--knob", o->knobs,
                  "What to vary: env:NAME=a,b ('(unset)' removes it), arg:--flag=a,b ('(absent)' "
                  "removes it), arg:--flag (toggle), field:tp=1,2; repeatable")
      ->required();
  app->add_option("--stop-after", o->stop_after,
                  "verify: stop after stage 1; screen: after stage 2 (one of them is required "
                  "until stage 3 exists)");
  app->add_option("--objective", o->objective,
                  "Stage 2: the headline metric to improve, in its good direction")
      ->capture_default_str();
  add_integer(app, "--conc", o->conc,
              "Stage 2: the concurrency to screen at (0 = the base row's largest)", 0, 100000);
  add_integer(app, "--top", o->keep, "Stage 2: candidates kept by each halving round", 1, 64)
      ->capture_default_str();
  add_integer(app, "--eta", o->eta, "Stage 2: each round keeps 1/eta of the candidates", 2, 16)
      ->capture_default_str();
  add_integer(app, "--screen-passes", o->passes,
              "Stage 2: passes of the first round (each later round eta times more)", 1, 100)
      ->capture_default_str();
  app->add_option("--min-effect", o->min_effect, "Minimum effect in percent")
      ->capture_default_str()
      ->transform(real_in(0, 100));
  app->add_option("--confidence", o->confidence, "Confidence level in percent")
      ->capture_default_str()
      ->transform(real_in(50, 99.9));
  add_integer(app, "--seed", o->seed, "Seed of the pass order", 0, INT64_MAX);
  add_integer(app, "--screen-prompts-per-conc", o->screen_prompts_per_conc,
              "Stage 2: measured prompts per unit of concurrency of a screening point", 1, 1000)
      ->capture_default_str();
  add_integer(app, "--screen-min-prompts", o->screen_min_prompts,
              "Stage 2: at least this many measured prompts a screening point", 1, 1000000)
      ->capture_default_str();
  add_integer(app, "--screen-warmups-per-conc", o->screen_warmups_per_conc,
              "Stage 2: warmup prompts per unit of concurrency", 0, 1000)
      ->capture_default_str();
  app->add_option("--runs-dir", o->runs_dir, "Where the screening runs go")->capture_default_str();
  app->add_option("--db", o->db, "Results database (default RUNS_DIR/inferbench.db)");
  app->add_option("--work-dir", o->work_dir,
                  "Where servers' logs, traces and the report go (default runs/tune-<time>)")
      ->check(folder_to_write());
  app->add_option("--markdown", o->markdown, "Also write the markdown report to this file")
      ->check(output_file());
  app->add_option("--server-arg", o->server_args, "Extra argument for every server command")
      ->allow_extra_args(false);
  app->add_option("--ignore-setting", o->ignore, "Effective setting to ignore when diffing");
  app->add_option("--startup-timeout", o->startup_timeout_s, "Seconds to wait for each server")
      ->capture_default_str()
      ->transform(positive_real(kMaxSeconds));
  add_integer(app, "--max-candidates", o->max_candidates, "At most this many candidates", 1, 4096)
      ->capture_default_str();
  app->add_flag("--no-env-trace", o->no_env_trace, "Do not trace environment reads");
  app->add_flag("--json", o->json, "Print the report as JSON (default: markdown)");
  return [o]() { return run(*o); };
}

}  // namespace ib::cli
