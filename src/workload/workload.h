// A workload is what a benchmark point sends (docs/architecture.md, "The point pipeline"): asked
// for one concurrency, it gives its own kind of plan. Three kinds exist: independent requests with
// a schedule (fixed ISL/OSL random prompts, fixed_seq_len.h; a timed trace's requests at their
// recorded times, trace_workload.h), AgentX replay lanes (recorded coding-agent traces,
// agentic_workload.h) and an accuracy eval (GSM8K, gsm8k.h). PointPlan is their closed sum;
// load::run_point (load/point_run.h) dispatches it to the run loop that sends it.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "core/expected.h"
#include "workload/random_prompts.h"

namespace ib::workload {

struct AgenticPlan;  // workload/agentic_workload.h
namespace gsm8k {
struct EvalParams;  // workload/gsm8k.h
}

/// The run shape of one point.
struct PointShape {
  int concurrency = 1;        // closed loop: requests (or replay lanes, or eval requests) in flight
  int measured_requests = 0;  // for progress and checks (0 where the run decides: replay, eval)
  int warmup_requests = 0;
};

/// Independent requests: the warmups are sent first and excluded from statistics, then the
/// measured ones, in closed loop at the shape's concurrency (or the caller's open-loop arrivals,
/// or the plan's own schedule).
struct TracePlanInfo;  // workload/trace_workload.h

struct RequestPlan {
  std::vector<PromptSpec> warmup;
  std::vector<PromptSpec> measured;
  /// A timed trace: when each measured request is sent (offsets from the run's start, one per
  /// request; the shape's concurrency caps the requests in flight, 0: none), and what the
  /// fidelity report checks against. Empty / null for other workloads.
  std::vector<int64_t> schedule_ns;
  std::shared_ptr<const TracePlanInfo> trace;
};

/// AgentX replay: the recorded trees and the replay parameters, on `shape.concurrency` lanes; the
/// replay loop does the timing (load/agentic_run.h).
struct ReplayPlan {
  std::shared_ptr<const AgenticPlan> agentic;
};

/// An accuracy eval: which problems are asked and how; `shape.concurrency` requests in flight
/// (load/eval_run.h).
struct EvalPlan {
  std::shared_ptr<const gsm8k::EvalParams> params;
};

/// What one point sends: exactly one of the three plans, with its shape and description.
struct PointPlan {
  PointShape shape;
  /// Result-JSON fields that describe this workload at this point (vLLM's names where they
  /// exist: random_input_len, random_output_len, random_range_ratio, seed, num_prompts, ...).
  boost::json::object describe;
  std::variant<RequestPlan, ReplayPlan, EvalPlan> body;

  const RequestPlan* requests() const { return std::get_if<RequestPlan>(&body); }
  const ReplayPlan* replay() const { return std::get_if<ReplayPlan>(&body); }
  const EvalPlan* eval() const { return std::get_if<EvalPlan>(&body); }
};

class Workload {
 public:
  virtual ~Workload() = default;
  /// The recipe scenario it implements: "fixed-seq-len", "agentic-coding" or "gsm8k".
  virtual std::string kind() const = 0;
  /// Short text for tables: "isl 512 / osl 64".
  virtual std::string label() const = 0;
  /// Every parameter that changes what is sent at `concurrency` (counts included), as a JSON
  /// object. Two points with equal canonical JSON sent the same requests.
  virtual boost::json::object canonical(int64_t concurrency) const = 0;
  /// The plan and shape of one point. Error for a concurrency it cannot serve.
  virtual Expected<PointPlan> plan(int64_t concurrency) const = 0;
  /// Whether plan(concurrency) would be within the limits of one point (workload/random_prompts.h)
  /// without making it: a sweep checks every point this way before it starts any server.
  virtual Status check_point(int64_t /*concurrency*/) const { return Status::Ok(); }

  /// The key `--resume` and `--reuse` match on: kind + canonical JSON (keys sorted).
  std::string key(int64_t concurrency) const;
};

/// Serializes with object keys sorted (recursively): a stable text for equal values.
std::string sorted_json(const boost::json::value& v);

}  // namespace ib::workload
