// The slurm launcher against a real Slurm cluster (scripts/slurm-up.sh starts one of three nodes on
// this machine): serve-sim runs as a batch job, is reached over the network, and is gone after
// stop(). Without a cluster the tests skip, unless IB_REQUIRE_SLURM=1 (CI), where they fail.
#include "launch/slurm.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include "core/command.h"
#include "core/interrupt.h"
#include "e2e_util.h"
#include "slurm_util.h"
#include "store/store.h"

namespace ib::e2e {
namespace {

// Recipe strings a careless batch script would execute, split or expand.
const std::string kHostileModel = "sim $(touch PWNED) `touch PWNED` 'q' \"dq\" * ; # %j\nline2";

std::vector<std::string> sim_argv(const std::string& model) {
  return {INFERBENCH_BIN,
          "serve-sim",
          "--host",
          "{host}",
          "--port",
          "{port}",
          "--model",
          model,
          "--prefill-overhead-ms",
          "1",
          "--prefill-tok-s",
          "100000",
          "--decode-base-ms",
          "1",
          "--decode-per-running-ms",
          "0"};
}

class SlurmLauncherE2E : public ::testing::Test {
 protected:
  void SetUp() override { clear_interrupt(); }
  void TearDown() override { clear_interrupt(); }

  launch::SlurmOptions options() const {
    launch::SlurmOptions o;
    // Other tests' jobs may hold every node for a while (a disaggregated one takes three,
    // exclusively): waiting for them is not a failure.
    o.allocation_timeout = std::chrono::seconds(120);
    o.work_dir = dir.path() / "scripts";
    o.time_limit = "00:05:00";
    return o;
  }
  std::string unique_name(const std::string& what) const {
    return what + "-" + std::to_string(::getpid());
  }

  TempDir dir;
};

TEST_F(SlurmLauncherE2E, ServesTheSimulatorAndStopsIt) {
  REQUIRE_SLURM_OR_SKIP();
  const std::string model = kHostileModel + " " + std::to_string(::getpid());
  launch::ServerSpec spec;
  spec.name = unique_name("sim");
  spec.argv = sim_argv(model);
  spec.env["IB_HOSTILE"] = "$(touch PWNED) 'x' \"y\" `z`";
  // sbatch reads the log path from an #SBATCH line: spaces, quotes, # and % must survive it.
  spec.log_path = dir.path() / "logs 'q' \"dq\" $(touch PWNED) #1 %j" / "server %N.log";
  spec.startup_timeout = std::chrono::seconds(20);

  auto launcher = launch::make_slurm_launcher(options());
  auto server = launcher->start(spec);
  ASSERT_TRUE(server) << server.error().message;
  EXPECT_EQ((*server)->url().rfind("http://", 0), 0u) << (*server)->url();
  EXPECT_EQ((*server)->log_path(), spec.log_path);
  EXPECT_EQ((*server)->check_alive(), std::nullopt);

  // Reached through the node's address, as a benchmark would.
  auto endpoint = http::parse_endpoint((*server)->url());
  ASSERT_TRUE(endpoint) << endpoint.error().message;
  auto models = http::http_get(*endpoint, "/v1/models", std::chrono::seconds(5));
  ASSERT_TRUE(models) << models.error().message;
  ASSERT_EQ(models->status, 200) << models->body;
  auto j = boost::json::parse(models->body);
  EXPECT_EQ(std::string(j.at("data").at(0).at("id").as_string()), model);

  const std::string job_name = "ib-" + spec.name;
  EXPECT_NE(queued_jobs(job_name).find("RUNNING"), std::string::npos);
  EXPECT_GE(processes_with(model), 1);  // the check below can see the server
  EXPECT_TRUE(fs::exists(spec.log_path)) << "sbatch wrote the log elsewhere";

  std::string how = (*server)->stop(std::chrono::milliseconds(10000));
  EXPECT_NE(how.find("slurm job"), std::string::npos) << how;
  EXPECT_EQ(queued_jobs(job_name), "");
  EXPECT_EQ(processes_with(model), 0) << "the server outlived its job";
  auto after = (*server)->check_alive();
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ((*server)->stop(), how);  // idempotent
  EXPECT_FALSE(http_get(*endpoint, "/health", std::chrono::seconds(2)));

  EXPECT_FALSE(fs::exists(dir.path() / "PWNED"));
  EXPECT_FALSE(fs::exists(dir.path() / "scripts" / "PWNED"));
}

TEST_F(SlurmLauncherE2E, ServerThatExitsAtStartupReportsJobStateAndLog) {
  REQUIRE_SLURM_OR_SKIP();
  launch::ServerSpec spec;
  spec.name = unique_name("bogus");
  spec.argv = {INFERBENCH_BIN, "serve-sim", "--port", "{port}", "--bogus-flag"};
  spec.log_path = dir.path() / "bogus.log";
  spec.startup_timeout = std::chrono::seconds(20);

  auto server = launch::make_slurm_launcher(options())->start(spec);
  ASSERT_FALSE(server);
  const std::string& message = server.error().message;
  EXPECT_NE(message.find("exited"), std::string::npos) << message;
  EXPECT_NE(message.find("slurm job"), std::string::npos) << message;
  EXPECT_NE(message.find("--bogus-flag"), std::string::npos) << "no log tail in: " << message;
  EXPECT_EQ(queued_jobs("ib-" + spec.name), "");
}

TEST_F(SlurmLauncherE2E, InterruptWhileWaitingCancelsTheJob) {
  REQUIRE_SLURM_OR_SKIP();
  launch::ServerSpec spec;
  spec.name = unique_name("interrupted");
  spec.argv = sim_argv("interrupted-" + std::to_string(::getpid()));
  spec.log_path = dir.path() / "interrupted.log";
  request_interrupt();
  auto server = launch::make_slurm_launcher(options())->start(spec);
  clear_interrupt();
  ASSERT_FALSE(server);
  EXPECT_NE(server.error().message.find("interrupted"), std::string::npos)
      << server.error().message;
  EXPECT_EQ(queued_jobs("ib-" + spec.name), "");
}

}  // namespace
}  // namespace ib::e2e

