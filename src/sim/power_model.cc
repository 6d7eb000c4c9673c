#include "sim/power_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <chrono>

#include "sim/server_metrics.h"

namespace ib::sim {

namespace {

// How long finished steps are kept apart before they are folded into the sums: longer than any
// averaging window asked for.
constexpr double kKeepS = 5.0;

double overlap(double a0, double a1, double b0, double b1) {
  return std::max(0.0, std::min(a1, b1) - std::max(a0, b0));
}

}  // namespace

double steady_now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double step_activity(const StepCost& c) {
  const double bound = std::max(c.compute_s, c.memory_s);
  const double total = c.total_s();
  if (!(total > 0)) return 0;
  double weighted = c.comm_s * 0.45 + c.overhead_s * 0.2;
  if (bound > 0) weighted += bound * (0.55 + 0.45 * (c.compute_s / bound));
  return std::clamp(weighted / total, 0.0, 1.0);
}

PowerMeter::PowerMeter(double idle_w, double max_w, double start_s)
    : idle_w_(idle_w), max_w_(max_w), start_s_(start_s) {
  assert(0 <= idle_w && idle_w <= max_w);
}

void PowerMeter::step(double start_s, double end_s, double activity) {
  if (!(end_s > start_s)) return;
  start_s = std::max(start_s, start_s_);
  if (!segments_.empty()) start_s = std::max(start_s, segments_.back().end_s);
  if (!(end_s > start_s)) return;
  const double extra = (max_w_ - idle_w_) * std::clamp(activity, 0.0, 1.0);
  segments_.push_back({start_s, end_s, extra});
  // Fold what ended long before this step began.
  while (!segments_.empty() && segments_.front().end_s < start_s - kKeepS) {
    const Segment& s = segments_.front();
    pruned_extra_j_ += s.extra_w * (s.end_s - s.start_s);
    pruned_busy_s_ += s.end_s - s.start_s;
    segments_.pop_front();
  }
}

double PowerMeter::extra_j(double t_s) const {
  double e = pruned_extra_j_;
  for (const Segment& s : segments_) e += s.extra_w * overlap(s.start_s, s.end_s, start_s_, t_s);
  return e;
}

double PowerMeter::busy_s(double t_s) const {
  double b = pruned_busy_s_;
  for (const Segment& s : segments_) b += overlap(s.start_s, s.end_s, start_s_, t_s);
  return b;
}

double PowerMeter::energy_j(double t_s) const {
  t_s = std::max(t_s, start_s_);
  return idle_w_ * (t_s - start_s_) + extra_j(t_s);
}

double PowerMeter::average_power_w(double t_s, double window_s) const {
  const double from = std::max(start_s_, t_s - window_s);
  if (!(t_s > from)) return idle_w_;
  return (energy_j(t_s) - energy_j(from)) / (t_s - from);
}

double PowerMeter::busy_fraction(double t_s, double window_s) const {
  const double from = std::max(start_s_, t_s - window_s);
  if (!(t_s > from)) return 0;
  return std::clamp((busy_s(t_s) - busy_s(from)) / (t_s - from), 0.0, 1.0);
}

void render_dcgm_metrics(std::string& out, const std::vector<GpuPowerReading>& gpus,
                         std::string_view product, std::string_view hostname) {
  struct Field {
    const char* name;
    const char* type;
    const char* help;
    double GpuPowerReading::*value;
  };
  // dcgm-exporter's default counters (etc/default-counters.csv): names, types and help texts.
  static constexpr Field kFields[] = {
      {"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", &GpuPowerReading::util_pct},
      {"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).",
       &GpuPowerReading::fb_used_mib},
      {"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", &GpuPowerReading::power_w},
      {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
       "Total energy consumption since boot (in mJ).", &GpuPowerReading::energy_mj},
  };
  for (const Field& f : kFields) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", f.name, f.help, f.name, f.type);
    for (const GpuPowerReading& g : gpus) {
      out += fmt::format(
          "{}{{gpu=\"{}\",UUID=\"GPU-00000000-0000-4000-8000-{:012d}\",device=\"nvidia{}\","
          "modelName=\"{}\",Hostname=\"{}\"}} {}\n",
          f.name, g.gpu, g.gpu, g.gpu, escape_label(product), escape_label(hostname),
          f.value == &GpuPowerReading::energy_mj ? fmt::format("{:.0f}", g.*(f.value))
                                                 : fmt::format("{:.3f}", g.*(f.value)));
    }
  }
}

}  // namespace ib::sim
