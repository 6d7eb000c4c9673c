// serve-sim's GPU power model (--power-model; docs/serve-sim.md "Power model"): a board-power
// trace derived from the engine's own steps, so that the whole energy path (exporter, scrape,
// integration, validity, joules per token) runs end to end without a GPU. Each GPU of the
// tensor-parallel group draws the idle power between steps and, during a step, the idle power
// plus the step's activity times the span up to the board limit (TDP). The activity weighs the
// step's roofline parts: its compute- or memory-bound time at 0.55 + 0.45 x (compute / that time)
// (a compute-bound prefill runs near the limit, a memory-bound decode near two thirds of it),
// communication at 0.45 and launch overhead at 0.2. The numbers are a model, not a measurement.
#pragma once

#include <deque>
#include <string_view>
#include <string>
#include <vector>

#include "sim/hardware.h"
#include "sim/perf_model.h"

namespace ib::sim {

/// Idle board power as a fraction of TDP (a loaded model, CUDA graphs captured, nothing running).
inline constexpr double kIdlePowerFraction = 0.15;

/// Seconds on the steady clock (the engine's timers' clock), now.
double steady_now_s();

/// The activity of a step, 0..1 (see the file comment). 0 for a step that costs nothing.
double step_activity(const StepCost& cost);

/// Energy of one GPU over time, from the steps the engine ran. Times are seconds on one
/// monotonic clock (the engine's steady clock); steps may be recorded ahead of time (a step's
/// end lies in the future when it starts) and are clipped to the time asked about.
class PowerMeter {
 public:
  /// REQUIRES: 0 <= idle_w <= max_w.
  PowerMeter(double idle_w, double max_w, double start_s);

  /// A step on [start_s, end_s] at `activity` (clamped to 0..1). Steps do not overlap and come
  /// in time order (the engine runs one at a time).
  void step(double start_s, double end_s, double activity);

  /// Joules since the meter started, up to `t_s` (>= the start; earlier is clamped).
  double energy_j(double t_s) const;
  /// Mean power over (t_s - window_s, t_s], as nvidia-smi's power.draw averages over 1 s.
  double average_power_w(double t_s, double window_s) const;
  /// Fraction of (t_s - window_s, t_s] spent in steps (DCGM's GPU utilisation).
  double busy_fraction(double t_s, double window_s) const;

  double idle_w() const { return idle_w_; }
  double max_w() const { return max_w_; }

 private:
  struct Segment {
    double start_s, end_s, extra_w;  // power above idle during the step
  };
  double extra_j(double t_s) const;  // energy above idle up to t_s
  double busy_s(double t_s) const;   // step time up to t_s

  double idle_w_, max_w_, start_s_;
  std::deque<Segment> segments_;  // the recent ones; older ones are folded into the sums below
  double pruned_extra_j_ = 0, pruned_busy_s_ = 0;
};

/// What one GPU reports at a scrape, in dcgm-exporter's fields.
struct GpuPowerReading {
  int gpu = 0;
  double power_w = 0;          // DCGM_FI_DEV_POWER_USAGE
  double energy_mj = 0;        // DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (since the server started)
  double util_pct = 0;         // DCGM_FI_DEV_GPU_UTIL
  double fb_used_mib = 0;      // DCGM_FI_DEV_FB_USED
};

/// The readings' exposition text in dcgm-exporter's names, units and labels (gpu, UUID, device,
/// modelName, Hostname), appended to `out`.
void render_dcgm_metrics(std::string& out, const std::vector<GpuPowerReading>& gpus,
                         std::string_view product, std::string_view hostname);

}  // namespace ib::sim
