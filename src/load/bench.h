// One benchmark point end to end: workload → prepared requests → run loop → metrics → result
// JSON. Shared by `inferbench bench` and `inferbench sweep`.
#pragma once

#include <boost/json.hpp>
#include <map>
#include <string>
#include <vector>

#include "core/expected.h"
#include "http/client.h"
#include "load/metrics_scraper.h"
#include "load/power_sampler.h"
#include "load/runner.h"
#include "metrics/agentic.h"
#include "metrics/result.h"
#include "openai/request.h"
#include "workload/fixed_seq_len.h"
#include "workload/random_prompts.h"

namespace ib::load {

struct BenchSpec {
  std::string endpoint_url = "http://127.0.0.1:8000";
  /// The server's API key (bench --api-key, OPENAI_API_KEY): every request, the models probe and
  /// the metrics scrapes of that server carry it. Registered as a secret by whoever sets it.
  std::string api_key;
  std::string model;  // empty: ask the server's /v1/models for the first model
  openai::Api api = openai::Api::kCompletions;
  workload::RandomWorkload workload;
  LoadShape shape;  // closed loop at concurrency 1 by default
  int warmups = 0;
  metrics::MetricsOptions metrics;
  http::ClientTimeouts timeouts;
  int max_retries = 1;
  int threads = 0;                // 0: automatic
  int source_addresses = 0;       // 0: automatic
  bool continuous_usage = false;  // also request stream_options.continuous_usage_stats
  bool send_request_ids = true;   // X-Request-Id: <run>-<index>, for matching server logs
  bool show_progress = false;     // progress line on stderr (only when it is a TTY)
  double timeout_s = 0;           // > 0: cut the point after this long (warmups included)
  /// > 0: before measuring, ask the server's /tokenize to count this many of the prompts and
  /// compare (load/tokenize_check.h); the result carries "tokenize_check".
  int tokenize_check = 0;
  /// Server metrics during the point (docs/telemetry.md): scraped every `slice_s` seconds from
  /// `server_metrics_urls` (empty: the endpoint's /metrics) on connections of their own.
  bool scrape_server_metrics = true;
  std::vector<std::string> server_metrics_urls;
  /// A disaggregated deployment: the role label of each of server_metrics_urls ("prefill-0"), for
  /// a telemetry summary per role beside the deployment's; empty for one server.
  std::map<std::string, std::string> server_metrics_roles;
  double slice_s = 1.0;
  /// GPU power during the point (docs/telemetry.md): sampled with nvidia-smi or amd-smi on this
  /// host; `require_power` makes a missing or invalid measurement fail the point.
  PowerMode power = PowerMode::kAuto;
  bool require_power = false;
  double power_interval_s = 0.5;
  /// Set when a sampler beside the server already writes the samples (the Slurm job script,
  /// launch::Server::power_dir): they are read from there after the point, none is started here.
  std::optional<std::filesystem::path> remote_power_dir;
};

/// A finished point: records, metrics and the result JSON.
struct BenchReport {
  int64_t concurrency = 0;  // requests (or replay lanes) in flight; 0: no cap (open loop)
  RunnerResult run;
  metrics::BenchMetrics metrics;
  boost::json::object json;
  bool partial = false;    // interrupted: the result covers only what was measured
  bool timed_out = false;  // cut by BenchSpec::timeout_s (then also partial)
  // Agentic replay points (plan.agentic) only:
  bool agentic = false;
  metrics::AgenticMetrics agentic_metrics;
  /// Why the point is not submission-valid (AgentX's rules; empty: valid).
  std::vector<metrics::AgenticInvalid> agentic_invalid;
  bool aborted = false;  // a root warmup primer failed: nothing was measured
  std::string abort_reason;
  /// A timed trace's replay outside its fidelity bounds (load/trace_fidelity.h); load::judge
  /// makes each a reason the point is not valid.
  std::vector<metrics::AgenticInvalid> trace_invalid;
  /// InferenceX's agentic aggregate keys (metrics::inferencex_agentic_json).
  boost::json::object inferencex;
  /// The server's metrics during the point (raw; parsed into slices after it) and what the
  /// scraping cost. The measured window, for slicing: [window_start_unix, window_end_unix].
  std::vector<RawScrape> scrapes;
  ScrapeCost scrape_cost;
  double window_start_unix = 0, window_end_unix = 0;
  /// Timeslices of the measured window (docs/telemetry.md): from the server's metrics (time 0 =
  /// the window's start) and from the client's records (time 0 = the run's origin).
  std::vector<telemetry::ServerSlice> server_slices;
  telemetry::TelemetrySummary server_summary;
  std::vector<telemetry::ClientSlice> client_slices;
  /// GPU power: what the sampler printed (when one ran), or why there is none; the energy of
  /// the measured window.
  std::string power_tool, power_note;
  std::optional<telemetry::PowerLog> power_log;
  /// A deployment whose steps each sampled their own GPUs (read_step_power): each role's samples.
  std::map<std::string, telemetry::PowerLog> role_power_logs;
  std::optional<telemetry::EnergyResult> energy;
  /// require_power and the energy is missing or not valid (load::judge fails the point).
  bool power_missing = false;
  /// Per measured record, fields for --details beside metrics::record_to_json (session, phase,
  /// recorded lengths); empty for other workloads.
  std::vector<boost::json::object> record_extras;
};

/// Checks a spec; the error names the offending option.
Status validate(const BenchSpec& spec);

/// Runs one point of spec.workload (random prompts, spec.warmups warmups). Error only when the
/// run could not start (bad URL, no model found); failed requests are counted in the report.
Expected<BenchReport> run_bench(const BenchSpec& spec);

/// Runs one point of independent requests (plan.requests(); load::run_point, load/point_run.h, is
/// the entry for every kind of plan); spec.workload and spec.warmups are not used, plan.describe
/// goes into the result JSON.
Expected<BenchReport> run_request_bench(const BenchSpec& spec, const workload::PointPlan& plan);

/// The limits of the /v1/models probe where no request limits are given.
inline const http::ClientTimeouts kProbeTimeouts{std::chrono::seconds(10), std::chrono::seconds(10),
                                                 std::chrono::seconds(10),
                                                 std::chrono::seconds(30)};

/// Asks GET /v1/models for the served model id, within `timeouts` (the run's connect, first-byte
/// and idle limits).
Expected<std::string> discover_model(const http::Endpoint& endpoint,
                                     const http::ClientTimeouts& timeouts = kProbeTimeouts);

/// The model a point sends to: spec.model, or when it is empty the one GET /v1/models serves
/// (discover_model, within spec.timeouts).
Expected<std::string> served_model(const BenchSpec& spec, const http::Endpoint& endpoint);

/// Every model id GET /v1/models lists (empty when the body lists none).
Expected<std::vector<std::string>> list_models(
    const http::Endpoint& endpoint, const http::ClientTimeouts& timeouts = kProbeTimeouts);

/// Fraction of failed requests above which a point fails (vLLM benchmark_serving's rule; applied
/// by load::judge, load/judge.h).
inline constexpr double kMaxFailureRate = 0.05;

/// Fills the point's timeslices and summary from its scrapes and records, and adds the
/// "telemetry" block to its result JSON. Called by run_bench and run_agentic_bench.
void add_telemetry(BenchReport& report, const BenchSpec& spec);

/// Completes a point's result JSON `j`: the client block (with its warnings and the scrape
/// cost), the client-health warnings among the result's warnings, then the telemetry.
void finish_result(BenchReport& report, const BenchSpec& spec, boost::json::object j,
                   boost::json::object client);

/// A point's samplers (server metrics, GPU power), started before its load and stopped after.
struct PointSamplers {
  std::unique_ptr<MetricsScraper> scraper;
  std::unique_ptr<PowerSampler> power;
  std::string power_note;                                 // why no power sampler runs
  std::optional<std::filesystem::path> remote_power_dir;  // read after the point (see BenchSpec)
  double remote_interval_s = 0.5;
  /// Starts what `spec` asks for. Error for a bad --server-metrics-url or a sampler that
  /// cannot start.
  static Expected<PointSamplers> start(const BenchSpec& spec, const http::Endpoint& endpoint);
  /// Stops both and keeps their data (scrapes, cost, power samples or why none) in `report`.
  void stop(BenchReport& report);
};

/// Runs one agentic replay point (plan.agentic; load/agentic_run.h): warmup, then the profiling
/// phase for the plan's duration, with metrics, AgentX validity and the server's prefix-cache
/// hit rate read from its /metrics before and after the profiling phase (load::run_point calls it
/// for replay plans).
Expected<BenchReport> run_agentic_bench(const BenchSpec& spec, const workload::PointPlan& plan);

/// Human-readable one-point summary (the table `inferbench bench` prints).
std::string format_summary(const BenchReport& report, const BenchSpec& spec);
/// The summary of an agentic point (format_summary calls it).
std::string format_agentic_summary(const BenchReport& report, const BenchSpec& spec);

}  // namespace ib::load
