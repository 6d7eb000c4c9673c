// GPU power sampling during a point (docs/telemetry.md, "GPU power and energy"): `nvidia-smi`
// or `amd-smi` run as a child process on the host that serves, printing one CSV line per GPU
// per interval into a file; after the point the file is parsed and integrated over the measured
// window (telemetry/power.h, InferenceX's rules).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

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

class PowerSampler {
 public:
  /// Starts `nvidia-smi ... -lms <interval>` or `amd-smi metric ... -w <interval>` writing to a
  /// file in a fresh temporary folder. Error when the tool cannot be started.
  static Expected<std::unique_ptr<PowerSampler>> start(PowerMode mode, double interval_s);
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
};

}  // namespace ib::load
