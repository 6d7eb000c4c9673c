// `inferbench gate` end to end on a git repository in a temporary folder: the verdict, its exit
// code, the pull-request comment and the JSON (docs/gate.md).
#include "e2e_util.h"
#include "govern/test_repo.h"

namespace ib::e2e {
namespace {

// The must-show case: a change that adds --hf-overrides '{"num_hidden_layers": 40}' fails check 5
// naming the line, in the terminal, the comment and the JSON; --exit-code makes it exit 1.
TEST(GateCli, AnArchitectureOverrideFailsNamingItsLine) {
  govern::TestRepo repo;
  repo.write("recipes/v.yaml", govern::kVKeyRecipe);
  repo.write("perf-changelog.yaml", govern::v_key_entry("Add v-key"));
  repo.commit("base");
  std::string head = govern::kVKeyRecipe;
  const std::string from = R"(--port, "{port}"])";
  head.replace(head.find(from), from.size(),
               R"(--port, "{port}", --hf-overrides, '{"num_hidden_layers": 40}'])");
  repo.write("recipes/v.yaml", head);
  repo.write("perf-changelog.yaml",
             govern::v_key_entry("Add v-key") + "\n" + govern::v_key_entry("Fewer layers"));
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

  // A policy named on the command line must exist; the default one may be absent.
  auto p = run_inferbench({"gate", "-C", repo.root().string(), "--base", "HEAD~1", "--head", "HEAD",
                           "--policy", "policies/gate.yaml"},
                          dir.path() / "gate-policy.log");
  EXPECT_EQ(p.exit.code, 2) << p.output;
  EXPECT_NE(p.output.find("--policy: policies/gate.yaml does not exist at HEAD"), std::string::npos)
      << p.output;
}

TEST(GateCli, BadRevisionsAndOptionsAreUsageErrors) {
  govern::TestRepo repo;
  repo.write("perf-changelog.yaml", govern::v_key_entry("x"));
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
