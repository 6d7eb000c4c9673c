// The steady-state window of a point (docs/metrics.md, "Steady state"): the span during which at
// least 95% of the target concurrency was in flight, as vLLM's Rust benchmark and SGLang report
// it. Ramp-up and drain are left out, so the window's figures vary less between runs than the
// whole run's, and `compare --window steady` can compare them.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <optional>
#include <span>

#include "metrics/keys.h"
#include "metrics/record.h"

namespace ib::metrics {

inline constexpr double kSteadyFraction = 0.95;

struct SteadyWindow {
  int64_t start_ns = 0, end_ns = 0;  // on the records' clock
  int64_t threshold = 0;             // requests in flight that count as steady
  double seconds() const { return static_cast<double>(end_ns - start_ns) / 1e9; }
};

/// From the first instant at least ⌈fraction · target⌉ requests were in flight (sent, not yet
/// done) to the last instant they still were. nullopt without a target (an open loop without a
/// cap), when the load never got there, or when the window has no length.
std::optional<SteadyWindow> find_steady_window(std::span<const RequestRecord> records,
                                               int64_t target_concurrency,
                                               double fraction = kSteadyFraction);

/// A request that was sent and done within the window: its latencies are steady ones.
bool inside(const RequestRecord& r, const SteadyWindow& w);

/// The output tokens of r's content events within the window: each event's count where the
/// events are counted (metrics::event_token_counts), else r's output tokens spread evenly over
/// its events.
double tokens_in_window(const RequestRecord& r, const SteadyWindow& w);

/// The steady state as the point's headline keys: throughputs are the window's (output tokens of
/// every event in it, requests completed in it, prompts of requests sent in it, over its length),
/// latencies are those of the requests inside it. Plus `window_start_s` and `window_end_s` (from
/// `origin_ns`), `duration_s`, `share_of_run` (of first send to last completion), `threshold`
/// and `requests_inside`.
boost::json::object steady_json(std::span<const RequestRecord> records, const SteadyWindow& w,
                                const MetricsOptions& options, int64_t origin_ns);

}  // namespace ib::metrics
