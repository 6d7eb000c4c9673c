#include "telemetry/dcgm.h"

#include <gtest/gtest.h>
#include <fmt/format.h>

namespace ib::telemetry {
namespace {

metrics::Scrape parse_ok(const std::string& text) {
  auto r = metrics::parse_prometheus(text);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? *r : metrics::Scrape{};
}

// What dcgm-exporter prints for one GPU (default counters, labels as it sets them).
std::string gpu_lines(int gpu, double watts, double mj, const char* host = "node-a") {
  return fmt::format(
      "DCGM_FI_DEV_POWER_USAGE{{gpu=\"{0}\",UUID=\"GPU-{0}\",device=\"nvidia{0}\","
      "modelName=\"NVIDIA H200\",Hostname=\"{3}\"}} {1}\n"
      "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu=\"{0}\",UUID=\"GPU-{0}\",device=\"nvidia{0}\","
      "modelName=\"NVIDIA H200\",Hostname=\"{3}\"}} {2}\n"
      "DCGM_FI_DEV_GPU_UTIL{{gpu=\"{0}\",UUID=\"GPU-{0}\",device=\"nvidia{0}\","
      "modelName=\"NVIDIA H200\",Hostname=\"{3}\"}} 87\n",
      gpu, watts, mj, host);
}

const char* kHeader =
    "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n"
    "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
    "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
    "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n";

TEST(DcgmPowerLog, NoneWithoutPowerSeries) {
  std::vector<TimedScrape> s = {{0, parse_ok("vllm:num_requests_running 3\n"), "u"}};
  EXPECT_FALSE(dcgm_power_log(s, 1000).has_value());
}

TEST(DcgmPowerLog, OneSamplePerGpuAndScrapeInJoules) {
  std::vector<TimedScrape> s;
  for (int i = 0; i < 3; ++i) {
    s.push_back({i * 1.0,
                 parse_ok(std::string(kHeader) + gpu_lines(0, 500 + i, 1e6 + i * 500000) +
                          gpu_lines(1, 400 + i, 2e6 + i * 400000)),
                 "http://n:9400/metrics"});
  }
  auto log = dcgm_power_log(s, 1000);
  ASSERT_TRUE(log.has_value());
  EXPECT_EQ(log->power_column, "DCGM_FI_DEV_POWER_USAGE");
  EXPECT_EQ(log->energy_column, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION");
  ASSERT_EQ(log->samples.size(), 6u);
  EXPECT_EQ(log->samples[0].gpu, 0);
  EXPECT_EQ(log->samples[1].gpu, 1);
  EXPECT_DOUBLE_EQ(log->samples[2].t_s, 1001);
  EXPECT_DOUBLE_EQ(*log->samples[2].power_w, 501);
  EXPECT_DOUBLE_EQ(*log->samples[2].energy_j, 1500);
  EXPECT_DOUBLE_EQ(*log->samples[2].util_pct, 87);

  // Through the integration: 2 s at 501 W mean (trapezoid of 500, 501, 502) on GPU 0.
  EnergyResult e = integrate_power(log->samples, 1000, 1002, 2);
  EXPECT_TRUE(e.power_valid);
  ASSERT_TRUE(e.total_energy_j.has_value());
  EXPECT_NEAR(*e.total_energy_j, 2 * 501 + 2 * 401, 1e-9);
  EXPECT_TRUE(e.accumulator.available);
}

TEST(DcgmPowerLog, RepeatedReadingsOfASlowExporterAreNotNewSamples) {
  // The exporter refreshed once in four scrapes: the repeats are dropped, so the gap is seen.
  std::vector<TimedScrape> s;
  for (int i = 0; i < 9; ++i) {
    const int refresh = i / 4;
    s.push_back({i * 1.0, parse_ok(std::string(kHeader) + gpu_lines(0, 500, 1e6 + refresh * 2e6)),
                 "u"});
  }
  auto log = dcgm_power_log(s, 0);
  ASSERT_TRUE(log.has_value());
  ASSERT_EQ(log->samples.size(), 3u);
  EXPECT_DOUBLE_EQ(log->samples[1].t_s, 4);
  EnergyResult e = integrate_power(log->samples, 0, 8, 1);
  EXPECT_FALSE(e.power_valid);
  EXPECT_TRUE(e.has_reason("sampling_gap_exceeded")) << e.reasons.front().reason;
}

TEST(DcgmPowerLog, GpusOfTwoHostsAreNumberedApart) {
  std::vector<TimedScrape> s;
  for (int i = 0; i < 2; ++i) {
    s.push_back({i * 1.0, parse_ok(std::string(kHeader) + gpu_lines(0, 500, 1e6 + i * 1e5, "a")),
                 "http://a:9400/metrics"});
    s.push_back({i * 1.0, parse_ok(std::string(kHeader) + gpu_lines(0, 300, 1e6 + i * 1e5, "b")),
                 "http://b:9400/metrics"});
  }
  auto log = dcgm_power_log(s, 0);
  ASSERT_TRUE(log.has_value());
  std::set<int> gpus;
  for (const auto& p : log->samples) gpus.insert(p.gpu);
  EXPECT_EQ(gpus, (std::set<int>{0, 1}));
}

}  // namespace
}  // namespace ib::telemetry
