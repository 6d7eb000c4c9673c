// GPU power from dcgm-exporter (docs/telemetry.md "GPU power and energy"): where the GPUs'
// host cannot run nvidia-smi for us (an endpoint, a Kubernetes node), NVIDIA's Prometheus
// exporter publishes the same readings, and they arrive with the server-metrics scrapes of the
// point (--server-metrics-url http://node:9400/metrics). serve-sim's --power-model exports its
// modelled trace in the same names. Pure: the scrapes in, samples out.
#pragma once

#include <optional>
#include <vector>

#include "telemetry/power.h"
#include "telemetry/timeslices.h"

namespace ib::telemetry {

inline constexpr std::string_view kDcgmPower = "DCGM_FI_DEV_POWER_USAGE";            // W
inline constexpr std::string_view kDcgmEnergy = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION";  // mJ
inline constexpr std::string_view kDcgmUtil = "DCGM_FI_DEV_GPU_UTIL";                // %
inline constexpr std::string_view kDcgmFbUsed = "DCGM_FI_DEV_FB_USED";               // MiB
inline constexpr std::string_view kDcgmSmClock = "DCGM_FI_DEV_SM_CLOCK";             // MHz

/// The power samples that dcgm-exporter series in `scrapes` carry, one per GPU and scrape, at the
/// scrape's time (`start_unix + t_s`); nullopt when no scrape has a DCGM_FI_DEV_POWER_USAGE
/// sample. A GPU is its `gpu` label (its `UUID` when there is none); GPUs of several URLs or
/// `Hostname`s are numbered in (url, host, gpu) order. Energy is read in joules (the counter is
/// in mJ). dcgm-exporter refreshes its values every collect interval (30 s by default), so a
/// reading whose energy counter has not moved since the last one from that GPU is a repeat, not a
/// new sample, and is left out: the sample gaps then show the exporter's true cadence, and the gap
/// rule catches an exporter too slow for the window.
std::optional<PowerLog> dcgm_power_log(const std::vector<TimedScrape>& scrapes, double start_unix);

}  // namespace ib::telemetry
