// Agentic replay on the network: the scheduler (load/agentic_scheduler.h) decides what is due, this
// driver builds each request's body (workload/agentic_prompts.h: the stream's message history,
// extended turn by turn), sends it as a streamed chat completion with the session's
// X-Correlation-ID, records it, and tells the scheduler how it ended. One event loop: a replay
// holds `concurrency` trees, a few requests each, so one thread keeps up; what it costs is
// measured (CPU, peak memory, body bytes built per second).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/expected.h"
#include "http/client.h"
#include "load/agentic_scheduler.h"
#include "metrics/record.h"
#include "tokenizer/serving.h"
#include "workload/agentic_prompts.h"
#include "workload/agentic_workload.h"

namespace ib::load::agentic {

struct AgenticRunConfig {
  http::Endpoint endpoint;
  std::string path = "/v1/chat/completions";
  std::vector<std::string> models;  // served models (--model): the rewrite targets
  ReplayOptions replay;
  uint64_t seed = 42;              // block text
  std::string benchmark_id;        // cache-bust markers; empty: a fresh UUID
  bool legacy_max_tokens = false;  // max_tokens instead of max_completion_tokens
  http::ClientTimeouts timeouts;
  bool show_progress = false;  // a progress line on stderr when it is a TTY
  int64_t deadline_ns = 0;     // > 0: cut (interrupted) at this monotonic time
  /// Called once when the profiling phase starts, before its first request (nothing is in
  /// flight then): the point reads the server's counters here.
  std::function<void()> on_profiling_start;
  /// Block text corpus (null: the built-in words) and the tokenizer that counts the markers
  /// (null: one token a word).
  std::shared_ptr<const workload::agentic::Corpus> corpus;
  std::shared_ptr<const tokenizer::ServingTokenizer> tokenizer;
  /// What each request tells a router of its session (workload/agentic_workload.h).
  workload::SessionRouting session_routing = workload::SessionRouting::kNone;
  int64_t session_timeout_s = 3600;
};

/// What one sent request was, beside its measurement.
struct ReplayRequest {
  Dispatch dispatch;
  std::string trace_id, session_id, correlation_id;
  std::string headers;  // the session's routing headers ("Name: value\r\n" lines)
  int messages = 0;
  int64_t recorded_in = 0, recorded_out = 0;
  int64_t content_tokens = 0;  // corpus tokens in the messages (recorded in + marker)
  int64_t theoretical_hit_blocks = 0, theoretical_total_blocks = 0;
  int64_t body_bytes = 0;
  bool cancelled = false;  // cut by the end of the grace period or an interrupt
};

struct AgenticRunResult {
  std::vector<metrics::RequestRecord> records;  // by dispatch id
  std::vector<ReplayRequest> requests;          // parallel to records
  std::string benchmark_id;
  bool aborted = false;  // a root primer failed, or warmup overran
  std::string abort_reason;
  bool interrupted = false, deadline_hit = false;
  int64_t origin_ns = 0;         // monotonic time of the scheduler's 0
  double profiling_start_s = 0;  // scheduler seconds
  double profiling_end_s = 0;    // when the last counted request ended (or the cut)
  double start_unix = 0, end_unix = 0;
  std::vector<std::string> notes;
  int64_t trees = 0, trees_done = 0, sessions_done = 0;
  // The client's own cost.
  double cpu_seconds = 0, wall_seconds = 0;
  int64_t peak_rss_kib = 0;
  int64_t body_bytes_built = 0;
  double body_build_seconds = 0;
  int64_t peak_in_flight = 0;
  int64_t connections_opened = 0;
};

/// Runs the replay of `pool` (every tree must have a root with at least one turn).
/// Error only when it cannot start (host unresolvable, empty pool, no model).
Expected<AgenticRunResult> run_agentic(const AgenticRunConfig& config,
                                       const std::vector<ReplayTree>& pool);

/// A random (version 4) UUID, lower-case, 8-4-4-4-12.
std::string uuid4();

}  // namespace ib::load::agentic
