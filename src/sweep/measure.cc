// One point of a sweep, whatever its kind: the workload's plan through load::run_point, the
// verdict of load::judge, the result JSON and the point's files (part of ConfigRunner,
// config_run.h).
#include <fmt/format.h>

#include <algorithm>

#include "load/judge.h"
#include "load/point_run.h"
#include "metrics/aggregate.h"
#include "metrics/result.h"
#include "sweep/config_run.h"
#include "telemetry/slice_rows.h"
#include "workload/agentic_workload.h"
#include "workload/gsm8k.h"

namespace ib::sweep {

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

// The identity fields every stored result carries, whatever its kind.
void add_identity(json::object& result, const ConfigPlan& cfg, const metrics::PointIdentity& id) {
  result["config_key"] = cfg.row.config_key;
  result["recipe_fingerprint"] = cfg.row.fingerprint;
  result["server_config_fingerprint"] = cfg.fingerprint;
  result["workload_key"] = id.workload_key;
  result["workload_label"] = id.workload_label;
}

void apply_verdict(metrics::PointResult& p, load::PointVerdict v, json::object& result) {
  p.status = v.status;
  p.validity = std::move(v.validity);
  p.error = std::move(v.error);
  result["status"] = metrics::status_name(p.status);
  result["validity"] = p.validity.to_json();
}

std::string row_model_prefix(const recipe::RecipeRow& row) {
  const auto* mp = row.fields.if_contains("model-prefix");
  return mp && mp->is_string() ? std::string(mp->as_string()) : std::string();
}

}  // namespace

load::BenchSpec ConfigRunner::point_spec(const ConfigPlan& cfg, const workload::PointPlan& plan,
                                         const std::string& url,
                                         const std::optional<fs::path>& power_dir) const {
  load::BenchSpec bs;
  bs.endpoint_url = url;
  bs.model = std::string(cfg.row.fields.at("model").as_string());
  bs.api = o_.api;
  bs.continuous_usage = o_.continuous_usage;
  bs.shape.concurrency = plan.shape.concurrency;
  bs.metrics.num_gpus = cfg.gpus;
  bs.metrics.prefill_gpus = cfg.prefill_gpus;
  bs.metrics.decode_gpus = cfg.decode_gpus;
  bs.timeout_s = o_.point_timeout_s;
  bs.show_progress = o_.show_progress;
  bs.scrape_server_metrics = o_.scrape_server_metrics;
  bs.server_metrics_urls =
      o_.server_metrics_urls.empty() ? role_metrics_urls_ : o_.server_metrics_urls;
  if (o_.server_metrics_urls.empty()) bs.server_metrics_roles = role_metrics_labels_;
  bs.slice_s = o_.slice_s;
  bs.power = o_.power;
  bs.require_power = o_.require_power;
  bs.remote_power_dir = power_dir;
  if (const auto* replay = plan.replay()) {
    // The replay bounds itself (warmup grace, duration, grace); the point timeout only guards
    // against a hang beyond that.
    const auto& ap = replay->agentic->params;
    bs.api = openai::Api::kChat;
    bs.timeout_s = std::max(o_.point_timeout_s,
                            (ap.warmup_grace_s + ap.duration_s + ap.grace_s) / ap.time_scale + 60);
  }
  return bs;
}

metrics::PointResult ConfigRunner::measure(const ConfigPlan& cfg, const Point& point,
                                           const fs::path& dir, const std::string& url,
                                           const metrics::Validity& before,
                                           const std::optional<fs::path>& power_dir) {
  metrics::PointResult p;
  p.id = identity(cfg, point);
  p.artifacts_dir = dir.string();
  const auto& workload = point.eval ? cfg.eval : cfg.workload;
  auto plan = workload ? workload->plan(point.conc)
                       : Expected<workload::PointPlan>(Error{"no workload for this configuration"});
  auto report = plan ? load::run_point(point_spec(cfg, *plan, url, power_dir), *plan)
                     : Expected<load::PointReport>(plan.error());
  if (!report) {
    // No silent retry with other arguments: the first error is the one the user sees.
    p.status = metrics::PointStatus::kFailed;
    p.error = report.error().message;
    return p;
  }
  load::JudgeRules rules;
  rules.before = before;
  rules.point_timeout_s = o_.point_timeout_s;
  if (cfg.expect) rules.server_metrics = cfg.expect->server_metrics;
  rules.spec_acceptance = cfg.spec_acceptance;
  if (auto* eval = std::get_if<load::EvalReport>(&*report)) {
    record_eval(cfg, p, *eval, rules);
  } else {
    record_bench(cfg, p, std::get<load::BenchReport>(*report), rules);
  }
  if (p.validity.has(metrics::InvalidKind::kInterrupted)) outcome_->interrupted = true;
  return p;
}

