// `inferbench gate` end to end on a git repository in a temporary folder: the verdict, its exit
// code, the pull-request comment and the JSON (docs/gate.md).
#include "e2e_util.h"
#include "govern/test_repo.h"

namespace ib::e2e {
namespace {

constexpr const char* kGateCliRecipe = R"(v-key:
  image: vllm/vllm-openai:v0.11.0
  model: org/m
  model-prefix: m
  precision: fp8
  framework: vllm
  runner: h200
  multinode: false
  serve:
    command: [vllm, serve, "{model}", --port, "{port}"]
  scenarios:
    fixed-seq-len:
    - isl: 1024
      osl: 1024
      search-space:
      - { tp: 8, conc-list: [4, 8] }
)";

std::string changelog_entry(const std::string& what) {
  return "- config-keys:\n    - v-key\n  description:\n    - \"" + what +
         "\"\n  pr-link: https://github.com/o/r/pull/1\n";
}

// The must-show case: a change that adds --hf-overrides '{"num_hidden_layers": 40}' fails check 5
// naming the line, in the terminal, the comment and the JSON; --exit-code makes it exit 1.
TEST(GateCli, AnArchitectureOverrideFailsNamingItsLine) {
  govern::TestRepo repo;
  repo.write("recipes/v.yaml", kGateCliRecipe);
  repo.write("perf-changelog.yaml", changelog_entry("Add v-key"));
  repo.commit("base");
  std::string head = kGateCliRecipe;
  const std::string from = R"(--port, "{port}"])";
  head.replace(head.find(from), from.size(),
               R"(--port, "{port}", --hf-overrides, '{"num_hidden_layers": 40}'])");
  repo.write("recipes/v.yaml", head);
  repo.write("perf-changelog.yaml",
             changelog_entry("Add v-key") + "\n" + changelog_entry("Fewer layers"));
  repo.commit("head");
  TempDir dir;
  const fs::path md = dir.path() / "gate.md";
  auto r = run_inferbench({"gate", "-C", repo.root().string(), "--base", "HEAD~1", "--head", "HEAD",
                           "--markdown", md.string(), "--exit-code"},
                          dir.path() / "gate.log");
  EXPECT_EQ(r.exit.code, 1) << r.output;
  EXPECT_NE(r.output.find("inferbench gate: FAIL"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("recipes/v.yaml:10: "), std::string::npos) << r.output;
  auto read = read_file(md);
  ASSERT_TRUE(read.ok()) << read.error().message;
  const std::string comment = *read;
  EXPECT_NE(comment.find("| 5 | No FLOP-removing overrides | Check 8 | ❌ fail |"),
            std::string::npos)
      << comment;
  EXPECT_NE(comment.find("`recipes/v.yaml:10`"), std::string::npos) << comment;

  auto j = run_inferbench(
      {"gate", "-C", repo.root().string(), "--base", "HEAD~1", "--head", "HEAD", "--json"},
      dir.path() / "gate-json.log");
  EXPECT_EQ(j.exit.code, 0) << j.output;  // without --exit-code: the gate ran
  const auto v = boost::json::parse(j.output).as_object();
  EXPECT_EQ(v.at("verdict").as_string(), "fail");
  const auto& c5 = v.at("checks").as_array().at(4).as_object();
  EXPECT_EQ(c5.at("id").as_string(), "flop-overrides");
  EXPECT_EQ(c5.at("evidence").as_array().at(0).at("line").as_int64(), 10);
  EXPECT_EQ(v.at("checks").as_array().at(1).at("verdict").as_string(), "pass");
}

TEST(GateCli, BadRevisionsAndOptionsAreUsageErrors) {
  govern::TestRepo repo;
  repo.write("perf-changelog.yaml", changelog_entry("x"));
  repo.commit("base");
  TempDir dir;
  auto r = run_inferbench({"gate", "-C", repo.root().string(), "--base", "no-such-rev"},
                          dir.path() / "a.log");
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("no-such-rev"), std::string::npos) << r.output;
  auto m = run_inferbench({"gate", "-C", repo.root().string(), "--base", "HEAD", "--main",
                           "--pr-url", "https://github.com/o/r/pull/2"},
                          dir.path() / "b.log");
  EXPECT_EQ(m.exit.code, 2) << m.output;
  EXPECT_NE(m.output.find("--main and --pr-url exclude each other"), std::string::npos);
  auto n = run_inferbench({"gate", "-C", repo.root().string()}, dir.path() / "c.log");
  EXPECT_EQ(n.exit.code, 2) << n.output;
  EXPECT_NE(n.output.find("--base"), std::string::npos) << n.output;
}

}  // namespace
}  // namespace ib::e2e
