// Metrics and submission validity of an agentic (AgentX) replay: recorded coding-agent traces
// replayed as multi-turn chat. Definitions follow AIPerf's agentic_replay scenario and InferenceX's
// aggregation (utils/agentic/aggregation/request_metrics.py) as summarised in
// /work/shared/context/agentx-replay.md §5 and inferencex-spec.md §5; docs/metrics.md "Agentic
// replay" lists every formula. Per request there is one metrics::RequestRecord (what the client
// measured) and one AgenticRequestInfo (what the trace says), aligned by index.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/record.h"

namespace ib::metrics {

/// Whether an error body or message reports a prompt beyond the context: case-insensitively any
/// of "context length", "maximum context", "context_length_exceeded", "prompt is too long" (the
/// vLLM/SGLang/OpenAI/Anthropic wordings AIPerf matches). Callers pass the raw body and the
/// error.message alike.
bool is_context_overflow(std::string_view error_text);

/// What the trace says about one replayed request.
struct AgenticRequestInfo {
  bool profiling = true;     // false: a warmup request (not counted anywhere but accounting)
  std::string session_id;    // the trace play it belongs to (one per cache-bust marker)
  int64_t recorded_in = 0;   // the trace's `in` tokens
  int64_t recorded_out = 0;  // the trace's `out` tokens (the request's max_tokens)
  int messages = 0;          // messages sent
  int64_t theoretical_hit_blocks = 0;    // leading hash_ids already seen (agentx-replay §5)
  int64_t theoretical_total_blocks = 0;  // len(hash_ids)
};

struct AgenticOptions {
  int num_gpus = 1;  // per-GPU throughput divides by it (tp·pp·pcp, or the sum over workers)
};

/// Descriptive statistics of one per-request quantity (population std; linear percentiles).
struct AgenticDist {
  int64_t count = 0;
  double mean = 0, std = 0, min = 0, max = 0;
  double p1 = 0, p50 = 0, p75 = 0, p90 = 0, p95 = 0, p99 = 0;
};

/// Interactivity in tokens/s/user at each statistic.
struct Interactivity {
  int64_t count = 0;  // requests it is computed over
  double mean = 0, p50 = 0, p75 = 0, p90 = 0, p95 = 0, std = 0;
};

struct AgenticMetrics {
  // Accounting over every record given.
  int64_t records_total = 0;
  int64_t warmup_records = 0;  // not profiling: dropped
  // Profiling phase.
  int64_t requests = 0;  // profiling requests, successful or not
  int64_t successful = 0;
  int64_t errors = 0;             // failed profiling requests (overflows included)
  int64_t context_overflows = 0;  // of those, is_context_overflow(error)
  std::map<std::string, int64_t> error_categories;  // "context_overflow" or a failure cause
  int64_t sessions = 0;                             // distinct session ids
  double requests_per_session = 0;                  // requests / sessions
  int64_t max_requests_per_session = 0;

  // Latency of successful requests, seconds: TTFT = content[0] − send, E2EL = content[last] −
  // send, ITL (per request) = (E2EL − TTFT)/(OSL − 1) for OSL ≥ 2.
  AgenticDist ttft_s, e2el_s, itl_s;
  AgenticDist icl_s;  // gaps between content events: several tokens an event make them longer
  std::optional<double> tokens_per_event;  // mean, over the requests whose counts are known
  /// E2E-normalized interactivity: r_i = E2EL_i/OSL_i (s/token) over successful requests with
  /// E2EL > 0 and OSL > 0; p_q = 1/percentile_q(r), mean = 1/mean(r), std = pstdev(1/r_i).
  Interactivity e2e_norm_intvty;
  /// Conventional interactivity 1/ITL: p_q = 1/percentile_q(ITL) (the slow tail), mean =
  /// 1/mean(ITL), std = pstdev(1/ITL_i).
  Interactivity intvty;

  // Tokens of successful requests: ISL = server prompt_tokens (else the requested length), OSL
  // = server completion_tokens (else content events), expected = the trace's `out`.
  int64_t total_input_tokens = 0, total_output_tokens = 0;
  AgenticDist input_tokens, output_tokens, expected_output_tokens;
  /// Completions per 1-s window, as InferenceX counts them: full windows from the first end of a
  /// successful request, [first + i s, first + (i+1) s), as many as fit before the last end (the
  /// right boundary excluded). With no full window, `qps.mean` is completions/span and
  /// `qps_windows` 0.
  AgenticDist qps;
  int64_t qps_windows = 0;

