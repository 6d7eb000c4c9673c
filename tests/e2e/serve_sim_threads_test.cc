// `inferbench serve-sim --threads N`: the engine on one thread, connections spread over N I/O
// threads. Real processes on loopback: many concurrent streams from `inferbench bench`, the truth
// log, and shutdown by SIGTERM with streams in flight.
#include <fstream>

#include "e2e_util.h"
#include "http/test_client.h"
#include "workload/random_prompts.h"

namespace ib::e2e {
namespace {

std::vector<std::string> read_lines(const fs::path& p) {
  std::vector<std::string> lines;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(ServeSimThreads, ManyConcurrentStreamsAllCompleteAndEveryRequestIsLogged) {
  TempDir dir;
  const fs::path truth = dir.path() / "truth.jsonl";
  SimServer sim(dir.path(), {"--threads", "3", "--truth-log", truth.string(), "--time-scale", "4"});
  ASSERT_TRUE(sim.running());
  const fs::path out = dir.path() / "result.json";
  constexpr int kPrompts = 256;
  auto r = run_inferbench({"bench", "--endpoint", sim.url(), "--isl", "32", "--osl", "24",
                           "--range-ratio", "0.5", "--num-prompts", std::to_string(kPrompts),
                           "--concurrency", "128", "--warmups", "0", "--seed", "11", "--output",
                           out.string()},
                          dir.path() / "bench.log");
  ASSERT_FALSE(r.timed_out) << r.output;
  ASSERT_EQ(r.exit.code, 0) << r.output;
  const auto j = read_json(out);
  EXPECT_EQ(num(j, "completed"), kPrompts);
  EXPECT_EQ(num(j, "failed"), 0);
  workload::RandomWorkload w;
  w.isl = 32;
  w.osl = 24;
  w.range_ratio = 0.5;
  w.num_prompts = kPrompts;
  w.seed = 11;
  int64_t want_out = 0;
  for (const auto& p : std::vector<workload::PromptSpec>(workload::make_random_prompts(w).value())) want_out += p.output_len;
  EXPECT_EQ(num(j, "total_output_tokens"), want_out);

  const ExitInfo exit = sim.stop();
  EXPECT_FALSE(exit.signaled) << exit.describe();
  EXPECT_EQ(exit.code, 0) << exit.describe();
  EXPECT_NE(sim.log().find("threads=3)"), std::string::npos) << sim.log();

  // One whole JSON line per request, whichever thread served it; tokens in order.
  const std::vector<std::string> lines = read_lines(truth);
  ASSERT_EQ(lines.size(), static_cast<size_t>(kPrompts));
  int64_t logged_tokens = 0;
  for (const std::string& line : lines) {
    boost::system::error_code ec;
    const boost::json::value v = boost::json::parse(line, ec);
    ASSERT_FALSE(ec) << line;
    const boost::json::object& rec = v.as_object();
    EXPECT_EQ(rec.at("finish_reason").as_string(), "length") << line;
    EXPECT_TRUE(rec.at("stream").as_bool());
    const auto& sent = rec.at("token_ns").as_array();
    const auto& due = rec.at("due_ns").as_array();
    ASSERT_EQ(static_cast<int64_t>(sent.size()), rec.at("completion_tokens").as_int64());
    ASSERT_EQ(due.size(), sent.size());
    logged_tokens += static_cast<int64_t>(sent.size());
    // (arrival <= due[0] is not asserted: when the engine's loop runs late, steps keep their
    // back-to-back schedule, so a request that arrived during the lag can join a step whose
    // scheduled end is already past; docs/serve-sim.md "Continuous batching".)
    EXPECT_LE(rec.at("arrival_ns").as_int64(), sent.empty() ? 0 : sent[0].as_int64()) << line;
    for (size_t t = 0; t < sent.size(); ++t) {
      EXPECT_LE(due[t].as_int64(), sent[t].as_int64()) << line;
      if (t > 0) {
        EXPECT_GT(due[t].as_int64(), due[t - 1].as_int64()) << line;
        EXPECT_GE(sent[t].as_int64(), sent[t - 1].as_int64()) << line;
      }
    }
  }
  EXPECT_EQ(logged_tokens, want_out);
}

TEST(ServeSimThreads, SigtermWithStreamsInFlightExitsCleanly) {
  TempDir dir;
  const fs::path truth = dir.path() / "truth.jsonl";
  SimServer sim(dir.path(), {"--threads", "2", "--truth-log", truth.string()});
  ASSERT_TRUE(sim.running());
  std::vector<std::unique_ptr<testing::TestClient>> clients;
  for (int i = 0; i < 5; ++i) {
    clients.push_back(
        std::make_unique<testing::TestClient>(static_cast<uint16_t>(sim.endpoint().port)));
    ASSERT_FALSE(clients.back()->send(
        boost::beast::http::verb::post, "/v1/completions",
        R"({"prompt":"in flight","max_tokens":100000,"ignore_eos":true,"stream":true})"));
    ASSERT_EQ(clients.back()->read_header().status, 200);
  }
  ASSERT_FALSE(clients.front()->read_some().empty());  // tokens are flowing
  const ExitInfo exit = sim.stop();
  // SIGTERM: connections closed, the requests cancelled, every thread joined, exit 0 (a hang
  // would end in SIGKILL after the grace period).
  EXPECT_FALSE(exit.signaled) << exit.describe();
  EXPECT_EQ(exit.code, 0) << exit.describe();
  EXPECT_FALSE(fs::exists(sim.port_file()));
  for (auto& c : clients) {
    const auto closed = c->wait_closed();
    EXPECT_TRUE(closed == boost::asio::error::eof ||
                closed == boost::asio::error::connection_reset)
        << closed.message();
  }
  const std::vector<std::string> lines = read_lines(truth);
  ASSERT_EQ(lines.size(), clients.size());
  for (const std::string& line : lines) {
    EXPECT_EQ(boost::json::parse(line).at("finish_reason").as_string(), "abort") << line;
  }
}

TEST(ServeSimThreads, ThreadsOutOfRangeIsAUsageError) {
  TempDir dir;
  for (const char* bad : {"0", "65", "two"}) {
    auto r = run_inferbench({"serve-sim", "--port", "0", "--threads", bad},
                            dir.path() / "sim.log", std::chrono::seconds(30));
    EXPECT_EQ(r.exit.code, 2) << bad << ": " << r.output;
    EXPECT_NE(r.output.find("--threads"), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace ib::e2e
