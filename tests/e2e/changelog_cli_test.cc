// `inferbench changelog check` on git repositories made in temporary folders: a base commit and a
// head commit (or the working tree), the way a pull request is checked.
#include <fstream>

#include "core/command.h"
#include "e2e_util.h"

namespace ib::e2e {
namespace {

std::string changelog_recipe(const std::string& prefix, const std::string& image) {
  return prefix +
         "-fp8-h200-vllm:\n"
         "  image: " +
         image +
         "\n"
         "  model: org/" +
         prefix +
         "\n"
         "  model-prefix: " +
         prefix +
         "\n"
         "  precision: fp8\n"
         "  framework: vllm\n"
         "  runner: h200\n"
         "  multinode: false\n"
         "  scenarios:\n"
         "    fixed-seq-len:\n"
         "    - isl: 1024\n"
         "      osl: 1024\n"
         "      search-space:\n"
         "      - { tp: 1, conc-list: [4, 8] }\n";
}

std::string entry(const std::string& key, const std::string& description) {
  return "- config-keys:\n    - " + key + "\n  description:\n    - \"" + description +
         "\"\n  pr-link: https://github.com/o/r/pull/XXX\n";
}

/// A repository whose base commit holds two recipes and a one-entry changelog.
class ChangelogRepo {
 public:
  ChangelogRepo() {
    git({"init", "-q", "-b", "main"});
    write("recipes/master.yaml", changelog_recipe("aaa", "vllm:1") + changelog_recipe("bbb", "vllm:1"));
    write("perf-changelog.yaml", kHistory);
    commit("base");
    git({"checkout", "-q", "-b", "pr"});  // head commits go to the branch; main stays the base
  }
  const fs::path& dir() const { return tmp_.path(); }
  void write(const std::string& path, const std::string& text) {
    fs::create_directories((dir() / path).parent_path());
    std::ofstream(dir() / path, std::ios::binary) << text;
  }
  void commit(const std::string& message) {
    git({"add", "-A"});
    git({"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message});
  }
  void git(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"git", "-C", dir().string()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run_command(argv);
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_TRUE(r->ok()) << r->err;
  }
  CommandResult check(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"changelog", "check", "-C", dir().string(), "--base", "main"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_inferbench(args, dir() / ("check" + std::to_string(++runs_) + ".log"),
                          std::chrono::seconds(60));
  }

  inline static const std::string kHistory = entry("aaa-fp8-h200-vllm", "First results");

 private:
  TempDir tmp_;
  int runs_ = 0;
};

TEST(ChangelogCli, CleanAppendCoveringTheChangedKeyPasses) {
  ChangelogRepo repo;
  repo.write("recipes/master.yaml", changelog_recipe("aaa", "vllm:2") + changelog_recipe("bbb", "vllm:1"));
  repo.write("perf-changelog.yaml",
             ChangelogRepo::kHistory + "\n" + entry("aaa-*", "Upgrade vLLM to 2"));
  repo.commit("upgrade aaa");
  auto r = repo.check({"--head", "pr", "--labels", "sweep-enabled,ci-checklist-complete"});
  EXPECT_EQ(r.exit.code, 0) << r.output;
  EXPECT_NE(r.output.find("perf-changelog.yaml: OK (1 appended entry"), std::string::npos)
      << r.output;

  // The same check as JSON.
  auto j = repo.check({"--head", "pr", "--json"});
  ASSERT_EQ(j.exit.code, 0) << j.output;
  auto v = boost::json::parse(j.output).as_object();
  EXPECT_TRUE(v.at("ok").as_bool());
  EXPECT_EQ(v.at("affected-keys").as_array().size(), 1u);
  EXPECT_EQ(v.at("additions").as_array()[0].at("resolved-keys").as_array()[0].as_string(),
            "aaa-fp8-h200-vllm");
}

TEST(ChangelogCli, ModifiedHistoricalEntryFailsNamingRuleAndLine) {
  ChangelogRepo repo;
  std::string history = ChangelogRepo::kHistory;
  history.replace(history.find("First"), 5, "Early");  // line 4
  repo.write("recipes/master.yaml", changelog_recipe("aaa", "vllm:2") + changelog_recipe("bbb", "vllm:1"));
  repo.write("perf-changelog.yaml", history + "\n" + entry("aaa-fp8-h200-vllm", "Upgrade"));
  // Head is the working tree (no --head).
  auto r = repo.check();
  EXPECT_EQ(r.exit.code, 1) << r.output;
  EXPECT_NE(r.output.find("perf-changelog.yaml:4: [history-modified]"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("1 violation"), std::string::npos) << r.output;
}

TEST(ChangelogCli, MissingBlankLineBeforeNewEntryFails) {
  ChangelogRepo repo;
  repo.write("recipes/master.yaml", changelog_recipe("aaa", "vllm:2") + changelog_recipe("bbb", "vllm:1"));
  repo.write("perf-changelog.yaml",
             ChangelogRepo::kHistory + entry("aaa-fp8-h200-vllm", "Upgrade"));
  repo.commit("no blank line");
  auto r = repo.check({"--head", "HEAD"});
  EXPECT_EQ(r.exit.code, 1) << r.output;
  EXPECT_NE(r.output.find("perf-changelog.yaml:6: [separator]"), std::string::npos) << r.output;
}

TEST(ChangelogCli, EntryNotCoveringAnAffectedKeyFails) {
  ChangelogRepo repo;
  repo.write("recipes/master.yaml", changelog_recipe("aaa", "vllm:2") + changelog_recipe("bbb", "vllm:2"));
  repo.write("perf-changelog.yaml",
             ChangelogRepo::kHistory + "\n" + entry("aaa-fp8-h200-vllm", "Upgrade both"));
  repo.commit("upgrade both, log one");
  auto r = repo.check({"--head", "HEAD"});
  EXPECT_EQ(r.exit.code, 1) << r.output;
  EXPECT_NE(r.output.find("perf-changelog.yaml:7: [uncovered-key]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("bbb-fp8-h200-vllm"), std::string::npos) << r.output;
}

TEST(ChangelogCli, RecipeChangeWithoutEntryAndEntryWithoutChangeFail) {
  ChangelogRepo repo;
  repo.write("recipes/master.yaml", changelog_recipe("aaa", "vllm:1") + changelog_recipe("bbb", "vllm:3"));
  auto missing = repo.check();
  EXPECT_EQ(missing.exit.code, 1) << missing.output;
  EXPECT_NE(missing.output.find("[missing-entry]"), std::string::npos) << missing.output;

  repo.write("recipes/master.yaml", changelog_recipe("aaa", "vllm:1") + changelog_recipe("bbb", "vllm:1"));
  repo.write("perf-changelog.yaml",
             ChangelogRepo::kHistory + "\n" + entry("bbb-fp8-h200-vllm", "Nothing changed"));
  auto extra = repo.check();
  EXPECT_EQ(extra.exit.code, 1) << extra.output;
  EXPECT_NE(extra.output.find("perf-changelog.yaml:7: [extra-entry]"), std::string::npos)
      << extra.output;
}

TEST(ChangelogCli, UsageErrorsExitTwo) {
  ChangelogRepo repo;
  auto no_base = run_inferbench({"changelog", "check", "-C", repo.dir().string()},
                                repo.dir() / "nobase.log", std::chrono::seconds(60));
  EXPECT_EQ(no_base.exit.code, 2) << no_base.output;
  auto bad_rev = repo.check({"--head", "no-such-branch"});
  EXPECT_EQ(bad_rev.exit.code, 2) << bad_rev.output;
  EXPECT_NE(bad_rev.output.find("no-such-branch"), std::string::npos) << bad_rev.output;
  auto both = repo.check({"--main", "--pr-url", "https://github.com/o/r/pull/1"});
  EXPECT_EQ(both.exit.code, 2) << both.output;
}

}  // namespace
}  // namespace ib::e2e
