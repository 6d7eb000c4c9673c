// `inferbench plan`: the command line over the recipe library, on real InferenceX configs and on
// bad input.
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

TEST(Plan, NoFilesIsAUsageError) {
  TempDir dir;
  auto r = run_inferbench({"plan"}, dir.path() / "none.log");
  EXPECT_EQ(r.exit.code, 2) << r.output;
}

}  // namespace
}  // namespace ib::e2e
