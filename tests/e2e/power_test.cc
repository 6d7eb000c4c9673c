// GPU power during a point, end to end: `inferbench bench --gpu-power nvidia-smi` against
// serve-sim, with a stand-in `nvidia-smi` on PATH that prints what the real one prints
// (`--query-gpu=... --format=csv,nounits --loop-ms=N`: a header, then one line per GPU and interval).
#include <sys/stat.h>

#include <fstream>

#include "e2e_util.h"

namespace ib::e2e {
namespace {

TEST(GpuPower, EnergyPerTokenFromTheSamplerOverTheMeasuredWindow) {
  TempDir dir;
  SimServer sim(dir.path());
  ASSERT_TRUE(sim.running());
  const fs::path bin = fake_nvidia_smi(dir.path(), "350.00", 2);
  const fs::path out = dir.path() / "r.json";
  auto r =
      run_inferbench({"bench", "--endpoint", sim.url(), "--isl", "256", "--osl", "32",
                      "--num-prompts", "64", "--concurrency", "8", "--num-gpus", "2", "--gpu-power",
                      "nvidia-smi", "--require-power", "--output", out.string()},
                     dir.path() / "bench.log", std::chrono::seconds(120), path_with(bin));
  ASSERT_EQ(r.exit.code, 0) << r.output;
  auto j = read_json(out);
  const auto& e = j.at("energy").as_object();
  ASSERT_TRUE(e.at("power_valid").as_bool()) << boost::json::serialize(e);
  EXPECT_EQ(e.at("tool").as_string(), "nvidia-smi");
  // 2 GPUs x 350 W over the window: the average power per GPU is the constant, and the total
  // energy is 700 W times the window.
  const double duration = num(j, "duration");
  EXPECT_NEAR(e.at("avg_power_w").to_number<double>(), 350.0, 1e-6) << boost::json::serialize(e);
  EXPECT_NEAR(e.at("total_gpu_energy_j").to_number<double>(), 700.0 * duration, 700.0 * 0.05);
  EXPECT_NEAR(e.at("joules_per_output_token").to_number<double>(),
              e.at("total_gpu_energy_j").to_number<double>() / num(j, "total_output_tokens"), 1e-6);
}

TEST(GpuPower, RequirePowerFailsThePointWhenPowerIsNotAvailable) {
  TempDir dir;
  SimServer sim(dir.path());
  ASSERT_TRUE(sim.running());
  const fs::path bin = fake_nvidia_smi(dir.path(), "[N/A]", 2);
  auto r = run_inferbench(
      {"bench", "--endpoint", sim.url(), "--isl", "64", "--osl", "8", "--num-prompts", "16",
       "--concurrency", "4", "--num-gpus", "2", "--gpu-power", "nvidia-smi", "--require-power"},
      dir.path() / "bench.log", std::chrono::seconds(120), path_with(bin));
  EXPECT_EQ(r.exit.code, 1) << r.output;
  EXPECT_NE(r.output.find("--require-power: no valid GPU power measurement"), std::string::npos)
      << r.output;
  // Without a sampler on the host (auto finds none on PATH) the point still measures, and says
  // why there is no energy.
  const fs::path out = dir.path() / "r.json";
  auto plain = run_inferbench({"bench", "--endpoint", sim.url(), "--isl", "64", "--osl", "8",
                               "--num-prompts", "16", "--output", out.string()},
                              dir.path() / "plain.log", std::chrono::seconds(120),
                              {{"PATH", "/usr/bin:/bin"}});
  ASSERT_EQ(plain.exit.code, 0) << plain.output;
  auto j = read_json(out);
  EXPECT_FALSE(j.at("energy").at("power_valid").as_bool());
  EXPECT_NE(j.at("energy").at("note").as_string().find("no nvidia-smi or amd-smi"),
            std::string::npos);
}

}  // namespace
}  // namespace ib::e2e
