#include "govern/gate.h"

#include <gtest/gtest.h>

#include "govern/test_repo.h"

namespace ib::govern {
namespace {

const std::string kGateRecipe = kVKeyRecipe;
const std::string kGateEntry = v_key_entry();

std::string edited(std::string s, const std::string& from, const std::string& to) {
  const auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) s.replace(pos, from.size(), to);
  return s;
}

class GateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo.write("recipes/v.yaml", kGateRecipe);
    repo.write("perf-changelog.yaml", kGateEntry);
    repo.commit("base");
  }
  GateReport gate() {
    auto base = TreeView::open(repo.root(), "HEAD");
    auto head = TreeView::open(repo.root(), "");
    EXPECT_TRUE(base.ok() && head.ok());
    GateOptions o;
    o.changelog.changed.recipe_paths = {"recipes"};
    auto r = run_gate(*base, *head, o);
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? *r : GateReport{};
  }
  static const GateCheck& check(const GateReport& r, int n) { return r.checks.at(n - 1); }
  TestRepo repo;
};

// The must-show case: an architecture override in a recipe fails check 5 naming its line.
TEST_F(GateTest, AnHfOverrideOfTheLayerCountFailsCheckFiveNamingTheLine) {
  repo.write("recipes/v.yaml", edited(kGateRecipe, R"(--port, "{port}"])",
                                      "--port, \"{port}\",\n              --hf-overrides, "
                                      "'{\"num_hidden_layers\": 40}']"));
  repo.write("perf-changelog.yaml", kGateEntry + "\n" + kGateEntry);
  const auto r = gate();
  ASSERT_EQ(r.checks.size(), 10u);
  const auto& c = check(r, 5);
  EXPECT_EQ(c.id, "flop-overrides");
  EXPECT_EQ(c.verdict, GateVerdict::kFail);
  ASSERT_EQ(c.evidence.size(), 1u);
  EXPECT_EQ(c.evidence[0].file, "recipes/v.yaml");
  EXPECT_EQ(c.evidence[0].line, 11);
  EXPECT_NE(c.evidence[0].text.find("num_hidden_layers"), std::string::npos);
  EXPECT_EQ(r.overall(), GateVerdict::kFail);
  EXPECT_EQ(r.keys, std::vector<std::string>{"v-key"});
  // The changelog covers the key: check 2 passes.
  EXPECT_EQ(check(r, 2).verdict, GateVerdict::kPass) << check(r, 2).summary;
  const std::string md = r.to_markdown();
  EXPECT_NE(md.find("❌ fail"), std::string::npos) << md;
  EXPECT_NE(md.find("`recipes/v.yaml:11`"), std::string::npos) << md;
}

