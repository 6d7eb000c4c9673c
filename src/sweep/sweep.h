// The main job (docs/architecture.md): recipes → plan (planner.h) → for each server configuration a
// ServerSession (launch/session.h: launch, health, effective configuration, `expect`), then each
// point's workload through the run loop into a PointResult, recorded by the RunRecorder
// (recorder.h) into the results database and the run folder. Resumable (--resume), reusable
// (--reuse), interruptible.
#pragma once

#include <boost/json.hpp>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/expected.h"
#include "launch/slurm.h"
#include "load/power_sampler.h"
#include "metrics/point.h"
#include "openai/request.h"
#include "recipe/eval_thresholds.h"
#include "store/store.h"
#include "sweep/planner.h"

namespace ib::sweep {

struct SweepOptions {
  std::vector<std::filesystem::path> recipes;  // master-config files
  std::filesystem::path runners;               // optional runners file
  std::vector<std::string> keys;               // fnmatch globs; empty: all keys
  std::vector<std::string> labels;             // sweep labels (govern/labels.h); empty: full sweep
  /// "serve-sim": rows without a serve block are served by serve-sim standing in for their
  /// engine (stand_in_serve_sim); "": such rows need --launcher endpoint.
  std::string stand_in;
  std::filesystem::path runs_dir = "runs";
  std::filesystem::path db;  // empty: <runs_dir>/inferbench.db (database())
  std::string resume;        // run id or name to continue
  /// How long the end of the run waits for a database that went away to take the writes held
  /// for it (docs/store.md, "When the database goes away").
  double db_wait_s = 60;
  bool reuse = false;
  std::string launcher;      // local | slurm | endpoint; empty: the runners file's, else local
  std::string endpoint_url;  // for the endpoint launcher
  launch::SlurmOptions slurm;
  std::vector<int64_t> concurrencies;  // replaces every row's concurrency list when given
  /// Command-line workload settings over the recipe's `workload:` block and the defaults
  /// (InferenceX's: 10 × conc prompts, 2 × conc warmups, range ratio 0.8, seed 0).
  WorkloadOverrides workload;
  openai::Api api = openai::Api::kCompletions;
  double point_timeout_s = 1800;
  /// --continuous-usage: ask for a token count on every event (stream_options.
  /// continuous_usage_stats), so that per-token ITL is known where a server sends several tokens
  /// an event (docs/metrics.md, "Tokens per event").
  bool continuous_usage = false;
  // Server metrics during each point (docs/telemetry.md).
  bool scrape_server_metrics = true;
  std::vector<std::string> server_metrics_urls;  // empty: the server's /metrics
  double slice_s = 1.0;
  load::PowerMode power = load::PowerMode::kAuto;  // GPU power sampling (docs/telemetry.md)
  bool require_power = false;
  double startup_timeout_s = 900;
  bool fail_fast = false;    // every group fail-fast, whatever the labels say
  bool env_trace = true;     // trace which recipe environment variables the server reads
  bool check_expect = true;  // --no-expect: measure without checking the recipes' `expect`
  std::vector<std::string> extra_server_args;
  std::filesystem::path inferbench_exe;  // what "inferbench" in a serve command means
  std::string command_line;
  /// The command's arguments with the secrets hidden and without --resume: what `runs` prints
  /// to continue the run.
  std::vector<std::string> argv;
  bool show_progress = true;
  /// Eval gates (docs/evals.md): thresholds in InferenceX's shape (none: every task's threshold
  /// is `eval_min_score`), resolved by the row's model-prefix.
  std::optional<recipe::EvalThresholds> eval_thresholds;
  double eval_min_score = recipe::kDefaultMinScore;
  /// `sweep --repeat N`: this run is repeat `repeat_index` (1-based) of `repeat_count`, all of
  /// them one group (recorded in the run's options as repeat: {group, index, count}; compare
  /// takes a group's runs as repeated measurements). repeat_count <= 1: not a repeat.
  int repeat_index = 0;
  int repeat_count = 0;
  std::string repeat_group;
  /// More entries for the run's options in the store (`inferbench tune` tags its runs).
  boost::json::object extra_run_options;

  /// The results database: `db`, else <runs_dir>/inferbench.db.
  std::filesystem::path database() const { return db.empty() ? runs_dir / "inferbench.db" : db; }
};

struct SweepOutcome {
  int64_t run_id = 0;
  std::string run_name;
  std::filesystem::path run_dir;
  std::filesystem::path db;
  std::vector<metrics::PointResult> points;
  std::vector<std::string> notes;   // plan notes, warnings, said once
  std::vector<std::string> errors;  // server failures with log tails, write errors
  bool interrupted = false;
  /// ok | failed | interrupted. A run with a point that fails it (metrics::PointResult::
  /// fails_run: failed, skipped, or invalid for a reason the user did not choose) is failed, and
  /// so is one with no point at all: measuring nothing is no success.
  store::RunStatus status() const;
  /// Why the run has no successful point ("the plan has no points ...", "every point failed",
  /// ...); empty when some point succeeded or was measured as the user chose.
  std::string nothing_measured() const;
  /// When no point is submission-valid but some were measured as the user chose (a time-scaled
  /// replay): "measured 3 points, none submission-valid: time-scaled"; empty otherwise.
  std::string not_submission() const;
  /// True when every point was resumed: --resume of a run that was already complete.
  bool all_resumed() const;
  boost::json::object to_json() const;
};

/// Runs the sweep, printing the table to `table_out` as points finish. Error only for problems
/// found before anything ran (invalid recipes or options, unknown --resume run, database).
Expected<SweepOutcome> run_sweep(const SweepOptions& options, std::FILE* table_out);

/// Steps 2-4 of run_sweep (run folder and database, the servers and points, the summary) on a plan
/// made elsewhere (`inferbench tune` plans its own passes). `by_key` maps every config key of the
/// plan to its entry (which must outlive the call); `labels` are recorded with the run.
/// options.recipes still names the recipe files (their git revision is recorded).
Expected<SweepOutcome> run_planned(const SweepOptions& options, const SweepPlanned& planned,
                                   std::map<std::string, const recipe::ConfigEntry*> by_key,
                                   std::vector<std::string> labels, std::FILE* table_out);

/// The point table, streamed: header, then one row per point as it finishes.
std::string sweep_table_header();
std::string sweep_table_row(const metrics::PointResult& p);

/// The final "not measured" list: the points that fail the run (PointResult::fails_run), those of
/// one configuration and workload with the same status and reason on one line ("sim-fast isl 32 /
/// osl 8 conc 1,2,4: invalid: ..."). Empty when no point fails the run.
std::string not_measured_text(const std::vector<metrics::PointResult>& points);

}  // namespace ib::sweep
