// The run loop: sends prepared requests to one endpoint under a load shape and records every
// request. Closed loop (N workers, each sending its next request when the previous completes) or
// open loop (requests sent on an absolute arrival schedule, optionally capped in concurrency),
// bounded by a request count or a duration. Spread over several threads, each with its own event
// loop and connections, so the client is never the bottleneck; its own health is measured.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/expected.h"
#include "http/client.h"
#include "load/arrivals.h"
#include "metrics/record.h"

namespace ib::load {

/// A request ready to send: the body is built before the run, off the hot path.
struct PreparedRequest {
  std::string body;
  int input_len = 0;
  bool input_exact = false;  // input_len counted as the server counts (metrics::RequestRecord)
  int output_len = 0;
};

enum class LoadMode { kClosedLoop, kOpenLoop };

struct LoadShape {
  LoadMode mode = LoadMode::kClosedLoop;
  /// Closed loop: the number of workers. Open loop: the cap on requests in flight (0: none);
  /// a request that finds the cap reached waits, and that wait is its queue time.
  int concurrency = 1;
  ArrivalSpec arrivals;   // open loop only
  double duration_s = 0;  // > 0: stop sending after this long; requests cycle through the list
  /// Open loop: when each measured request is sent, as offsets from the run's start (a timed
  /// trace's arrivals); non-empty replaces `arrivals`. One per request, non-decreasing.
  std::vector<int64_t> schedule_ns;
};

struct RunnerConfig {
  http::Endpoint endpoint;
  std::string path = "/v1/completions";
  LoadShape shape;
  http::ClientTimeouts timeouts;
  int max_retries = 1;            // re-sends of a request that failed before any response byte
  int threads = 0;                // event-loop threads; 0: one per 2,000 connections, at most nproc
  int source_addresses = 0;       // loopback targets: spread over 127.0.0.1..N; 0: automatic
  std::string request_id_prefix;  // X-Request-Id = prefix + index; empty: not sent
  /// > 0: the monotonic time (mono_ns) at which the run is cut short like an interrupt and
  /// marked `deadline_hit` (a sweep's per-point timeout).
  int64_t deadline_ns = 0;
  /// Connections opened before the measured phase starts (spread over the lanes), so that the
  /// first requests of a burst do not wait for a TCP connect (a timed trace's simultaneous
  /// arrivals); 0: none beyond the warmup's.
  int preconnect = 0;
  /// Called on the calling thread about ten times a second (progress display); may be empty.
  /// `total` is 0 for a time-bounded run.
  std::function<void(size_t done, size_t total, double elapsed_s)> on_progress;
  /// The client's tokenizer counting each content event's text (RequestRecord::text_tokens);
  /// empty: no counting. Called from the event-loop threads: it must be thread-safe.
  std::function<int32_t(std::string_view)> count_text_tokens;
};

/// How the client itself behaved: if it was overloaded, the measurement may be distorted.
struct ClientHealth {
  int threads = 1;
  double cpu_seconds = 0;  // user+system CPU of this process during the run
  double wall_seconds = 0;
  double cpu_utilization = 0;        // cpu_seconds / (wall_seconds · threads)
  double event_loop_lag_p99_ms = 0;  // lateness of a 10 ms ticker on each event loop
  double event_loop_lag_max_ms = 0;
  double schedule_lag_p99_ms = 0;  // open loop: dispatch time − scheduled time
  double schedule_lag_max_ms = 0;
  int64_t peak_in_flight = 0;
  int64_t connections_opened = 0;
  int64_t pool_reopened = 0;  // exact schedule: idle connections the server closed, reopened early
  int source_addresses = 1;
  int64_t open_file_limit = 0;
  double kernel_timestamp_fraction = 0;  // reads timed by the kernel (SO_TIMESTAMPNS)
  uint64_t reads = 0;                    // recvmsg calls that returned bytes
  uint64_t content_events = 0;           // content events of the measured requests
  double cpu_us_per_content_event = 0;   // cpu_seconds per content event, in microseconds
  int64_t rss_before_kib = 0;            // resident memory when the measured phase started
  int64_t peak_rss_kib = 0;              // peak resident memory of the process (getrusage)
  std::vector<std::string> warnings;     // when any of the above could have distorted results
};

struct RunnerResult {
  std::vector<metrics::RequestRecord> warmup;  // warmup requests, excluded from statistics
  std::vector<metrics::RequestRecord>
      measured;           // measured requests that ran, by index (cancelled removed)
  int64_t cancelled = 0;  // cut by an interrupt (excluded from statistics)
  bool interrupted = false;
  bool deadline_hit = false;  // cut by RunnerConfig::deadline_ns (then also `interrupted`)
  int64_t origin_ns = 0;      // monotonic time of the measured phase's start
  double start_unix = 0;
  double end_unix = 0;
  ClientHealth health;
};

/// Checks a configuration; the error names the offending option.
Status validate(const RunnerConfig& config);

/// Runs the warmup requests (closed loop), then the measured ones under the configured shape.
/// Stops early (marked interrupted) when ib::interrupt_requested() becomes true.
/// Error only for setup failures (unresolvable host); request failures are in the records.
Expected<RunnerResult> run_load(const RunnerConfig& config,
                                const std::vector<PreparedRequest>& warmup,
                                const std::vector<PreparedRequest>& measured);


}  // namespace ib::load
