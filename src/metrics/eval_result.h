// An accuracy eval's scores read back from a point's result JSON (load/eval_run.h writes them), for
// `show`, `compare` and the report (docs/evals.md). Tolerant: a missing or non-numeric value
// reads as NaN (lm-eval writes a standard error of "N/A").
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <optional>
#include <string>

namespace ib::metrics {

struct EvalSummary {
  std::string task;  // "gsm8k"
  double em_strict = 0, em_strict_se = 0;
  double em_flexible = 0, em_flexible_se = 0;
  int64_t n_eff = 0, problems = 0;
  std::optional<bool> gate_passed;  // nullopt: no gate was applied
  double threshold = 0;
  std::string threshold_source;
  /// "0.9500 ± 0.0060" (the standard error), "-" when not measured.
  static std::string cell(double value, double se);
};

/// The eval scores of a point, nullopt when `result` is not an eval's.
std::optional<EvalSummary> eval_summary(const boost::json::object& result);

/// Whether a stored point's workload key is an eval's (Workload::key: "gsm8k:{...}").
bool is_eval_workload_key(const std::string& workload_key);

}  // namespace ib::metrics
