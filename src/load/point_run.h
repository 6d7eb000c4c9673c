// One point, whatever it sends (docs/architecture.md, "The point pipeline"): a workload's plan
// (workload/workload.h) dispatched to the run loop of its kind, and what that loop reports.
// `bench` and `sweep` (and through it `tune`) run every point here.
#pragma once

#include <variant>

#include "core/expected.h"
#include "load/bench.h"
#include "load/eval_run.h"
#include "workload/workload.h"

namespace ib::load {

/// What one point ran: a benchmark report (independent requests, or AgentX replay lanes), or an
/// eval's report.
using PointReport = std::variant<BenchReport, EvalReport>;

/// Runs one point of `plan` against `spec`'s endpoint (spec.workload and spec.warmups are not
/// used; the plan says what is sent):
/// - RequestPlan: the run loop (load/runner.h) at the plan's shape, spec.shape's arrivals;
/// - ReplayPlan: the AgentX replay (load/agentic_run.h) on plan.shape.concurrency lanes;
/// - EvalPlan: load::run_eval on the built-in GSM8K problems, plan.shape.concurrency requests in
///   flight, each limited to spec.timeout_s when set.
/// Error only when the point could not start (bad URL, no model found); failed requests are
/// counted in the report, and load::judge (load/judge.h) decides what they mean.
Expected<PointReport> run_point(const BenchSpec& spec, const workload::PointPlan& plan);

}  // namespace ib::load
