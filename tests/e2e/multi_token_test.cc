// Several tokens an SSE event (issue 31): serve-sim --stream-interval sends them as vLLM and SGLang
// do, and bench measures tokens, not events: per-token ITL shares each gap between the tokens of
// its event, the gaps themselves are inter-chunk latency (icl), and where nothing counts the
// tokens of an event the result says so instead of printing chunk gaps as ITL.
#include <fstream>

#include "e2e_util.h"

namespace ib::e2e {
namespace {

// 33 output tokens at 4 an event: 1, then 8 events of 4.
constexpr int kOsl = 33;

boost::json::object bench_multi_token(const SimServer& sim, const TempDir& dir,
                                      const std::string& name, std::vector<std::string> extra,
                                      int osl = kOsl, int prompts = 4) {
  const fs::path out = dir.path() / (name + ".json");
  std::vector<std::string> args = {"bench",
                                   "--endpoint",
                                   sim.url(),
                                   "--isl",
                                   "16",
                                   "--osl",
                                   std::to_string(osl),
                                   "--num-prompts",
                                   std::to_string(prompts),
                                   "--concurrency",
                                   "2",
                                   "--warmups",
                                   "0",
                                   "--output",
                                   out.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = run_inferbench(args, dir.path() / (name + ".log"));
  EXPECT_EQ(r.exit.code, 0) << r.output;
  if (r.exit.code != 0) return {};
  return read_json(out);
}

TEST(MultiToken, PerTokenItlFromContinuousUsageAndNoItlWithoutCounts) {
  TempDir dir;
  SimServer sim(dir.path(), {"--timing-model", "simple", "--decode-base-ms", "2",
                             "--decode-per-running-ms", "0", "--stream-interval", "4"});
  ASSERT_TRUE(sim.running());

  const auto counted = bench_multi_token(sim, dir, "counted", {"--continuous-usage"});
  ASSERT_FALSE(counted.empty());
  EXPECT_EQ(counted.at("event_tokens").at("usage_deltas").as_int64(), 4);
  EXPECT_DOUBLE_EQ(num(counted, "mean_tokens_per_event"), static_cast<double>(kOsl) / 9);
  EXPECT_EQ(num(counted, "median_tokens_per_event"), 4);
  // Every event after the first carries 4 tokens: each gap is 4 per-token latencies.
  EXPECT_NEAR(num(counted, "median_itl_ms") * 4, num(counted, "median_icl_ms"),
              1e-9 * num(counted, "median_icl_ms"));
  EXPECT_GT(num(counted, "max_stall_ms"), 0);
  EXPECT_FALSE(counted.contains("itl_note"));

  // The same server without a count on every event: the final usage (33) is not the events (9).
  const auto uncounted = bench_multi_token(sim, dir, "uncounted", {});
  ASSERT_FALSE(uncounted.empty());
  EXPECT_EQ(uncounted.at("event_tokens").at("unknown").as_int64(), 4);
  EXPECT_TRUE(uncounted.at("median_itl_ms").is_null());
  EXPECT_TRUE(uncounted.at("mean_itl_ms").is_null());
  EXPECT_GT(num(uncounted, "median_icl_ms"), 0);
  ASSERT_TRUE(uncounted.contains("itl_note"));
  EXPECT_NE(std::string(uncounted.at("itl_note").as_string()).find("per-token ITL is not computed"),
            std::string::npos);
  // TPOT and interactivity stay as defined (tokens from the final usage).
  EXPECT_GT(num(uncounted, "median_tpot_ms"), 0);
  EXPECT_EQ(num(uncounted, "total_output_tokens"), 4 * kOsl);
}

// serve-sim speculating with K = 3 at a golden acceptance length of 2.5: the client's tokens
// per event (continuous usage, stream interval 1) and the server's /metrics (AL = 1 + accepted /
// drafts, over the point) give the same acceptance length, and it is the one asked for.
TEST(MultiToken, SpeculativeDecodingRealisesItsAcceptanceLength) {
  TempDir dir;
  SimServer sim(dir.path(),
                {"--timing-model", "simple", "--decode-base-ms", "1", "--decode-per-running-ms",
                 "0", "--spec-decode", "3", "--spec-acceptance-length", "2.5"});
  ASSERT_TRUE(sim.running());
  const auto j = bench_multi_token(sim, dir, "spec", {"--continuous-usage"}, 200, 16);
  ASSERT_FALSE(j.empty());
  EXPECT_EQ(j.at("event_tokens").at("usage_deltas").as_int64(), 16);
  // Every event but the first (the prefill's one token) is one decode step.
  const double events_per_request = 200.0 / num(j, "mean_tokens_per_event");
  const double client_al = 199.0 / (events_per_request - 1);
  EXPECT_NEAR(client_al, 2.5, 0.25);
  const auto& server = j.at("telemetry").at("server").as_object();
  ASSERT_TRUE(server.contains("spec_acceptance_length")) << boost::json::serialize(server);
  EXPECT_NEAR(server.at("spec_acceptance_length").to_number<double>(), client_al, 0.05);
  // Per-token ITL is the step shared by its tokens: below the gap between events. Means, not
  // medians: a slow client (ASan) reads several events at once, and most gaps are then 0.
  EXPECT_LT(num(j, "mean_itl_ms"), num(j, "mean_icl_ms"));
}

// The bundled spec-decoding example (an InferenceX-shaped `mtp` row on serve-sim), swept with
// per-event counts: every point stored with per-token ITL, its tokens per event, and the server's
// acceptance length from /metrics. The recipe's serve command gets --time-scale 20 (a copy of
// the example), so the two points take a second.
TEST(MultiToken, TheBundledMtpRecipeSweepsWithPerTokenItl) {
  TempDir dir;
  auto text = read_file(fs::path(INFERBENCH_SOURCE_DIR) / "examples/recipes/serve-sim-mtp.yaml");
  ASSERT_TRUE(text) << text.error().message;
  const std::string from = "--spec-draft-ms, \"0.3\",";
  const size_t at = text->find(from);
  ASSERT_NE(at, std::string::npos);
  text->insert(at + from.size(), " --time-scale, \"20\",");
  const fs::path recipe = dir.path() / "mtp.yaml";
  std::ofstream(recipe) << *text;
  auto r = run_inferbench({"sweep", recipe.string(), "--runs-dir", (dir.path() / "runs").string(),
                           "--continuous-usage", "--json"},
                          dir.path() / "sweep.log");
  ASSERT_EQ(r.exit.code, 0) << r.output;
  int points = 0;
  for (const auto& f : fs::recursive_directory_iterator(dir.path() / "runs")) {
    const std::string name = f.path().filename().string();
    if (!name.starts_with("conc_") || f.path().extension() != ".json") continue;
    ++points;
    const auto j = read_json(f.path());
    EXPECT_EQ(j.at("event_tokens").at("unknown").as_int64(), 0) << name;
    EXPECT_GT(num(j, "mean_tokens_per_event"), 1.5) << name;
    // Means: under ASan the client reads events in bursts, and the median gap can be 0.
    EXPECT_LT(num(j, "mean_itl_ms"), num(j, "mean_icl_ms")) << name;
    EXPECT_NEAR(j.at("telemetry").at("server").at("spec_acceptance_length").to_number<double>(),
                2.5, 0.25)
        << name;
  }
  EXPECT_EQ(points, 2);
}

}  // namespace
}  // namespace ib::e2e
