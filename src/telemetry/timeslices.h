// Server metrics over time (issue 13, docs/telemetry.md "Server metrics"): Prometheus scrapes
// taken during a point are cut into fixed-width timeslices, so a report can show how the queue,
// the KV cache and the prefix-cache hit rate evolved instead of one number for the whole point.
// The same slicing is applied to the client's per-request records, so server and client curves
// can be drawn side by side. Pure functions: the scraping loop (network, clock) lives elsewhere.
//
// Engine names differ (vLLM's `vllm:num_requests_running` is SGLang's `sglang:num_running_reqs`),
// so every slice quantity is read through a table of per-engine metric names, and the engine is
// detected from the names a scrape carries.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/prometheus.h"
#include "metrics/record.h"

namespace ib::telemetry {

/// One /metrics scrape and when it was taken. `t_s` is seconds on any clock shared by all scrapes
/// of a point (only differences are used). A multi-worker server is scraped at several URLs; each
/// URL is one worker, and slices combine the workers (see server_timeslices).
struct TimedScrape {
  double t_s = 0;
  metrics::Scrape scrape;
  std::string url;
};

enum class Engine { kUnknown, kVllm, kSglang, kTrtllm, kServeSim };

/// "vllm", "sglang", "trtllm", "serve-sim", "unknown".
std::string_view to_string(Engine engine);

enum class MetricKind { kGauge, kCounter };

/// The server quantities a slice reports.
enum class Quantity {
  kRunning,           // requests being executed (gauge)
  kWaiting,           // requests queued (gauge)
  kKvUsage,           // fraction 0..1 of the KV cache in use (gauge)
  kPrefixHits,        // prompt tokens found in the prefix cache (counter)
  kPrefixQueries,     // prompt tokens looked up in the prefix cache (counter)
  kPreemptions,       // preempted (vLLM) or retracted (SGLang) requests (counter)
  kPromptTokens,      // prompt tokens processed (counter)
  kGenerationTokens,  // output tokens generated (counter)
  kSpecAccepted,      // speculative decoding: accepted draft tokens (counter)
  kSpecDraftTokens,   // speculative decoding: proposed draft tokens (counter)
  kSpecDrafts,        // speculative decoding: drafts, i.e. proposal rounds (counter)
  kSpecAcceptLength,  // speculative decoding: acceptance length as the engine reports it (gauge)
  kKvOffloadOut,      // bytes moved from GPU to the offload tier (counter)
  kKvOffloadIn,       // bytes moved from the offload tier back to GPU (counter)
  kKvEvictedBlocks,   // cached KV blocks evicted for new allocations (serve-sim, counter)
};

/// The column key of a quantity ("running", "kv_usage", "prefix_hits", ...).
std::string_view quantity_key(Quantity quantity);

/// One way to read a quantity from one engine's /metrics: the samples named `name` (as written on
/// the wire, counters with their `_total`), restricted to those whose label `label` equals
/// `label_value` (ASCII case-insensitively) when `label` is not empty. Several label sets (data
/// parallel engines, ranks) are summed, or averaged for the fraction kKvUsage and
/// kSpecAcceptLength.
struct MetricSource {
  Quantity quantity;
  Engine engine;
  MetricKind kind;
  std::string_view name;
  std::string_view label = {};
  std::string_view label_value = {};

  /// `name`, or `name{label="label_value"}` when restricted.
  std::string display() const;
};

/// The engine-name table (docs/telemetry.md has it with where each name came from). Within one
/// quantity and engine the rows are in order of preference: per worker, the first row whose
/// samples appear in any of its scrapes is used for the whole point, so a fallback name (vLLM's
/// pre-0.9 `gpu_` names) never mixes with the current one. serve-sim exports vLLM's names: its
/// rows are vLLM's plus its own evicted-blocks counter.
std::span<const MetricSource> metric_sources();

/// The engine whose names `scrape` carries: serve-sim when an `inferbench_sim:` sample or
/// `vllm:iteration_total` (serve-sim only) is present, else whichever of the prefixes `vllm:`,
/// `sglang:` and `trtllm_` most samples start with; kUnknown when none does.
Engine detect_engine(const metrics::Scrape& scrape);

/// One server timeslice. Every quantity is nullopt when no worker had a scrape in the slice that
/// carries it (an engine that does not export it, or a slice without scrapes).
struct ServerSlice {
  int index = 0;
  double start_s = 0, end_s = 0;  // relative to the first scrape of the point
  int scrapes = 0;                // scrapes (all workers) taken inside the slice
  std::string engine;             // to_string(Engine) of the workers seen, "mixed" if they differ

  // Gauges: the last value in the slice and the mean of the slice's values, summed over workers.
  std::optional<double> running, running_mean, waiting, waiting_mean;
  // KV usage: the mean over workers of their last value; the max any worker reached in the slice.
  std::optional<double> kv_usage, kv_usage_max;

