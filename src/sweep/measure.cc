// One point of a sweep: the workload's plan through the run loop into a PointResult with its
// validity, and its files (part of ConfigRunner, config_run.h).
#include <fmt/format.h>

#include "load/bench.h"
#include "metrics/aggregate.h"
#include "metrics/result.h"
#include "sweep/config_run.h"

namespace ib {

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

// The client is the bottleneck, or could not open the connections: its numbers do not describe
// the server. Milder warnings (event-loop lag) stay warnings in the result.
std::vector<std::string> client_health_problems(const ClientHealth& h, int64_t connections) {
  std::vector<std::string> out;
  if (h.cpu_utilization > 0.95) {
    out.push_back(fmt::format("client CPU at {:.0f}% of its {} thread(s): the client, not the "
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

PointResult ConfigRunner::measure(const ConfigPlan& cfg, int64_t conc, const fs::path& dir,
                                  const std::string& url, const Validity& unverified) {
  PointResult p;
  p.id = identity(cfg, conc);
  p.artifacts_dir = dir.string();
  auto plan = cfg.workload->plan(conc);
  if (!plan) {
    p.status = PointStatus::kFailed;
    p.error = plan.error().message;
    return p;
  }
  BenchSpec bs;
  bs.endpoint_url = url;
  bs.model = std::string(cfg.row.fields.at("model").as_string());
  bs.api = o_.api;
  bs.shape.concurrency = static_cast<int>(conc);
  bs.metrics.num_gpus = cfg.gpus;
  bs.timeout_s = o_.point_timeout_s;
  bs.show_progress = o_.show_progress;
  auto report = run_bench(bs, *plan);
  if (!report) {
    // No silent retry with other arguments: the first error is the one the user sees.
    p.status = PointStatus::kFailed;
    p.error = report.error().message;
    return p;
  }
  json::object& result = report->json;
  result["config_key"] = cfg.row.config_key;
  result["recipe_fingerprint"] = cfg.row.fingerprint;
  result["server_config_fingerprint"] = cfg.fingerprint;
  result["workload_key"] = p.id.workload_key;
  result["workload_label"] = p.id.workload_label;
  const BenchMetrics& m = report->metrics;
  p.headline = Headline::from_metrics(m, bs.metrics);
  p.validity = unverified;
  if (report->timed_out) {
    p.validity.add(InvalidKind::kTimedOut,
                   fmt::format("point timeout after {} s (partial result kept)", o_.point_timeout_s),
                   "raise --point-timeout");
  } else if (report->partial) {
    p.validity.add(InvalidKind::kInterrupted, "interrupted (partial result kept)");
    outcome_->interrupted = true;
  }
  if (m.num_requests == 0 || m.completed == 0 || m.failure_rate() > kMaxFailureRate) {
    const std::string why = failure_summary(m);
    p.validity.add(InvalidKind::kFailureRate,
                   fmt::format("{} of {} requests failed{}", m.failed, m.num_requests,
                               why.empty() ? "" : ": " + why));
  }
  for (const auto& problem : client_health_problems(report->run.health, conc)) {
    p.validity.add(InvalidKind::kClientHealth, problem);
  }
  // Status: failed when the numbers are missing or cut short; invalid when they were measured
  // but may not be used; ok otherwise.
  if (p.validity.has(InvalidKind::kTimedOut) || p.validity.has(InvalidKind::kInterrupted) ||
      p.validity.has(InvalidKind::kFailureRate)) {
    p.status = PointStatus::kFailed;
    for (const auto& r : p.validity.reasons) {
      if (r.kind == InvalidKind::kTimedOut || r.kind == InvalidKind::kInterrupted ||
          r.kind == InvalidKind::kFailureRate) {
        p.error += (p.error.empty() ? "" : "; ") + r.message;
      }
    }
  } else if (!p.validity.valid()) {
    p.status = PointStatus::kInvalid;
  } else {
    p.status = PointStatus::kOk;
  }
  result["status"] = status_name(p.status);
  result["validity"] = p.validity.to_json();
  p.result = result;
  rec_->write_point_files(
      p, inferencex_aggregate(cfg.row.fields, cfg.row.fingerprint, cfg.row.multinode, conc, result,
                              cfg.gpus),
      report->run.measured, report->run.origin_ns);
  return p;
}

}  // namespace ib
