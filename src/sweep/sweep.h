// The main job, first version: start the embedded simulator as a child process, run one
// benchmark point per concurrency, store each result JSON under runs/<timestamp>/, and stop the
// server whatever happens. The point list is data (SweepSpec); recipes replace it later.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "core/expected.h"
#include "load/bench.h"

namespace ib {

struct SweepPoint {
  int concurrency = 1;
  int num_prompts = 8;
  int warmups = 1;
};

struct SweepSpec {
  std::string name;
  std::vector<std::string> server_args;  // extra `serve-sim` arguments
  std::string model = "sim-model";
  Api api = Api::kCompletions;
  int isl = 512;
  int osl = 64;
  double range_ratio = 0.8;
  uint64_t seed = 0;
  std::vector<SweepPoint> points;
};

/// The bundled example: concurrency 1, 4, 16, 64 against serve-sim, a few seconds each.
SweepSpec default_sweep_spec();

struct SweepOptions {
  std::filesystem::path runs_dir = "runs";
  std::filesystem::path inferbench_exe;  // the binary providing `serve-sim`
  std::chrono::seconds startup_timeout{30};
  bool show_progress = true;
};

struct SweepPointResult {
  SweepPoint point;
  bool ok = false;
  std::string error;            // why the point failed
  std::filesystem::path result_path;
  BenchMetrics metrics;
};

struct SweepOutcome {
  std::filesystem::path run_dir;
  std::vector<SweepPointResult> points;
  bool interrupted = false;
  std::string server_error;  // the server failed to start or died
  std::string server_url;    // where the server listened, once healthy
  bool ok() const;
};

/// Runs the sweep, printing one table row per point to `table_out` as each finishes.
/// Error only when nothing could be started (run folder not creatable, server never healthy is
/// reported in the outcome instead, with the log tail).
Expected<SweepOutcome> run_sweep(const SweepSpec& spec, const SweepOptions& options,
                                 std::FILE* table_out);

/// The table header and one row (concurrency, requests/s, output tok/s, median TTFT, median
/// TPOT, median interactivity, failed).
std::string sweep_table_header();
std::string sweep_table_row(const SweepPointResult& r);

}  // namespace ib
