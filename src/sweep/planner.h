// The sweep's plan, pure: recipe rows (already grouped by sweep labels, govern/labels.h) become
// server configurations (rows equal but for concurrency share one server), each with its
// workload and concurrencies; nothing is started here. Unit-tested in planner_test.cc.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/expected.h"
#include "govern/labels.h"
#include "recipe/matrix.h"
#include "recipe/recipe.h"
#include "workload/workload.h"

namespace ib::sweep {

/// Command-line workload settings; each replaces the recipe's `workload:` value when set.
struct WorkloadOverrides {
  std::optional<int> prompts_per_conc, min_prompts, warmups_per_conc;
  std::optional<double> range_ratio;
  std::optional<uint64_t> seed;
  std::string api = "completions";  // completions | chat
  // agentic-coding rows (AgentX replay).
  std::vector<std::string> traces;  // --traces: replaces the recipe's
  std::optional<int64_t> max_traces;
  std::optional<int> warmup_requests_per_lane;
  std::optional<double> agentic_duration_s, time_scale;
  bool agentx_fast = false;  // the agentx-fast label: 1200 s, 1 warmup request per lane
};

struct PlanOptions {
  std::vector<int64_t> concurrencies;  // replaces every row's concurrency list when given
  std::vector<std::string> extra_server_args;
  std::string launcher;  // forced launcher; empty: the runners file's, else local
  const recipe::RunnersFile* runners = nullptr;
  bool fail_fast = false;  // every group fail-fast, whatever the labels say
  WorkloadOverrides workload;
};

/// One server configuration and the points to measure on it.
struct ConfigPlan {
  recipe::RecipeRow row;       // the first row (its conc is irrelevant)
  std::string fingerprint;     // config_fingerprint(row, extra server args)
  std::vector<int64_t> concs;  // sorted, unique
  std::string launcher;        // local | slurm | endpoint
  int gpus = 0;
  std::shared_ptr<const workload::Workload> workload;  // null when `unsupported` is set
  /// Why this version cannot run it (agentic rows, multi-node without an endpoint); said before
  /// any server starts.
  std::string unsupported;
};

struct GroupPlan {
  std::string name;
  bool fail_fast = false;
  std::vector<ConfigPlan> configs;
};

struct SweepPlanned {
  std::vector<GroupPlan> groups;   // the canary group (one point) first, when there is one
  std::vector<std::string> notes;  // what the labels did, eval rows not run, ...
  size_t points() const;
};

/// The workload of a fixed-seq-len row: the row's isl/osl, the entry's `workload:` block, the
/// overrides on top. Error names the field.
Expected<std::shared_ptr<const workload::Workload>> workload_for_row(
    const recipe::RecipeRow& row, const recipe::ConfigEntry* entry,
    const WorkloadOverrides& overrides);

/// Rows → server configurations (in first-seen order).
Expected<std::vector<ConfigPlan>> group_configs(
    const std::vector<recipe::RecipeRow>& rows,
    const std::map<std::string, const recipe::ConfigEntry*>& entries, const PlanOptions& o);

/// The whole sweep: canary first (its one point is not measured again by its group), then the
/// label plan's groups; eval groups are noted, not run.
Expected<SweepPlanned> plan_sweep(const govern::SweepPlan& plan,
                                  const std::map<std::string, const recipe::ConfigEntry*>& entries,
                                  const PlanOptions& o);

}  // namespace ib::sweep