void ConfigRunner::record_bench(const ConfigPlan& cfg, metrics::PointResult& p,
                                load::BenchReport& report, const load::JudgeRules& rules) {
  json::object& result = report.json;
  add_identity(result, cfg, p.id);
  const metrics::BenchMetrics& m = report.metrics;
  metrics::MetricsOptions mo;  // as point_spec gives them to the run
  mo.num_gpus = cfg.gpus;
  mo.prefill_gpus = cfg.prefill_gpus;
  mo.decode_gpus = cfg.decode_gpus;
  p.headline = metrics::Headline::from_metrics(m, mo);
  if (m.completed == 0) {
    // Nothing completed: no latency or throughput to show, only the counts.
    metrics::Headline counts;
    counts.set("completed", 0);
    counts.set("failed", static_cast<double>(m.failed));
    p.headline = counts;
  }
  // Prompts built with a tokenizer that the server counts differently: the stated ISL is not
  // what the server saw. Said on the terminal; the result carries prompt_token_check.
  if (m.prompt_token_mismatches > 0) {
    fmt::print(stderr,
               "warning: {} conc {}: {} of {} prompts: the server counted {} prompt tokens, "
               "the client {} (another tokenizer, chat template or BOS rule on the server)\n",
               cfg.row.config_key, p.id.concurrency, m.prompt_token_mismatches,
               m.prompt_tokens_checked, m.prompt_tokens_server, m.prompt_tokens_client);
  }
  if (rules.spec_acceptance) {
    result["spec_acceptance"] = load::spec_acceptance_json(report, *rules.spec_acceptance);
  }
  if (flush_) {
    // A point asked to start cold says whether it did.
    result["cache_flush"] = flush_->json;
    if (!result.contains("warnings") || !result.at("warnings").is_array()) {
      result["warnings"] = json::array();
    }
    for (const auto& w : flush_->warnings) result["warnings"].as_array().emplace_back(w);
  }
  apply_verdict(p, load::judge(report, rules), result);
  p.result = result;
  json::object aggregate = metrics::inferencex_aggregate(
      cfg.row.fields, cfg.row.fingerprint, cfg.row.multinode, p.id.concurrency, result, cfg.gpus);
  for (const auto& kv : report.inferencex) aggregate[kv.key()] = kv.value();
  rec_->write_point_files(p, aggregate, report.run.measured, report.run.origin_ns);
  rec_->write_scrapes(p, report.scrapes);
  p.timeslices = telemetry::timeslice_rows(report.server_slices, report.client_slices);
}

void ConfigRunner::record_eval(const ConfigPlan& cfg, metrics::PointResult& p,
                               const load::EvalReport& report, const load::JudgeRules& rules) {
  const std::string prefix = row_model_prefix(cfg.row);
  const recipe::EvalThresholds none;
  const auto threshold =
      (o_.eval_thresholds ? *o_.eval_thresholds : none).resolve(prefix, "gsm8k", o_.eval_min_score);
  const load::EvalGate gate = load::gate_eval(report, threshold.value, threshold.source);

  json::object result = report.to_json();
  add_identity(result, cfg, p.id);
  result["model_prefix"] = prefix;
  result["gate"] = gate.to_json();
  result["tool_version"] = INFERBENCH_VERSION;
  metrics::Headline counts;
  counts.set("completed", static_cast<double>(report.n_eff()));
  counts.set("failed", static_cast<double>(report.failed));
  p.headline = counts;
  apply_verdict(p, load::judge(report, gate, rules), result);
  p.result = std::move(result);
  const workload::gsm8k::Dataset& dataset = workload::gsm8k::builtin();
  std::vector<json::object> samples;
  samples.reserve(report.records.size());
  for (const auto& r : report.records) {
    json::object s = r.to_json();
    s["target"] = workload::gsm8k::reference_answer(dataset.test[r.index].answer);
    samples.push_back(std::move(s));
  }
  rec_->write_eval_files(p, samples);
}

}  // namespace ib::sweep
