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
  int64_t prompt_tokens = -1;       // server-reported usage, -1 when absent
  int64_t completion_tokens = -1;   // server-reported usage, -1 when absent
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

}  // namespace ib::metrics
