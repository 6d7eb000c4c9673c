// `inferbench history`: serve-sim sweeps at twelve revisions of a git repository in a temporary
// folder (docs/history.md). One key's decode gets 5% slower at revision 7, another key's image
// changes at revision 4 (the new image's engine is 5% slower), a third never changes: the change
// points are found where they are, attributed to the changelog entry and the image, and the
// regressions gate fails on a range that holds revision 7 only.
#include <fmt/format.h>

#include "browser_util.h"
#include "core/strings.h"
#include "e2e_util.h"
#include "govern/test_repo.h"

namespace ib::e2e {
namespace {

std::string history_key(const std::string& key, const std::string& image,
                        const std::vector<std::string>& command) {
  std::string argv;
  for (const auto& a : command) argv += (argv.empty() ? "" : ", ") + a;
  return key + ":\n  image: " + image +
         "\n  model: sim-model\n  model-prefix: sim\n  precision: bf16\n"
         "  framework: serve-sim\n  runner: local\n  multinode: false\n"
         "  serve:\n    command: [" +
         argv +
         "]\n"
         "  workload: { prompts-per-conc: 3, min-prompts: 6, warmups-per-conc: 0 }\n"
         "  scenarios:\n    fixed-seq-len:\n"
         "    - { isl: 32, osl: 12, search-space: [{ tp: 1, conc-list: [2] }] }\n";
}

std::string sim_command(const std::string& decode_ms) {
  return "inferbench, serve-sim, --decode-base-ms, \"" + decode_ms +
         "\", --model, \"{served-model}\", --host, \"{host}\", --port, \"{port}\"";
}

// The recipes at revision `rev` (1-based).
std::string history_recipes(int rev) {
  // image-key's "container": the image's tag picks its engine's speed (v2 is 5% slower), as a
  // container runtime would start the image's own engine.
  const std::string image_command =
      "/bin/sh, -c, 'case \"$0\" in *:v2) d=8.4;; *) d=8;; esac; exec \"$1\" serve-sim "
      "--decode-base-ms \"$d\" --model \"$2\" --host \"$3\" --port \"$4\"', "
      "\"{image}\", " INFERBENCH_BIN ", \"{served-model}\", \"{host}\", \"{port}\"";
  return history_key("slow-key", "inferbench/serve-sim:v1", {sim_command(rev >= 7 ? "8.4" : "8")}) +
         history_key("steady-key", "inferbench/serve-sim:v1", {sim_command("8")}) +
         history_key("image-key", rev >= 4 ? "inferbench/serve-sim:v2" : "inferbench/serve-sim:v1",
                     {image_command});
}

std::string history_entry(const std::string& key, const std::string& what, int pr) {
  return fmt::format(
      "- config-keys:\n    - {}\n  description:\n    - \"{}\"\n  pr-link: "
      "https://github.com/o/r/pull/{}\n",
      key, what, pr);
}

class History : public ::testing::Test {
 protected:
  govern::TestRepo repo;
  TempDir dir;
  std::vector<std::string> revisions;  // 1-based revision i at [i - 1]

  void SetUp() override {
    std::string changelog = history_entry("\"*\"", "Add the keys", 1);
    for (int rev = 1; rev <= 12; ++rev) {
      if (rev == 4) changelog += "\n" + history_entry("image-key", "Move to the v2 image", 4);
      if (rev == 7) changelog += "\n" + history_entry("slow-key", "Slower decode step", 7);
      repo.write("recipes/r.yaml", history_recipes(rev));
      repo.write("perf-changelog.yaml", changelog);
      repo.write("notes.txt", fmt::format("revision {}\n", rev));
      repo.commit(fmt::format("revision {}", rev));
      auto head = run_command({"git", "-C", repo.root().string(), "rev-parse", "HEAD"});
      ASSERT_TRUE(head.ok() && head->ok());
      revisions.push_back(std::string(trim(head->out)));
      auto r = run_inferbench({"sweep", (repo.root() / "recipes" / "r.yaml").string(), "--runs-dir",
                               (dir.path() / "runs").string(), "--no-env-trace"},
                              dir.path() / fmt::format("sweep-{}.log", rev));
      ASSERT_EQ(r.exit.code, 0) << r.output;
    }
  }

