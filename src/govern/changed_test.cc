#include "govern/changed.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "govern/test_repo.h"

namespace ib::govern {
namespace {

namespace fs = std::filesystem;

constexpr const char* kRecipe = R"(# shared defaults
.sglang: &sg
  image: lmsysorg/sglang:v0.5.12
  model: org/m
  precision: fp8
  framework: sglang
  runner: h200
  multinode: false
  serve:
    command: [python3, -m, sglang.launch_server, --port, "{port}", --config, scripts/tune.json]
    env: { SGLANG_A: "1" }
a-key:
  <<: *sg
  model-prefix: a
  scenarios:
    fixed-seq-len:
    - isl: 1024
      osl: 1024
      search-space:
      - { tp: 8, conc-list: [4, 8] }
b-key:
  <<: *sg
  model-prefix: b
  serve:
    command: [python3, -m, sglang.launch_server, --port, "{port}"]
    env: { SGLANG_A: "1" }
  scenarios:
    fixed-seq-len:
    - isl: 1024
      osl: 1024
      search-space:
      - { tp: 4, conc-list: [4, 8] }
)";

std::string replace(std::string s, const std::string& from, const std::string& to) {
  auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) s.replace(pos, from.size(), to);
  return s;
}

ChangedReport changed(TestRepo& repo, const std::string& head_rev = "") {
  auto base = TreeView::open(repo.root(), "HEAD");
  EXPECT_TRUE(base.ok()) << base.error().message;
  auto head = TreeView::open(repo.root(), head_rev);
  EXPECT_TRUE(head.ok()) << head.error().message;
  ChangedOptions o;
  o.recipe_paths = {"recipes"};
  o.runners_path = "runners.yaml";
  auto r = changed_keys(*base, *head, o);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? *r : ChangedReport{};
}

class ChangedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo.write("recipes/sglang.yaml", kRecipe);
    repo.write("scripts/tune.json", "{\"x\": 1}\n");
    repo.write("runners.yaml", "labels:\n  h200: [h200-a, h200-b]\n");
    repo.write("README.md", "hello\n");
    repo.commit("base");
  }
  TestRepo repo;
};

TEST_F(ChangedTest, NothingChangedListsNoKeys) {
  repo.write("README.md", "edited\n");
  repo.write("recipes/sglang.yaml", std::string(kRecipe) + "# a comment only\n");
  auto r = changed(repo);
  EXPECT_TRUE(r.keys.empty());
  EXPECT_EQ(r.head, "working tree");
  EXPECT_EQ(r.files, std::vector<std::string>{"recipes/sglang.yaml"});
}

TEST_F(ChangedTest, SharedAnchorEnvChangeAffectsEveryKeyThatMergesIt) {
  repo.write("recipes/sglang.yaml", replace(kRecipe, "env: { SGLANG_A: \"1\" }\na-key",
                                            "env: { SGLANG_A: \"1\", SGLANG_B: \"on\" }\na-key"));
  auto r = changed(repo);
  ASSERT_EQ(r.key_names(), std::vector<std::string>{"a-key"});  // b-key overrides serve
  const auto& reason = r.keys[0].reasons.at(0);
  EXPECT_EQ(reason.path, "serve.env.SGLANG_B");
  EXPECT_EQ(reason.kind, "added");
  EXPECT_EQ(reason.detail, "environment variable SGLANG_B set to \"on\"");
}

TEST_F(ChangedTest, ImageChangeInTheTemplateAffectsBothKeys) {
  repo.write("recipes/sglang.yaml", replace(kRecipe, "v0.5.12", "v0.5.13"));
  repo.commit("head");
  auto r = changed(repo, "HEAD");  // base HEAD == head HEAD: nothing
  EXPECT_TRUE(r.keys.empty());
  auto base = TreeView::open(repo.root(), "HEAD~1");
  auto head = TreeView::open(repo.root(), "HEAD");
  ASSERT_TRUE(base.ok() && head.ok());
  auto report = changed_keys(*base, *head, {{"recipes"}, "runners.yaml"});
  ASSERT_TRUE(report.ok()) << report.error().message;
  ASSERT_EQ(report->key_names(), (std::vector<std::string>{"a-key", "b-key"}));
  EXPECT_EQ(report->keys[1].reasons.at(0).path, "image");
  EXPECT_EQ(report->keys[1].reasons.at(0).base.as_string(), "lmsysorg/sglang:v0.5.12");
  EXPECT_EQ(report->keys[1].reasons.at(0).head.as_string(), "lmsysorg/sglang:v0.5.13");
  EXPECT_NE(report->base.find("HEAD~1 ("), std::string::npos);
}

TEST_F(ChangedTest, SearchSpaceEntryChangeNamesTheEntry) {
  repo.write("recipes/sglang.yaml",
             replace(kRecipe, "{ tp: 4, conc-list: [4, 8] }", "{ tp: 4, conc-list: [4, 8, 16] }"));
  auto r = changed(repo);
  ASSERT_EQ(r.key_names(), std::vector<std::string>{"b-key"});
  EXPECT_EQ(r.keys[0].reasons.at(0).path, "scenarios.fixed-seq-len[0].search-space[0].conc-list");
  EXPECT_EQ(r.keys[0].reasons.at(0).kind, "changed");
}

