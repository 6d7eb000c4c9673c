// How faithful a timed trace's replay was (docs/trace-replay.md, "Fidelity"): the arrivals
// against the schedule, the input and output tokens as the server counted them against the trace,
// the trace's theoretical prefix-cache hit against the hit the server reported, and the requests
// the cap held or the run did not send. A replay outside its bounds is not valid, with the reason:
// its numbers are not the trace's.
#pragma once

#include <boost/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "metrics/agentic.h"
#include "metrics/record.h"
#include "workload/trace_workload.h"

namespace ib::load {

struct FidelityBounds {
  double lag_p99_ms = 10;  // arrival lag (sent - scheduled), when no cap held requests
  /// With exact prompts (token ids, tokenizer text), every input the server counted must be the
  /// trace's; every output of a request that finished normally must be the trace's.
  bool exact_inputs = true;
  bool exact_outputs = true;
};

struct FidelityInput {
  const std::vector<metrics::RequestRecord>* records = nullptr;  // measured, by index
  const workload::TracePlanInfo* plan = nullptr;
  int64_t scheduled = 0;  // requests in the schedule
  int cap = 0;            // concurrency cap (0: none)
  int64_t peak_in_flight = 0;
  std::optional<double> server_prefix_hit_rate;  // Δhits / Δqueries over the point (0..1)
};

struct Fidelity {
  boost::json::object json;
  std::vector<metrics::AgenticInvalid> invalid;  // reason: trace_arrival_lag, trace_input_drift,
                                                 // trace_output_short
};

Fidelity trace_fidelity(const FidelityInput& in, const FidelityBounds& bounds = {});

}  // namespace ib::load
