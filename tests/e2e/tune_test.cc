// `inferbench tune` on serve-sim, where the truth is known (issue 19; stage 1 so far): a variable
// the preset never reads is dropped without a benchmark request, a knob that changes the effective
// configuration survives, a value that stops the server is reported, a value equal to the base's
// is not a candidate, and bad input is a usage error naming the option.
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

TEST(Tune, StageOneDropsWhatIsNeverReadBeforeAnyBenchmarkRequest) {
  TempDir dir;
  const fs::path recipe = dir.path() / "r.yaml";
  {
    std::ofstream f(recipe);
    f << kRecipe;
  }
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

TEST(Tune, BadInputIsAUsageError) {
  TempDir dir;
  const fs::path recipe = dir.path() / "r.yaml";
  {
    std::ofstream f(recipe);
    f << kRecipe;
  }
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--knob", "env:1X=a", "--stop-after", "verify"}, "--knob 'env:1X=a'"},
      {{"--knob", "field:image=x", "--stop-after", "verify"}, "image is an identity field"},
      {{"--knob", "env:X=a", "--key", "nope", "--stop-after", "verify"}, "no config key 'nope'"},
      {{"--knob", "arg:--max-num-seqs=8", "--stop-after", "verify"}, "no candidate"},
      {{"--knob", "env:X=a"}, "--stop-after verify"},
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
