// The run loop: sends prepared requests to one endpoint under a load shape and records every
// request. Closed loop for now: `concurrency` workers, each with its own keep-alive connection,
// each sending its next request as soon as the previous one completes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/expected.h"
#include "http/client.h"
#include "metrics/record.h"
#include "openai/request.h"

namespace ib {

/// A request ready to send: the body is built before the run, off the hot path.
struct PreparedRequest {
  std::string body;
  int input_len = 0;
  int output_len = 0;
};

struct RunnerConfig {
  Endpoint endpoint;
  Api api = Api::kCompletions;
  int concurrency = 1;
  ClientTimeouts timeouts;
  int max_retries = 1;  // re-sends of a request that failed before any response byte
  /// Called after every completed measured request (progress display); may be empty.
  std::function<void(size_t done, size_t total)> on_progress;
};

struct RunnerResult {
  std::vector<RequestRecord> warmup;    // warmup requests, excluded from statistics
  std::vector<RequestRecord> measured;  // the measured requests that ran (cancelled ones removed)
  int64_t cancelled = 0;                // in flight or unsent when the run was interrupted
  bool interrupted = false;
  int64_t origin_ns = 0;  // monotonic time of the run start (all record times are absolute)
  double start_unix = 0;
  double end_unix = 0;
  int peak_in_flight = 0;
  double client_cpu_s = 0;  // user+system CPU time of this process during the run
};

/// Runs the warmup requests, then the measured ones, both at the configured concurrency.
/// Stops early (marked interrupted) when ib::interrupt_requested() becomes true.
/// Error only for setup failures (unresolvable host); request failures are in the records.
Expected<RunnerResult> run_closed_loop(const RunnerConfig& config,
                                       const std::vector<PreparedRequest>& warmup,
                                       const std::vector<PreparedRequest>& measured);

}  // namespace ib
