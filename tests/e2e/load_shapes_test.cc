// Load shapes of `inferbench bench` against serve-sim: open-loop schedules, concurrency caps,
// duration bounds, the client-health block, and Ctrl-C.
#include <csignal>
#include <fstream>

#include "e2e_util.h"

namespace ib::e2e {
namespace {

std::vector<boost::json::object> read_details(const fs::path& p) {
  std::vector<boost::json::object> out;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line)) out.push_back(boost::json::parse(line).as_object());
  return out;
}

double ms(const boost::json::object& o, std::string_view key) { return num(o, key); }

TEST(LoadShapes, OpenLoopConstantRateFollowsTheAbsoluteSchedule) {
  TempDir dir;
  SimServer sim(dir.path(), {"--decode-base-ms", "1", "--decode-per-running-ms", "0"});
  ASSERT_TRUE(sim.running());
  const fs::path out = dir.path() / "r.json", details = dir.path() / "d.jsonl";
  auto r = run_inferbench({"bench", "--endpoint", sim.url(), "--isl", "16", "--osl", "4",
                           "--num-prompts", "20", "--request-rate", "20", "--arrival", "constant",
                           "--output", out.string(), "--details", details.string()},
                          dir.path() / "b.log");
  ASSERT_EQ(r.exit.code, 0) << r.output;
  auto j = read_json(out);
  EXPECT_EQ(j.at("load_shape").as_string(), "open_loop");
  EXPECT_EQ(num(j, "request_rate"), 20);
  EXPECT_TRUE(j.at("max_concurrency").is_null());
  auto recs = read_details(details);
  ASSERT_EQ(recs.size(), 20u);
  const double t0 = ms(recs[0], "sched_ms");
  for (size_t i = 0; i < recs.size(); ++i) {
    // Scheduled exactly every 50 ms from the first: an absolute schedule does not drift.
    EXPECT_NEAR(ms(recs[i], "sched_ms") - t0, 50.0 * static_cast<double>(i), 1e-3) << i;
    EXPECT_GE(ms(recs[i], "send_ms"), ms(recs[i], "sched_ms")) << i;
  }
  const auto& client = j.at("client").as_object();
  EXPECT_TRUE(client.contains("schedule_lag_p99_ms"));
  EXPECT_TRUE(client.contains("event_loop_lag_p99_ms"));
  EXPECT_GE(num(client, "schedule_lag_p99_ms"), 0);
}

TEST(LoadShapes, ConcurrencyCapQueuesRequestsAndScheduleLatencyShowsIt) {
  // Service ~100 ms (20 tokens, 5 ms decode steps) but a request every 10 ms with one slot: a backlog builds
  // that send-based latency hides and schedule-based latency shows (coordinated omission).
  TempDir dir;
  SimServer sim(dir.path(), {"--decode-base-ms", "5", "--decode-per-running-ms", "0"});
  ASSERT_TRUE(sim.running());
  const fs::path out = dir.path() / "r.json", details = dir.path() / "d.jsonl";
  auto r = run_inferbench({"bench", "--endpoint", sim.url(), "--isl", "16", "--osl", "20",
                           "--num-prompts", "8", "--request-rate", "100", "--arrival", "constant",
                           "--concurrency", "1", "--output", out.string(), "--details",
                           details.string()},
                          dir.path() / "b.log");
  ASSERT_EQ(r.exit.code, 0) << r.output;
  auto j = read_json(out);
  EXPECT_EQ(num(j, "max_concurrency"), 1);
  EXPECT_EQ(num(j.at("client").as_object(), "peak_in_flight"), 1);
  auto recs = read_details(details);
  ASSERT_EQ(recs.size(), 8u);
  double prev_queue = -1;
  for (size_t i = 1; i < recs.size(); ++i) {
    // FIFO: sent in order, each after the previous one finished; the queue time only grows.
    EXPECT_GE(ms(recs[i], "send_ms"), ms(recs[i - 1], "done_ms")) << i;
    const double queue = ms(recs[i], "send_ms") - ms(recs[i], "sched_ms");
    EXPECT_GT(queue, prev_queue) << i;
    prev_queue = queue;
  }
  // The last request waited for 7 services of at least 19 decode steps of 5 ms each, less the
  // 70 ms by which it was scheduled later than the first.
  EXPECT_GE(prev_queue, 7 * 19 * 5.0 - 70.0);
  EXPECT_GT(num(j, "mean_sched_ttft_ms"), num(j, "mean_ttft_ms") + 100);
  EXPECT_GT(num(j, "mean_queue_ms"), 100);
}