TEST_F(GateTest, EachArchitectureKnobIsFoundAndProseIsNot) {
  std::vector<FileDiff> diff(2);
  diff[0].path = "benchmarks/run.sh";
  const std::vector<std::string> bad = {
      "vllm serve m --hf_overrides '{}'",
      "python -m sglang.launch_server --json-model-override-args '{\"x\": 1}'",
      "  num_local_experts: 64",
      "export SKIP=1 --skip-indexer",
      "sed -i 's/61/40/' /models/m/config.json",
      "jq '.n_routed_experts=64' config.json > /tmp/c && mv /tmp/c config.json",
  };
  for (size_t i = 0; i < bad.size(); ++i) diff[0].added_lines.push_back({int(i) + 1, bad[i]});
  diff[0].added_lines.push_back({99, "vllm serve m --max-num-seqs 256"});
  diff[1].path = "docs/notes.md";
  diff[1].added_lines.push_back({1, "never use --hf-overrides num_hidden_layers"});
  const auto c = check_flop_overrides(diff);
  EXPECT_EQ(c.verdict, GateVerdict::kFail);
  ASSERT_EQ(c.evidence.size(), bad.size());
  for (size_t i = 0; i < bad.size(); ++i) EXPECT_EQ(c.evidence[i].line, int(i) + 1) << bad[i];
  // A megabyte-long line (minified JSON) is searched without exhausting the stack, to its end.
  std::string long_line(1 << 20, 'x');
  long_line += " \"num_hidden_layers\": 40";
  diff[0].added_lines.push_back({100, long_line});
  EXPECT_EQ(check_flop_overrides(diff).evidence.back().line, 100);
  // A window that starts inside a word is not the start of one.
  std::vector<FileDiff> patch(1);
  patch[0].path = "run.sh";
  patch[0].added_lines.push_back({1, std::string(1536, 'x') + "patch -p1 < a"});
  EXPECT_TRUE(check_engine_patches(patch, *TreeView::open(repo.root(), "")).evidence.empty());
  // A flagged line is shown without its secrets or control characters.
  std::vector<FileDiff> secret(1);
  secret[0].path = "run.sh";
  secret[0].added_lines.push_back(
      {1, "vllm serve m --hf-overrides '{}' --api-key sk-live-1234567890abcdef \x1b[2J"});
  const auto shown = check_flop_overrides(secret).evidence.at(0).text;
  EXPECT_EQ(shown.find("sk-live-1234567890abcdef"), std::string::npos) << shown;
  EXPECT_EQ(shown.find('\x1b'), std::string::npos) << shown;
  EXPECT_NE(shown.find("--hf-overrides"), std::string::npos) << shown;
  diff[0].added_lines.resize(0);
  diff[0].added_lines.push_back({1, "vllm serve m --max-num-seqs 256"});
  EXPECT_EQ(check_flop_overrides(diff).verdict, GateVerdict::kPass);
}

TEST_F(GateTest, EnginePatchesFailUnlessAWaiverNamesThem) {
  repo.write("benchmarks/run.sh",
             "#!/bin/sh\nset -e\ncd $(python3 -c 'import importlib.util; "
             "print(importlib.util.find_spec(\"vllm\").submodule_search_locations[0])')\n"
             "git apply /work/fix.patch\nvllm serve m\n");
  repo.write("benchmarks/fix.patch", "--- a/x.py\n+++ b/x.py\n");
  repo.write("perf-changelog.yaml", kGateEntry + "\n" + kGateEntry);
  auto r = gate();
  const auto& c = check(r, 7);
  EXPECT_EQ(c.id, "engine-patches");
  EXPECT_EQ(c.verdict, GateVerdict::kFail) << c.summary;
  ASSERT_EQ(c.evidence.size(), 3u);
  EXPECT_EQ(c.evidence[0].file, "benchmarks/fix.patch");
  EXPECT_EQ(c.evidence[1].line, 3);  // find_spec
  EXPECT_EQ(c.evidence[2].line, 4);  // git apply

  repo.write("docs/waiver/1.md",
             "# Waiver\nbenchmarks/run.sh and benchmarks/fix.patch patch vLLM's scheduler until "
             "vllm-project/vllm#1 ships.\n");
  r = gate();
  EXPECT_EQ(check(r, 7).verdict, GateVerdict::kPass) << check(r, 7).summary;
  for (const auto& e : check(r, 7).evidence) EXPECT_TRUE(e.waived) << e.where();
}

TEST_F(GateTest, AnUncoveredKeyFailsTheChangelogCheckAndUndecidedChecksAreNeverAPass) {
  repo.write("recipes/v.yaml", edited(kGateRecipe, "conc-list: [4, 8]", "conc-list: [4, 8, 16]"));
  const auto r = gate();
  EXPECT_EQ(check(r, 2).verdict, GateVerdict::kFail);
  ASSERT_FALSE(check(r, 2).evidence.empty());
  EXPECT_EQ(check(r, 2).evidence[0].text, "missing-entry") << check(r, 2).evidence[0].what;
  EXPECT_EQ(check(r, 5).verdict, GateVerdict::kPass);
  EXPECT_EQ(check(r, 7).verdict, GateVerdict::kPass);
  EXPECT_EQ(check(r, 8).verdict, GateVerdict::kNotApplicable);  // no speculation anywhere
  EXPECT_EQ(check(r, 9).verdict, GateVerdict::kNotApplicable);  // no append-only entry
  // 4: the repository keeps no policy; the others read runs, and no database was given.
  for (int n : {1, 3, 4, 6, 10}) {
    EXPECT_EQ(check(r, n).verdict, GateVerdict::kCannotDecide) << n;
  }
  EXPECT_NE(check(r, 10).summary.find("--db"), std::string::npos) << check(r, 10).summary;
  // Covered now: nothing fails, and the checks decided by hand leave the gate undecided.
  repo.write("perf-changelog.yaml", kGateEntry + "\n" + kGateEntry);
  EXPECT_EQ(gate().overall(), GateVerdict::kCannotDecide);
}

