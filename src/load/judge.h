// The one judge of a point (docs/architecture.md, "The judge"): every rule that decides whether a
// point's numbers may be used (failure rate, timeout, interrupt, client health, GPU power, the
// recipe's `expect` on server metrics, the eval gate, AgentX's submission rules) and the status
// that follows from them, in one place, as MLPerf LoadGen decides VALID/INVALID in one function.
// `bench`, `eval`, `sweep` and `tune` all call it, so they cannot disagree about a point.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "load/bench.h"
#include "load/eval_run.h"
#include "metrics/point.h"

namespace ib::load {

/// `expect: spec-acceptance`, resolved for one server: the acceptance length it must realise over
/// each point, from its /metrics (docs/metrics.md, "Acceptance length").
struct SpecAcceptanceTarget {
  double golden = 0;
  double tolerance = 0.1;
  std::string source;  // "al in the recipe", or the golden file, model, mode and draft length
};

/// What the judge is told beside the run's own report.
struct JudgeRules {
  /// Reasons found before the point ran (the server observation: `expect` failed or could not be
  /// checked with this launcher); they are kept in front of the point's own.
  metrics::Validity before;
  /// `expect: server-metrics`: name prefixes the server's metrics must show during the point.
  std::vector<std::string> server_metrics;
  /// `expect: spec-acceptance`: a realised AL further than the tolerance from the golden one, or
  /// none in the server's metrics, makes the point invalid with both numbers.
  std::optional<SpecAcceptanceTarget> spec_acceptance;
  /// The point timeout the run was given (for the message; 0: none).
  double point_timeout_s = 0;
};

/// The judgement of one point: its status, every reason its numbers may not be used, and for a
/// failed point the reasons that made it fail, joined ("3 of 10 requests failed: ...").
struct PointVerdict {
  metrics::PointStatus status = metrics::PointStatus::kOk;
  metrics::Validity validity;
  std::string error;
  bool ok() const { return status == metrics::PointStatus::kOk; }
};

/// A benchmark point (requests or agentic replay lanes).
PointVerdict judge(const BenchReport& report, const JudgeRules& rules);
/// An accuracy eval point, gated by `gate` (load/eval_run.h).
PointVerdict judge(const EvalReport& report, const EvalGate& gate, const JudgeRules& rules);

/// The spec-acceptance check of a point, for its result ("spec_acceptance"): golden, tolerance,
/// source, realised (null when the metrics gave none), realised_from, passed.
boost::json::object spec_acceptance_json(const BenchReport& report,
                                         const SpecAcceptanceTarget& target);

/// The status a validity yields: failed when the numbers are missing or cut short (timeout,
/// interrupt, failure rate, power, server exit), invalid when they were measured but may not be
/// used, ok when valid. The reasons that fail the point are joined into `error` when given.
metrics::PointStatus status_of(const metrics::Validity& v, std::string* error = nullptr);

/// The client may have distorted the numbers: its CPU was saturated, or it could not open the
/// connections the point needs. Milder warnings (event-loop lag) stay warnings in the result.
std::vector<std::string> client_health_problems(const ClientHealth& h, int64_t connections);

}  // namespace ib::load
