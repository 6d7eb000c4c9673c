// `inferbench tune` (issue 19, docs/tune.md), the whole run: load the recipe, make the
// candidates, stage 1 (verify: drop the no-ops before any benchmark request), the SLO search
// (tput-at-slo), stage 2 (screen: successive halving against an interleaved baseline), stage 3
// (confirm: repeated A/B with compare's semantics, guards, accuracy) and the winner's recipe diff
// and perf-changelog entry. Every measurement is a sweep run in the store, tagged with the
// tuning's id, so a resumed tuning reads back what was measured (tune/blocks.h).
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/expected.h"
#include "sweep/sweep.h"
#include "tune/report.h"

namespace ib::tune {

struct TuneOptions {
  std::filesystem::path recipe;
  std::string key;
  std::vector<std::string> knobs;
  // Objective (tune/objective.h) and where the tuned row is.
  std::string objective;  // empty: tput_per_gpu, or tput-at-slo with --slo
  std::vector<std::string> slos;
  int64_t conc = 0;  // 0: the base row's largest concurrency
  bool minimize = false;
  RowSelector row;
  int64_t search_min = 1, search_max = 1024;
  double search_tolerance = 0.10;
  // Stage 2.
  int keep = 2, eta = 2, passes = 3;
  sweep::WorkloadOverrides screen_workload;
  // Stage 3.
  int repeats = 5;
  std::vector<std::string> guards;  // empty: the defaults
  bool no_guards = false;
  double guard_tolerance = 5;
  double accuracy_tolerance = 0.01;
  bool eval = false;  // also when the tuned row is an eval row
  sweep::WorkloadOverrides confirm_workload;
  bool pairs = false;  // pairs of the finalists (different knobs) are confirmed too
  int max_pairs = 6;
  double confidence = 0.95, min_effect = 2;
  uint64_t seed = 0;
  int resamples = 2000;
  int max_candidates = 64;
  std::string stop_after;  // "" | verify | screen
  // Where and how.
  std::filesystem::path dir;  // the tuning's folder (state, evidence, reports)
  std::string id;             // its id (the folder's name)
  bool resume = false;
  sweep::SweepOptions sweep;  // runs folder, database, inferbench, server arguments, timeouts
  std::vector<std::string> ignore_settings;
  bool show_progress = false;
  /// --resume: the server build the tuning started with (tune.json); a different one is refused.
  std::string expected_build_sha256;
};

/// Why the tuning stopped: a usage error (bad options or recipe, found before anything ran) or
/// a run error (it could not go on); the command maps the kind to its exit code.
using TuneFailure = Error;

/// Runs the tuning; the report also when interrupted (report.interrupted). `progress` gets one
/// line per step (may be empty).
struct TuneRun {
  TuneReport report;
  std::optional<TuneFailure> failure;
};
TuneRun run_tune(const TuneOptions& options,
                 const std::function<void(const std::string&)>& progress);

}  // namespace ib::tune
