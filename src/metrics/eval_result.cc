#include "metrics/eval_result.h"

#include <fmt/format.h>

#include <cmath>

namespace ib::metrics {

namespace json = boost::json;

namespace {

double number(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v != nullptr && v->is_number() ? v->to_number<double>() : std::nan("");
}

}  // namespace

std::string EvalSummary::cell(double value, double se) {
  if (std::isnan(value)) return "-";
  return std::isnan(se) ? fmt::format("{:.4f}", value) : fmt::format("{:.4f} ± {:.4f}", value, se);
}

std::optional<EvalSummary> eval_summary(const json::object& result) {
  const auto* task = result.if_contains("task");
  if (task == nullptr || !task->is_string() || !result.contains("exact_match,strict-match")) {
    return std::nullopt;
  }
  EvalSummary s;
  s.task = std::string(task->as_string());
  s.em_strict = number(result, "exact_match,strict-match");
  s.em_strict_se = number(result, "exact_match_stderr,strict-match");
  s.em_flexible = number(result, "exact_match,flexible-extract");
  s.em_flexible_se = number(result, "exact_match_stderr,flexible-extract");
  const double n = number(result, "n_eff");
  s.n_eff = std::isnan(n) ? 0 : static_cast<int64_t>(n);
  const double p = number(result, "problems");
  s.problems = std::isnan(p) ? 0 : static_cast<int64_t>(p);
  if (const auto* g = result.if_contains("gate"); g && g->is_object()) {
    const auto& go = g->as_object();
    if (const auto* passed = go.if_contains("passed"); passed && passed->is_bool()) {
      s.gate_passed = passed->as_bool();
    }
    s.threshold = number(go, "threshold");
    if (const auto* src = go.if_contains("threshold_source"); src && src->is_string()) {
      s.threshold_source = std::string(src->as_string());
    }
  }
  return s;
}

bool is_eval_workload_key(const std::string& workload_key) {
  return workload_key.rfind("gsm8k:", 0) == 0;
}

}  // namespace ib::metrics
