// Matrix expansion: config entries → benchmark rows, exactly as InferenceX's
// utils/matrix_logic/generate_sweep_configs.py full-sweep, with eval marking.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "recipe/recipe.h"

namespace ib::recipe {

/// The scenarios a recipe declares (InferenceX's `scenarios:` keys); the recipe schema accepts no
/// other.
enum class Scenario { kFixedSeqLen, kAgenticCoding, kTimedTrace };
/// "fixed-seq-len" | "agentic-coding" | "timed-trace".
std::string_view scenario_name(Scenario s);

/// One benchmark job. `fields` holds InferenceX's row fields under their names (image, model,
/// ..., conc, max-model-len, exp-name, run-eval); `conc` is an int for single-node rows and a
/// list for multi-node ones.
struct RecipeRow {
  std::string config_key;
  Scenario scenario = Scenario::kFixedSeqLen;
  bool multinode = false;
  boost::json::object fields;
  std::string fingerprint;  // recipe_fingerprint(fields)

  /// fields plus "config-key", "scenario-type" (when absent) and "recipe-fingerprint".
  boost::json::object to_json() const;
};

/// "1k1k" (1024/1024), "8k1k" (8192/1024), otherwise "<isl>_<osl>".
std::string seq_len_name(int64_t isl, int64_t osl);

/// Expands entries into rows in file order, marks eval rows (mark_eval_rows) and computes
/// fingerprints. `runners` supplies hardware facts for agentic `total-cpu-dram-gb`; without it, or
/// for an unknown label, that field is 0.
std::vector<RecipeRow> expand(const std::vector<ConfigEntry>& entries, const RunnersFile* runners);

/// InferenceX's default eval selection (mark_eval_entries, MIN_EVAL_CONC = 16, 8k1k only):
/// sets `run-eval` on the chosen fixed-seq-len rows and `eval-conc` on chosen multi-node rows.
void mark_eval_rows(std::vector<RecipeRow>* rows);

/// `int(min(avail_mib, 2_861_022) * 1_048_576 * dram_utilization * gpu_count / gpus_per_node /
/// 1e9)`.
int64_t total_cpu_dram_gb(const RunnerHardware& hw, double dram_utilization, int64_t gpu_count);

}  // namespace ib::recipe