  // Throughput over D = max(done) − min(send) of successful profiling requests.
  double duration_s = 0;
  double input_tps = 0, output_tps = 0, total_tps = 0;
  double input_tps_per_gpu = 0, output_tps_per_gpu = 0, total_tps_per_gpu = 0;
  int num_gpus = 1;

  /// 100·Σhit/Σtotal of theoretical prefix-cache blocks over successful profiling requests;
  /// nullopt when they have no blocks.
  std::optional<double> theoretical_cache_hit_pct;

  /// Token drift of successful requests with a server prompt_tokens and recorded_in > 0:
  /// ratio = prompt_tokens/recorded_in (mean, p1, p99 in `ratio`), overhead = prompt_tokens −
  /// recorded_in (the chat template and markers; mean, min, max in `overhead`).
  AgenticDist token_ratio, token_overhead;

  /// Coverage: the fraction of successful profiling requests with a TTFT observation (≥ 1
  /// content event) and with an ITL observation (OSL ≥ 2 and ≥ 1 content event). Successful
  /// requests are the denominator, as AIPerf's request_count; 0 when there are none.
  int64_t ttft_observations = 0, itl_observations = 0;
  double ttft_coverage = 0, itl_coverage = 0;
  double coverage() const { return ttft_coverage < itl_coverage ? ttft_coverage : itl_coverage; }
};

/// Computes the metrics of `records` with their `info` (same size and order; a record without
/// info counts as profiling with empty trace facts).
AgenticMetrics compute_agentic_metrics(std::span<const RequestRecord> records,
                                       std::span<const AgenticRequestInfo> info,
                                       const AgenticOptions& options = {});

/// What the run was, beyond its records.
struct AgenticRunFacts {
  double duration_s = 0;          // configured --benchmark-duration, wall seconds
  double duration_floor_s = 900;  // the scenario's floor, recorded (trace) seconds
  double time_scale = 1;          // K: the replay ran K times faster than recorded
  bool cancelled = false;         // interrupted, or aborted by the live error threshold
  int64_t skipped_overflow = 0;   // requests not sent because they could not fit the context
};

/// One reason a run is not submission-valid.
struct AgenticInvalid {
  std::string reason;   // stable name: error_rate_exceeded, context_overflow_rate_exceeded, ...
  std::string message;  // the numbers behind it
};

inline constexpr double kAgenticMaxErrorRate = 0.10;     // InferenceX: errors/requests <= 0.10
inline constexpr double kAgenticMaxOverflowRate = 0.01;  // AIPerf: strictly above fails
inline constexpr double kAgenticMinCoverage = 0.98;      // AIPerf FAQ (0.95 in an older doc)

/// Every reason the run is not submission-valid, in a fixed order; empty when it is valid:
/// - error_rate_exceeded: errors/requests > 0.10 (InferenceX's post-run gate
///   error_request_count/(request_count + error_request_count) <= 0.10, inclusive);
/// - context_overflow_rate_exceeded: overflows/(successful + errors + skipped_overflow) > 0.01;
/// - insufficient_profile_metric_coverage: min(TTFT, ITL coverage) < 0.98;
/// - duration_below_floor: duration_s·time_scale (the recorded time replayed) < the floor;
/// - run_cancelled;
/// - time_scaled: time_scale != 1, since a compressed replay is not the recorded workload.
std::vector<AgenticInvalid> agentic_validity(const AgenticMetrics& m, const AgenticRunFacts& facts);

inline bool submission_valid(const std::vector<AgenticInvalid>& reasons) {
  return reasons.empty();
}

/// Our result block, with descriptive key names (docs/metrics.md "Agentic replay").
boost::json::object agentic_to_json(const AgenticMetrics& m);

/// InferenceX's agentic aggregate keys (inferencex-spec.md §5): num_requests_total (every
/// record), num_requests_successful, request_accounting{records_total, records_profiled,
/// records_dropped_total, records_warmup_dropped, records_error_dropped, error_categories},
/// request_metrics{qps, latency{ttft, e2el, itl, tpot, intvty, e2e_norm_intvty}, tokens{input,
/// output_actual, output_expected}, throughput{input_tput_tps, output_tput_tps, total_tput_tps,
/// duration_seconds, per_gpu{...}}, cache{theoretical_cache_hit_rate (0..1)}}. Latencies are in
/// seconds; every statistic block is {mean, p50, p75, p90, p95, std}, or {} without samples;
/// floats are rounded to 5 decimals as InferenceX writes them. Plus submission_valid and
/// submission_invalid_reasons [{reason, message}].
boost::json::object inferencex_agentic_json(const AgenticMetrics& m,
                                            const std::vector<AgenticInvalid>& reasons);

}  // namespace ib::metrics
