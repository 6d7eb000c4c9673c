// One eval point of a sweep (docs/evals.md): GSM8K against the configuration's server, scored,
// gated by the thresholds for the row's model prefix, stored like any point with its files (part
// of ConfigRunner, config_run.h).
#include <fmt/format.h>

#include "load/eval_run.h"
#include "sweep/config_run.h"
#include "workload/gsm8k.h"

namespace ib::sweep {

namespace json = boost::json;
namespace fs = std::filesystem;
namespace gsm8k = workload::gsm8k;

metrics::PointResult ConfigRunner::measure_eval(const ConfigPlan& cfg, int64_t conc,
                                                const fs::path& dir, const std::string& url,
                                                const metrics::Validity& unverified) {
  metrics::PointResult p;
  p.id = identity(cfg, {conc, true});
  p.artifacts_dir = dir.string();
  const auto* eval = dynamic_cast<const gsm8k::Gsm8kWorkload*>(cfg.eval.get());
  if (eval == nullptr) {
    p.status = metrics::PointStatus::kFailed;
    p.error = "no eval workload for this configuration";
    return p;
  }
  load::EvalSpec spec;
  spec.endpoint_url = url;
  spec.model = std::string(cfg.row.fields.at("model").as_string());
  spec.prompt = eval->params().prompt;
  spec.concurrency = static_cast<int>(conc);
  spec.max_tokens = eval->params().max_tokens;
  spec.limit = eval->params().limit;
  spec.request_timeout =
      std::chrono::seconds(static_cast<int64_t>(std::max(1.0, o_.point_timeout_s)));
  spec.show_progress = o_.show_progress;
  const gsm8k::Dataset& dataset = gsm8k::builtin();
  auto report = load::run_eval(spec, dataset);
  if (!report) {
    p.status = metrics::PointStatus::kFailed;
    p.error = report.error().message;
    return p;
  }
  std::string prefix;
  if (const auto* mp = cfg.row.fields.if_contains("model-prefix"); mp && mp->is_string()) {
    prefix = std::string(mp->as_string());
  }
  const recipe::EvalThresholds none;
  const auto threshold = (o_.eval_thresholds ? *o_.eval_thresholds : none)
                             .resolve(prefix, "gsm8k", o_.eval_min_score);
  const load::EvalGate gate = load::gate_eval(*report, threshold.value, threshold.source);

  json::object result = report->to_json();
  result["config_key"] = cfg.row.config_key;
  result["recipe_fingerprint"] = cfg.row.fingerprint;
  result["server_config_fingerprint"] = cfg.fingerprint;
  result["workload_key"] = p.id.workload_key;
  result["workload_label"] = p.id.workload_label;
  result["model_prefix"] = prefix;
  result["gate"] = gate.to_json();
  result["tool_version"] = INFERBENCH_VERSION;

  metrics::Headline counts;
  counts.set("completed", static_cast<double>(report->n_eff()));
  counts.set("failed", static_cast<double>(report->failed));
  p.headline = counts;
  p.validity = unverified;
  if (report->interrupted) {
    p.validity.add(metrics::InvalidKind::kInterrupted, "interrupted (partial result kept)");
    outcome_->interrupted = true;
  }
  if (report->n_eff() == 0) {
    std::string first;
    for (const auto& r : report->records) {
      if (r.attempts > 0 && !r.answered) {
        first = r.error;
        break;
      }
    }
    p.validity.add(metrics::InvalidKind::kFailureRate,
                   fmt::format("none of the {} eval problems was answered{}", report->problems,
                               first.empty() ? "" : ": " + first));
  }
  if (!gate.passed()) {
    p.validity.add(metrics::InvalidKind::kEvalGate,
                   fmt::format("eval gate: {}", fmt::join(gate.reasons, "; ")),
                   "a recipe change that lowers accuracy is a regression, not a win");
  }
  if (p.validity.has(metrics::InvalidKind::kInterrupted) ||
      p.validity.has(metrics::InvalidKind::kFailureRate)) {
    p.status = metrics::PointStatus::kFailed;
    for (const auto& r : p.validity.reasons) {
      if (r.kind == metrics::InvalidKind::kInterrupted ||
          r.kind == metrics::InvalidKind::kFailureRate) {
        p.error += (p.error.empty() ? "" : "; ") + r.message;
      }
    }
  } else {
    p.status = p.validity.valid() ? metrics::PointStatus::kOk : metrics::PointStatus::kInvalid;
  }
  result["status"] = metrics::status_name(p.status);
  result["validity"] = p.validity.to_json();
  p.result = std::move(result);
  std::vector<json::object> samples;
  samples.reserve(report->records.size());
  for (const auto& r : report->records) {
    json::object s = r.to_json();
    s["target"] = gsm8k::reference_answer(dataset.test[r.index].answer);
    samples.push_back(std::move(s));
  }
  rec_->write_eval_files(p, samples);
  return p;
}

}  // namespace ib::sweep
