#include "load/point_run.h"

#include <algorithm>
#include <chrono>

#include "workload/gsm8k.h"

namespace ib::load {

namespace {

Expected<PointReport> run_eval_point(const BenchSpec& bench, const workload::PointPlan& plan,
                                     const workload::EvalPlan& eval) {
  EvalSpec spec;
  spec.endpoint_url = bench.endpoint_url;
  spec.model = bench.model;
  spec.prompt = eval.params->prompt;
  spec.concurrency = plan.shape.concurrency;
  spec.max_tokens = eval.params->max_tokens;
  spec.limit = eval.params->limit;
  if (bench.timeout_s > 0) {
    spec.request_timeout =
        std::chrono::seconds(static_cast<int64_t>(std::max(1.0, bench.timeout_s)));
  }
  spec.show_progress = bench.show_progress;
  auto report = run_eval(spec, workload::gsm8k::builtin());
  if (!report) return report.error();
  return PointReport{std::move(*report)};
}

}  // namespace

Expected<PointReport> run_point(const BenchSpec& spec, const workload::PointPlan& plan) {
  if (const auto* eval = plan.eval()) return run_eval_point(spec, plan, *eval);
  auto report = plan.replay() ? run_agentic_bench(spec, plan) : run_request_bench(spec, plan);
  if (!report) return report.error();
  return PointReport{std::move(*report)};
}

}  // namespace ib::load
