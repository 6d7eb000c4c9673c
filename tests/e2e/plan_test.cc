// `inferbench plan`: the command line over the recipe library, on real InferenceX configs and on
// bad input.
#include <map>

#include "e2e_util.h"

namespace ib::e2e {
namespace {

const std::string kData = std::string(INFERBENCH_SOURCE_DIR) + "/../shared/data/inferencex";
const std::string kFixtures = std::string(INFERBENCH_SOURCE_DIR) + "/tests/fixtures/recipes";

TEST(Plan, RealConfigsAsJsonWithKeyGlob) {
  TempDir dir;
  const fs::path log = dir.path() / "plan.log";
  auto r = run_inferbench({"plan", kData + "/amd-master.yaml", kData + "/nvidia-master.yaml",
                           "--runners", kData + "/runners.yaml", "--keys", "dsr1-fp4-mi355x-*",
                           "--json"},
                          log);
  ASSERT_EQ(r.exit.code, 0) << r.output.substr(0, 2000);
  boost::system::error_code ec;
  auto v = boost::json::parse(r.output, ec);
  ASSERT_FALSE(ec) << r.output.substr(0, 500);
  const boost::json::array* rows = v.is_array() ? &v.as_array() : nullptr;
  if (rows == nullptr && v.is_object() && v.as_object().contains("rows")) {
    rows = &v.as_object().at("rows").as_array();
  }
  ASSERT_NE(rows, nullptr);
  ASSERT_FALSE(rows->empty());
  for (const auto& row : *rows) {
    const auto& o = row.as_object();
    const std::string key(o.at("config-key").as_string());
    EXPECT_EQ(key.rfind("dsr1-fp4-mi355x-", 0), 0u) << key;
    EXPECT_EQ(std::string(o.at("recipe-fingerprint").as_string()).size(), 64u);
  }
}

TEST(Plan, BadRecipeExitsTwoNamingFileLineAndField) {
  TempDir dir;
  auto r = run_inferbench({"plan", kFixtures + "/bad/topology.yaml"}, dir.path() / "bad.log");
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("topology.yaml:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("search-space["), std::string::npos) << r.output;
}

TEST(Plan, BundledExampleRecipesAreValidAndExpandAsDocumented) {
  TempDir dir;
  const std::string ex = std::string(INFERBENCH_SOURCE_DIR) + "/examples/recipes/";
  auto r = run_inferbench({"plan", ex + "serve-sim.yaml", ex + "vllm-h200-llama70b.yaml",
                           ex + "sglang-h200-dsr1.yaml", ex + "sglang-mi355x-minimax-tp4.yaml",
                           "--json"},
                          dir.path() / "plan.log");
  ASSERT_EQ(r.exit.code, 0) << r.output.substr(0, 2000);
  auto v = boost::json::parse(r.output);
  const boost::json::array& rows =
      v.is_array() ? v.as_array() : v.as_object().at("rows").as_array();
  std::map<std::string, int> per_key;
  for (const auto& row : rows) ++per_key[std::string(row.as_object().at("config-key").as_string())];
  // Concurrency doubling with the end clamped and included (4..64 → 5 points, 64..512 → 4, ...).
  EXPECT_EQ(per_key["llama8b-bf16-h200-servesim"], 4);
  EXPECT_EQ(per_key["llama70b-fp8-h200-vllm"], 6 + 7 + 5);
  EXPECT_EQ(per_key["dsr1-fp8-h200-sglang"], 5 + 4 + 4);
  EXPECT_EQ(per_key["minimaxm3-fp4-mi355x-sglang"], 5 + 5);
  // The serve block travels with each row, so an environment change changes the fingerprint.
  for (const auto& row : rows) EXPECT_TRUE(row.as_object().contains("serve"));
}

TEST(Plan, NoFilesIsAUsageError) {
  TempDir dir;
  auto r = run_inferbench({"plan"}, dir.path() / "none.log");
  EXPECT_EQ(r.exit.code, 2) << r.output;
}

}  // namespace
}  // namespace ib::e2e
