// Measurement blocks of `inferbench tune` (docs/tune.md): every screening pass and every
// confirmation repeat is one sweep run (sweep::run_planned) of a few server configurations, tagged
// in the store with the tuning's id and the block's name. A resumed tuning asks for the same
// blocks in the same order (its decisions are functions of the stored values), finds each block's
// run again by that tag, and continues it as `sweep --resume` does: what was measured is read
// back, only the rest is measured.
#pragma once

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/expected.h"
#include "sweep/sweep.h"

namespace ib::tune {

/// Which fixed-seq-len row of the key is tuned (0 = any; the first that matches).
struct RowSelector {
  int64_t isl = 0, osl = 0, tp = 0;
};

/// The requests a measured point sent (measured + warmup), from its result JSON; 0 for a point
/// read back from the store.
int64_t requests_sent(const metrics::PointResult& p);

/// The program that serves every side (the serve command's argv[0], resolved), so that all
/// measurements of a tuning are of one server build. Not recorded for container runtimes and job
/// launchers (docker, podman, srun, ...): there the recipe's image is the build.
struct ServerBuild {
  std::string program;  // resolved path; empty: unknown
  std::string sha256;   // of the file; empty: not recorded
  uintmax_t size = 0;
  int64_t mtime_ns = 0;
  bool recorded() const { return !sha256.empty(); }
  /// "sha256:0123456789ab (/usr/bin/vllm)"; "" when not recorded.
  std::string describe() const;
};

/// The server build of `entry`'s tuned row with `sweep`'s server arguments (hashes the file).
ServerBuild server_build(const recipe::ConfigEntry& entry, const RowSelector& row,
                         const sweep::SweepOptions& sweep);

struct BlockOutcome {
  std::string run;                           // the store run's name
  std::vector<metrics::PointResult> points;  // in plan order
  bool interrupted = false;
  int64_t requests = 0;
};

class BlockRunner {
 public:
  /// `sweep`: the settings of every block's run (runs folder, database, inferbench, server
  /// arguments, workload overrides); `by_key` maps every config key a block may hold to its entry
  /// (kept alive by the caller). `resume`: look for the tuning's earlier runs first.
  BlockRunner(sweep::SweepOptions sweep, std::string tune_id, std::string tune_dir,
              std::map<std::string, const recipe::ConfigEntry*> by_key, bool resume,
              std::FILE* points_out);

  /// Runs block `name` (stage "search" | "screen" | "confirm"): one run of `configs`, in this
  /// order. An earlier run of the same block (a resumed tuning) is continued instead of measured
  /// again.
  Expected<BlockOutcome> run(const std::string& stage, const std::string& name,
                             const std::vector<sweep::ConfigPlan>& configs);

  /// Every block first checks that the server program is still the file `build` hashed (size and
  /// modification time): a rebuilt server would mix two builds in one comparison.
  void pin_build(ServerBuild build) { build_ = std::move(build); }

  /// A config key a later block may hold (a pair made after the screen).
  void add_entry(const std::string& key, const recipe::ConfigEntry* entry) { by_key_[key] = entry; }

  const sweep::SweepOptions& sweep() const { return sweep_; }

 private:
  Expected<std::string> earlier_run(const std::string& name);

  sweep::SweepOptions sweep_;
  std::string tune_id_, tune_dir_;
  std::map<std::string, const recipe::ConfigEntry*> by_key_;
  bool resume_ = false;
  bool looked_up_ = false;
  std::map<std::string, std::string> earlier_;  // block -> run name
  std::FILE* points_out_ = nullptr;
  ServerBuild build_;
};

/// The server configuration of `entry`'s tuned row (the fixed-seq-len row of `isl`/`osl`/`tp`;
/// 0 = any, the first) at `concs`, with `overrides` over the recipe's workload; with `eval`,
/// also a GSM8K eval at `eval_conc` on the same server start. Error names the key when it has no
/// such row or the row cannot be measured here.
Expected<sweep::ConfigPlan> side_config(const recipe::ConfigEntry& entry, const RowSelector& row,
                                        const std::vector<int64_t>& concs,
                                        const sweep::SweepOptions& sweep, bool eval,
                                        int64_t eval_conc);

/// The base row the tuning works on (as side_config picks it); error lists the key's rows.
Expected<recipe::RecipeRow> tuned_row(const recipe::ConfigEntry& entry, const RowSelector& row);

}  // namespace ib::tune
