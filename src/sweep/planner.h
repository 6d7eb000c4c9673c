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
#include "load/judge.h"
#include "recipe/matrix.h"
#include "recipe/recipe.h"
#include "verify/expect.h"
#include "workload/gsm8k.h"
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
  // Eval rows (GSM8K, docs/evals.md): the prompt and how many problems (0: all 1319).
  workload::gsm8k::PromptOptions eval_prompt;
  size_t eval_limit = 0;
  // --tokenizer / --chat-template: replace the recipe's workload.tokenizer / chat-template.
  std::string tokenizer, chat_template;
  // Routed deployments: --session-routing, --session-timeout, --flush-cache[=PATH] ("" not
  // given; "off": none), --flush-timeout.
  std::string session_routing;
  std::optional<int64_t> session_timeout;
  std::string flush_cache;
  std::optional<double> flush_timeout;
};

struct PlanOptions {
  std::vector<int64_t> concurrencies;  // replaces every row's concurrency list when given
  std::vector<std::string> extra_server_args;
  std::string launcher;  // forced launcher; empty: the runners file's, else local
  const recipe::RunnersFile* runners = nullptr;
  bool fail_fast = false;  // every group fail-fast, whatever the labels say
  /// Parse each configuration's `expect` block into ConfigPlan::expect (--no-expect: false, and
  /// the blocks are not read at all).
  bool check_expect = true;
  WorkloadOverrides workload;
};

/// One server configuration and the points to measure on it.
struct ConfigPlan {
  recipe::RecipeRow row;       // the first row (its conc is irrelevant)
  std::string fingerprint;     // config_fingerprint(row, extra server args)
  std::vector<int64_t> concs;  // sorted, unique
  std::string launcher;        // local | slurm | endpoint
  int gpus = 0;
  /// A disaggregated row's GPUs by role (InferenceX's denominators: input throughput over the
  /// prefill GPUs, output over the decode GPUs); 0 for other rows.
  int prefill_gpus = 0, decode_gpus = 0;
  std::shared_ptr<const workload::Workload> workload;  // null when `unsupported` is set
  /// Why this version cannot run it (agentic rows, multi-node without an endpoint); said before
  /// any server starts.
  std::string unsupported;
  /// Accuracy evals on this server (eval rows): their concurrencies, measured after the
  /// throughput points on the same server start. An eval-only configuration (evals-only, or no
  /// throughput row of the same fingerprint) has no `concs`.
  std::vector<int64_t> eval_concs;
  std::shared_ptr<const workload::Workload> eval;  // a workload::gsm8k::Gsm8kWorkload
  /// The recipe's `expect` block, parsed once here (null: none, or --no-expect): checked on the
  /// server's log and environment reads (launch::ServerSession) and, for `server-metrics`, on
  /// every point's scrapes (load::judge).
  std::shared_ptr<const verify::ExpectSpec> expect;
  /// `expect: spec-acceptance`, resolved for this server (the golden value at its draft length);
  /// none when the block has none or the row does not speculate (spec-decoding none).
  std::optional<load::SpecAcceptanceTarget> spec_acceptance;
  /// The prefix cache emptied on every worker before each point (`workload: flush-cache`): the
  /// endpoint's path ("" none) and how long to retry while requests drain.
  std::string flush_path;
  double flush_timeout_s = 120;

  /// One point of the configuration: a throughput concurrency or an eval.
  struct Point {
    int64_t conc = 0;
    bool eval = false;
  };
  /// The throughput points, then the evals.
  std::vector<Point> points() const;
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
  /// What the plan measures, as a digest: every configuration's fingerprint with its points and
  /// their workloads, in a canonical order. Equal plans, equal digests: `--resume` refuses to
  /// continue a run with another (docs/sweep.md).
  std::string digest() const;
};

/// The workload of a fixed-seq-len row: the row's isl/osl, the entry's `workload:` block, the
/// overrides on top. Error names the field.
Expected<std::shared_ptr<const workload::Workload>> workload_for_row(
    const recipe::RecipeRow& row, const recipe::ConfigEntry* entry,
    const WorkloadOverrides& overrides);

/// The entry's `expect` block, parsed (the one place it is: the sweep's plan and `verify` both
/// take it from here); null when the entry has none. Error names the recipe file and line.
Expected<std::shared_ptr<const verify::ExpectSpec>> expect_of(const recipe::ConfigEntry& entry);

/// `expect: spec-acceptance` for one row's server: the golden value at its draft length (from the
/// golden file, relative to the recipe's folder), checked against every synthetic-acceptance knob
/// its serve command or environment pins. nullopt when the row does not speculate. Errors name
/// the recipe's file, line and field.
Expected<std::optional<load::SpecAcceptanceTarget>> spec_acceptance_for_row(
    const recipe::RecipeRow& row, const recipe::ConfigEntry& entry,
    const verify::SpecAcceptanceExpect& expect, const std::vector<std::string>& extra_args);

/// Every row's `expect` block parsed, and its spec-acceptance resolved: what `plan` checks, so
/// that a recipe it accepts is one the sweep accepts.
Status validate_expect_blocks(const std::vector<recipe::RecipeRow>& rows,
                              const std::vector<recipe::ConfigEntry>& entries);

/// Rows → server configurations (in first-seen order).
Expected<std::vector<ConfigPlan>> group_configs(
    const std::vector<recipe::RecipeRow>& rows,
    const std::map<std::string, const recipe::ConfigEntry*>& entries, const PlanOptions& o);

/// The eval workload of an eval row: GSM8K with the overrides' prompt and limit, and max_tokens by
/// InferenceX's rule from the row's max-model-len (ISL + OSL + 256; 16384 when absent).
std::shared_ptr<const workload::Workload> eval_workload_for_row(const recipe::RecipeRow& row,
                                                                const WorkloadOverrides& overrides);

/// The whole sweep: canary first (its one point is not measured again by its group), then the
/// label plan's groups. Eval rows join the throughput configuration of the same fingerprint (one
/// server start for both), or form eval-only configurations in an "evals" group.
Expected<SweepPlanned> plan_sweep(const govern::SweepPlan& plan,
                                  const std::map<std::string, const recipe::ConfigEntry*>& entries,
                                  const PlanOptions& o);

}  // namespace ib::sweep
