// GPU power during a point: parsers of the samplers' CSV output (nvidia-smi --query-gpu, amd-smi
// metric --csv, rocm-smi --csv) and the energy of a benchmark window, integrated and validated
// the way InferenceX does it (utils/aggregate_power.py), so an inferbench joules-per-token figure
// means what an InferenceX one means. Pure: no processes, no clock; the sampling loop lives with
// the launchers. docs/telemetry.md ("GPU power and energy") states the rules.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"

namespace ib::telemetry {

/// The fields inferbench's nvidia-smi samplers ask for (power.draw is the board power).
inline constexpr std::string_view kNvidiaSmiQuery =
    "timestamp,index,power.draw,utilization.gpu,memory.used,clocks.sm";
/// What a sampler started beside a remote server (the Slurm job script) writes into the server's
/// artifact folder: the tool's CSV (one of the two) and the node's `date +%z`.
inline constexpr std::string_view kPowerFileNvidiaSmi = "gpu_power.nvidia-smi.csv";
inline constexpr std::string_view kPowerFileAmdSmi = "gpu_power.amd-smi.csv";
inline constexpr std::string_view kPowerFileUtcOffset = "gpu_power.utc_offset";

/// One reading of one GPU.
struct PowerSample {
  double t_s = 0;  // unix seconds
  int gpu = 0;     // the tool's index (nvidia-smi `index`, amd-smi `gpu`, rocm-smi `cardN`)
  // Board power; absent when the tool printed [N/A] or the like.
  std::optional<double> power_w = std::nullopt;
  // nvidia-smi utilization.gpu, amd-smi gfx_activity.
  std::optional<double> util_pct = std::nullopt;
  std::optional<double> mem_used_mib = std::nullopt;  // nvidia-smi memory.used
  std::optional<double> sm_clock_mhz = std::nullopt;  // nvidia-smi clocks.sm / clocks.current.sm
  // An energy accumulator (amd-smi -E, rocm-smi), joules.
  std::optional<double> energy_j = std::nullopt;
};

/// A parsed sampler output.
struct PowerLog {
  std::vector<PowerSample> samples;  // in the order of the text
  // The header names the power and energy values were read from ("power.draw [W]",
  // "socket_power"); empty when the output had no such column. Which power field was used is
  // worth recording: power.draw is a 1 s average on Ampere and newer but instantaneous before.
  std::string power_column;
  std::string energy_column;
};

struct NvidiaSmiOptions {
  /// The GPU host's offset from UTC in seconds, east positive (what `date +%z` prints there, see
  /// parse_utc_offset). nvidia-smi's timestamps are the host's local wall-clock time without a
  /// zone, so the reader must be told; 0 assumes the host runs on UTC.
  double utc_offset_s = 0;
  /// The --query-gpu fields in order, for output written with `--format=csv,noheader`. Ignored
  /// when the text has a header row (the header decides then).
  std::vector<std::string> query = {};
};

/// Parses `nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]` output. Columns are
/// found by name: `timestamp` and `index` are required; power is `power.draw`, else
/// `power.draw.average`, else `power.draw.instant`; `utilization.gpu`, `memory.used`,
/// `clocks.sm`/`clocks.current.sm` when present; other columns are ignored. Header names may
/// carry a unit suffix ("power.draw [W]"); cells may carry units ("627.40 W"), which must be the
/// field's (W, %, MiB, MHz). `[...]` tokens ([N/A], [Not Supported], [Unknown Error]), `N/A`
/// and empty cells are absent values. Timestamps: see parse_smi_timestamp. A line identical to
/// the header is skipped (a restarted monitor); a last line without its newline is dropped (a
/// monitor killed mid-write, as InferenceX's stop_gpu_monitor does). Errors name the 1-based line
/// and the column: "line 7, column power.draw [W]: \"12x W\" is not a number".
Expected<PowerLog> parse_nvidia_smi_csv(std::string_view text,
                                        const NvidiaSmiOptions& options = {});

/// Parses `amd-smi metric [-p] [-u] [-E] ... -w N --csv` output: `timestamp` (integer epoch
/// seconds in watch mode), `gpu`, and when present `socket_power` (W), `gfx_activity` (%) and
/// `total_energy_consumption` (J). `\r\n` line ends, preamble lines before the first header,
/// the header repeated before every watch iteration and blank lines are all accepted (what
/// amd-smi prints to stdout). `utc_offset_s` applies only to timestamps without a zone that are
/// not epoch numbers. Errors as for nvidia-smi.
Expected<PowerLog> parse_amd_smi_csv(std::string_view text, double utc_offset_s = 0);

/// Parses one `rocm-smi --showpower --showenergycounter --csv` snapshot. rocm-smi prints no
/// time, so every row gets `t_s` (when the sampler ran it). Header `device,...`; rows `cardN,...`;
/// power from `Current Socket Graphics Package Power (W)` or `Average Graphics Package Power (W)`,
/// energy from `Accumulated Energy (uJ)` (converted to J). The table ends at the first blank
/// line (system-level `name, value` lines may follow).
Expected<PowerLog> parse_rocm_smi_csv(std::string_view text, double t_s);

/// A sampler timestamp as unix seconds: a bare number is epoch seconds (milliseconds above
/// 1e12); otherwise nvidia-smi's "YYYY/MM/DD HH:MM:SS[.fff]" or ISO-8601
/// "YYYY-MM-DD[T ]HH:MM:SS[.fff][Z|±HH:MM]". A time without a zone is local time of the GPU host,
/// `utc_offset_s` east of UTC. nullopt when unparseable or out of range.
std::optional<double> parse_smi_timestamp(std::string_view text, double utc_offset_s);

/// `date +%z` output ("+0200", "-05:30") as seconds east of UTC. The form is InferenceX's
/// (^([+-])(\d{2}):?(\d{2})$), minutes below 60.
Expected<double> parse_utc_offset(std::string_view text);

// InferenceX's constants (utils/aggregate_power.py).
inline constexpr double kDefaultMaxSampleGapS = 3.0;
inline constexpr double kAccumulatorTolerance = 0.05;
inline constexpr std::string_view kIntegrationMethod =
    "per_device_trapezoidal_with_linear_boundary_interpolation";

struct IntegrateOptions {
  /// The largest allowed gap between consecutive samples from the last one at or before the
  /// window start to the first one at or after its end; also how far outside the window samples
  /// are looked at.
  double max_sample_gap_s = kDefaultMaxSampleGapS;
  double accumulator_tolerance = kAccumulatorTolerance;
  /// The window's length on the monotonic clock, when known. InferenceX invalidates a result
  /// whose wall-clock window and measured duration differ by more than max(0.5 s, 1%).
  std::optional<double> reported_duration_s = std::nullopt;
  /// InferenceX's accumulator cross-check is advisory; true makes a failed check invalidate.
  bool accumulator_decides_validity = false;
};

/// Why a result is not valid. `reason` is a stable name (InferenceX's reason codes): see
/// docs/telemetry.md for the list. `message` gives the numbers.
struct PowerIssue {
  std::string reason;
  std::string message;
};

struct GpuEnergy {
  int gpu = 0;
  int samples = 0;                  // distinct timestamps within [start - gap, end + gap]
  std::optional<double> max_gap_s;  // over the bracketing span, when bracketed
  std::optional<double> energy_j;   // when bracketed by >= 2 samples
  std::vector<std::string> issues;  // reason names that concern this GPU
};

/// Energy accumulators against the integrated power (InferenceX cross_check_accumulator). Per
/// GPU, over the samples that carry both a power and an accumulator reading (the whole stream,
/// not clipped to the window): accumulator(last) - accumulator(first) against the trapezoid of
/// the same samples' power. relative_error = |accumulator - integrated| / accumulator.
struct AccumulatorCheck {
  bool available = false;  // some GPU has >= 2 such samples
  double accumulator_delta_j = 0;
  double integrated_stream_j = 0;
  std::optional<double> relative_error;  // nullopt when the accumulator delta is not positive
  bool within_tolerance = false;         // no negative delta and relative_error <= tolerance
  double tolerance = kAccumulatorTolerance;
  std::map<int, double> per_gpu_delta_j;
  std::vector<int> integrated_gpu_ids;
  std::vector<int> unmatched_gpus;       // observed power GPUs without two accumulator readings
  std::vector<int> negative_delta_gpus;  // the counter went back (a driver reload)
  double stream_span_s = 0;
};

struct EnergyResult {
  bool power_valid = false;
  std::vector<PowerIssue> reasons;  // one per reason name, in discovery order
  double window_start_unix = 0;
  double window_end_unix = 0;
  int expected_gpus = 0;
  std::optional<double> reported_duration_s;  // IntegrateOptions::reported_duration_s
  std::vector<GpuEnergy> gpus;                // the observed GPUs, ascending
  // Set when every observed GPU was integrated (valid or not; read them only when valid).
  std::optional<double> total_energy_j;       // sum over GPUs
  std::optional<double> avg_total_power_w;    // total / window length
  std::optional<double> avg_power_per_gpu_w;  // total / window length / GPUs
  AccumulatorCheck accumulator;

