#include "sim/power_model.h"

#include <gtest/gtest.h>

namespace ib::sim {
namespace {

TEST(StepActivity, ComputeBoundRunsAtTheLimitMemoryBoundBelow) {
  StepCost prefill;
  prefill.compute_s = 0.010;
  prefill.memory_s = 0.004;
  EXPECT_DOUBLE_EQ(step_activity(prefill), 1.0);

  StepCost decode;
  decode.compute_s = 0.002;
  decode.memory_s = 0.010;
  EXPECT_NEAR(step_activity(decode), 0.55 + 0.45 * 0.2, 1e-12);

  StepCost with_parts = decode;
  with_parts.comm_s = 0.005;
  with_parts.overhead_s = 0.005;
  // (0.010 x 0.64 + 0.005 x 0.45 + 0.005 x 0.2) / 0.020
  EXPECT_NEAR(step_activity(with_parts), (0.0064 + 0.00225 + 0.001) / 0.020, 1e-12);
  EXPECT_EQ(step_activity(StepCost{}), 0.0);
}

TEST(PowerMeter, IdleBetweenStepsAndTheSpanDuringThem) {
  PowerMeter m(100, 700, 10.0);
  EXPECT_DOUBLE_EQ(m.energy_j(10.0), 0);
  EXPECT_DOUBLE_EQ(m.energy_j(12.0), 200);  // idle
  m.step(12.0, 13.0, 1.0);
  m.step(13.0, 14.0, 0.5);
  EXPECT_DOUBLE_EQ(m.energy_j(13.0), 200 + 700);
  EXPECT_DOUBLE_EQ(m.energy_j(14.0), 200 + 700 + 400);
  EXPECT_DOUBLE_EQ(m.energy_j(15.0), 200 + 700 + 400 + 100);
  // A step recorded ahead counts only up to the time asked about.
  EXPECT_DOUBLE_EQ(m.energy_j(13.5), 200 + 700 + 200);
  EXPECT_DOUBLE_EQ(m.average_power_w(13.0, 1.0), 700);
  EXPECT_DOUBLE_EQ(m.average_power_w(14.0, 2.0), (700 + 400) / 2.0);
  EXPECT_DOUBLE_EQ(m.busy_fraction(14.5, 1.0), 0.5);
  EXPECT_DOUBLE_EQ(m.busy_fraction(11.0, 1.0), 0.0);
  // Before the start: nothing.
  EXPECT_DOUBLE_EQ(m.energy_j(5.0), 0);
}

TEST(PowerMeter, OldStepsAreFoldedWithoutLosingEnergy) {
  PowerMeter m(100, 700, 0.0);
  double expected = 0;
  for (int i = 0; i < 2000; ++i) {  // 20 s of 5 ms steps with 5 ms gaps
    const double t = i * 0.010;
    m.step(t, t + 0.005, 1.0);
    expected += 600 * 0.005;
  }
  EXPECT_NEAR(m.energy_j(20.0), 100 * 20.0 + expected, 1e-6);
  EXPECT_NEAR(m.average_power_w(20.0, 1.0), 100 + 300, 1e-6);
  EXPECT_NEAR(m.busy_fraction(20.0, 1.0), 0.5, 1e-9);
}

TEST(PowerMeter, OverlappingOrBackwardsStepsAreClipped) {
  PowerMeter m(0, 100, 0.0);
  m.step(1.0, 2.0, 1.0);
  m.step(1.5, 2.5, 1.0);  // starts inside the last one: only (2.0, 2.5] counts
  m.step(3.0, 2.0, 1.0);  // ends before it starts: ignored
  EXPECT_DOUBLE_EQ(m.energy_j(10.0), 150);
}

TEST(RenderDcgm, DcgmExporterNamesUnitsAndLabels) {
  std::string out;
  render_dcgm_metrics(out, {{0, 512.25, 1234567.8, 97.5, 126976}, {1, 500, 1000, 90, 126976}},
                      "NVIDIA H200", "node\"1");
  EXPECT_NE(out.find("# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"), std::string::npos) << out;
  EXPECT_NE(out.find("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"), std::string::npos);
  EXPECT_NE(out.find("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-00000000-0000-4000-8000-"
                     "000000000000\",device=\"nvidia0\",modelName=\"NVIDIA H200\","
                     "Hostname=\"node\\\"1\"} 512.250\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"1\""), std::string::npos);
  EXPECT_NE(out.find("} 1234568\n"), std::string::npos) << out;  // mJ, an integer as DCGM's
  EXPECT_NE(out.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"1\""), std::string::npos);
}

}  // namespace
}  // namespace ib::sim
