#include "load/judge.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/json_text.h"
#include "metrics/result.h"
#include "telemetry/timeslices.h"

namespace ib::load {

namespace json = boost::json;
using metrics::InvalidKind;

namespace {

// The kinds that mean the numbers are missing or cut short: the point failed.
bool fails_point(InvalidKind k) {
  return k == InvalidKind::kTimedOut || k == InvalidKind::kInterrupted ||
         k == InvalidKind::kFailureRate || k == InvalidKind::kPower ||
         k == InvalidKind::kServerExited;
}

void judge_ending(const BenchReport& r, const JudgeRules& rules, metrics::Validity& v) {
  if (r.timed_out) {
    v.add(InvalidKind::kTimedOut,
          fmt::format("point timeout after {} s (partial result kept)", rules.point_timeout_s),
          "raise --point-timeout");
  } else if (r.partial) {
    v.add(InvalidKind::kInterrupted, "interrupted (partial result kept)");
  }
}

// vLLM benchmark_serving's rule (more than kMaxFailureRate failed) for independent requests;
// agentic replay has AgentX's own error rule (judge_agentx), under which errors move sessions on.
void judge_failures(const BenchReport& r, metrics::Validity& v) {
  const metrics::BenchMetrics& m = r.metrics;
  if (r.aborted) {
    v.add(InvalidKind::kFailureRate, r.abort_reason);
    return;
  }
  const bool rate_rule = !r.agentic && m.failure_rate() > kMaxFailureRate;
  if (m.num_requests == 0 || m.completed == 0 || rate_rule) {
    const std::string why = metrics::failure_summary(m);
    v.add(InvalidKind::kFailureRate, fmt::format("{} of {} requests failed{}", m.failed,
                                                 m.num_requests, why.empty() ? "" : ": " + why));
  }
}

void judge_power(const BenchReport& r, metrics::Validity& v) {
  if (!r.power_missing) return;
  const json::object* e = nullptr;
  if (const auto* energy = r.json.if_contains("energy"); energy && energy->is_object()) {
    e = &energy->as_object();
  }
  const auto* note = e ? e->if_contains("note") : nullptr;
  const auto* reasons = e ? e->if_contains("reasons") : nullptr;
  v.add(InvalidKind::kPower,
        note && note->is_string()
            ? fmt::format("no GPU power measurement: {}", std::string(note->as_string()))
            : fmt::format("GPU power not valid: {}",
                          reasons ? json_text(*reasons) : std::string("no reason given")),
        "--require-power needs nvidia-smi or amd-smi where the server runs");
}

void judge_server_metrics(const BenchReport& r, const JudgeRules& rules, metrics::Validity& v) {
  if (rules.server_metrics.empty()) return;
  const auto scrapes = window_scrapes(r.scrapes, r.window_start_unix, r.window_end_unix);
  for (const auto& prefix : telemetry::missing_prefixes(scrapes, rules.server_metrics)) {
    const auto& cost = r.scrape_cost;
    v.add(InvalidKind::kExpectFailed,
          fmt::format("expect server-metrics: no series starting with \"{}\" in {} scrape(s) of "
                      "the point{}",
                      prefix, scrapes.size(),
                      cost.first_error.empty() ? "" : " (" + cost.first_error + ")"),
          "check the metrics URL (--server-metrics-url) and that the engine exports them "
          "(SGLang: --enable-metrics)");
  }
}

bool spec_acceptance_passed(const BenchReport& r, const SpecAcceptanceTarget& t) {
  const auto& al = r.server_summary.spec_acceptance_length;
  // A hair over the tolerance for the rounding of golden values to two decimals.
  return al && std::abs(*al - t.golden) <= t.tolerance + 1e-9;
}

void judge_spec_acceptance(const BenchReport& r, const JudgeRules& rules, metrics::Validity& v) {
  if (!rules.spec_acceptance) return;
  const SpecAcceptanceTarget& t = *rules.spec_acceptance;
  if (spec_acceptance_passed(r, t)) return;
  const auto& al = r.server_summary.spec_acceptance_length;
  if (!al) {
    v.add(InvalidKind::kExpectFailed,
          fmt::format("expect spec-acceptance: the server's metrics gave no acceptance length "
                      "during the point (golden {:.2f}, {}){}",
                      t.golden, t.source, r.scrapes.empty() ? "; no /metrics scrape" : ""),
          "vLLM needs its spec-decode counters (vllm:spec_decode_num_drafts_total), SGLang "
          "sglang:spec_accept_length (--enable-metrics); is the server speculating?");
    return;
  }
  v.add(InvalidKind::kExpectFailed,
        fmt::format("expect spec-acceptance: realised acceptance length {:.3f} over the point "
                    "({}), golden {:.2f} ± {} ({})",
                    *al, r.server_summary.spec_acceptance_from, t.golden, t.tolerance, t.source),
        "the server does not realise the golden AL: check its synthetic-acceptance knob "
        "(vLLM synthetic_acceptance_length, SGLANG_SIMULATE_ACC_LEN, "
        "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS = AL - 1)");
}

// AgentX's submission rules (metrics/agentic.h), each as the kind of reason it is: too many
// errors fail the point like any failure rate; a time-scaled or shortened replay is the user's
// choice; a cancelled replay is already judged as interrupted or aborted.
void judge_agentx(const BenchReport& r, metrics::Validity& v) {
  for (const auto& a : r.agentic_invalid) {
    if (a.reason == "run_cancelled" || a.reason == "warmup_aborted") continue;
    InvalidKind kind = InvalidKind::kWorkload;
    if (a.reason == "error_rate_exceeded") kind = InvalidKind::kFailureRate;
    if (a.reason == "time_scaled" || a.reason == "duration_below_floor") {
      kind = InvalidKind::kNotSubmission;
    }
    v.add(kind, fmt::format("{}: {}", a.reason, a.message));
    v.reasons.back().rule = a.reason;
  }
}

// A timed trace replayed outside its fidelity bounds (load/trace_fidelity.h).
void judge_trace(const BenchReport& r, metrics::Validity& v) {
  for (const auto& a : r.trace_invalid) {
    v.add(InvalidKind::kWorkload, fmt::format("{}: {}", a.reason, a.message),
          "the replay is not the trace's: see trace_fidelity in the result");
    v.reasons.back().rule = a.reason;
  }
}

PointVerdict verdict_of(metrics::Validity v) {
  PointVerdict out;
  out.status = status_of(v, &out.error);
  out.validity = std::move(v);
  return out;
}

}  // namespace

std::vector<std::string> client_health_problems(const ClientHealth& h, int64_t connections) {
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

json::object spec_acceptance_json(const BenchReport& report, const SpecAcceptanceTarget& target) {
  const auto& al = report.server_summary.spec_acceptance_length;
  json::object o{{"golden", target.golden},
                 {"tolerance", target.tolerance},
                 {"source", target.source},
                 {"realised", al ? json::value(*al) : json::value(nullptr)},
                 {"passed", spec_acceptance_passed(report, target)}};
  if (al) o["realised_from"] = report.server_summary.spec_acceptance_from;
  return o;
}

metrics::PointStatus status_of(const metrics::Validity& v, std::string* error) {
  if (v.valid()) return metrics::PointStatus::kOk;
  bool failed = false;
  for (const auto& r : v.reasons) {
    if (!fails_point(r.kind)) continue;
    failed = true;
    if (error) *error += (error->empty() ? "" : "; ") + r.message;
  }
  return failed ? metrics::PointStatus::kFailed : metrics::PointStatus::kInvalid;
}

PointVerdict judge(const BenchReport& report, const JudgeRules& rules) {
  metrics::Validity v = rules.before;
  judge_ending(report, rules, v);
  judge_failures(report, v);
  const int64_t connections =
      std::max<int64_t>(report.concurrency, report.run.health.peak_in_flight);
  for (const auto& problem : client_health_problems(report.run.health, connections)) {
    v.add(InvalidKind::kClientHealth, problem);
  }
  judge_power(report, v);
  judge_server_metrics(report, rules, v);
  judge_spec_acceptance(report, rules, v);
  judge_agentx(report, v);
  judge_trace(report, v);
  return verdict_of(std::move(v));
}

PointVerdict judge(const EvalReport& report, const EvalGate& gate, const JudgeRules& rules) {
  metrics::Validity v = rules.before;
  if (report.interrupted) v.add(InvalidKind::kInterrupted, "interrupted (partial result kept)");
  if (report.n_eff() == 0) {
    std::string first;
    for (const auto& r : report.records) {
      if (r.attempts > 0 && !r.answered) {
        first = r.error;
        break;
      }
    }
    v.add(InvalidKind::kFailureRate,
          fmt::format("none of the {} eval problems was answered{}", report.problems,
                      first.empty() ? "" : ": " + first));
  }
  if (!gate.passed()) {
    v.add(InvalidKind::kEvalGate, fmt::format("eval gate: {}", fmt::join(gate.reasons, "; ")),
          "a recipe change that lowers accuracy is a regression, not a win");
  }
  return verdict_of(std::move(v));
}

}  // namespace ib::load
