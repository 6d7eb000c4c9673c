// `inferbench tune` on serve-sim, where the truth is known (issue 19; stage 1 so far): a variable
// the preset never reads is dropped without a benchmark request, a knob that changes the effective
// configuration survives, a value that stops the server is reported, a value equal to the base's
// is not a candidate, and bad input is a usage error naming the option.
#include <cmath>
#include <fstream>

#include "e2e_util.h"

namespace ib::e2e {
namespace {

const char* kRecipe =
    "llama8b-tp2-servesim:\n"
    "  image: inferbench/serve-sim\n"
    "  model: meta-llama/Llama-3.1-8B-Instruct\n"
    "  model-prefix: llama8b\n"
    "  precision: bf16\n"
    "  framework: serve-sim\n"
    "  runner: local\n"
    "  multinode: false\n"
    "  serve:\n"
    "    command: [inferbench, serve-sim, --hardware, H200, --model-preset, llama-3.1-8b, --tp,\n"
    "              \"{tp}\", --max-num-seqs, \"8\", --model, \"{served-model}\", --host,\n"
    "              \"{host}\", --port, \"{port}\"]\n"
    "    env: { SIM_DISABLE_CUSTOM_ALL_REDUCE: \"1\" }\n"
    "  scenarios:\n"
    "    fixed-seq-len:\n"
    "    - { isl: 512, osl: 64, search-space: [{ tp: 2, conc-list: [8, 32] }] }\n";

fs::path write_recipe(const TempDir& dir) {
  const fs::path recipe = dir.path() / "r.yaml";
  std::ofstream(recipe) << kRecipe;
  return recipe;
}

TEST(Tune, StageOneDropsWhatIsNeverReadBeforeAnyBenchmarkRequest) {
  TempDir dir;
  const fs::path recipe = write_recipe(dir);
  const fs::path work = dir.path() / "tune";
  auto r = run_inferbench(
      {"tune", recipe.string(), "--knob", "env:SIM_DISABLE_CUSTOM_ALL_REDUCE=0", "--knob",
       "env:SIM_MINIMAX_ALLOW_CUSTOM_AR=1", "--knob", "arg:--max-num-seqs=8,32,0", "--stop-after",
       "verify", "--work-dir", work.string(), "--json"},
      dir.path() / "tune.log");
  ASSERT_EQ(r.exit.code, 0) << r.output;
  const auto j = read_json(work / "report.json");
  std::map<std::string, std::string> outcome;
  for (const auto& c : j.at("candidates").as_array()) {
    const auto& o = c.as_object();
    outcome[std::string(o.at("change").as_string())] =
        std::string(o.at("verify").as_object().at("outcome").as_string());
  }
  ASSERT_EQ(outcome.size(), 4u) << boost::json::serialize(j);
  // Read at tp 2 on H200: the all-reduce changes.
  EXPECT_EQ(outcome["env SIM_DISABLE_CUSTOM_ALL_REDUCE=0"], "survives");
  // The variable of the pull request this product grew from: never read by this preset.
  EXPECT_EQ(outcome["env SIM_MINIMAX_ALLOW_CUSTOM_AR=1"], "no-op");
  EXPECT_EQ(outcome["arg --max-num-seqs=32"], "survives");
  EXPECT_EQ(outcome["arg --max-num-seqs=0"], "failed to start");
  const std::string text = boost::json::serialize(j);
  EXPECT_NE(text.find("must be an integer from 1"), std::string::npos) << text;
  // --max-num-seqs=8 is the base's: a note, not a candidate.
  ASSERT_EQ(j.at("notes").as_array().size(), 1u);
  // No benchmark request was sent; what a sweep of the no-op would have sent is counted.
  const auto& cost = j.at("cost").as_object();
  EXPECT_EQ(cost.at("benchmark_requests_sent").as_int64(), 0);
  // Two points (conc 8 and 32), InferenceX's counts: 10 x conc measured + 2 x conc warmups.
  EXPECT_EQ(cost.at("requests_per_candidate").as_int64(), (80 + 16) + (320 + 64));
  EXPECT_EQ(cost.at("requests_saved").as_int64(), (80 + 16) + (320 + 64));
  EXPECT_EQ(cost.at("servers_started").as_int64(), 5);
  // The never-read evidence, and the identity the markdown states.
  auto md_file = read_file(work / "report.md");
  ASSERT_TRUE(md_file) << md_file.error().message;
  const std::string md = *md_file;
  EXPECT_NE(md.find("never read (no process of the base or head server read it)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("image `inferbench/serve-sim`, model `meta-llama/Llama-3.1-8B-Instruct`"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("Not run: screen, confirm"), std::string::npos);
}

// Stage 2 on serve-sim's roofline model, where the effects are known: the custom all-reduce
// (about +14% throughput at tp 2) and a larger batch (about +140%) advance; turning prefix caching
// off changes the effective configuration but not the timing of random prompts, so it is screened
// out; the never-read variable is not measured at all.
TEST(Tune, StageTwoScreensOutWhatHasNoMeasurableEffect) {
  TempDir dir;
  // In real time: a sanitizer build's slower simulator then still shows the effects.
  const fs::path recipe = write_recipe(dir);
  const fs::path work = dir.path() / "tune";
  auto r = run_inferbench(
      {"tune", recipe.string(), "--knob", "env:SIM_DISABLE_CUSTOM_ALL_REDUCE=0", "--knob",
       "env:SIM_MINIMAX_ALLOW_CUSTOM_AR=1", "--knob", "arg:--max-num-seqs=32", "--knob",
       "arg:--no-enable-prefix-caching", "--stop-after", "screen", "--conc", "16",
       "--screen-passes", "2", "--min-effect", "5", "--work-dir", work.string(), "--runs-dir",
       (dir.path() / "runs").string()},
      dir.path() / "tune.log", std::chrono::seconds(600));
  ASSERT_EQ(r.exit.code, 0) << r.output;
  const auto j = read_json(work / "report.json");
  std::map<std::string, std::string> change_of;
  for (const auto& c : j.at("candidates").as_array()) {
    change_of[std::string(c.at("id").as_string())] = std::string(c.at("change").as_string());
  }
  const auto& screen = j.at("screen").as_object();
  std::map<std::string, boost::json::object> result;
  for (const auto& c : screen.at("candidates").as_array()) {
    result[change_of[std::string(c.at("id").as_string())]] = c.as_object();
  }
  // The no-op was dropped at stage 1: never screened, so never measured.
  EXPECT_EQ(result.count("env SIM_MINIMAX_ALLOW_CUSTOM_AR=1"), 0u);
  ASSERT_EQ(result.size(), 3u) << boost::json::serialize(screen);
  const auto& ar = result["env SIM_DISABLE_CUSTOM_ALL_REDUCE=0"];
  EXPECT_EQ(ar.at("decision").as_string(), "advances") << boost::json::serialize(ar);
  EXPECT_GT(ar.at("delta_pct").to_number<double>(), 5);
  const auto& batch = result["arg --max-num-seqs=32"];
  EXPECT_EQ(batch.at("decision").as_string(), "advances");
  EXPECT_GT(batch.at("delta_pct").to_number<double>(), 50);
  const auto& prefix = result["arg --no-enable-prefix-caching added"];
  EXPECT_NE(prefix.at("decision").as_string(), "advances") << boost::json::serialize(prefix);
  EXPECT_LT(std::abs(prefix.at("delta_pct").to_number<double>()), 5);
  // Rounds: 3 candidates over 2 passes, then the best 2 over 4; a baseline first in every pass
  // and one closing each round.
  EXPECT_EQ(screen.at("points").as_int64(), 2 * 4 + 1 + 4 * 3 + 1);
  EXPECT_EQ(screen.at("baselines").as_array().size(), 2u + 1 + 4 + 1);
  EXPECT_EQ(j.at("cost").as_object().at("benchmark_requests_sent").as_int64(),
            screen.at("requests").as_int64());
  EXPECT_GT(screen.at("requests").as_int64(), 0);
  auto md = read_file(work / "report.md");
  ASSERT_TRUE(md);
  EXPECT_NE(md->find("#### Stage 2: screen"), std::string::npos) << *md;
  EXPECT_NE(md->find("Not run: confirm"), std::string::npos);
}

TEST(Tune, BadInputIsAUsageError) {
  TempDir dir;
  const fs::path recipe = write_recipe(dir);
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--knob", "env:1X=a", "--stop-after", "verify"}, "--knob 'env:1X=a'"},
      {{"--knob", "field:image=x", "--stop-after", "verify"}, "image is an identity field"},
      {{"--knob", "env:X=a", "--key", "nope", "--stop-after", "verify"}, "no config key 'nope'"},
      {{"--knob", "arg:--max-num-seqs=8", "--stop-after", "verify"}, "no candidate"},
      {{"--knob", "env:X=a"}, "--stop-after verify or --stop-after screen"},
      {{"--knob", "env:X=a", "--stop-after", "screen", "--objective", "speed"},
       "--objective: 'speed' is not a headline metric"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"tune", recipe.string()};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto r = run_inferbench(args, dir.path() / "bad.log");
    EXPECT_EQ(r.exit.code, 2) << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace ib::e2e
