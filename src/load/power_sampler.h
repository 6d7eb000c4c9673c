// GPU power sampling during a point (docs/telemetry.md, "GPU power and energy"): `nvidia-smi`
// or `amd-smi` run as a child process on the host that serves, printing one CSV line per GPU
// per interval into a file; after the point the file is parsed and integrated over the measured
// window (telemetry/power.h, InferenceX's rules).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/expected.h"
#include "core/process.h"
#include "telemetry/power.h"

namespace ib::load {

enum class PowerMode {
  kAuto,  // a sampler when one is on PATH and the server is on this host (loopback endpoint)
  kOff,
  kNvidiaSmi,
  kAmdSmi,
  kDcgm,  // no sampler: dcgm-exporter's DCGM_FI_DEV_* series in the server-metrics scrapes
};

/// "auto", "off", "nvidia-smi", "amd-smi", "dcgm" (the --gpu-power values).
std::optional<PowerMode> parse_power_mode(std::string_view text);

/// The sampler process `mode` resolves to for a server at `host`: nullopt (with `why`) when none
/// (always for kDcgm, whose readings come with the scrapes).
std::optional<PowerMode> resolve_power_mode(PowerMode mode, const std::string& host,
                                            std::string* why);

/// What a sampler started beside a remote server wrote into `dir` (telemetry::kPowerFile*):
/// the tool's name and its parsed samples, timestamps read with the node's `date +%z`. Error
/// when no sampler output is there (the node had neither tool) or it does not parse.
struct RemotePower {
  std::string tool;
  telemetry::PowerLog log;
};
Expected<RemotePower> read_remote_power(const std::filesystem::path& dir);

/// A deployment whose every GPU-holding process sampled its own GPUs (`inferbench sample-power`
/// around each Slurm step): `dir` holds one folder per step, named by its label ("prefill-0",
/// "decode-0.r1"), each as read_remote_power reads it. The steps' samples merged (GPU ids made
/// distinct: 100 x the step's place in label order + the tool's index) and each role's own
/// ("prefill", "decode": its steps merged the same way). Steps without output are named in
/// `missing` (their GPUs then lack from the logs, which the energy's validity reports).
struct StepPower {
  std::string tool;
  telemetry::PowerLog log;                             // every step's
  std::map<std::string, telemetry::PowerLog> by_role;  // role -> its steps'
  std::vector<std::string> missing;                    // "decode-0: why"
};
/// nullopt when `dir` is not laid out by step (a folder with no step folder in it).
std::optional<Expected<StepPower>> read_step_power(const std::filesystem::path& dir);

/// The role of a step's label: "decode-0.r1" -> "decode", "prefill-2" -> "prefill".
std::string role_of_step(const std::string& label);

/// Writes `date +%z`'s answer for this host into dir/gpu_power.utc_offset (creating dir).
Status write_utc_offset(const std::filesystem::path& dir);

class PowerSampler {
 public:
  /// Starts `nvidia-smi ... -lms <interval>` or `amd-smi metric ... -w <interval>` writing to a
  /// file in a fresh temporary folder, or into `dir` (gpu_power.<tool>.csv beside
  /// gpu_power.utc_offset, as read_remote_power reads them; kept). Error when the tool cannot be
  /// started.
  static Expected<std::unique_ptr<PowerSampler>> start(
      PowerMode mode, double interval_s, const std::optional<std::filesystem::path>& dir = {});
  ~PowerSampler();

  /// Stops the tool and parses what it wrote (errors name the line and column).
  Expected<telemetry::PowerLog> stop();
  const std::string& tool() const { return tool_; }

 private:
  PowerSampler() = default;
  PowerMode mode_ = PowerMode::kNvidiaSmi;
  std::string tool_;
  std::filesystem::path dir_, file_;
  std::optional<ChildProcess> child_;
  double utc_offset_s_ = 0;
  double interval_s_ = 0.5;
  bool keep_ = false;  // the output is the caller's (start's dir)
};

}  // namespace ib::load
