// The winner's outputs (tune/winner.h): the recipe file loads back to the same entry, the diff
// names the change, and the changelog entry passes `inferbench changelog check`.
#include "tune/winner.h"

#include <gtest/gtest.h>

#include "govern/changelog.h"
#include "recipe/fingerprint.h"
#include "recipe/matrix.h"
#include "tune/knob.h"
#include "tune/test_recipe.h"

namespace ib::tune {
namespace {

using testing::kRecipe;

TEST(Winner, RecipeFileLoadsBackToTheWinningRow) {
  auto entries = recipe::load_master_texts({{"r.yaml", kRecipe}});
  ASSERT_TRUE(entries.ok()) << entries.error().message;
  const auto& base = (*entries)[0];
  auto knob = parse_knob("env:SIM_DISABLE_CUSTOM_ALL_REDUCE=0");
  ASSERT_TRUE(knob.ok());
  auto set = single_candidates(base, {*knob});
  ASSERT_TRUE(set.ok());
  ASSERT_EQ(set->candidates.size(), 1u);
  const auto& c = set->candidates[0];
  const std::string yaml = winner_recipe_yaml("k", c.entry);
  auto back = recipe::load_master_texts({{"winner.yaml", yaml}});
  ASSERT_TRUE(back.ok()) << back.error().message << "\n" << yaml;
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].key, "k");
  EXPECT_EQ(recipe::canonical_json((*back)[0].raw), recipe::canonical_json(c.entry.raw));
  auto rows = recipe::expand({(*back)[0]}, nullptr);
  recipe::ConfigEntry renamed = c.entry;
  renamed.key = "k";
  auto want = recipe::expand({renamed}, nullptr);
  ASSERT_EQ(rows.size(), want.size());
  EXPECT_EQ(rows[0].fingerprint, want[0].fingerprint);
  EXPECT_NE(rows[0].fingerprint, recipe::expand({base}, nullptr)[0].fingerprint);

  const auto diff = recipe_diff(base, c.entry);
  ASSERT_EQ(diff.size(), 1u);
  EXPECT_EQ(diff[0].path, "serve.env.SIM_DISABLE_CUSTOM_ALL_REDUCE");
}

TEST(Winner, ChangelogEntryPassesTheCheck) {
  const std::string base =
      "- config-keys:\n    - k\n  description:\n    - \"First\"\n  pr-link: "
      "https://github.com/o/r/pull/1\n";
  const std::string entry =
      changelog_entry("k", {"env SIM_DISABLE_CUSTOM_ALL_REDUCE=0 (inferbench tune)",
                            "tput_per_gpu +12.3% [97.5% CI +10.1, +14.6] \"quoted\" \\ back"});
  govern::ChangelogContext ctx;
  ctx.config_keys = std::vector<std::string>{"k"};
  ctx.affected_keys = std::vector<std::string>{"k"};
  const auto report = govern::check_changelog(base, base + entry, ctx);
  std::string why;
  for (const auto& v : report.violations) why += v.message + "\n";
  EXPECT_TRUE(report.ok()) << why << entry;
  ASSERT_EQ(report.additions.size(), 1u);
  ASSERT_EQ(report.additions[0].description.size(), 2u);
  EXPECT_EQ(report.additions[0].description[1],
            "tput_per_gpu +12.3% [97.5% CI +10.1, +14.6] \"quoted\" \\ back");
}

}  // namespace
}  // namespace ib::tune