// Check 9 from the recipes: an append-only change may add points, never change one of base's.
TEST_F(GateTest, AnAppendOnlyChangeKeepsEveryPointOfBase) {
  const std::string append_only = edited(kGateEntry, "pull/1\n", "pull/1\n  append-only: true\n");
  repo.write("perf-changelog.yaml", kGateEntry + "\n" + append_only);
  // New concurrencies and a new parallelism: every point of base is kept.
  repo.write("recipes/v.yaml", edited(kGateRecipe, "- { tp: 8, conc-list: [4, 8] }",
                                      "- { tp: 8, conc-list: [4, 8, 16] }\n"
                                      "      - { tp: 4, conc-list: [4] }"));
  auto r = gate();
  EXPECT_EQ(check(r, 9).verdict, GateVerdict::kPass) << check(r, 9).summary;
  EXPECT_NE(check(r, 9).summary.find("all 2 points"), std::string::npos) << check(r, 9).summary;
  // Base's tp 8 points dropped for tp 4: each is named as gone.
  repo.write("recipes/v.yaml", edited(kGateRecipe, "tp: 8", "tp: 4"));
  r = gate();
  ASSERT_EQ(check(r, 9).verdict, GateVerdict::kFail);
  ASSERT_EQ(check(r, 9).evidence.size(), 2u);
  EXPECT_EQ(check(r, 9).evidence[0].text, "m_1k1k tp 8 conc 4");
  EXPECT_NE(check(r, 9).evidence[0].what.find("gone at head"), std::string::npos);
  // Not append-only: check 9 does not apply.
  repo.write("perf-changelog.yaml", kGateEntry + "\n" + kGateEntry);
  EXPECT_EQ(check(gate(), 9).verdict, GateVerdict::kNotApplicable);
}

TEST_F(GateTest, ImagesAndDeprecationsFromThePolicyTheRepositoryKeeps) {
  repo.write("recipes/v.yaml", edited(kGateRecipe, "vllm-openai:v0.11.0", "my-fork:latest"));
  repo.write("perf-changelog.yaml", kGateEntry + "\n" + kGateEntry);
  // No policy: cannot decide, never a pass.
  EXPECT_EQ(check(gate(), 4).verdict, GateVerdict::kCannotDecide);
  repo.write("gate-policy.yaml",
             "upstream-images:\n  vllm: [\"vllm/vllm-openai:v*\"]\n"
             "deprecated:\n  models:\n  - { model: \"org/*\", from: 2099-01-01 }\n"
             "  scenarios:\n  - { scenario: 1024/1024, from: 2026-01-01, why: retired }\n");
  auto r = gate();
  const auto& c = check(r, 4);
  EXPECT_EQ(c.verdict, GateVerdict::kFail);
  ASSERT_EQ(c.evidence.size(), 2u);  // the image, the scenario (the model is not yet deprecated)
  EXPECT_EQ(c.evidence[0].text, "image: vllm/my-fork:latest");
  EXPECT_EQ(c.evidence[0].line, 1);
  EXPECT_NE(c.evidence[0].what.find("gate-policy.yaml:2"), std::string::npos) << c.evidence[0].what;
  EXPECT_EQ(c.evidence[1].text, "scenario: 1024/1024");
  EXPECT_NE(c.evidence[1].what.find("retired"), std::string::npos);
  // The upstream image, a scenario not deprecated: pass.
  repo.write("recipes/v.yaml",
             edited(edited(kGateRecipe, "v0.11.0", "v0.12.0"), "osl: 1024", "osl: 2048"));
  EXPECT_EQ(check(gate(), 4).verdict, GateVerdict::kPass) << check(gate(), 4).summary;
  // A framework the policy does not list: cannot decide.
  repo.write("gate-policy.yaml", "upstream-images:\n  sglang: [\"lmsysorg/sglang:v*\"]\n");
  EXPECT_EQ(check(gate(), 4).verdict, GateVerdict::kCannotDecide);
  // A malformed policy is the gate's error, naming the line.
  repo.write("gate-policy.yaml", "upstream-images: { vllm: [] }\n");
  auto base = TreeView::open(repo.root(), "HEAD");
  auto head = TreeView::open(repo.root(), "");
  GateOptions o;
  o.changelog.changed.recipe_paths = {"recipes"};
  auto bad = run_gate(*base, *head, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("gate-policy.yaml:1:"), std::string::npos)
      << bad.error().message;
}

