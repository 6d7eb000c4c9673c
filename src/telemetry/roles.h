// A disaggregated deployment's telemetry by role (docs/telemetry.md, "Disaggregated
// deployments"): each role's server metrics over time, the rate-match figure that says which side
// requests wait for, and the GPU energy of each role (InferenceX's prefill_ and decode_ energy
// keys). Pure: the scrapes, the roles' GPU counts and the point's counts in; figures out.
#pragma once

#include <boost/json.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "telemetry/power.h"
#include "telemetry/timeslices.h"

namespace ib::telemetry {

/// The role of a worker label: "prefill-1" -> "prefill", "decode-0" -> "decode", "router" ->
/// "router" (the label without a trailing "-N").
std::string role_of_label(const std::string& label);

/// One role of the deployment: every worker of it, its slices summed over the workers (queues,
/// token rates) as server_timeslices combines workers, and their summary.
struct RoleTelemetry {
  std::string role;                 // prefill | decode | router
  std::vector<std::string> labels;  // its workers' labels, sorted
  int gpus = 0;                     // 0 when not known (the router has none)
  std::vector<ServerSlice> slices;
  TelemetrySummary summary;
  std::vector<TimedScrape> scrapes;  // the role's own scrapes, for its power
};

/// The scrapes of each role, by the labels of their URLs (`labels`: url -> "prefill-0"); a URL
/// without a label is not a role's. `gpus`: role -> its GPUs (prefill, decode). Roles in the
/// order prefill, decode, router, then any other; a role without a scrape is left out.
std::vector<RoleTelemetry> role_telemetry(const std::vector<TimedScrape>& scrapes,
                                          const std::map<std::string, std::string>& labels,
                                          const std::map<std::string, int>& gpus, double slice_s);

/// Which side of a disaggregated deployment requests wait for. From the TTFT attribution where
/// the deployment reported it (the median time a request queued at a prefill worker and at a
/// decode worker), else from the roles' mean waiting queues on /metrics: a side is the
/// bottleneck when its wait is over twice the other's and over a floor (1 ms; half a request
/// waiting on average); otherwise the two are balanced.
struct RateMatch {
  struct Side {
    int workers = 0, gpus = 0;
    std::optional<double> tokens_per_s, tokens_per_s_per_gpu;  // input (prefill), output (decode)
    std::optional<double> mean_running, mean_waiting;
    std::optional<double> queue_ms_p50;  // from the TTFT attribution
  };
  Side prefill, decode;
  std::optional<double> kv_transfer_ms_p50;
  std::string bound = "unknown";  // prefill | decode | balanced | unknown
  std::string basis;              // "ttft attribution" | "server queues" | ""
  std::string why;                // one sentence, with the figures it rests on
};

/// What the client measured that the figure reads: the TTFT parts' medians where the deployment
/// reported them, and the point's token rates over its measured window (the prefill side computes
/// the input tokens, the decode side the output tokens; exact, where a role's counters over
/// once-a-second scrapes are not for a short point).
struct RateInputs {
  std::optional<double> prefill_queue_ms_p50, decode_queue_ms_p50, kv_transfer_ms_p50;
  std::optional<double> input_tokens_per_s, output_tokens_per_s;
};

/// nullopt unless both a prefill and a decode role are among `roles`.
std::optional<RateMatch> rate_match(const std::vector<RoleTelemetry>& roles, const RateInputs& in);
boost::json::object rate_match_to_json(const RateMatch& r);

/// The roles' telemetry as the result carries it under telemetry.by_role: per role its workers,
/// GPUs, summary and slices (slices_to_json rows).
boost::json::object roles_to_json(const std::vector<RoleTelemetry>& roles);

/// The GPU energy of each GPU-holding role over the window (its workers' dcgm-exporter series,
/// integrated as the deployment's are), with InferenceX's keys: prefill_gpu_energy_j,
/// prefill_avg_power_w, prefill_joules_per_input_token, decode_gpu_energy_j, decode_avg_power_w,
/// decode_joules_per_output_token, set only where that role's measurement is valid; "roles" holds
/// each role's full energy block (validity and reasons). Empty when no role's scrapes carry power.
boost::json::object role_energy(const std::vector<RoleTelemetry>& roles, double window_start_unix,
                                double window_end_unix, const TokenCounts& counts);

/// The same from each role's own power samples (role -> its GPUs' samples, as a sampler beside
/// each of its processes wrote them) and its GPU count (role -> GPUs).
boost::json::object role_energy(const std::map<std::string, PowerLog>& logs,
                                const std::map<std::string, int>& gpus, double window_start_unix,
                                double window_end_unix, const TokenCounts& counts);

}  // namespace ib::telemetry
