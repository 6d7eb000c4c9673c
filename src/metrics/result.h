// Run-level metrics from per-request records (docs/architecture.md, "Metric definitions") and their
// JSON form, which keeps the key names of vLLM's benchmark_serving (`mean_ttft_ms`, `p99_tpot_ms`,
// `output_throughput`, ...) and adds interactivity and schedule-based latency under clear names.
#pragma once

#include <array>
#include <boost/json.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "metrics/record.h"
#include "metrics/stats.h"

namespace ib::metrics {

/// Service-level objectives for goodput (vLLM's --goodput): a request is "good" when it meets
/// every objective given. Unset objectives are not checked.
struct GoodputSlo {
  std::optional<double> ttft_ms, tpot_ms, e2el_ms;
  bool any() const { return ttft_ms || tpot_ms || e2el_ms; }
};

struct MetricsOptions {
  std::vector<double> percentiles{90, 99, 99.9};  // besides mean, median and std
  int num_gpus = 1;                               // for per-GPU throughput
  /// A disaggregated deployment's GPUs by role (0: not one): InferenceX divides input
  /// throughput by the prefill GPUs, output throughput by the decode GPUs, the total by all.
  int prefill_gpus = 0, decode_gpus = 0;
  GoodputSlo goodput;
};

/// Everything computed from the measured (non-warmup) records of one benchmark point.
struct BenchMetrics {
  int64_t num_requests = 0;  // records given (measured requests, successful or not)
  int64_t completed = 0;
  int64_t failed = 0;
  std::map<std::string, int64_t> failures_by_cause;
  std::vector<std::string> error_samples;                   // up to 5 distinct messages
  std::map<std::string, std::string> first_error_by_cause;  // cause -> its first message
  int64_t retries = 0;

  double duration_s = 0;            // first send → last completion
  int64_t total_input_tokens = 0;   // successful requests
  int64_t total_output_tokens = 0;  // successful requests
  double request_throughput = 0;
  double output_throughput = 0;
  double total_token_throughput = 0;
  int64_t good_requests = 0;   // meeting every goodput objective (when any is set)
  double request_goodput = 0;  // good_requests / duration

  Summary ttft_ms, tpot_ms, itl_ms,
      e2el_ms;                           // from send (docs/architecture.md, "Metric definitions")
  Summary sched_ttft_ms, sched_e2el_ms;  // from the scheduled time
  Summary queue_ms;                      // send − sched
  Summary e2e_norm_s_per_tok;            // rᵢ = E2ELᵢ / outᵢ, for E2E-normalized intvty
  // Tokens, not events (docs/metrics.md, "Tokens per event"): itl_ms is per token (a gap shared
  // by the tokens of its event), over the requests whose tokens per event are known; icl_ms is
  // the gap between content events (what clients have called ITL), over every request.
  Summary icl_ms;
  Summary tokens_per_event;  // per content event, over the requests whose counts are known
  Summary stall_ms;          // per request: its longest gap between content events
  int64_t requests_counted_by_usage = 0;  // continuous usage counted every event
  int64_t requests_one_per_event = 0;     // final usage = events: one token each
  int64_t requests_counted_by_tokenizer = 0;  // the client's tokenizer on each event's text
  // Of those with the server's final usage: the tokenizer's total and the server's, to say how
  // close the approximation came.
  int64_t tokenizer_tokens = 0, tokenizer_usage_tokens = 0;
  int64_t requests_uncounted = 0;         // several tokens an event, uncounted: no per-token ITL
  // Client-inferred acceptance length: the tokens of the events counted by usage deltas, each
  // request's first (prefill) and last (possibly cut by max_tokens) events left out, over those
  // events. The server's AL when it sends one event per decode step (stream interval 1).
  int64_t decode_event_tokens = 0, decode_events = 0;
  // The server's own per-request speculative decoding (vLLM's metrics.speculative_decoding in
  // each response): the requests that carried it, their verify steps and accepted drafts, and
  // each request's acceptance length (1 + accepted / steps).
  int64_t spec_requests = 0, spec_steps = 0, spec_accepted = 0;
  Summary request_acceptance_length;
  // A disaggregated deployment's time to first token by part (kTtftPartKeys), over the requests
  // whose decode worker reported them, and what the parts leave of each one's measured TTFT
  // (network and HTTP between the processes: the attribution's error).
  int64_t ttft_attributed = 0;
  std::array<Summary, kTtftPartCount> ttft_parts;
  Summary ttft_unattributed;
  // The engine's own timing per request (vLLM's --enable-per-request-metrics), over the requests
  // whose response carried both its queue and its time to first token: the queue, the engine's
  // scheduling-to-first-token, and what the client's TTFT holds beyond them (the frontend,
  // tokenization, the network, HTTP: outside the engine); the generation time where given.
  int64_t server_timed = 0;
  Summary server_queue_ms, server_ttft_ms, outside_engine_ms, server_generation_ms;

  int64_t requests_without_usage = 0;   // output tokens estimated from content events
  int64_t usage_length_mismatches = 0;  // |completion_tokens − requested| > 5% of requested
  // Prompts whose length the client knew exactly (RequestRecord::input_exact) and the server
  // reported: how many, their client and server totals, and how many disagree (by how much).
  int64_t prompt_tokens_checked = 0;
  int64_t prompt_tokens_client = 0;
  int64_t prompt_tokens_server = 0;
  int64_t prompt_token_mismatches = 0;
  int64_t prompt_token_max_diff = 0;  // server − client of the largest |difference|
  std::vector<std::string> warnings;

  double failure_rate() const {
    return num_requests == 0 ? 0.0 : static_cast<double>(failed) / num_requests;
  }
};

/// 1 + accepted / steps over every response's own speculative decoding; NaN when none told it.
double response_acceptance_length(const BenchMetrics& m);

/// Why per-token ITL covers fewer requests than completed (or none): "" when it covers all.
std::string itl_note(const BenchMetrics& m);

/// Why requests failed, one cause a part, most frequent first: "4 × http_status: HTTP 404: The
/// model 'sim' does not exist; 1 × idle_timeout: ...". Empty when none failed.
std::string failure_summary(const BenchMetrics& m);

/// Computes the metrics. Failed requests are excluded from latency statistics and token totals
/// and counted by cause.
BenchMetrics compute_metrics(std::span<const RequestRecord> records, const MetricsOptions& options);

/// The metric keys of a result JSON: vLLM names (`mean_ttft_ms`, `p99.9_itl_ms`, ...),
/// interactivity (`median_intvty` = 1000 / median_tpot_ms, ...), E2E-normalized interactivity,
/// schedule-based latency (`mean_sched_ttft_ms`, ...), failures and warnings. Callers add the
/// identity and configuration keys.
boost::json::object metrics_to_json(const BenchMetrics& m, const MetricsOptions& options);

/// "p99", "p99.9", "p90": the vLLM spelling of a percentile key prefix.
std::string percentile_key(double q);

/// Per-request details as one JSON object (for --details JSONL), times in ms from `origin_ns`.
boost::json::object record_to_json(const RequestRecord& r, int64_t origin_ns);

}  // namespace ib::metrics