TEST(LoadShapes, DurationBoundStopsSendingAtTheLimit) {
  TempDir dir;
  SimServer sim(dir.path(), {"--decode-base-ms", "2", "--decode-per-running-ms", "0"});
  ASSERT_TRUE(sim.running());
  const fs::path out = dir.path() / "r.json", details = dir.path() / "d.jsonl";
  auto r = run_inferbench({"bench", "--endpoint", sim.url(), "--isl", "16", "--osl", "10",
                           "--num-prompts", "3", "--concurrency", "2", "--duration", "0.6",
                           "--output", out.string(), "--details", details.string()},
                          dir.path() / "b.log");
  ASSERT_EQ(r.exit.code, 0) << r.output;
  auto j = read_json(out);
  EXPECT_EQ(num(j, "duration_limit_s"), 0.6);
  auto recs = read_details(details);
  // More requests than prompts: the prompt list is reused.
  ASSERT_GT(recs.size(), 3u);
  EXPECT_EQ(num(j, "completed"), static_cast<double>(recs.size()));
  // num_prompts counts the requests sent, as vLLM's does; the list they cycled is distinct_prompts.
  EXPECT_EQ(num(j, "num_prompts"), static_cast<double>(recs.size()));
  EXPECT_EQ(num(j, "distinct_prompts"), 3);
  for (const auto& rec : recs) EXPECT_LT(ms(rec, "sched_ms"), 600.0);
  // Indexes are unique and dense.
  for (size_t i = 0; i < recs.size(); ++i) EXPECT_EQ(num(recs[i], "index"), static_cast<double>(i));
}

TEST(LoadShapes, SeveralThreadsAndSourceAddressesMeasureEveryRequestOnce) {
  TempDir dir;
  SimServer sim(dir.path(), {"--decode-base-ms", "2", "--decode-per-running-ms", "0"});
  ASSERT_TRUE(sim.running());
  for (const std::vector<std::string>& shape :
       {std::vector<std::string>{"--concurrency", "6"},
        std::vector<std::string>{"--request-rate", "200", "--arrival", "poisson"}}) {
    const fs::path out = dir.path() / "r.json", details = dir.path() / "d.jsonl";
    std::vector<std::string> args = {"bench", "--endpoint", sim.url(), "--isl", "16", "--osl",
                                     "8", "--num-prompts", "60", "--threads", "3",
                                     "--source-addresses", "3", "--output", out.string(),
                                     "--details", details.string()};
    args.insert(args.end(), shape.begin(), shape.end());
    auto r = run_inferbench(args, dir.path() / "b.log");
    ASSERT_EQ(r.exit.code, 0) << r.output;
    auto j = read_json(out);
    EXPECT_EQ(num(j, "completed"), 60);
    EXPECT_EQ(num(j, "total_output_tokens"), 60 * 8);
    const auto& client = j.at("client").as_object();
    EXPECT_EQ(num(client, "threads"), 3);
    EXPECT_EQ(num(client, "source_addresses"), 3);
    auto recs = read_details(details);
    ASSERT_EQ(recs.size(), 60u);
    for (size_t i = 0; i < recs.size(); ++i) {
      EXPECT_EQ(num(recs[i], "index"), static_cast<double>(i));
      EXPECT_TRUE(recs[i].at("ok").as_bool());
    }
  }
}

TEST(LoadShapes, InterruptWritesAPartialResultAndExits130) {
  TempDir dir;
  SimServer sim(dir.path(), {"--decode-base-ms", "20", "--decode-per-running-ms", "0"});
  ASSERT_TRUE(sim.running());
  const fs::path out = dir.path() / "r.json";
  SpawnOptions so;
  so.argv = {INFERBENCH_BIN, "bench", "--endpoint", sim.url(), "--isl", "16", "--osl", "20",
             "--num-prompts", "1000", "--concurrency", "2", "--output", out.string()};
  so.log_path = dir.path() / "b.log";
  auto child = ChildProcess::spawn(so);
  ASSERT_TRUE(child.ok());
  // A few requests complete first (waited for, not slept: a loaded sanitizer run starts slowly).
  ASSERT_TRUE(sim.wait_finished(3)) << file_tail(dir.path() / "b.log");
  ::kill(child->pid(), SIGINT);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!child->poll() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  auto exit = child->poll();
  ASSERT_TRUE(exit.has_value()) << "bench did not stop after SIGINT";
  EXPECT_EQ(exit->code, 130) << file_tail(dir.path() / "b.log");
  auto j = read_json(out);
  EXPECT_TRUE(j.at("partial").as_bool());
  EXPECT_GT(num(j, "completed"), 0);
  EXPECT_LT(num(j, "completed"), 1000);
  EXPECT_EQ(num(j, "failed"), 0);  // requests cut by the interrupt are not failures
  EXPECT_TRUE(sim.running());
}

}  // namespace
}  // namespace ib::e2e
