// `inferbench bench` against `inferbench serve-sim`, both real processes on loopback.
#include <fstream>
#include <numeric>

#include "e2e_util.h"
#include "workload/random_prompts.h"

namespace ib::e2e {
namespace {

// Simulator timing for these tests (docs/serve-sim.md): prefill = overhead + tokens / rate,
// decode step = base + per_running × running.
constexpr double kPrefillOverheadMs = 30;
constexpr double kPrefillTokS = 100000;
constexpr double kDecodeBaseMs = 4;
constexpr double kDecodePerRunningMs = 0.5;

std::vector<std::string> sim_args() {
  return {"--prefill-overhead-ms",   std::to_string(kPrefillOverheadMs),
          "--prefill-tok-s",         std::to_string(kPrefillTokS),
          "--decode-base-ms",        std::to_string(kDecodeBaseMs),
          "--decode-per-running-ms", std::to_string(kDecodePerRunningMs)};
}

class BenchAgainstSim : public ::testing::Test {
 protected:
  TempDir dir;
};

TEST_F(BenchAgainstSim, CompletionsCountsAndTimingMatchTheSimulator) {
  SimServer sim(dir.path(), sim_args());
  ASSERT_TRUE(sim.running());
  const fs::path out = dir.path() / "result.json";
  const fs::path details = dir.path() / "details.jsonl";
  auto r = run_inferbench({"bench",
                           "--endpoint",
                           sim.url(),
                           "--isl",
                           "64",
                           "--osl",
                           "16",
                           "--range-ratio",
                           "0.5",
                           "--num-prompts",
                           "24",
                           "--concurrency",
                           "4",
                           "--warmups",
                           "4",
                           "--seed",
                           "7",
                           "--output",
                           out.string(),
                           "--details",
                           details.string()},
                          dir.path() / "bench.log");
  ASSERT_FALSE(r.timed_out) << r.output;
  ASSERT_EQ(r.exit.code, 0) << r.output;
  EXPECT_NE(r.output.find("Serving Benchmark Result"), std::string::npos);

  auto j = read_json(out);
  EXPECT_EQ(num(j, "completed"), 24);
  EXPECT_EQ(num(j, "failed"), 0);
  EXPECT_EQ(j.at("model_id").as_string(), "sim-model");  // discovered from /v1/models

  // The same seed gives the same prompts: the server must have produced exactly the requested
  // output lengths (ignore_eos) and counted exactly the prompt tokens we sent.
  workload::RandomWorkload w;
  w.isl = 64;
  w.osl = 16;
  w.range_ratio = 0.5;
  w.num_prompts = 24;
  w.seed = 7;
  auto prompts = workload::make_random_prompts(w).value();
  int64_t want_in = 0, want_out = 0;
  for (const auto& p : prompts) {
    want_in += p.input_len;
    want_out += p.output_len;
  }
  EXPECT_EQ(num(j, "total_input_tokens"), want_in);
  EXPECT_EQ(num(j, "total_output_tokens"), want_out);
  EXPECT_FALSE(j.at("output_tokens_estimated").as_bool());
  EXPECT_EQ(num(j, "requests_without_usage"), 0);
  // No accounting warning (client-health warnings depend on how busy the machine is).
  for (const auto& warning : j.at("warnings").as_array()) {
    const std::string text(warning.as_string());
    EXPECT_EQ(text.find("completion_tokens"), std::string::npos) << text;
    EXPECT_EQ(text.find("estimated"), std::string::npos) << text;
  }

  // Per-request records: server usage equals the content events seen (one token per event in
  // serve-sim) and equals what was asked.
  std::ifstream in(details);
  std::string line;
  int lines = 0;
  int64_t usage_sum = 0;
  while (std::getline(in, line)) {
    auto rec = boost::json::parse(line).as_object();
    ++lines;
    const int64_t completion = rec.at("completion_tokens").as_int64();
    usage_sum += completion;
    EXPECT_EQ(static_cast<int64_t>(rec.at("content_ms").as_array().size()), completion);
    EXPECT_EQ(completion, rec.at("output_len").as_int64());
    EXPECT_EQ(rec.at("prompt_tokens").as_int64(), rec.at("input_len").as_int64());
    EXPECT_EQ(rec.at("finish_reason").as_string(), "length");
  }
  EXPECT_EQ(lines, 24);
  EXPECT_EQ(usage_sum, want_out);

  // Timing relations that hold however slow the machine is: nothing can be faster than the
  // simulator's configured costs. The loose upper bounds only catch unit errors.
  const double min_prefill_ms = kPrefillOverheadMs + 32 / kPrefillTokS * 1000;
  EXPECT_GE(num(j, "p90_ttft_ms"), min_prefill_ms);
  EXPECT_GE(num(j, "median_ttft_ms"), min_prefill_ms);
  EXPECT_GE(num(j, "median_tpot_ms"), kDecodeBaseMs + kDecodePerRunningMs);
  EXPECT_LT(num(j, "median_tpot_ms"), 50 * (kDecodeBaseMs + 4 * kDecodePerRunningMs));
  EXPECT_GE(num(j, "median_itl_ms"), kDecodeBaseMs);
  EXPECT_NEAR(num(j, "median_intvty"), 1000.0 / num(j, "median_tpot_ms"), 1e-9);
  EXPECT_GE(num(j, "mean_e2el_ms"), num(j, "mean_ttft_ms"));
  // Throughput is consistent with the token total and duration.
  EXPECT_NEAR(num(j, "output_throughput") * num(j, "duration"), want_out, 1e-6 * want_out);
  const auto& client = j.at("client").as_object();
  EXPECT_GE(num(client, "peak_in_flight"), 1);
  EXPECT_LE(num(client, "peak_in_flight"), 4);
  EXPECT_GT(num(client, "cpu_seconds"), 0);
  // Linux stamps TCP receives (SO_TIMESTAMPNS): content events are timed at the socket.
  EXPECT_GT(num(client, "kernel_timestamp_fraction"), 0.5);
}

TEST_F(BenchAgainstSim, ChatRoleChunkIsNotTakenAsFirstToken) {
  // serve-sim sends the role-only chunk as soon as a request is admitted, before the 30 ms
  // prefill. A client that took it as the first token would report TTFT near zero.
  SimServer sim(dir.path(), sim_args());
  ASSERT_TRUE(sim.running());
  const fs::path out = dir.path() / "chat.json";
  auto r =
      run_inferbench({"bench", "--endpoint", sim.url(), "--api", "chat", "--isl", "20", "--osl",
                      "6", "--num-prompts", "8", "--concurrency", "2", "--output", out.string()},
                     dir.path() / "bench.log");
  ASSERT_EQ(r.exit.code, 0) << r.output;
  auto j = read_json(out);
  EXPECT_EQ(num(j, "completed"), 8);
  EXPECT_EQ(num(j, "total_output_tokens"), 8 * 6);
  EXPECT_GE(num(j, "median_ttft_ms"), kPrefillOverheadMs);
  EXPECT_FALSE(j.at("input_length_exact").as_bool());
  EXPECT_EQ(j.at("backend").as_string(), "openai-chat");
}

TEST_F(BenchAgainstSim, NothingListeningFailsEveryRequestWithExitOne) {
  const int port = unused_port();
  const fs::path out = dir.path() / "fail.json";
  auto r = run_inferbench(
      {"bench", "--endpoint", "http://127.0.0.1:" + std::to_string(port), "--model", "m", "--isl",
       "8", "--osl", "4", "--num-prompts", "5", "--connect-timeout", "2", "--output", out.string()},
      dir.path() / "bench.log");
  EXPECT_EQ(r.exit.code, 1) << r.output;
  auto j = read_json(out);
  EXPECT_EQ(num(j, "completed"), 0);
  EXPECT_EQ(num(j, "failed"), 5);
  EXPECT_EQ(num(j.at("failures").as_object(), "connect"), 5);
  EXPECT_NE(r.output.find("nothing was measured: none of the 5 requests succeeded"),
            std::string::npos)
      << r.output;
}

TEST_F(BenchAgainstSim, ServerRejectionIsCountedAsHttpStatusFailure) {
  // A prompt longer than the server's context is rejected with HTTP 400 before any stream.
  SimServer sim(dir.path(), {"--max-model-len", "64"});
  ASSERT_TRUE(sim.running());
  const fs::path out = dir.path() / "rejected.json";
  auto r = run_inferbench({"bench", "--endpoint", sim.url(), "--isl", "100", "--osl", "4",
                           "--num-prompts", "3", "--output", out.string()},
                          dir.path() / "bench.log");
  EXPECT_EQ(r.exit.code, 1) << r.output;
  auto j = read_json(out);
  EXPECT_EQ(num(j.at("failures").as_object(), "http_status"), 3);
  ASSERT_FALSE(j.at("error_samples").as_array().empty());
  EXPECT_NE(std::string(j.at("error_samples").as_array()[0].as_string()).find("HTTP 400"),
            std::string::npos);
  EXPECT_TRUE(sim.running());  // the server keeps serving after rejecting requests
}

TEST_F(BenchAgainstSim, TheRooflineDefaultContextIsThePresetsAndModelsReportsIt) {
  // Agentic replay needs the model's native context: without --max-model-len the roofline
  // server serves llama-3.1-8b's 131072 tokens (its KV cache on one H200 holds them).
  SimServer sim(dir.path());
  ASSERT_TRUE(sim.running());
  auto r = http::http_get(sim.endpoint(), "/v1/models", std::chrono::seconds(5));
  ASSERT_TRUE(r.ok()) << r.error().message;
  auto v = boost::json::parse(r->body);
  EXPECT_EQ(v.at("data").at(0).at("max_model_len").as_int64(), 131072);
  EXPECT_NE(sim.log().find("context: max_model_len 131072 (llama-3.1-8b's max_context)"),
            std::string::npos)
      << sim.log();
  EXPECT_NE(sim.log().find("max_model_len=131072"), std::string::npos);
}

TEST_F(BenchAgainstSim, BadOptionsExitTwoWithTheOptionNamed) {
  auto r = run_inferbench({"bench", "--endpoint", "http://127.0.0.1:1", "--isl", "0"},
                          dir.path() / "a.log");
  EXPECT_EQ(r.exit.code, 2);
  EXPECT_NE(r.output.find("--isl"), std::string::npos) << r.output;
  r = run_inferbench({"bench", "--endpoint", "ftp://x", "--model", "m"}, dir.path() / "b.log");
  EXPECT_EQ(r.exit.code, 2);
  EXPECT_NE(r.output.find("ftp"), std::string::npos) << r.output;
  r = run_inferbench({"bench", "--api", "embeddings"}, dir.path() / "c.log");
  EXPECT_EQ(r.exit.code, 2);
  r = run_inferbench({"bench", "--no-such-flag"}, dir.path() / "d.log");
  EXPECT_EQ(r.exit.code, 2);
}

}  // namespace
}  // namespace ib::e2e
