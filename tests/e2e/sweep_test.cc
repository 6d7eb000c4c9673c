// `inferbench sweep`: the main job, with its serve-sim child, end to end.
#include <csignal>

#include "e2e_util.h"

namespace ib::e2e {
namespace {

// True when nothing answers at the server URL a sweep recorded: its server was stopped.
bool server_gone(const boost::json::object& summary) {
  auto endpoint = parse_endpoint(std::string(summary.at("server_url").as_string()));
  EXPECT_TRUE(endpoint.ok());
  if (!endpoint) return false;
  return !http_get(*endpoint, "/health", std::chrono::seconds(2)).ok();
}

fs::path only_run_dir(const fs::path& runs) {
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(runs)) dirs.push_back(e.path());
  EXPECT_EQ(dirs.size(), 1u);
  return dirs.empty() ? fs::path() : dirs[0];
}

TEST(Sweep, RunsEveryPointStoresResultsAndStopsTheServer) {
  TempDir dir;
  const fs::path runs = dir.path() / "runs";
  auto r = run_inferbench({"sweep", "--runs-dir", runs.string(), "--concurrency", "1,3", "--isl",
                           "32", "--osl", "8", "--server-arg=--decode-base-ms=2"},
                          dir.path() / "sweep.log");
  ASSERT_FALSE(r.timed_out) << r.output;
  ASSERT_EQ(r.exit.code, 0) << r.output;
  EXPECT_NE(r.output.find("p50 TPOT ms"), std::string::npos) << r.output;

  const fs::path run = only_run_dir(runs);
  auto summary = read_json(run / "summary.json");
  EXPECT_EQ(summary.at("status").as_string(), "ok");
  const auto& points = summary.at("points").as_array();
  ASSERT_EQ(points.size(), 2u);
  int expect_conc[] = {1, 3};
  for (size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i].as_object();
    EXPECT_EQ(num(p, "concurrency"), expect_conc[i]);
    EXPECT_TRUE(p.at("ok").as_bool());
    auto result = read_json(run / std::string(p.at("result").as_string()));
    EXPECT_EQ(num(result, "max_concurrency"), expect_conc[i]);
    EXPECT_EQ(num(result, "failed"), 0);
    EXPECT_EQ(num(result, "completed"), 8 > 4 * expect_conc[i] ? 8 : 4 * expect_conc[i]);
    EXPECT_GT(num(result, "output_throughput"), 0);
  }
  EXPECT_TRUE(fs::exists(run / "server.log"));
  EXPECT_TRUE(server_gone(summary));
}

TEST(Sweep, InterruptKeepsFinishedPointsAndStopsTheServer) {
  TempDir dir;
  const fs::path runs = dir.path() / "runs";
  SpawnOptions so;
  so.argv = {INFERBENCH_BIN, "sweep", "--runs-dir", runs.string(), "--concurrency", "1,2",
             "--isl", "16", "--osl", "100", "--server-arg=--decode-base-ms=5"};
  so.log_path = dir.path() / "sweep.log";
  auto child = ChildProcess::spawn(so);
  ASSERT_TRUE(child.ok());
  // Wait until the first point is stored, then interrupt during the second one.
  fs::path run;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline && !child->poll()) {
    if (fs::exists(runs)) {
      for (const auto& e : fs::directory_iterator(runs)) run = e.path();
    }
    if (!run.empty() && fs::exists(run / "conc_1.json")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(fs::exists(run / "conc_1.json")) << file_tail(dir.path() / "sweep.log");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(child->pid(), SIGINT);
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!child->poll() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  auto exit = child->poll();
  ASSERT_TRUE(exit.has_value()) << "sweep did not stop after SIGINT";
  EXPECT_EQ(exit->code, 130) << file_tail(dir.path() / "sweep.log");

  auto summary = read_json(run / "summary.json");
  EXPECT_EQ(summary.at("status").as_string(), "interrupted");
  const auto& points = summary.at("points").as_array();
  ASSERT_GE(points.size(), 1u);
  EXPECT_TRUE(points[0].as_object().at("ok").as_bool());
  auto first = read_json(run / "conc_1.json");
  EXPECT_FALSE(first.at("partial").as_bool());
  if (points.size() == 2) {
    auto second = read_json(run / "conc_2.json");
    EXPECT_TRUE(second.at("partial").as_bool());
  }
  EXPECT_TRUE(server_gone(summary));
}

TEST(Sweep, ServerThatCannotStartIsReportedWithItsLog) {
  TempDir dir;
  const fs::path runs = dir.path() / "runs";
  auto r = run_inferbench({"sweep", "--runs-dir", runs.string(), "--concurrency", "1",
                           "--server-arg=--decode-base-ms=-5"},
                          dir.path() / "sweep.log");
  EXPECT_EQ(r.exit.code, 1) << r.output;
  EXPECT_NE(r.output.find("server exited during startup"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("server.log"), std::string::npos) << r.output;
  auto summary = read_json(only_run_dir(runs) / "summary.json");
  EXPECT_EQ(summary.at("status").as_string(), "failed");
}

}  // namespace
}  // namespace ib::e2e
