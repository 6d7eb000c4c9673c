#include "load/power_sampler.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "core/temp_dir.h"

namespace ib::load {
namespace {

namespace fs = std::filesystem;

// One step's sampler output as `inferbench sample-power` leaves it: the node's UTC offset and
// nvidia-smi's CSV for `gpus` GPUs at `watts`, at t = 0 s and 2 s (UTC).
void write_step(const fs::path& dir, int gpus, const char* watts) {
  fs::create_directories(dir);
  std::ofstream(dir / "gpu_power.utc_offset") << "+0000\n";
  std::ofstream f(dir / "gpu_power.nvidia-smi.csv");
  f << "timestamp, index, power.draw [W]\n";
  for (const char* t : {"1970/01/01 00:00:00.000", "1970/01/01 00:00:02.000"}) {
    for (int g = 0; g < gpus; ++g) f << t << ", " << g << ", " << watts << "\n";
  }
}

TEST(StepPower, EachStepsGpusMergedAndByRole) {
  TempDir dir;
  write_step(dir.path() / "prefill-0", 2, "100.0");
  write_step(dir.path() / "prefill-1", 2, "100.0");
  write_step(dir.path() / "decode-0", 1, "300.0");
  write_step(dir.path() / "decode-0.r1", 1, "300.0");
  auto read = read_step_power(dir.path());
  ASSERT_TRUE(read.has_value());
  ASSERT_TRUE(read->ok()) << read->error().message;
  const StepPower& p = **read;
  EXPECT_EQ(p.tool, "nvidia-smi (Slurm job, each step's GPUs)");
  EXPECT_TRUE(p.missing.empty());
  // Six GPUs, ids distinct across steps; two samples each.
  std::set<int> gpus;
  for (const auto& s : p.log.samples) gpus.insert(s.gpu);
  EXPECT_EQ(gpus.size(), 6u);
  EXPECT_EQ(p.log.samples.size(), 12u);
  ASSERT_EQ(p.by_role.size(), 2u);
  EXPECT_EQ(p.by_role.at("prefill").samples.size(), 8u);
  EXPECT_EQ(p.by_role.at("decode").samples.size(), 4u);
  const auto e = telemetry::integrate_power(p.by_role.at("decode").samples, 0.5, 1.5, 2);
  ASSERT_TRUE(e.power_valid);
  EXPECT_DOUBLE_EQ(*e.avg_power_per_gpu_w, 300.0);
}

TEST(StepPower, AStepWithoutOutputIsNamedAndNoneAtAllIsAnError) {
  TempDir dir;
  write_step(dir.path() / "prefill-0", 1, "100.0");
  fs::create_directories(dir.path() / "decode-0");
  std::ofstream(dir.path() / "decode-0" / "gpu_power.utc_offset") << "+0000\n";
  auto read = read_step_power(dir.path());
  ASSERT_TRUE(read.has_value() && read->ok());
  ASSERT_EQ((*read)->missing.size(), 1u);
  EXPECT_NE((*read)->missing[0].find("decode-0: "), std::string::npos);
  EXPECT_NE((*read)->missing[0].find("neither nvidia-smi nor amd-smi"), std::string::npos);

  TempDir none;
  fs::create_directories(none.path() / "decode-0");
  auto empty = read_step_power(none.path());
  ASSERT_TRUE(empty.has_value());
  EXPECT_FALSE(empty->ok());
  // A folder of one sampler's output is not laid out by step.
  write_step(none.path() / "one", 1, "1.0");
  EXPECT_FALSE(read_step_power(none.path() / "one").has_value());
}

TEST(StepPower, RoleOfAStepLabel) {
  EXPECT_EQ(role_of_step("prefill-0"), "prefill");
  EXPECT_EQ(role_of_step("decode-12.r3"), "decode");
  EXPECT_EQ(role_of_step("router"), "router");
  EXPECT_EQ(role_of_step("odd-name"), "odd-name");
}

}  // namespace
}  // namespace ib::load
