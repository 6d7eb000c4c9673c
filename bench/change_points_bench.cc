// Figures for the change-point detector of benchmark histories (verdict/change_points.h): the
// time of find_change_points on 12, 100 and 500 positions, and, at the default options, its
// detection and false-alarm rates over 500 fixed-seed simulated 12-position series with a step
// at position 7 (index 6) of 1, 2 and 5% under Gaussian noise of 0.3, 1 and 2% coefficient of
// variation. Detection: exactly one change point, within ±1 position of the step. False alarm:
// any change point in a series without a step (the same noise and seeds, no step; the method is
// scale-free and the seeds are shared, so that rate is the same at every noise level).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "verdict/change_points.h"

namespace {

constexpr size_t kSimStepAt = 6;
constexpr int kSimSeries = 500;

// `positions` single values around 100 with noise of `cv_pct`% (one draw per position from
// `rng`), multiplied by (1 + step_pct/100) from position `step_at` on.
std::vector<std::vector<double>> simulated_history(std::mt19937_64& rng, size_t positions,
                                                   double cv_pct, double step_pct, size_t step_at) {
  std::normal_distribution<double> noise(0.0, cv_pct / 100.0);
  std::vector<std::vector<double>> s;
  for (size_t i = 0; i < positions; ++i) {
    const double level = i >= step_at ? 100.0 * (1 + step_pct / 100.0) : 100.0;
    s.push_back({level * (1 + noise(rng))});
  }
  return s;
}

// A history of `positions` with a 5% step at its middle and 1% noise.
void BM_FindChangePoints(benchmark::State& state) {
  const auto positions = static_cast<size_t>(state.range(0));
  std::mt19937_64 rng(42);
  const auto series = simulated_history(rng, positions, 1.0, 5.0, positions / 2);
  size_t found = 0;
  for (auto _ : state) {
    auto cps = ib::verdict::find_change_points(series, {});
    found = cps.size();
    benchmark::DoNotOptimize(cps);
  }
  state.counters["change_points"] = static_cast<double>(found);
}
BENCHMARK(BM_FindChangePoints)->Arg(12)->Arg(100)->Arg(500)->Unit(benchmark::kMicrosecond);

// Arguments: the step in tenths of a percent (0: none) and the noise's CV in tenths of a percent.
// Counters: detection_pct (or false_alarm_pct for a step of 0) over kSimSeries series.
void BM_DetectionRate(benchmark::State& state) {
  const double step_pct = static_cast<double>(state.range(0)) / 10.0;
  const double cv_pct = static_cast<double>(state.range(1)) / 10.0;
  int hits = 0;
  for (auto _ : state) {
    hits = 0;
    for (int k = 0; k < kSimSeries; ++k) {
      std::mt19937_64 rng(1000 + static_cast<uint64_t>(k));
      const auto cps = ib::verdict::find_change_points(
          simulated_history(rng, 12, cv_pct, step_pct, kSimStepAt), {});
      if (step_pct == 0) {
        hits += cps.empty() ? 0 : 1;
      } else if (cps.size() == 1) {
        const auto off = static_cast<long>(cps[0].index) - static_cast<long>(kSimStepAt);
        hits += std::labs(off) <= 1 ? 1 : 0;
      }
    }
  }
  const double rate = 100.0 * hits / kSimSeries;
  state.counters[step_pct == 0 ? "false_alarm_pct" : "detection_pct"] = rate;
  state.counters["step_pct"] = step_pct;
  state.counters["cv_pct"] = cv_pct;
}
BENCHMARK(BM_DetectionRate)
    ->ArgsProduct({{0, 10, 20, 50}, {3, 10, 20}})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
