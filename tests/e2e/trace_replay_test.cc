// Timed trace replay end to end (docs/trace-replay.md): the committed Mooncake trace's first
// requests against serve-sim (roofline, prefix caching with room for every block), at ten and
// at five times the trace's rate: every input and output as the server counted them is the
// trace's, serve-sim's prefix-cache hit is the trace's theoretical hit, and the result says what
// rate it aimed at.
#include <fstream>

#include "browser_util.h"
#include "e2e_util.h"
#include "store/store.h"
#include "tokenizer/test_cache.h"

namespace ib::e2e {
namespace {

const std::string kMooncake =
    std::string(INFERBENCH_TEST_DATA) + "/timed-traces/mooncake_conversation_300.jsonl";

// The lag bound is generous: a loaded or sanitized machine sends late, and no test may depend on
// timing (the lag rule has its unit test, load/trace_fidelity_test.cc).
boost::json::object replay(const SimServer& sim, const fs::path& dir, const std::string& scale,
                           const std::string& name) {
  const fs::path out = dir / (name + ".json");
  auto r =
      run_inferbench({"bench", "--workload", "trace", "--trace", kMooncake, "--trace-format",
                      "mooncake", "--endpoint", sim.url(), "--time-scale", scale, "--max-requests",
                      "40", "--max-lag-ms", "60000", "--output", out.string()},
                     dir / (name + ".log"), std::chrono::seconds(120));
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit.code, 0) << r.output;
  return fs::exists(out) ? read_json(out) : boost::json::object();
}

TEST(TraceReplay, MooncakeRequestsReachTheServerExactlyAndHitItsCacheAsTheTraceSays) {
  TempDir dir;
  // Idle connections close after 0.2 s, as vLLM's after 5 s: the 0.3 s and 0.6 s gaps between
  // the trace's bursts outlast it, and the replay keeps its pool of open connections by reopening
  // them before the next burst (a burst that had to connect would wait on the event loop).
  SimServer sim(dir.path(), {"--num-gpu-blocks-override", "400000", "--time-scale", "10",
                             "--keep-alive-timeout-s", "0.2"});
  ASSERT_TRUE(sim.running());
  const auto j = replay(sim, dir.path(), "0.1", "tenth");
  ASSERT_TRUE(j.contains("client")) << boost::json::serialize(j);
  EXPECT_GT(j.at("client").at("pool_reopened").as_int64(), 0);
  ASSERT_TRUE(j.contains("trace_fidelity")) << boost::json::serialize(j);
  EXPECT_EQ(j.at("status").as_string(), "ok") << boost::json::serialize(j.at("validity"));
  EXPECT_EQ(j.at("request_rate").as_string(), "trace");
  EXPECT_EQ(j.at("completed").as_int64(), 40);
  const auto& f = j.at("trace_fidelity").as_object();
  EXPECT_TRUE(f.at("valid").as_bool()) << boost::json::serialize(f);
  EXPECT_EQ(f.at("prompt_mode").as_string(), "token-ids");
  // Every input, as the server counted it, is the trace's input_length; every output its
  // output_length (max_tokens with ignore_eos honoured).
  const auto& in = f.at("input_tokens").as_object();
  EXPECT_EQ(in.at("server_counted").as_int64(), 40);
  EXPECT_EQ(in.at("exact").as_int64(), 40);
  const auto& out = f.at("output_tokens").as_object();
  EXPECT_EQ(out.at("exact").as_int64(), 40);
  // The blocks the trace shares are shared exactly: serve-sim's hit is the theoretical one (its
  // cache holds every block; only a request's last token is never a hit).
  const auto& p = f.at("prefix_cache").as_object();
  EXPECT_GT(p.at("theoretical_hit_pct").as_double(), 0);
  EXPECT_NEAR(p.at("server_hit_pct").as_double(), p.at("theoretical_hit_pct").as_double(), 1.0)
      << boost::json::serialize(p);
  const auto& a = f.at("arrivals").as_object();
  EXPECT_EQ(a.at("sent").as_int64(), 40);
  EXPECT_EQ(a.at("not_sent").as_int64(), 0);
  EXPECT_DOUBLE_EQ(a.at("rate_factor").as_double(), 10.0);
  EXPECT_DOUBLE_EQ(j.at("rate_factor").as_double(), 10.0);

  // Twice the scale is half the rate, and the result says so.
  const auto half = replay(sim, dir.path(), "0.2", "fifth");
  ASSERT_TRUE(half.contains("trace_fidelity"));
  EXPECT_DOUBLE_EQ(half.at("rate_factor").as_double(), 5.0);
  EXPECT_NEAR(half.at("trace_fidelity").at("arrivals").at("target_rate").as_double() * 2,
              a.at("target_rate").as_double(), 1e-9);
  EXPECT_NEAR(half.at("replay_span_s").as_double() / 2, j.at("replay_span_s").as_double(), 1e-9);
}

// With the served model's tokenizer on both sides (serve-sim counts prompts with it): text
// prompts whose every block is exactly 512 of its tokens, so every input as the server counted it
// is the trace's input_length and the shared blocks are shared as the server tokenizes them.
TEST(TraceReplay, TextPromptsOfTheServedModelsTokenizerAreExact) {
  IB_SKIP_IF_MISSING(tokenizer::testing::missing_files({"llama3_1/tokenizer.json"}));
  const fs::path model = tokenizer::tokenizer_cache_dir() / "llama3_1";
  TempDir dir;
  SimServer sim(dir.path(), {"--num-gpu-blocks-override", "400000", "--time-scale", "10",
                             "--tokenizer", model.string()});
  ASSERT_TRUE(sim.running());
  const fs::path out = dir.path() / "tok.json";
  auto r = run_inferbench(
      {"bench", "--workload", "trace", "--trace", kMooncake, "--trace-format", "mooncake",
       "--endpoint", sim.url(), "--time-scale", "0.1", "--max-requests", "20", "--max-lag-ms",
       "60000", "--tokenizer", model.string(), "--output", out.string()},
      dir.path() / "tok.log", std::chrono::seconds(120));
  ASSERT_EQ(r.exit.code, 0) << r.output;
  const auto j = read_json(out);
  const auto& f = j.at("trace_fidelity").as_object();
  EXPECT_EQ(f.at("prompt_mode").as_string(), "tokenizer-text");
  EXPECT_EQ(f.at("input_tokens").at("exact").as_int64(), 20) << boost::json::serialize(f);
  EXPECT_EQ(f.at("output_tokens").at("exact").as_int64(), 20);
  const auto& p = f.at("prefix_cache").as_object();
  EXPECT_GT(p.at("theoretical_hit_pct").as_double(), 0);
  EXPECT_NEAR(p.at("server_hit_pct").as_double(), p.at("theoretical_hit_pct").as_double(), 1.0)
      << boost::json::serialize(p);
}

TEST(TraceReplay, BadTraceOptionsAreUsageErrors) {
  TempDir dir;
  auto expect_usage = [&](std::vector<std::string> args, const std::string& want) {
    args.insert(args.begin(), {"bench", "--endpoint", "http://127.0.0.1:9"});
    auto r = run_inferbench(args, dir.path() / "bad.log");
    EXPECT_EQ(r.exit.code, 2) << r.output;
    EXPECT_NE(r.output.find(want), std::string::npos) << r.output;
  };
  expect_usage({"--workload", "trace"}, "--workload trace needs --trace FILE");
  expect_usage({"--workload", "trace", "--trace", kMooncake, "--trace-format", "sharegpt"},
               "--trace-format must be mooncake, bailian, burstgpt or azure");
  expect_usage({"--workload", "trace", "--trace", kMooncake, "--window", "9:3"}, "--window must");
  expect_usage({"--workload", "trace", "--trace", kMooncake, "--window", "5000:"},
               "no request in the window");
  expect_usage({"--workload", "trace", "--trace", kMooncake, "--request-rate", "3"},
               "--request-rate does not apply to --workload trace");
  expect_usage({"--trace", kMooncake}, "--trace needs --workload trace");
  expect_usage({"--workload", "trace", "--trace", kMooncake, "--trace-format", "bailian"},
               "mooncake_conversation_300.jsonl:1: hash_ids");
}

}  // namespace
}  // namespace ib::e2e