TEST_F(ChangedTest, SharedFileChangeAffectsItsUsers) {
  repo.write("scripts/tune.json", "{\"x\": 2}\n");
  auto r = changed(repo);
  ASSERT_EQ(r.key_names(), std::vector<std::string>{"a-key"});
  EXPECT_EQ(r.keys[0].reasons.at(0).kind, "shared-file");
  EXPECT_EQ(r.keys[0].reasons.at(0).detail,
            "file scripts/tune.json changed (used by 1 config key)");
}

TEST_F(ChangedTest, RunnerChangeAffectsKeysOnThatRunner) {
  repo.write("runners.yaml", "labels:\n  h200: [h200-a]\n");
  auto r = changed(repo);
  ASSERT_EQ(r.key_names(), (std::vector<std::string>{"a-key", "b-key"}));
  EXPECT_EQ(r.keys[0].reasons.at(0).kind, "runner");
}

TEST_F(ChangedTest, AddedAndRemovedKeysAndNewFiles) {
  std::string text = replace(kRecipe, "b-key:", "c-key:");
  repo.write("recipes/sglang.yaml", text);
  repo.write("recipes/more/extra.yml",
             "d-key:\n  image: i\n  model: m\n  model-prefix: d\n  precision: fp8\n"
             "  framework: vllm\n  runner: h200\n  multinode: false\n  scenarios:\n"
             "    fixed-seq-len:\n    - { isl: 1024, osl: 1024, search-space: [{ tp: 1, conc-list: "
             "[1] }] }\n");
  auto r = changed(repo);
  // Files in path order (recipes/more/ before recipes/sglang.yaml), removed keys last.
  ASSERT_EQ(r.key_names(), (std::vector<std::string>{"d-key", "c-key", "b-key"}));
  EXPECT_EQ(r.keys[0].status, "added");
  EXPECT_EQ(r.keys[0].file, "recipes/more/extra.yml");
  EXPECT_EQ(r.keys[2].status, "removed");
  auto j = r.to_json();
  EXPECT_EQ(j.at("affected").as_int64(), 3);
  EXPECT_EQ(j.at("keys").as_array()[2].at("status").as_string(), "removed");
}

TEST_F(ChangedTest, InvalidHeadRecipeIsAnErrorNamingFileLineAndRevision) {
  repo.write("recipes/sglang.yaml", replace(kRecipe, "precision: fp8", "precison: fp8"));
  auto base = TreeView::open(repo.root(), "HEAD");
  auto head = TreeView::open(repo.root(), "");
  auto r = changed_keys(*base, *head, {{"recipes"}, ""});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("recipes at working tree are invalid"), std::string::npos);
  EXPECT_NE(r.error().message.find("recipes/sglang.yaml:5:"), std::string::npos)
      << r.error().message;
}

TEST(DiffFields, ReasonsQuoteValuesCutAndEscaped) {
  // A 1 MB value changed: the reason quotes a line's worth; base/head keep it exact.
  boost::json::object base{{"image", std::string(1 << 20, 'a')}};
  boost::json::object head{{"image", "img:\x1b[2J"}};
  auto changes = diff_fields(base, head);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_LT(changes[0].detail.size(), 500u);
  EXPECT_NE(changes[0].detail.find("(1048578 bytes in all)"), std::string::npos)
      << changes[0].detail.substr(0, 300);
  EXPECT_NE(changes[0].detail.find("img:\\u001b[2J"), std::string::npos) << changes[0].detail;
  EXPECT_EQ(changes[0].base.as_string().size(), size_t{1} << 20);
}

TEST_F(ChangedTest, AliasBombInARevisionIsAnErrorNotAnExpansion) {
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n";
  std::string prev = "a";
  for (char name = 'b'; name <= 'i'; ++name) {
    bomb += std::string(1, name) + ": &" + name + " [";
    for (int i = 0; i < 9; ++i) bomb += (i ? ", *" : "*") + prev;
    bomb += "]\n";
    prev = std::string(1, name);
  }
  repo.write("recipes/bomb.yaml", bomb);
  auto base = TreeView::open(repo.root(), "HEAD");
  auto head = TreeView::open(repo.root(), "");
  auto r = changed_keys(*base, *head, {{"recipes"}, ""});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(
                "recipes/bomb.yaml:7:8: too many nodes after alias expansion (limit 1000000)"),
            std::string::npos)
      << r.error().message;
}

TEST_F(ChangedTest, UnknownRevisionIsAnError) {
  auto v = TreeView::open(repo.root(), "no-such-branch");
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().message.find("unknown git revision 'no-such-branch'"), std::string::npos);
}

TEST_F(ChangedTest, TreeViewReadsRevisionsWithoutCheckout) {
  repo.write("README.md", "working\n");
  auto head = TreeView::open(repo.root(), "HEAD");
  ASSERT_TRUE(head.ok());
  auto text = head->read("README.md");
  ASSERT_TRUE(text.ok() && text->has_value());
  EXPECT_EQ(**text, "hello\n");
  auto missing = head->read("nope.txt");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  auto files = head->list("");
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(*files, (std::vector<std::string>{"README.md", "recipes/sglang.yaml", "runners.yaml",
                                              "scripts/tune.json"}));
}

}  // namespace
}  // namespace ib::govern
