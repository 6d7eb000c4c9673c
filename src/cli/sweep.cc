// `inferbench sweep [RECIPE...]`: the main job. With no argument it runs the bundled example
// recipe (examples/recipes/serve-sim.yaml) on the embedded simulator.
#include "sweep/sweep.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "cli/server_options.h"
#include "cli/tokenizer_options.h"
#include "core/clock.h"
#include "core/files.h"
#include "core/interrupt.h"
#include "core/json_text.h"
#include "core/redact.h"
#include "core/strings.h"
#include "recipe/recipe.h"

namespace ib::cli {

namespace {

struct SweepCliOptions {
  sweep::SweepOptions sweep;
  std::vector<std::string> recipes;
  std::string runners;
  std::string runs_dir = "runs";
  std::string db;
  // --concurrency N,N,...: lists checked whole by integer_list (CLI11's own delimiter would drop
  // empty items, so "1,,4" and "4," would pass), then read in run().
  std::vector<std::string> concurrency_lists;
  std::string api = "completions";
  std::string slurm_partition;
  std::string slurm_account;
  ServerOptions server = [] {
    ServerOptions d;
    d.startup_timeout_s = sweep::SweepOptions{}.startup_timeout_s;
    d.point_timeout_s = sweep::SweepOptions{}.point_timeout_s;
    return d;
  }();
  bool no_expect = false;
  int prompts_per_conc = 0, min_prompts = 0, warmups_per_conc = -1;
  double range_ratio = 0;
  int64_t seed = -1;
  std::vector<std::string> traces;
  int64_t max_traces = 0;
  int warmup_requests_per_lane = -1;
  double agentic_duration = 0;
  double time_scale = 0;
  std::string session_routing, flush_cache;
  int64_t session_timeout = 0;
  double flush_timeout = 0;
  std::string gpu_power = "auto";
  bool json = false;
  int repeat = 1;  // --repeat N: the whole sweep N times, one run each (one repeat group)
  // Eval rows (docs/evals.md).
  int64_t eval_limit = 0;
  std::string eval_prompt_style = "chat";
  std::string thresholds;
  TokenizerOptions tokenizer;
};

// The bundled example: in the working directory, else in the source tree this binary was built
// from.
std::string bundled_recipe() {
  const std::string rel = "examples/recipes/serve-sim.yaml";
  std::error_code ec;
  if (std::filesystem::exists(rel, ec)) return rel;
#ifdef INFERBENCH_SOURCE_DIR
  std::string src = std::string(INFERBENCH_SOURCE_DIR) + "/" + rel;
  if (std::filesystem::exists(src, ec)) return src;
#endif
  return rel;
}

// This process's command line, for the run record.
std::vector<std::string> own_argv() {
  std::vector<std::string> out;
  auto text = read_file("/proc/self/cmdline");
  if (!text) return out;
  size_t start = 0;
  while (start < text->size()) {
    size_t end = text->find('\0', start);
    if (end == std::string::npos) end = text->size();
    out.push_back(text->substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// One run of the sweep (one repeat of --repeat): prints its table and summary; the outcome JSON
// is added to `outcomes`.
int run_once(const SweepCliOptions& c, const sweep::SweepOptions& o, std::FILE* table,
             boost::json::array& outcomes) {
  fmt::print(table, "sweep: {}\n", fmt::join(c.recipes, " "));
  std::fflush(table);
  auto outcome = sweep::run_sweep(o, table);
  if (!outcome) {
    return fail("sweep", usage_error(redact_text(outcome.error().message)));
  }
  // Notes were said as they arose (with progress on); said once, not again here.
  if (!o.show_progress) {
    for (const auto& n : outcome->notes) fmt::print(table, "note: {}\n", redact_text(n));
  }
  // The final summary: every point that did not succeed, with its reason.
  const std::string failures = sweep::not_measured_text(outcome->points);
  if (!failures.empty()) fmt::print(table, "not measured:\n{}", redact_text(failures));
  for (const auto& e : outcome->errors)
    fmt::print(stderr, "inferbench sweep: {}\n", redact_text(e));
  // Points by status, in a fixed order, only the statuses that occurred.
  std::string counts;
  for (metrics::PointStatus s : {metrics::PointStatus::kOk, metrics::PointStatus::kInvalid,
                                 metrics::PointStatus::kFailed, metrics::PointStatus::kSkipped,
                                 metrics::PointStatus::kReused, metrics::PointStatus::kResumed}) {
    const auto n = std::count_if(outcome->points.begin(), outcome->points.end(),
                                 [&](const metrics::PointResult& p) { return p.status == s; });
    if (n > 0)
      counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, metrics::status_name(s));
  }
  fmt::print(table, "run {} (id {}): {}; points: {}\nresults: {} (database {})\n",
             outcome->run_name, outcome->run_id, store::status_name(outcome->status()),
             counts.empty() ? "none" : counts, outcome->run_dir.string(),
             store::database_name(outcome->db.string()));
  outcomes.push_back(redacted(outcome->to_json()));
  if (outcome->interrupted) {
    fmt::print(stderr,
               "inferbench sweep: interrupted; finished points are kept (continue with "
               "--resume {})\n",
               outcome->run_name);
    return interrupted_exit_code();
  }
  if (const std::string why = outcome->nothing_measured(); !why.empty()) {
    return fail("sweep",
                Error{fmt::format("run {}: nothing was measured: {}", outcome->run_name, why)});
  }
  if (const std::string why = outcome->not_submission(); !why.empty()) {
    fmt::print(stderr, "inferbench sweep: run {}: {}\n", outcome->run_name, why);
  }
  if (outcome->all_resumed()) {
    fmt::print(table, "run {} was already complete: nothing left to measure\n", outcome->run_name);
  }
  return outcome->status() == store::RunStatus::kOk ? kExitOk : kExitFailure;
}

// The recipes to run (none given: the bundled example), expanded into files (nullopt: go on;
// else the exit code).
std::optional<int> set_sweep_recipes(SweepCliOptions& c) {
  if (c.recipes.empty()) c.recipes.push_back(bundled_recipe());
  // A directory stands for its YAML files: say which, and record the files (a --resume reads
  // the same ones).
  std::vector<std::filesystem::path> given(c.recipes.begin(), c.recipes.end());
  for (const auto& line : recipe::describe_expansion(given)) {
    fmt::print(stderr, "inferbench sweep: {}\n", line);
  }
  auto files = recipe::expand_recipe_paths(given);
  if (!files) {
    return fail("sweep", with_kind(files.error(), ErrorKind::kUsage));
  }
  c.sweep.recipes = std::move(*files);
  return std::nullopt;
}

// Where results go, --concurrency, --api and the server options, into the sweep's options
// (nullopt: go on; else the exit code).
std::optional<int> set_sweep_run_options(SweepCliOptions& c) {
  sweep::SweepOptions& o = c.sweep;
  o.runners = c.runners;
  o.runs_dir = c.runs_dir;
  o.db = c.db;
  if (o.db.empty()) {
    // A team's store for every sweep of this shell (docs/store.md).
    if (const char* env = std::getenv("INFERBENCH_DB"); env && *env) o.db = env;
  }
  for (const auto& list : c.concurrency_lists) {
    for (const auto& item : split(list, ',')) o.concurrencies.push_back(std::stoll(item));
  }
  auto api = openai::parse_api(c.api);
  if (!api) {
    return fail("sweep", usage_error(fmt::format("--api must be 'completions' or 'chat' (got '{}')",
                                                 c.api)));
  }
  o.api = *api;
  o.env_trace = !c.server.no_env_trace;
  o.extra_server_args = c.server.args;
  o.startup_timeout_s = c.server.startup_timeout_s;
  o.point_timeout_s = c.server.point_timeout_s;
  o.check_expect = !c.no_expect;
  return std::nullopt;
}

// The options that replace the recipes' `workload:` values, the agentic rows' and the
// tokenizer's included.
void set_sweep_workload_overrides(SweepCliOptions& c) {
  sweep::SweepOptions& o = c.sweep;
  // Unset (0 / -1) means: the recipe's `workload:` value, else the default.
  if (c.prompts_per_conc > 0) o.workload.prompts_per_conc = c.prompts_per_conc;
  if (c.min_prompts > 0) o.workload.min_prompts = c.min_prompts;
  if (c.warmups_per_conc >= 0) o.workload.warmups_per_conc = c.warmups_per_conc;
  if (c.range_ratio > 0) o.workload.range_ratio = c.range_ratio;
  if (c.seed >= 0) o.workload.seed = static_cast<uint64_t>(c.seed);
  o.workload.traces = c.traces;
  o.workload.tokenizer = c.tokenizer.path;
  o.workload.chat_template = c.tokenizer.chat_template;
  if (c.max_traces > 0) o.workload.max_traces = c.max_traces;
  if (c.warmup_requests_per_lane >= 0)
    o.workload.warmup_requests_per_lane = c.warmup_requests_per_lane;
  if (c.agentic_duration > 0) o.workload.agentic_duration_s = c.agentic_duration;
  if (c.time_scale > 0) o.workload.time_scale = c.time_scale;
  o.workload.session_routing = c.session_routing;
  if (c.session_timeout > 0) o.workload.session_timeout = c.session_timeout;
  o.workload.flush_cache = c.flush_cache;
  if (c.flush_timeout > 0) o.workload.flush_timeout = c.flush_timeout;
}

// --gpu-power, and the Slurm options with the power tool a Slurm job runs (nullopt: go on;
// else the exit code).
std::optional<int> set_sweep_power_options(SweepCliOptions& c) {
  sweep::SweepOptions& o = c.sweep;
  auto power = load::parse_power_mode(c.gpu_power);
  if (!power) {
    return fail(
        "sweep",
        usage_error(fmt::format(
            "--gpu-power must be auto, off, nvidia-smi, amd-smi or dcgm (got '{}')", c.gpu_power)));
  }
  o.power = *power;
  o.slurm.partition = c.slurm_partition;
  o.slurm.account = c.slurm_account;
  // The Slurm job samples GPU power beside the server with the tool --gpu-power names (auto:
  // whichever the node has); dcgm and off start none there.
  o.slurm.gpu_power = *power == load::PowerMode::kOff || *power == load::PowerMode::kDcgm
                          ? std::string("off")
                          : c.gpu_power;
  return std::nullopt;
}

// The eval rows' options: prompt style, problem limit, gate thresholds (nullopt: go on; else
// the exit code).
std::optional<int> set_sweep_eval_options(SweepCliOptions& c) {
  sweep::SweepOptions& o = c.sweep;
  auto eval_style = workload::gsm8k::parse_style(c.eval_prompt_style);
  if (!eval_style) {
    return fail("sweep",
                usage_error(fmt::format(
                    "--eval-prompt-style must be chat, chat-single-turn or completions (got '{}')",
                    printable(c.eval_prompt_style, 40))));
  }
  o.workload.eval_prompt.style = *eval_style;
  o.workload.eval_limit = static_cast<size_t>(c.eval_limit);
  if (!c.thresholds.empty()) {
    auto t = recipe::load_eval_thresholds(c.thresholds);
    if (!t) {
      return fail("sweep", with_kind(t.error(), ErrorKind::kUsage));
    }
    o.eval_thresholds = std::move(*t);
  }
  return std::nullopt;
}

// What the run records of this process (its executable, its command line with the secrets
// hidden) and whether it shows progress.
void set_sweep_process_options(SweepCliOptions& c) {
  sweep::SweepOptions& o = c.sweep;
  const std::vector<std::string> argv = own_argv();
  o.inferbench_exe = self_executable();
  // A live line on a terminal, a plain line every few seconds in a log (core/progress.h).
  o.show_progress = true;
  // What --server-arg hands the server (--api-key X) is hidden in everything the run records.
  register_server_secrets(c.server);
  for (const auto& a : redact_argv(argv)) o.command_line += (o.command_line.empty() ? "" : " ") + a;
  const std::vector<std::string> shown = redact_argv(argv);
  for (size_t i = 0; i < shown.size(); ++i) {
    if (shown[i] == "--resume") {
      ++i;  // and its value
    } else if (shown[i].rfind("--resume=", 0) != 0) {
      o.argv.push_back(i == 0 ? std::string("inferbench") : shown[i]);
    }
  }
}

// --launcher checked; --endpoint alone means the endpoint launcher (nullopt: go on; else the
// exit code).
std::optional<int> set_sweep_launcher(SweepCliOptions& c) {
  sweep::SweepOptions& o = c.sweep;
  if (!o.launcher.empty() && o.launcher != "local" && o.launcher != "slurm" &&
      o.launcher != "endpoint") {
    return fail("sweep",
                usage_error(fmt::format("--launcher must be local, slurm or endpoint (got '{}')",
                                        o.launcher)));
  }
  if (!o.endpoint_url.empty() && o.launcher.empty()) o.launcher = "endpoint";
  return std::nullopt;
}

// --repeat with --reuse or --resume is a usage error (nullopt: go on; else the exit code).
std::optional<int> check_sweep_repeat(const SweepCliOptions& c) {
  if (c.repeat > 1 && c.sweep.reuse) {
    return fail("sweep",
                usage_error("--repeat cannot be combined with --reuse (a repeat would copy the "
                            "first one's points instead of measuring them again)"));
  }
  if (c.repeat > 1 && !c.sweep.resume.empty()) {
    return fail(
        "sweep",
        usage_error(
            "--repeat cannot be combined with --resume (resume one repeat's run by itself)"));
  }
  return std::nullopt;
}

// Every run of the sweep (--repeat N of them), then the outcome JSON with --json; the exit
// code of the last run that did not succeed.
int run_sweep_repeats(SweepCliOptions& c) {
  sweep::SweepOptions& o = c.sweep;
  std::FILE* table = c.json ? stderr : stdout;
  // --repeat N: N runs of the same plan, one after the other, recorded as one repeat group (each
  // run's options.repeat = {group, index, count}; `inferbench compare` reads a group as repeated
  // measurements). The group is named by the first run's start time and this process.
  if (c.repeat > 1) {
    o.repeat_count = c.repeat;
    o.repeat_group = fmt::format("{}-{}", utc_time_text("%Y%m%d-%H%M%S"), ::getpid());
  }
  boost::json::array outcomes;
  int rc = kExitOk;
  for (int rep = 1; rep <= std::max(1, c.repeat); ++rep) {
    o.repeat_index = c.repeat > 1 ? rep : 0;
    if (c.repeat > 1)
      fmt::print(table, "repeat {} of {} (group {})\n", rep, c.repeat, o.repeat_group);
    const int one = run_once(c, o, table, outcomes);
    if (one == kExitUsage || interrupt_requested()) return one;
    if (one != kExitOk) rc = one;
  }
  if (c.json) {
    std::string text =
        json_text(c.repeat > 1 ? boost::json::value(outcomes) : outcomes.front()) + "\n";
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  return rc;
}

int run(SweepCliOptions& c) {
  if (auto rc = set_sweep_recipes(c)) return *rc;
  if (auto rc = set_sweep_run_options(c)) return *rc;
  set_sweep_workload_overrides(c);
  if (auto rc = set_sweep_power_options(c)) return *rc;
  if (auto rc = set_sweep_eval_options(c)) return *rc;
  set_sweep_process_options(c);
  if (auto rc = set_sweep_launcher(c)) return *rc;
  install_interrupt_handlers();
  if (auto rc = check_sweep_repeat(c)) return *rc;
  return run_sweep_repeats(c);
}

// What to run: the recipes, the runners file, and which keys and labels of them.
void add_sweep_recipe_options(CLI::App* app, SweepCliOptions& c) {
  sweep::SweepOptions& o = c.sweep;
  app->add_option("recipes", c.recipes, "Recipe files (default: examples/recipes/serve-sim.yaml)")
      ->check(existing_path());
  app->add_option("--runners", c.runners, "Runners file (hardware labels, launcher per label)")
      ->check(input_file());
  app->add_option("--keys", o.keys, "Only config keys matching these globs");
  app->add_option("--labels", o.labels, "Sweep labels: canary, fail-fast, trimmed concurrency")
      ->delimiter(',');
}

// Where results go, and which earlier ones a run continues or reuses.
void add_sweep_result_options(CLI::App* app, SweepCliOptions& c) {
  sweep::SweepOptions& o = c.sweep;
  app->add_option("--runs-dir", c.runs_dir, "Where run folders are created")
      ->capture_default_str()
      ->check(folder_to_write());
  app->add_option("--db", c.db,
                  "Results database: a file, or a team's postgresql:// URL (default: "
                  "$INFERBENCH_DB, else <runs-dir>/inferbench.db; docs/store.md)")
      ->check(database_to_write());
  app->add_option("--db-wait", o.db_wait_s,
                  "Seconds the end of a run waits for a database that went away to take the "
                  "results held for it (they are kept in the run folder's unstored.json after)")
      ->capture_default_str()
      ->check(real_in(0, 86400));
  app->add_option("--resume", o.resume,
                  "Continue run RUN (id or name): completed points are skipped");
  app->add_flag(
      "--reuse", o.reuse,
      "Reuse points measured earlier (same fingerprint, concurrency, workload, tool version)");
}

// How servers are started: the launcher, an endpoint, the Slurm options.
void add_sweep_launcher_options(CLI::App* app, SweepCliOptions& c) {
  sweep::SweepOptions& o = c.sweep;
  app->add_option("--launcher", o.launcher,
                  "local | slurm | endpoint (default: the runners file's, else local)");
  app->add_option("--endpoint", o.endpoint_url,
                  "Base URL of a running server, http://HOST:PORT with or without a trailing /v1 "
                  "(implies --launcher endpoint)")
      ->transform(endpoint_url());
  app->add_option("--stand-in", o.stand_in,
                  "serve-sim: rows without a serve block (InferenceX's master configs) are served "
                  "by serve-sim standing in for their engine, a disaggregated row role by role; "
                  "results are the simulator's (framework serve-sim)")
      ->check(CLI::IsMember({"serve-sim"}));
  app->add_option("--slurm-partition", c.slurm_partition, "Slurm partition");
  app->add_option("--slurm-account", c.slurm_account, "Slurm account");
  add_integer(app, "--slurm-gpus-per-node", o.slurm.gpus_per_node,
              "GPUs of one Slurm node: a disaggregated deployment's worker spans ceil(its GPUs / "
              "this) nodes (default 8)",
              1, 1024);
}

// The options that replace the recipes' workload values: concurrencies, requests, lengths,
// seed, API.
void add_sweep_workload_options(CLI::App* app, SweepCliOptions& c) {
  app->add_option("--concurrency", c.concurrency_lists,
                  "Replace every row's concurrencies (N,N,...; repeatable)")
      ->transform(integer_list(1, kMaxConcurrency));
  add_integer(app, "--prompts-per-conc", c.prompts_per_conc,
              "Requests per point = max(min-prompts, this x conc) (default: the recipe's "
              "workload block, else 10)",
              1, kMaxRequests);
  add_integer(app, "--min-prompts", c.min_prompts,
              "Least requests per point (default: the recipe's, else 1)", 1, kMaxRequests);
  add_integer(app, "--warmups-per-conc", c.warmups_per_conc,
              "Warmup requests = this x conc (default: the recipe's, else 2)", 0, kMaxRequests);
  app->add_option("--range-ratio", c.range_ratio,
                  "Prompt and output lengths uniform in [ratio x L, L] (default: the recipe's, "
                  "else 0.8, as InferenceX runs its rows; bench's default is 1, exact lengths)")
      ->transform(positive_real(1));
  add_integer(app, "--seed", c.seed, "Prompt seed (default: the recipe's, else 0)", 0, kMaxSeed);
  app->add_option("--api", c.api, "completions | chat")->capture_default_str();
}

// The agentic-coding rows' options (AgentX replay).
void add_sweep_agentic_options(CLI::App* app, SweepCliOptions& c) {
  app->add_option("--traces", c.traces,
                  "agentic-coding rows: Weka traces to replay (files, .jsonl corpora, folders; "
                  "default: the recipe's workload.traces)")
      ->check(existing_path());
  add_integer(app, "--max-traces", c.max_traces, "agentic-coding: replay the first N traces only",
              1, kMaxTraces);
  add_integer(app, "--warmup-requests-per-lane", c.warmup_requests_per_lane,
              "agentic-coding: cache-pressure warmup requests per lane (default 10; "
              "agentx-fast 1)",
              0, kMaxWarmupsPerLane);
  app->add_option("--agentic-duration", c.agentic_duration,
                  "agentic-coding: recorded seconds to replay (default: the row's, 3600; "
                  "agentx-fast 1200)")
      ->transform(positive_real(kMaxSeconds));
  app->add_option("--time-scale", c.time_scale,
                  "agentic-coding: divide every recorded delay, cap and duration by K (for "
                  "serve-sim --time-scale K; such points are not submission-valid)")
      ->transform(positive_real(kMaxTimeScale));
  app->add_option("--session-routing", c.session_routing,
                  "agentic-coding: what each request tells a router of its session: none | "
                  "dynamo-header (X-Dynamo-Session-ID) | dynamo-nvext (nvext.session_control) | "
                  "smg-routing-key (X-SMG-Routing-Key) (default: the recipe's "
                  "workload.session-routing, else none)")
      ->check(CLI::IsMember({"none", "dynamo-header", "dynamo-nvext", "smg-routing-key"}));
  add_integer(app, "--session-timeout", c.session_timeout,
              "agentic-coding: dynamo-nvext's session timeout in seconds (default 3600)", 1,
              30 * 86400);
  app->add_option("--flush-cache", c.flush_cache,
                  "Empty every worker's prefix cache before each point: the endpoint to POST "
                  "(/flush_cache as SGLang and serve-sim, /reset_prefix_cache as vLLM's dev "
                  "mode), or off (default: the recipe's workload.flush-cache)")
      ->check([](const std::string& v) -> std::string {
        if (v == "off") return "";
        if (v.size() < 2 || v[0] != '/' || v.find_first_of(" ?#\r\n\t") != std::string::npos) {
          return "expected an endpoint path such as /flush_cache, or off";
        }
        return "";
      });
  app->add_option("--flush-timeout", c.flush_timeout,
                  "Seconds to retry a cache flush while the previous point's requests drain "
                  "(default 120)")
      ->transform(positive_real(3600));
}

// What is observed beside each point: the servers' metrics and GPU power.
void add_sweep_telemetry_options(CLI::App* app, SweepCliOptions& c) {
  sweep::SweepOptions& o = c.sweep;
  app->add_option("--server-metrics-url", o.server_metrics_urls,
                  "Prometheus endpoints to scrape during each point (repeatable; default: the "
                  "server's /metrics)");
  app->add_option("--slice-duration", o.slice_s, "Seconds between server-metrics scrapes")
      ->capture_default_str()
      ->transform(positive_real(kMaxSeconds));
  // `o` lives as long as the function register_sweep returns, which holds it.
  app->add_flag_callback(
      "--no-server-metrics", [&o] { o.scrape_server_metrics = false; },
      "Do not scrape the servers' metrics during points");
  app->add_option("--gpu-power", c.gpu_power,
                  "GPU power during points: auto (dcgm-exporter series in the server metrics, else "
                  "nvidia-smi or amd-smi where the server runs: this host, or the Slurm job) | "
                  "off | nvidia-smi | amd-smi | dcgm")
      ->capture_default_str();
  app->add_flag("--require-power", o.require_power,
                "Fail points whose GPU power is missing or not valid");
  app->add_flag("--continuous-usage", o.continuous_usage,
                "Ask for a token count on every streamed event "
                "(stream_options.continuous_usage_stats): per-token ITL where a server sends "
                "several tokens an event (speculative decoding, --stream-interval)");
}

// The eval rows' options (docs/evals.md): problems, prompt style, gate thresholds.
void add_sweep_eval_options(CLI::App* app, SweepCliOptions& c) {
  sweep::SweepOptions& o = c.sweep;
  add_integer(app, "--eval-limit", c.eval_limit,
              "Eval rows: only the first N GSM8K problems (0 = all 1319)", 0, kMaxRequests)
      ->capture_default_str();
  app->add_option("--eval-prompt-style", c.eval_prompt_style,
                  "Eval rows: chat (few-shot as multi-turn messages, as InferenceX) | "
                  "chat-single-turn | completions")
      ->capture_default_str();
  app->add_option("--thresholds", c.thresholds,
                  "Eval gate thresholds in InferenceX's shape (default.<task>, "
                  "models.<model-prefix>.<task>); tasks without one use --min-score")
      ->check(input_file());
  app->add_option("--min-score", o.eval_min_score,
                  "Eval gate threshold when --thresholds gives none")
      ->capture_default_str()
      ->transform(real_in(0, 1));
}

// How the run goes: --fail-fast, expect checks, the servers' options, --repeat, --json.
void add_sweep_run_options(CLI::App* app, SweepCliOptions& c) {
  sweep::SweepOptions& o = c.sweep;
  app->add_flag("--fail-fast", o.fail_fast, "A failure stops the rest of its group");
  app->add_flag("--no-expect", c.no_expect,
                "Do not check the recipes' expect blocks (e.g. against an endpoint, whose log "
                "cannot be read)");
  add_server_options(app, c.server, ServerOptionSet::kServersAndPoints);
  add_integer(app, "--repeat", c.repeat,
              "Run the whole sweep N times, one run each, recorded as one repeat group "
              "(for `inferbench compare`'s interval over runs)",
              1, 1000);
  app->add_flag("--json", c.json, "Print the outcome as JSON on stdout (the table goes to stderr)");
}

}  // namespace

RunFn register_sweep(CLI::App& root) {
  auto c = std::make_shared<SweepCliOptions>();
  CLI::App* app = root.add_subcommand(
      "sweep",
      "Run recipes' benchmark matrix and store the results (default: the bundled "
      "simulator recipe)");
  add_sweep_recipe_options(app, *c);
  add_sweep_result_options(app, *c);
  add_sweep_launcher_options(app, *c);
  add_sweep_workload_options(app, *c);
  add_sweep_agentic_options(app, *c);
  add_sweep_telemetry_options(app, *c);
  add_tokenizer_options(app, c->tokenizer,
                        "prompts of exactly the row's ISL as the server counts them; both options "
                        "replace the recipe's workload.tokenizer and workload.chat-template");
  add_sweep_eval_options(app, *c);
  add_sweep_run_options(app, *c);
  return [c]() { return run(*c); };
}

}  // namespace ib::cli
