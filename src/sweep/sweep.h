// The main job (issue 6): recipes → plan → for each server configuration, launch the server once
// (local, Slurm or an endpoint), wait until healthy, capture its effective configuration and check
// the recipe's `expect`, run every concurrency point, stop it; store everything in the results
// database and the run's artifacts folder. Resumable (--resume), reusable (--reuse), interruptible.
#pragma once

#include <boost/json.hpp>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/expected.h"
#include "launch/slurm.h"
#include "openai/request.h"

namespace ib {

struct SweepOptions {
  std::vector<std::filesystem::path> recipes;  // master-config files
  std::filesystem::path runners;               // optional runners file
  std::vector<std::string> keys;               // fnmatch globs; empty: all keys
  std::vector<std::string> labels;             // sweep labels (govern/labels.h); empty: full sweep
  std::filesystem::path runs_dir = "runs";
  std::filesystem::path db;  // empty: <runs_dir>/inferbench.db
  std::string resume;        // run id or name to continue
  bool reuse = false;
  std::string launcher;      // local | slurm | endpoint; empty: the runners file's, else local
  std::string endpoint_url;  // for the endpoint launcher
  launch::SlurmOptions slurm;
  std::vector<int64_t> concurrencies;  // replaces every row's concurrency list when given
  int prompts_per_conc = 4;            // requests per point = max(min_prompts, this × conc)
  int min_prompts = 8;
  int warmups_per_conc = 1;  // warmup requests = this × conc
  Api api = Api::kCompletions;
  double point_timeout_s = 1800;
  double startup_timeout_s = 900;
  bool fail_fast = false;  // every group fail-fast, whatever the labels say
  bool env_trace = true;   // trace which recipe environment variables the server reads
  std::vector<std::string> extra_server_args;
  std::filesystem::path inferbench_exe;  // what "inferbench" in a serve command means
  std::string command_line;
  bool show_progress = true;
};

/// One point as the sweep saw it.
struct SweepPointOutcome {
  std::string config_key;
  std::string fingerprint;
  int64_t concurrency = 0;
  /// ok | failed | invalid (expect failed) | reused | resumed (done earlier in this run) |
  /// skipped (fail-fast or interrupt)
  std::string status;
  std::string error;
  int64_t reused_from_run = 0;
  boost::json::object headline;  // request/output throughput, p50 TTFT/TPOT, interactivity, ...
  std::string result_file;       // relative to the run folder
};

struct SweepOutcome {
  int64_t run_id = 0;
  std::string run_name;
  std::filesystem::path run_dir;
  std::filesystem::path db;
  std::vector<SweepPointOutcome> points;
  std::vector<std::string> notes;   // plan notes, warnings
  std::vector<std::string> errors;  // server failures with log tails
  bool interrupted = false;
  std::string status() const;  // ok | failed | interrupted
  boost::json::object to_json() const;
};

/// Runs the sweep, printing the table to `table_out` as points finish. Error only for problems
/// found before anything ran (invalid recipes or options, unknown --resume run, database).
Expected<SweepOutcome> run_sweep(const SweepOptions& options, std::FILE* table_out);

std::string sweep_table_header();
std::string sweep_table_row(const SweepPointOutcome& p);

}  // namespace ib