TEST_F(GateTest, AgenticSpecDecodingPinsTheGoldenAcceptanceAndOnlyItDoes) {
  const std::string agentic = edited(edited(kGateRecipe, "runner: h200", "runner: cluster:h200"),
                                     "    fixed-seq-len:\n    - isl: 1024\n      osl: 1024\n"
                                     "      search-space:\n      - { tp: 8, conc-list: [4, 8] }\n",
                                     "    agentic-coding:\n    - search-space:\n"
                                     "      - { tp: 8, spec-decoding: mtp, kv-offloading: none, "
                                     "conc-list: [4] }\n");
  repo.write("recipes/v.yaml", agentic);
  repo.write("perf-changelog.yaml", kGateEntry + "\n" + kGateEntry);
  auto r = gate();
  EXPECT_EQ(check(r, 8).verdict, GateVerdict::kFail) << check(r, 8).summary;
  ASSERT_EQ(check(r, 8).evidence.size(), 1u);
  EXPECT_EQ(check(r, 8).evidence[0].line, 1);
  // Pinned: the recipe's half holds; the realised length needs the runs.
  repo.write("recipes/v.yaml", agentic + "  expect:\n    spec-acceptance: { al: 2.5 }\n");
  EXPECT_EQ(check(gate(), 8).verdict, GateVerdict::kCannotDecide);
  // A synthetic acceptance on a key with no agentic speculation fails, naming the knob.
  repo.write("recipes/v.yaml", edited(kGateRecipe, R"(--port, "{port}"])",
                                      R"(--port, "{port}"]
    env: { SGLANG_SIMULATE_ACC_LEN: "2.5" })"));
  r = gate();
  EXPECT_EQ(check(r, 8).verdict, GateVerdict::kFail);
  ASSERT_EQ(check(r, 8).evidence.size(), 1u);
  EXPECT_NE(check(r, 8).evidence[0].text.find("SGLANG_SIMULATE_ACC_LEN"), std::string::npos);
}

TEST(GateMarkdown, CellsCannotBreakTheTable) {
  GateReport r;
  r.base = "main (abc)";
  r.head = "working tree";
  GateCheck c;
  c.number = 5;
  c.title = "t";
  c.verdict = GateVerdict::kFail;
  c.summary = "a | b\nc";
  c.evidence.push_back({"f.yaml", 3, "x | `y`", "why", false});
  r.checks.push_back(c);
  const std::string md = r.to_markdown();
  EXPECT_NE(md.find("a \\| b c"), std::string::npos) << md;
  EXPECT_NE(md.find("`` x \\| `y` ``"), std::string::npos) << md;
  const auto j = r.to_json();
  EXPECT_EQ(j.at("verdict").as_string(), "fail");
}

}  // namespace
}  // namespace ib::govern
