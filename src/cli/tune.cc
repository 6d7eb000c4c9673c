// `inferbench tune RECIPE --key KEY --knob SPEC...` (issue 19, docs/tune.md). This version runs
// stage 1 (verify: candidates that change nothing are dropped before any benchmark request);
// screening and confirmation are not built yet, so it asks for `--stop-after verify` and says so.
#include <fmt/format.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "core/files.h"
#include "core/interrupt.h"
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
  if (o.stop_after != "verify") {
    fmt::print(stderr,
               "inferbench tune: only stage 1 (verify) is in this version; screening and "
               "confirmation are not built yet: run with --stop-after verify\n");
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
  report.stages_not_run = {"screen", "confirm"};
  const auto rows = recipe::expand({*base}, nullptr);
  if (rows.empty()) {
    fmt::print(stderr, "inferbench tune: {}: the key has no benchmark row\n", base->key);
    return kExitUsage;
  }
  sweep_cost(rows.front(), *base, report);
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
                                         if (tty) fmt::print(stderr, "tune {}: {}\n", base->key, line);
                                       });
  if (!stage) {
    fmt::print(stderr, "inferbench tune: {}\n", stage.error().message);
    return kExitFailure;
  }
  report.verify = std::move(*stage);
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
      "Propose recipe changes and drop the no-ops before measuring (stage 1: verify; screening "
      "and confirmation are not in this version)");
  app->add_option("recipe", o->recipe, "Recipe file")->required();
  app->add_option("--key", o->key, "The config key to tune (needed when the file has several)");
  app->add_option("--knob", o->knobs,
                  "What to vary: env:NAME=a,b ('(unset)' removes it), arg:--flag=a,b ('(absent)' "
                  "removes it), arg:--flag (toggle), field:tp=1,2; repeatable")
      ->required();
  app->add_option("--stop-after", o->stop_after, "verify: stop after stage 1 (required for now)");
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