  CommandResult history(std::vector<std::string> extra, const std::string& tag) {
    std::vector<std::string> args = {"history",
                                     "-C",
                                     repo.root().string(),
                                     "--db",
                                     (dir.path() / "runs" / "inferbench.db").string(),
                                     "--metric",
                                     "median_tpot_ms"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_inferbench(args, dir.path() / ("history-" + tag + ".log"));
  }
};

const boost::json::object* series_of(const boost::json::object& h, const std::string& key) {
  for (const auto& s : h.at("series").as_array()) {
    if (s.at("config_key").as_string() == key) return &s.as_object();
  }
  return nullptr;
}

TEST_F(History, AFivePercentSlowdownIsFoundAtItsRevisionAndAttributed) {
  auto r = history({"--json"}, "json");
  ASSERT_EQ(r.exit.code, 0) << r.output;
  const auto h = boost::json::parse(r.output).as_object();
  EXPECT_EQ(h.at("order").as_string(), "git");
  const auto* slow = series_of(h, "slow-key");
  const auto* steady = series_of(h, "steady-key");
  const auto* image = series_of(h, "image-key");
  ASSERT_TRUE(slow && steady && image) << r.output;
  EXPECT_EQ(slow->at("positions").as_array().size(), 12u);
  // slow-key: one change point, at revision 7, attributed to its changelog entry.
  const auto& cps = slow->at("change_points").as_array();
  ASSERT_EQ(cps.size(), 1u) << boost::json::serialize(*slow);
  const auto& cp = cps[0].as_object();
  EXPECT_EQ(cp.at("revision").as_string(), revisions[6]);
  EXPECT_NEAR(cp.at("step_pct").as_double(), 5.0, 2.0);
  EXPECT_TRUE(cp.at("regression").as_bool());
  const auto& a = cp.at("attribution").as_object();
  ASSERT_EQ(a.at("changelog_entries").as_array().size(), 1u);
  EXPECT_EQ(a.at("changelog_entries").as_array()[0].at("description").as_array()[0].as_string(),
            "Slower decode step");
  EXPECT_FALSE(a.at("key_changes").as_array().empty());
  // steady-key: none.
  EXPECT_TRUE(steady->at("change_points").as_array().empty()) << boost::json::serialize(*steady);
  // image-key: at revision 4, the image named.
  const auto& icps = image->at("change_points").as_array();
  ASSERT_EQ(icps.size(), 1u) << boost::json::serialize(*image);
  EXPECT_EQ(icps[0].at("revision").as_string(), revisions[3]);
  bool image_named = false;
  for (const auto& c : icps[0].at("attribution").at("confounders").as_array()) {
    image_named |= c.at("field").as_string() == "image";
  }
  EXPECT_TRUE(image_named) << boost::json::serialize(icps[0]);

  // The terminal table names the change and what made it.
  auto t = history({"slow-key"}, "text");
  ASSERT_EQ(t.exit.code, 0) << t.output;
  EXPECT_NE(t.output.find("<- change +"), std::string::npos) << t.output;
  EXPECT_NE(t.output.find("Slower decode step"), std::string::npos) << t.output;
  std::printf("%s\n", t.output.c_str());

  // The regressions gate: a range holding revision 7 fails, the one after it passes.
  auto bad = history({"--new-since", revisions[5], "--exit-code"}, "gate-bad");
  EXPECT_EQ(bad.exit.code, 1) << bad.output;
  EXPECT_NE(bad.output.find("1 regression"), std::string::npos) << bad.output;
  auto good = history({"--new-since", revisions[6], "--exit-code"}, "gate-good");
  EXPECT_EQ(good.exit.code, 0) << good.output;

  // The report of the last run has a Trends section: each of its series with the change point
  // marked and annotated.
  const fs::path page = dir.path() / "report.html";
  auto rep =
      run_inferbench({"report", "12", "--db", (dir.path() / "runs" / "inferbench.db").string(),
                      "-C", repo.root().string(), "-o", page.string()},
                     dir.path() / "report.log");
  ASSERT_EQ(rep.exit.code, 0) << rep.output;
  REQUIRE_CHROMIUM(chromium);
  Browser browser{*chromium, dir.path()};
  std::vector<std::string> leaks;
  const std::string dom = browser.load("file://" + page.string(), leaks);
  EXPECT_NE(dom.find("<h2>Trends</h2>"), std::string::npos) << dom.substr(0, 2000);
  const size_t card = dom.find("data-trend=\"slow-key|median_tpot_ms\"");
  ASSERT_NE(card, std::string::npos);
  const std::string slow_card = dom.substr(card, dom.find("data-trend=", card + 10) - card);
  EXPECT_NE(slow_card.find("data-change-point=\"6\""), std::string::npos) << slow_card;
  EXPECT_NE(slow_card.find("changelog: Slower decode step"), std::string::npos) << slow_card;
  EXPECT_NE(dom.find("image: inferbench/serve-sim:v1 \u2192 inferbench/serve-sim:v2"),
            std::string::npos);
  EXPECT_TRUE(leaks.empty()) << fmt::format("{}", fmt::join(leaks, "\n"));
}

}  // namespace
}  // namespace ib::e2e
