// A timed trace replayed as a workload (docs/trace-replay.md): every request of the trace (or of
// its window) at its recorded time × time_scale, open loop, with prompts whose block structure is
// the trace's (workload/trace_prompts.h); the point's concurrency caps the requests in flight (a
// request that finds the cap waits: its lag is in the fidelity report). Loaded and its prompts
// built once; every point shares them.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/serving.h"
#include "workload/timed_trace.h"
#include "workload/trace_prompts.h"
#include "workload/workload.h"

namespace ib::workload {

struct TraceReplayParams {
  std::string path;
  TraceFormat format = TraceFormat::kMooncake;
  int64_t block_size = 0;  // 0: the format's
  std::optional<TraceWindow> window;
  /// Multiplies every recorded time: 0.5 replays the trace at twice its rate, 2 at half.
  double time_scale = 1.0;
  int64_t max_requests = 0;  // the first N requests (of the window); 0: all
  /// The fidelity bound on the arrival lag's p99 (load/trace_fidelity.h): a replay later than
  /// this, with no cap holding requests, is not the trace's.
  double max_lag_ms = 10;
  uint64_t seed = 0;
  bool chat = false;  // the chat API (text in one user message)
  int vocab_size = 32000;
  std::shared_ptr<const tokenizer::ServingTokenizer> tokenizer;

  /// The error names the option (--trace-format, --time-scale, ...), prefixed by `where`.
  Status validate(const std::string& where = "") const;
};

/// What the replay's fidelity report checks each request against (load/trace_fidelity.h).
struct TracePlanInfo {
  TraceFormat format = TraceFormat::kMooncake;
  int64_t block_size = 0;  // 0: no prefix data
  double time_scale = 1.0;
  TracePromptMode prompt_mode = TracePromptMode::kTokenIds;
  std::vector<int64_t> theoretical_hit_tokens;  // per request, in trace order
  double span_s = 0;                            // recorded span of the replayed requests
  double max_lag_ms = 10;                       // TraceReplayParams::max_lag_ms
};

class TraceWorkload : public Workload {
 public:
  /// Reads the trace, cuts the window and builds every prompt (errors name the file and line).
  static Expected<std::shared_ptr<TraceWorkload>> load(TraceReplayParams params);

  std::string kind() const override { return "timed-trace"; }
  std::string label() const override;
  boost::json::object canonical(int64_t concurrency) const override;
  /// concurrency: the cap on requests in flight; 0: none.
  Expected<PointPlan> plan(int64_t concurrency) const override;
  const TimedTrace& trace() const { return *trace_; }
  const TraceReplayParams& params() const { return params_; }

 private:
  TraceWorkload() = default;
  TraceReplayParams params_;
  std::shared_ptr<const TimedTrace> trace_;
  std::shared_ptr<const std::vector<PromptSpec>> prompts_;
  std::shared_ptr<const TracePlanInfo> info_;
};

}  // namespace ib::workload