  double duration_s() const { return window_end_unix - window_start_unix; }
  bool has_reason(std::string_view reason) const;
};

/// Integrates each GPU's power over [window_start_unix, window_end_unix] with the trapezoid rule,
/// the edges linearly interpolated between the samples around them, and validates the stream as
/// InferenceX does: samples must bracket the window on both sides, no gap above
/// max_sample_gap_s inside it, `expected_gpus` GPUs observed, every in-window sample with a
/// finite non-negative power. Duplicate (gpu, time) readings are averaged.
EnergyResult integrate_power(const std::vector<PowerSample>& samples, double window_start_unix,
                             double window_end_unix, int expected_gpus,
                             const IntegrateOptions& options = {});

/// What a point served in its window.
struct TokenCounts {
  int64_t requests = 0;  // successful
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
};

/// Energy divided by the counts; each nullopt when its count is not positive.
struct EnergyPerToken {
  std::optional<double> joules_per_request;
  std::optional<double> joules_per_input_token;
  std::optional<double> joules_per_output_token;
  std::optional<double> joules_per_total_token;
};

EnergyPerToken energy_per_token(double energy_j, const TokenCounts& counts);

/// The result as JSON (keys in docs/telemetry.md, InferenceX's spellings): always power_valid,
/// reasons, the window, the GPU counts and per-GPU audit maps and the accumulator check; the
/// energy, power and per-token figures only when power_valid.
boost::json::object energy_to_json(const EnergyResult& result, const TokenCounts& counts);

}  // namespace ib::telemetry
