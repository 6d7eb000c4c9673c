// The agentic-coding scenario (AgentX) as a Workload (workload/workload.h): recorded traces,
// loaded and turned into replay trees once, and the replay's parameters. A point at concurrency C
// replays them on C lanes for a duration (load/agentic_run.h); the plan carries the trees, the
// run loop does the timing.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/serving.h"
#include "workload/agentic_dag.h"
#include "workload/agentic_prompts.h"
#include "workload/workload.h"

namespace ib::workload {

/// How a replayed session tells a router which requests belong together, so that every turn of
/// a conversation lands on the worker that holds its prefix (AgentX's extras for routed
/// deployments, docs/agentic.md "Routed deployments"):
///   dynamo-header    X-Dynamo-Session-ID: <session's correlation id> on each request, and
///                    X-Dynamo-Parent-Session-ID: <parent's> on a subagent's (Dynamo's
///                    --router-session-affinity-ttl-secs);
///   dynamo-nvext     "nvext": {"session_control": {"session_id", "action": "bind", "timeout"}} in
///                    the body, "action": "close" on the session's last turn (AIPerf's
///                    --use-dynamo-conv-aware-routing, what InferenceX runs dynamo-* rows with);
///   smg-routing-key  X-SMG-Routing-Key: <correlation id> (SGLang Model Gateway).
enum class SessionRouting { kNone, kDynamoHeader, kDynamoNvext, kSmgRoutingKey };
std::optional<SessionRouting> parse_session_routing(std::string_view text);
std::string_view session_routing_name(SessionRouting r);

/// Replay parameters, defaults as InferenceX runs AgentX (benchmark_lib.sh): 3600 s, 10 warmup
/// requests per lane, t* in [0.25, 0.75], 300 s per-tree idle cap, seed 42.
struct AgenticParams {
  std::vector<std::string> traces;  // files (.json, .jsonl) or folders
  int64_t max_traces = 0;           // use the first N (InferenceX: --num-dataset-entries); 0: all
  double duration_s = 3600;         // recorded seconds (divided by time_scale)
  int warmup_requests_per_lane = 10;
  double t_star_min = 0.25, t_star_max = 0.75;
  double trace_idle_cap_s = 300;
  double system_idle_cap_s = 10;
  double grace_s = 30;
  double warmup_grace_s = 1800;
  double time_scale = 1;  // divides every recorded delay, cap and duration
  uint64_t seed = 42;
  bool use_think_time_only = false;
  bool fast = false;  // the agentx-fast preset: 1200 s, 1 warmup request per lane
  SessionRouting session_routing = SessionRouting::kNone;
  int64_t session_timeout_s = 3600;  // dynamo-nvext's "timeout" (InferenceX: 3600)
  /// --tokenizer: blocks are cut from the words that are single tokens for it, so a block is
  /// exactly block_size tokens and the marker is counted with it (docs/tokenizer.md).
  std::shared_ptr<const tokenizer::ServingTokenizer> tokenizer;

  /// Applies the agentx-fast preset (duration 1200 s, 1 warmup request per lane).
  void apply_fast();
  /// The error names the parameter, prefixed by `where`.
  Status validate(const std::string& where = "") const;
};

/// The submission floor on the recorded duration (AgentX: shorter runs are not valid).
inline constexpr double kAgenticDurationFloorS = 900;

/// What a replay point needs: the parameters and the trees (shared by every point).
struct AgenticPlan {
  AgenticParams params;
  std::shared_ptr<const std::vector<agentic::ReplayTree>> trees;
  std::string traces_digest;  // SHA-256 over what the trees were built from
  std::vector<std::string> notes;
  /// The block corpus (Corpus::words(), or the tokenizer's single-token words).
  std::shared_ptr<const agentic::Corpus> corpus;
};

class AgenticWorkload : public Workload {
 public:
  /// Loads and checks the traces (errors name the file, request path and field).
  static Expected<std::shared_ptr<AgenticWorkload>> load(AgenticParams params);

  std::string kind() const override { return "agentic-coding"; }
  std::string label() const override;
  boost::json::object canonical(int64_t concurrency) const override;
  Expected<PointPlan> plan(int64_t concurrency) const override;
  const AgenticPlan& agentic() const { return *plan_; }
  /// The same trees replayed with other parameters (`traces` and `max_traces` are kept).
  std::shared_ptr<AgenticWorkload> with_params(const AgenticParams& params) const;

 private:
  explicit AgenticWorkload(std::shared_ptr<const AgenticPlan> plan) : plan_(std::move(plan)) {}
  std::shared_ptr<const AgenticPlan> plan_;
};

}  // namespace ib::workload