namespace ib::e2e {
namespace {

// A serve-sim recipe with one configuration `key` serving `model` (simple timing model,
// `decode_ms` per token) at ISL 32 / OSL `osl` and concurrencies `concs`.
void write_sim_recipe(const fs::path& path, const std::string& key, const std::string& model,
                      const std::string& decode_ms, int osl, const std::string& concs) {
  std::ofstream(path) << key << ":\n"
                      << "  image: inferbench/serve-sim\n"
                      << "  model: " << model << "\n"
                      << "  model-prefix: sim\n"
                      << "  precision: bf16\n"
                      << "  framework: serve-sim\n"
                      << "  runner: local\n"
                      << "  multinode: false\n"
                      << "  serve:\n"
                      << "    command: [inferbench, serve-sim, --timing-model, simple, "
                         "--decode-base-ms, \""
                      << decode_ms
                      << "\",\n"
                         "              --model, \"{served-model}\", --host, \"{host}\", "
                         "--port, \"{port}\"]\n"
                      << "  scenarios:\n"
                      << "    fixed-seq-len:\n"
                      << "    - { isl: 32, osl: " << osl << ", search-space: [{ tp: 1, conc-list: ["
                      << concs << "] }] }\n";
}

// The main job through Slurm: `inferbench sweep --launcher slurm` runs a simulator recipe as one
// batch job per server configuration and stores the points.
TEST_F(SlurmLauncherE2E, SweepRunsTheSimulatorThroughSlurm) {
  REQUIRE_SLURM_OR_SKIP();
  const std::string model = unique_name("slurm-sweep-model");
  const fs::path recipe = dir.path() / "recipe.yaml";
  write_sim_recipe(recipe, "sim-slurm", model, "2", 8, "1, 2");
  const fs::path runs = dir.path() / "runs";
  auto r = run_inferbench({"sweep", recipe.string(), "--launcher", "slurm", "--runs-dir",
                           runs.string(), "--startup-timeout", "60"},
                          dir.path() / "sweep.log", std::chrono::seconds(120));
  ASSERT_FALSE(r.timed_out) << r.output;
  ASSERT_EQ(r.exit.code, 0) << r.output;
  auto db = store::Store::open_existing(runs / "inferbench.db");
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto listed = db->list_runs();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->front().run.status, store::RunStatus::kOk);
  EXPECT_EQ(listed->front().points.ok, 2);
  auto configs = db->server_configs(listed->front().run.id);
  ASSERT_TRUE(configs.ok());
  ASSERT_EQ(configs->size(), 1u);
  EXPECT_EQ((*configs)[0].launcher, "slurm");
  EXPECT_EQ((*configs)[0].effective_config.at("settings").at("model").as_string(), model);
  EXPECT_EQ(queued_jobs("ib-sim-slurm"), "");
  EXPECT_EQ(processes_with(model), 0);
}

}  // namespace
}  // namespace ib::e2e

namespace ib::e2e {
namespace {

// GPU power through Slurm: the job script starts the node's nvidia-smi (here a stand-in on the
// PATH sbatch exports) beside the server; the client reads its samples after each point and
// integrates them over the point's window.
TEST_F(SlurmLauncherE2E, SweepSamplesGpuPowerInsideTheJob) {
  REQUIRE_SLURM_OR_SKIP();
  const fs::path bin = fake_nvidia_smi(dir.path(), "300.00");
  const std::string model = unique_name("slurm-power-model");
  const fs::path recipe = dir.path() / "recipe.yaml";
  write_sim_recipe(recipe, "sim-power", model, "5", 64, "2");
  const fs::path runs = dir.path() / "runs";
  auto r = run_inferbench({"sweep", recipe.string(), "--launcher", "slurm", "--runs-dir",
                           runs.string(), "--startup-timeout", "60", "--require-power"},
                          dir.path() / "sweep.log", std::chrono::seconds(120), path_with(bin));
  ASSERT_FALSE(r.timed_out) << r.output;
  ASSERT_EQ(r.exit.code, 0) << r.output;
  auto db = store::Store::open_existing(runs / "inferbench.db");
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto listed = db->list_runs();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  auto points = db->points(listed->front().run.id);
  ASSERT_TRUE(points.ok()) << points.error().message;
  ASSERT_EQ(points->size(), 1u);
  const auto& e = (*points)[0].result.at("energy").as_object();
  ASSERT_TRUE(e.at("power_valid").as_bool()) << boost::json::serialize(e);
  EXPECT_EQ(e.at("tool").as_string(), "nvidia-smi (Slurm job)");
  EXPECT_NEAR(e.at("avg_power_w").to_number<double>(), 300.0, 1e-6);
  EXPECT_EQ(queued_jobs("ib-sim-power"), "");
  EXPECT_EQ(processes_with(model), 0);
}

}  // namespace
}  // namespace ib::e2e
