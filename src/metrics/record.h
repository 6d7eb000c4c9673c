// Per-request measurement records: the raw material every reported number is computed from
// (every number traceable to raw per-request records).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ib::metrics {

/// Why a request failed. kNone for a successful request.
enum class FailureCause {
  kNone,
  kConnect,           // could not connect (refused, unreachable)
  kConnectTimeout,    // connecting took longer than the connect timeout
  kHttpStatus,        // non-200 status before the stream
  kStreamError,       // an error event inside a 200 stream
  kNoDone,            // the stream ended (chunked end, or the server closed) without `[DONE]`
  kNoContent,         // the stream completed but carried no content event
  kMalformed,         // unparseable event
  kFirstByteTimeout,  // no response byte within the first-byte timeout after sending
  kIdleTimeout,       // a gap between response reads longer than the idle timeout
  kTotalTimeout,      // the whole request took longer than the request timeout
  kConnectionReset,   // the connection was reset (RST), or closed before any response byte
  kTransport,         // any other socket error
  kCancelled,         // the run was interrupted while the request was in flight
};

/// Stable lower-case name used in results ("http_status", "no_done", ...).
std::string_view failure_cause_name(FailureCause cause);

/// The parts of a disaggregated deployment's time to first token, in the order the client reads
/// them (openai::kTtftPartNames, without "_ms"): the router's own time, the prefill worker's
/// queue and prefill, the rest of the prefill round trip, the decode worker's handling of the
/// request before the pull, the KV transfer, the decode worker's queue and first decode step.
inline constexpr const char* kTtftPartKeys[] = {
    "router",         "prefill_queue", "prefill",      "prefill_transport",
    "decode_receive", "kv_transfer",   "decode_queue", "first_decode"};
inline constexpr size_t kTtftPartCount = 8;

/// One request as measured by the client. Times are nanoseconds on the monotonic clock
/// (ib::mono_ns), so differences are exact and the run's origin is a separate value.
struct RequestRecord {
  int64_t index = 0;                // position in the prompt list
  int input_len = 0;                // requested prompt length in tokens
  bool input_exact = false;         // input_len is the server's count (token ids, or a tokenizer)
  int output_len = 0;               // requested max_tokens
  int64_t sched_ns = 0;             // when the scheduler intended to send it
  int64_t send_ns = 0;              // when its first byte was written
  int64_t first_byte_ns = 0;        // first response byte (0: none)
  int64_t done_ns = 0;              // response complete or failed
  std::vector<int64_t> content_ns;  // arrival time of every content event, in order
  /// Tokens each content event carried, from the server's continuous usage (completion_tokens
  /// growth since the previous count): aligned with content_ns where known, 0 for an event that
  /// came without a count; empty when the server counted none. event_token_counts() judges it.
  std::vector<int32_t> content_tokens;
  /// Tokens of each content event's text by the client's tokenizer (bench --tokenizer), aligned
  /// with content_ns; empty without a tokenizer. An approximation of what the server counted
  /// (text re-encoded in pieces), used only where the server gave no count on every event.
  std::vector<int32_t> text_tokens;
  int64_t prompt_tokens = -1;       // server-reported usage, -1 when absent
  int64_t completion_tokens = -1;   // server-reported usage, -1 when absent
  /// The request's speculative decoding as the server reported it in the response (vLLM's
  /// metrics.speculative_decoding): verify steps and the draft tokens they accepted; -1: none.
  int32_t spec_steps = -1;
  int32_t spec_accepted = -1;
  /// A disaggregated deployment's time to first token by part (kTtftPartKeys order, ms), as its
  /// decode worker reported it; empty when it did not.
  std::vector<float> ttft_parts;
  /// The engine's own timing of the request as the response carried it (vLLM's
  /// --enable-per-request-metrics, openai::ServerTiming), ms; negative where absent.
  float server_queue_ms = -1, server_ttft_ms = -1, server_generation_ms = -1;
  int http_status = 0;
  int retries = 0;  // re-sends after a failure before any response byte
  FailureCause failure = FailureCause::kNone;
  std::string error;  // human-readable cause, empty on success
  std::string finish_reason;

  bool ok() const { return failure == FailureCause::kNone; }
  /// Output tokens: the server's count, else the number of content events (an estimate).
  int64_t output_tokens() const {
    return completion_tokens >= 0 ? completion_tokens : static_cast<int64_t>(content_ns.size());
  }
  /// Input tokens: the server's count, else the requested length.
  int64_t input_tokens() const { return prompt_tokens >= 0 ? prompt_tokens : input_len; }
};

/// How the tokens of each content event of a request are known (docs/metrics.md, "Tokens per
/// event"): the server's continuous usage counted every event; or its final usage equals the
/// number of content events (one token each; a natural stop may add one more, the EOS token that
/// never arrives as text); or not at all (several tokens an event, uncounted).
enum class EventTokens { kUsageDeltas, kOnePerEvent, kTokenizer, kUnknown };
/// "usage_deltas", "one_per_event", "tokenizer", "unknown".
std::string_view event_tokens_name(EventTokens t);

/// The tokens of each content event of a successful request into `counts` (aligned with
/// content_ns; cleared when unknown), and how they are known.
EventTokens event_token_counts(const RequestRecord& r, std::vector<int32_t>* counts);

/// Appends a request's per-token inter-token latencies (ms) to `out`: for every content event
/// after the first, its gap from the previous event shared by the `counts[i]` tokens it carried
/// (counts[i] samples of gap / counts[i]). Tokens that came with the first event came with the
/// first token (TTFT) and have none.
void append_per_token_itl(const RequestRecord& r, const std::vector<int32_t>& counts,
                          std::vector<double>* out);

}  // namespace ib::metrics