namespace ib::e2e {
namespace {

// The timed-trace recipe scenario in a sweep: one point per cap, each from a cold cache
// (workload: flush-cache), each with its fidelity stored. The lag bound is generous here: a
// loaded or sanitized machine sends late (the rule itself has its unit test).
TEST(TraceReplay, ARecipeScenarioSweepsCapsFromAColdCache) {
  TempDir dir;
  const fs::path recipe = dir.path() / "trace.yaml";
  std::ofstream(recipe) << R"(sim-trace:
  image: inferbench/serve-sim
  model: sim-trace-model
  model-prefix: sim
  precision: bf16
  framework: serve-sim
  runner: local
  multinode: false
  serve:
    command: [inferbench, serve-sim, --model, "{served-model}", --host, "{host}", --port, "{port}",
              --num-gpu-blocks-override, "400000", --time-scale, "10"]
  workload: { flush-cache: true }
  scenarios:
    timed-trace:
    - trace: )" << kMooncake
                        << R"(
      format: mooncake
      time-scale: 0.1
      max-requests: 30
      max-lag-ms: 60000
      search-space:
      - { tp: 1, conc-list: [2, 64] }
)";
  const fs::path runs = dir.path() / "runs";
  auto r = run_inferbench({"sweep", recipe.string(), "--runs-dir", runs.string(), "--json"},
                          dir.path() / "sweep.log", std::chrono::seconds(120));
  ASSERT_FALSE(r.timed_out) << r.output;
  ASSERT_EQ(r.exit.code, 0) << r.output;
  const size_t brace = r.output.find('{');
  ASSERT_NE(brace, std::string::npos) << r.output;
  const auto v = boost::json::parse(r.output.substr(brace));
  const auto& points = v.at("points").as_array();
  ASSERT_EQ(points.size(), 2u) << r.output;
  for (const auto& p : points) EXPECT_EQ(p.at("status").as_string(), "ok") << r.output;
  // Each point's stored result: both started cold, so both hit as the trace says.
  int seen = 0;
  for (const auto& e : fs::recursive_directory_iterator(runs)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with("conc_") || e.path().extension() != ".json") continue;
    const auto j = read_json(e.path());
    const auto& f = j.at("trace_fidelity").as_object();
    const auto& c = f.at("prefix_cache").as_object();
    EXPECT_NEAR(c.at("server_hit_pct").as_double(), c.at("theoretical_hit_pct").as_double(), 1.0)
        << name;
    EXPECT_TRUE(j.at("cache_flush").at("all_flushed").as_bool()) << name;
    EXPECT_EQ(f.at("input_tokens").at("exact").as_int64(), 30) << name;
    // The cap of 2 held requests back: their lag is the cap's, not a replay error.
    if (j.at("max_concurrency").as_int64() == 2) {
      EXPECT_TRUE(f.at("arrivals").at("cap_reached").as_bool()) << name;
    }
    ++seen;
  }
  EXPECT_EQ(seen, 2);
  // `show` has a line per point.
  auto show = run_inferbench({"show", "1", "--db", (runs / "inferbench.db").string()},
                             dir.path() / "show.log");
  ASSERT_EQ(show.exit.code, 0) << show.output;
  EXPECT_NE(show.output.find("TRACE FIDELITY"), std::string::npos) << show.output;
  EXPECT_NE(show.output.find("30/30"), std::string::npos) << show.output;

  // The report's point detail has the fidelity.
  const fs::path page = dir.path() / "trace.html";
  auto rep = run_inferbench(
      {"report", "1", "--db", (runs / "inferbench.db").string(), "-o", page.string()},
      dir.path() / "report.log");
  ASSERT_EQ(rep.exit.code, 0) << rep.output;
  auto st = store::Store::open_existing(runs / "inferbench.db");
  ASSERT_TRUE(st.ok());
  auto stored = st->points(1);
  ASSERT_TRUE(stored.ok() && !stored->empty());
  REQUIRE_CHROMIUM(chromium);
  Browser browser{*chromium, dir.path()};
  std::vector<std::string> leaks;
  const std::string dom = browser.load(
      "file://" + page.string() + "#point=hp" + std::to_string(stored->front().id), leaks);
  EXPECT_NE(dom.find("data-trace-fidelity=\"valid\""), std::string::npos) << dom.substr(0, 3000);
  EXPECT_NE(dom.find("30 of 30 exact"), std::string::npos);
  EXPECT_NE(dom.find("10\u00d7 the trace"), std::string::npos);
  EXPECT_TRUE(leaks.empty()) << fmt::format("{}", fmt::join(leaks, "\n"));
}

}  // namespace
}  // namespace ib::e2e
