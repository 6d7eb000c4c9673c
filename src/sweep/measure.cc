// One point of a sweep: the workload's plan through the run loop into a PointResult with its
// validity, and its files (part of ConfigRunner, config_run.h).
#include <fmt/format.h>

#include <algorithm>

#include "load/bench.h"
#include "metrics/aggregate.h"
#include "metrics/result.h"
#include "sweep/config_run.h"
#include "verify/expect.h"
#include "workload/agentic_workload.h"

namespace ib::sweep {

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

// The client is the bottleneck, or could not open the connections: its numbers do not describe
// the server. Milder warnings (event-loop lag) stay warnings in the result.
std::vector<std::string> client_health_problems(const load::ClientHealth& h, int64_t connections) {
  std::vector<std::string> out;
  if (h.cpu_utilization > 0.95) {
    out.push_back(
        fmt::format("client CPU at {:.0f}% of its {} thread(s): the client, not the "
                    "server, may have limited throughput",
                    h.cpu_utilization * 100, h.threads));
  }
  if (h.open_file_limit > 0 && h.open_file_limit < connections + 64) {
    out.push_back(fmt::format("open-file limit {} is below the {} connections needed",
                              h.open_file_limit, connections));
  }
  return out;
}

}  // namespace

metrics::PointResult ConfigRunner::measure(const ConfigPlan& cfg, int64_t conc, const fs::path& dir,
                                           const std::string& url,
                                           const metrics::Validity& unverified,
                                           const std::optional<fs::path>& power_dir) {
  metrics::PointResult p;
  p.id = identity(cfg, {conc, false});
  p.artifacts_dir = dir.string();
  auto plan = cfg.workload->plan(conc);
  if (!plan) {
    p.status = metrics::PointStatus::kFailed;
    p.error = plan.error().message;
    return p;
  }
  load::BenchSpec bs;
  bs.endpoint_url = url;
  bs.model = std::string(cfg.row.fields.at("model").as_string());
  bs.api = o_.api;
  bs.shape.concurrency = static_cast<int>(conc);
  bs.metrics.num_gpus = cfg.gpus;
  bs.timeout_s = o_.point_timeout_s;
  bs.show_progress = o_.show_progress;
  bs.scrape_server_metrics = o_.scrape_server_metrics;
  bs.server_metrics_urls = o_.server_metrics_urls;
  bs.slice_s = o_.slice_s;
  bs.power = o_.power;
  bs.require_power = o_.require_power;
  bs.remote_power_dir = power_dir;
  if (plan->agentic) {
    // The replay bounds itself (warmup grace, duration, grace); the point timeout only guards
    // against a hang beyond that.
    const auto& ap = plan->agentic->params;
    bs.api = openai::Api::kChat;
    bs.timeout_s = std::max(o_.point_timeout_s,
                            (ap.warmup_grace_s + ap.duration_s + ap.grace_s) / ap.time_scale + 60);
  }
  auto report = load::run_bench(bs, *plan);
  if (!report) {
    // No silent retry with other arguments: the first error is the one the user sees.
    p.status = metrics::PointStatus::kFailed;
    p.error = report.error().message;
    return p;
  }
  json::object& result = report->json;
  result["config_key"] = cfg.row.config_key;
  result["recipe_fingerprint"] = cfg.row.fingerprint;
  result["server_config_fingerprint"] = cfg.fingerprint;
  result["workload_key"] = p.id.workload_key;
  result["workload_label"] = p.id.workload_label;
  const metrics::BenchMetrics& m = report->metrics;
  p.headline = metrics::Headline::from_metrics(m, bs.metrics);
  if (m.completed == 0) {
    // Nothing completed: no latency or throughput to show, only the counts.
    metrics::Headline counts;
    counts.set("completed", 0);
    counts.set("failed", static_cast<double>(m.failed));
    p.headline = counts;
  }
  p.validity = unverified;
  if (report->timed_out) {
    p.validity.add(
        metrics::InvalidKind::kTimedOut,
        fmt::format("point timeout after {} s (partial result kept)", o_.point_timeout_s),
        "raise --point-timeout");
  } else if (report->partial) {
    p.validity.add(metrics::InvalidKind::kInterrupted, "interrupted (partial result kept)");
    outcome_->interrupted = true;
  }
  // Agentic replay has its own error rule (AgentX: > 10% makes the point invalid, below that
  // errors move sessions on), applied with the other workload rules below.
  const bool rate_rule = !plan->agentic && m.failure_rate() > load::kMaxFailureRate;
  if (report->aborted) {
    p.validity.add(metrics::InvalidKind::kFailureRate, report->abort_reason);
  } else if (m.num_requests == 0 || m.completed == 0 || rate_rule) {
    const std::string why = metrics::failure_summary(m);
    p.validity.add(metrics::InvalidKind::kFailureRate,
                   fmt::format("{} of {} requests failed{}", m.failed, m.num_requests,
                               why.empty() ? "" : ": " + why));
  }
  // Prompts built with a tokenizer that the server counts differently: the stated ISL is not
  // what the server saw. Said on the terminal; the result carries prompt_token_check.
  if (m.prompt_token_mismatches > 0) {
    fmt::print(stderr, "warning: {} conc {}: {} of {} prompts: the server counted {} prompt tokens, "
               "the client {} (another tokenizer, chat template or BOS rule on the server)\n",
               cfg.row.config_key, conc, m.prompt_token_mismatches, m.prompt_tokens_checked,
               m.prompt_tokens_server, m.prompt_tokens_client);
  }
  for (const auto& problem : client_health_problems(report->run.health, conc)) {
    p.validity.add(metrics::InvalidKind::kClientHealth, problem);
  }
  if (report->power_missing) {
    const auto& e = report->json.at("energy").as_object();
    const auto* note = e.if_contains("note");
    p.validity.add(metrics::InvalidKind::kPower,
                   note && note->is_string()
                       ? fmt::format("no GPU power measurement: {}", std::string(note->as_string()))
                       : fmt::format("GPU power not valid: {}", json::serialize(e.at("reasons"))),
                   "--require-power needs nvidia-smi or amd-smi where the server runs");
  }
  // `expect: server-metrics`: the server's metrics must show these prefixes during the point.
  if (o_.check_expect) {
    if (auto it = entries_.find(cfg.row.config_key); it != entries_.end() && it->second->expect) {
      auto spec = verify::parse_expect(*it->second->expect, cfg.row.config_key + ".expect");
      if (spec && !spec->server_metrics.empty()) {
        const auto scrapes = load::window_scrapes(report->scrapes, report->window_start_unix,
                                                  report->window_end_unix);
        for (const auto& prefix : telemetry::missing_prefixes(scrapes, spec->server_metrics)) {
          const auto& cost = report->scrape_cost;
          p.validity.add(
              metrics::InvalidKind::kExpectFailed,
              fmt::format("expect server-metrics: no series starting with \"{}\" in {} scrape(s) "
                          "of the point{}",
                          prefix, scrapes.size(),
                          cost.first_error.empty() ? "" : " (" + cost.first_error + ")"),
              "check the metrics URL (--server-metrics-url) and that the engine exports them "
              "(SGLang: --enable-metrics)");
        }
      }
    }
  }
  // AgentX's submission rules (error and overflow rates, coverage, duration floor, scaled time).
  for (const auto& r : report->agentic_invalid) {
    p.validity.add(metrics::InvalidKind::kWorkload, fmt::format("{}: {}", r.reason, r.message));
  }
  // Status: failed when the numbers are missing or cut short; invalid when they were measured
  // but may not be used; ok otherwise.
  if (p.validity.has(metrics::InvalidKind::kTimedOut) ||
      p.validity.has(metrics::InvalidKind::kInterrupted) ||
      p.validity.has(metrics::InvalidKind::kFailureRate) ||
      p.validity.has(metrics::InvalidKind::kPower)) {
    p.status = metrics::PointStatus::kFailed;
    for (const auto& r : p.validity.reasons) {
      if (r.kind == metrics::InvalidKind::kTimedOut ||
          r.kind == metrics::InvalidKind::kInterrupted ||
          r.kind == metrics::InvalidKind::kFailureRate || r.kind == metrics::InvalidKind::kPower) {
        p.error += (p.error.empty() ? "" : "; ") + r.message;
      }
    }
  } else if (!p.validity.valid()) {
    p.status = metrics::PointStatus::kInvalid;
  } else {
    p.status = metrics::PointStatus::kOk;
  }
  result["status"] = metrics::status_name(p.status);
  result["validity"] = p.validity.to_json();
  p.result = result;
  json::object aggregate = metrics::inferencex_aggregate(cfg.row.fields, cfg.row.fingerprint,
                                                         cfg.row.multinode, conc, result, cfg.gpus);
  for (const auto& kv : report->inferencex) aggregate[kv.key()] = kv.value();
  rec_->write_point_files(p, aggregate, report->run.measured, report->run.origin_ns);
  rec_->write_scrapes(p, report->scrapes);
  p.server_slices = telemetry::slices_to_json(report->server_slices);
  p.client_slices = telemetry::slices_to_json(report->client_slices);
  return p;
}

}  // namespace ib::sweep
