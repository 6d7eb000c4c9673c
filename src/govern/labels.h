// Sweep labels and the sweep plan they produce (as InferenceX's .github/workflows/run-sweep.yml
// and utils/process_changelog.py use them): which rows run,
// the canary that runs first, the fail-fast families, trimmed concurrencies and eval rows.
#pragma once

#include <boost/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/expected.h"
#include "recipe/matrix.h"

namespace ib::govern {

struct Labels {
  std::string primary;  // one of kPrimaryLabels
  bool all_evals = false;
  bool evals_only = false;
  bool agentx_fast = false;
  bool skip_queue = false;
  std::vector<std::string> policy;  // ci-patchwork, engine-patch, ... (recorded, no effect here)

  bool trim_conc() const { return primary == "sweep-enabled"; }
  bool canary() const;
  bool fail_fast() const;
  std::vector<std::string> all() const;  // as given, normalised order
};

/// The primary labels, in the spec's table order.
const std::vector<std::string>& primary_labels();

/// Parses labels ("a,b" items may be given separately or comma-joined). Exactly one primary label;
/// unknown labels, and contradictory modifiers (evals-only with agentx-fast), are errors.
Expected<Labels> parse_labels(const std::vector<std::string>& items);

/// One job family: rows that run together and, with fail-fast, stop together.
struct PlanGroup {
  std::string name;  // "single-node-1k1k", "multi-node-8k1k", "agentic", "evals", ...
  bool fail_fast = false;
  bool eval = false;  // rows are accuracy evals, not throughput points
  std::vector<recipe::RecipeRow> rows;
};

struct SweepPlan {
  Labels labels;
  std::optional<recipe::RecipeRow> canary;  // runs first; every group waits for it
  std::vector<PlanGroup> groups;
  std::vector<std::string> notes;  // what the labels did, for the reader
  size_t throughput_rows() const;
  size_t eval_rows() const;
  boost::json::object to_json() const;
};

/// Builds the plan from expanded rows (recipe::expand output, eval rows already marked).
SweepPlan make_sweep_plan(const std::vector<recipe::RecipeRow>& rows, const Labels& labels);

/// --trim-conc: single-node rows grouped by every field but conc and exp-name keep the lowest
/// conc; multi-node conc lists shrink to their minimum.
std::vector<recipe::RecipeRow> trim_concurrency(const std::vector<recipe::RecipeRow>& rows);

}  // namespace ib::govern
