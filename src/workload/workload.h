// A workload is what a benchmark point sends (docs/architecture.md, "The point pipeline"): asked
// for one concurrency, it gives the requests and the run shape. Fixed ISL/OSL random prompts
// (fixed_seq_len.h) is the first kind; agentic trace replay, datasets and GSM8K evals are further
// kinds of the same interface.
//
// Session-based workloads (multi-turn agentic replay) describe their requests as sessions of
// turns with think time between them; a workload can also carry metrics and validity rules of
// its own (agentic: E2E-normalized interactivity, prefix-cache hits; eval: exact match).
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/expected.h"
#include "workload/random_prompts.h"

namespace ib::workload {

struct AgenticPlan;  // workload/agentic_workload.h

/// One turn of a session: sent `think_time_s` after the previous turn of the session completed.
struct SessionTurn {
  PromptSpec prompt;
  double think_time_s = 0;
};

/// A conversation whose turns are sent in order (an agent, a chat user).
struct Session {
  std::string id;
  std::vector<SessionTurn> turns;
};

/// The run shape of one point.
struct PointShape {
  int concurrency = 1;        // closed loop: requests (or sessions) in flight
  int measured_requests = 0;  // for progress and checks; sum of turns for sessions
  int warmup_requests = 0;
};

/// What one point sends. Independent requests (`measured`, `warmup`), or sessions.
struct PointPlan {
  PointShape shape;
  std::vector<PromptSpec> warmup;    // sent first, excluded from statistics
  std::vector<PromptSpec> measured;  // independent requests
  std::vector<Session> sessions;     // session-based workloads (empty for the others)
  /// Result-JSON fields that describe this workload at this point (vLLM's names where they
  /// exist: random_input_len, random_output_len, random_range_ratio, seed, num_prompts, ...).
  boost::json::object describe;
  /// Agentic replay (workload/agentic_workload.h): trees and replay parameters; the run loop
  /// schedules them itself (`shape.concurrency` lanes).
  std::shared_ptr<const AgenticPlan> agentic;
  bool session_based() const { return !sessions.empty(); }
};

class Workload {
 public:
  virtual ~Workload() = default;
  /// The recipe scenario it implements: "fixed-seq-len", later "agentic-coding", "gsm8k", ...
  virtual std::string kind() const = 0;
  /// Short text for tables: "isl 512 / osl 64".
  virtual std::string label() const = 0;
  /// Every parameter that changes what is sent at `concurrency` (counts included), as a JSON
  /// object. Two points with equal canonical JSON sent the same requests.
  virtual boost::json::object canonical(int64_t concurrency) const = 0;
  /// The requests and shape of one point. Error for a concurrency it cannot serve.
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