  // Counters: the increase over the slice (see server_timeslices), summed over workers.
  std::optional<double> prefix_hits, prefix_queries;
  std::optional<double> prefix_hit_rate;  // Δhits / Δqueries; nullopt when Δqueries == 0
  std::optional<double> preemptions;
  std::optional<double> prompt_tokens, generation_tokens;
  std::optional<double> prompt_tokens_per_s, generation_tokens_per_s;  // Σ over workers of Δ/Δt
  std::optional<double> spec_accepted_tokens, spec_draft_tokens, spec_drafts;
  // 1 + Δaccepted/Δdrafts (vLLM's mean acceptance length) when the drafts counter is exported,
  // else the engine's own gauge (SGLang, TensorRT-LLM; mean over workers of the last value).
  std::optional<double> spec_acceptance_length;
  std::optional<double> kv_offload_gpu_to_cpu_bytes, kv_offload_cpu_to_gpu_bytes;
  std::optional<double> kv_offload_gpu_to_cpu_bytes_per_s, kv_offload_cpu_to_gpu_bytes_per_s;
  std::optional<double> kv_evicted_blocks;

  std::vector<std::string> metric_names;  // sorted MetricSource::display() of what was read
};

/// Cuts `scrapes` into slices of `slice_s` seconds: slice i covers [t0 + i·slice_s,
/// t0 + (i+1)·slice_s), t0 being the earliest scrape; the last slice is the one holding the latest
/// scrape. Scrapes are grouped by `url` (one worker each) and ordered by time.
///
/// Per worker, a counter's increase over slice i is its value at the worker's last scrape in the
/// slice minus its value at the worker's last scrape before the slice (the first scrape of the
/// point for the slice holding it), so the slices of a point add up to its whole increase; Δt,
/// for rates, is the time between those two scrapes. A counter that decreases between two scrapes
/// was restarted from zero: that step counts its new value. One that appears after the worker's
/// first scrape started from zero. A worker without a scrape in a slice adds nothing to it (its
/// increase lands in the slice of its next scrape).
///
/// Returns no slices when `scrapes` is empty, `slice_s` is not a positive finite number, or it
/// would make more than 10^7 slices (a typo, not a plot).
std::vector<ServerSlice> server_timeslices(const std::vector<TimedScrape>& scrapes, double slice_s);

/// A point's server metrics over all its slices.
struct TelemetrySummary {
  int slices = 0;
  double duration_s = 0;                             // the span of the slices: slices · slice_s
  std::string engine;                                // as ServerSlice::engine, over all slices
  std::optional<double> peak_kv_usage;               // max of kv_usage_max
  std::optional<double> mean_running, mean_waiting;  // mean over slices of the slice means
  std::optional<double> preemptions;                 // total
  std::optional<double> prefix_hits, prefix_queries, prefix_hit_rate;  // over the whole point
  std::optional<double> prompt_tokens, generation_tokens;              // totals
  // 1 + Σaccepted/Σdrafts when drafts are counted, else the mean of the slices' gauge values;
  // `spec_acceptance_from` says which ("" when neither).
  std::optional<double> spec_acceptance_length;
  std::string spec_acceptance_from;
  std::optional<double> kv_offload_gpu_to_cpu_bytes, kv_offload_cpu_to_gpu_bytes;  // totals
  std::optional<double> kv_evicted_blocks;                                         // total
  std::vector<std::string> metric_names;  // union over slices, sorted
};

TelemetrySummary summarize(const std::vector<ServerSlice>& slices);

/// One client timeslice, from the per-request records.
struct ClientSlice {
  int index = 0;
  double start_s = 0, end_s = 0;  // relative to the run's origin
  int64_t started = 0;            // requests whose first byte was sent in the slice
  int64_t finished = 0;           // requests that completed or failed in the slice
  int64_t failed = 0;             // of those, failed
  // Content events received in the slice, by every request: one per output token when the
  // server streams each token in its own event, fewer when it batches tokens.
  int64_t output_tokens = 0;
  std::optional<double> mean_ttft_ms;  // successful requests whose first token came in the slice
  int64_t ttft_requests = 0;
  // Mean over successful requests finishing in the slice with more than one output token of
  // 1/TPOT = (output tokens − 1) / (last − first content event), tok/s.
  std::optional<double> mean_inverse_tpot;
  int64_t tpot_requests = 0;
};

/// Slices of `slice_s` seconds from `origin_ns` (the run's origin on the records' clock) to the
/// latest event of any record. Events before `origin_ns` and unset times (0) are not counted.
/// Returns no slices when no event is at or after the origin, or for a `slice_s` that
/// server_timeslices rejects.
std::vector<ClientSlice> client_timeslices(std::span<const metrics::RequestRecord> records,
                                           int64_t origin_ns, double slice_s);

/// Plain rows, one object per slice with the same keys in every row (null for a missing value),
/// so a report can draw any column over time.
boost::json::array slices_to_json(const std::vector<ServerSlice>& slices);
boost::json::array slices_to_json(const std::vector<ClientSlice>& slices);
boost::json::object summary_to_json(const TelemetrySummary& summary);

/// CSV with a header line and one line per slice, the keys of slices_to_json (server slices
/// without metric_names); a missing value is an empty cell.
std::string slices_to_csv(const std::vector<ServerSlice>& slices);
std::string slices_to_csv(const std::vector<ClientSlice>& slices);

/// The entries of `required_prefixes` (such as "vllm:", as InferenceX's
/// AIPERF_REQUIRED_SERVER_METRIC_PREFIX) that no sample of any scrape starts with, in the given
/// order. A point whose server metrics lack the engine's prefix was not measured on the server.
std::vector<std::string> missing_prefixes(const std::vector<TimedScrape>& scrapes,
                                          const std::vector<std::string>& required_prefixes);

}  // namespace ib::telemetry
