// perf-changelog.yaml rules: every rule on small byte fixtures, the real 772-entry InferenceX
// history, and real git repositories (TreeView) made in temporary folders.
#include "govern/changelog.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>

#include "core/command.h"
#include "core/files.h"
#include "govern/git.h"
#include "govern/test_repo.h"
#include "recipe/recipe.h"

namespace ib::govern {
namespace {

namespace fs = std::filesystem;

const std::string kLink = "https://github.com/SemiAnalysisAI/InferenceX/pull/1";

/// One entry the way InferenceX writes them.
std::string entry(const std::string& key, const std::string& link = kLink,
                  const std::string& extra = "") {
  return "- config-keys:\n    - " + key + "\n  description:\n    - \"Update " + key + "\"\n" +
         extra + "  pr-link: " + link + "\n";
}

/// Entries separated by one empty line, as the file is kept.
std::string file_of(const std::vector<std::string>& entries) {
  std::string out;
  for (const auto& e : entries) {
    if (!out.empty()) out += "\n";
    out += e;
  }
  return out;
}

ChangelogContext context() {
  ChangelogContext c;
  c.config_keys = std::vector<std::string>{"dsr1-fp8-h200-sglang", "dsr1-fp4-b200-sglang",
                                           "gptoss-fp4-mi355x-vllm", "minimaxm3-fp4-b200-agentic"};
  c.agentic_keys = std::set<std::string>{"minimaxm3-fp4-b200-agentic"};
  return c;
}

/// "rule@line" for each violation, in report order.
std::vector<std::string> rules(const std::vector<ChangelogViolation>& vs) {
  std::vector<std::string> out;
  for (const auto& v : vs) out.push_back(v.rule + "@" + std::to_string(v.line));
  return out;
}

std::string dump(const std::vector<ChangelogViolation>& vs) {
  std::string out;
  for (const auto& v : vs) out += v.str("perf-changelog.yaml") + "\n";
  return out;
}

// ---- parse_changelog -------------------------------------------------------------------------

struct ParseCase {
  std::string name;
  std::string bytes;
  std::vector<std::string> expected;  // rule@line
};

TEST(ParseChangelog, EveryRuleNamesItsLine) {
  const std::string a = entry("dsr1-fp8-h200-sglang");
  const std::vector<ParseCase> cases = {
      {"valid", file_of({a, entry("x")}), {}},
      {"no final newline", a.substr(0, a.size() - 1), {"final-newline@5"}},
      {"CR",
       "- config-keys:\r\n    - a\n  description:\n    - d\n  pr-link: XXX\n",
       {"forbidden-character@1"}},
      {"tab",
       a + "\n- config-keys:\n    - b\n  description:\n    - \"a\tb\"\n  pr-link: XXX\n",
       {"forbidden-character@10"}},
      {"NUL", a + std::string("#\0\n", 3), {"forbidden-character@6"}},
      {"bad UTF-8", a + "# caf\xc3(\n", {"invalid-utf8@6"}},
      {"overlong UTF-8", a + "# \xc0\xaf\n", {"invalid-utf8@6"}},
      {"YAML syntax", a + "- config-keys: [\n", {"yaml-syntax@7"}},
      {"duplicate key",
       "- config-keys:\n    - a\n  description:\n    - one\n  description:\n    - two\n"
       "  pr-link: XXX\n",
       {"duplicate-key@5"}},
      {"root not a list", "config-keys: [a]\n", {"root-not-list@1"}},
      {"entry not starting with config-keys",
       a + "\n- description:\n    - d\n  config-keys:\n    - b\n  pr-link: XXX\n",
       {"entry-count@7"}},
      {"unknown field", entry("a", kLink, "  owner: me\n"), {"unknown-key@5"}},
      {"missing pr-link", "- config-keys:\n    - a\n  description:\n    - d\n", {"entry-schema@1"}},
      {"empty config-keys",
       "- config-keys: []\n  description:\n    - d\n  pr-link: XXX\n",
       {"entry-schema@1"}},
      {"config key not a string",
       "- config-keys:\n    - 42\n  description:\n    - d\n"
       "  pr-link: XXX\n",
       {"entry-schema@2"}},
      {"empty description",
       "- config-keys:\n    - a\n  description: []\n  pr-link: XXX\n",
       {"entry-schema@3"}},
      {"pr-link null",
       "- config-keys:\n    - a\n  description:\n    - d\n  pr-link:\n",
       {"entry-schema@5"}},
      {"evals-only not a bool", entry("a", kLink, "  evals-only: maybe\n"), {"entry-schema@5"}},
      {"eval-min-prefill-ep zero",
       entry("a", kLink, "  eval-min-prefill-ep: 0\n"),
       {"entry-schema@5"}},
      {"bad scenario type",
       entry("a", kLink, "  scenario-type:\n    - offline\n"),
       {"entry-schema@6"}},
      {"append-only with evals",
       entry("a", kLink, "  append-only: true\n  all-evals: true\n"),
       {"entry-schema@5"}},
  };
  for (const auto& c : cases) {
    auto parsed = parse_changelog(c.bytes, "perf-changelog.yaml");
    EXPECT_EQ(rules(parsed.violations), c.expected) << c.name << "\n" << dump(parsed.violations);
  }
}

TEST(ParseChangelog, ReadsFieldsAndLines) {
  const std::string text = file_of(
      {entry("dsr1-*"), entry("gptoss-fp4-mi355x-vllm", "XXX",
                              "  evals-only: true\n  eval-min-prefill-ep: 8\n  scenario-type:\n"
                              "    - agentic-coding\n")});
  auto parsed = parse_changelog(text, "perf-changelog.yaml");
  ASSERT_TRUE(parsed.ok()) << dump(parsed.violations);
  ASSERT_EQ(parsed.entries.size(), 2u);
  const auto& e = parsed.entries[1];
  EXPECT_EQ(e.line, 7);
  EXPECT_EQ(e.config_keys, std::vector<std::string>{"gptoss-fp4-mi355x-vllm"});
  EXPECT_EQ(e.config_key_lines, std::vector<int>{8});
  EXPECT_EQ(e.pr_link, "XXX");
  EXPECT_EQ(e.pr_link_line, 15);
  EXPECT_TRUE(e.evals_only);
  EXPECT_EQ(e.eval_min_prefill_ep, 8);
  EXPECT_TRUE(e.selects("agentic-coding"));
  EXPECT_FALSE(e.selects("fixed-seq-len"));
  EXPECT_TRUE(parsed.entries[0].selects("fixed-seq-len"));
  EXPECT_EQ(e.to_json().at("entry").at("pr-link").as_string(), "XXX");
}

TEST(ChangelogKeyMatches, StarIsTheOnlyWildcardAndTheWholeKeyMustMatch) {
  EXPECT_TRUE(changelog_key_matches("dsr1*", "dsr1-fp8-h200-sglang"));
  EXPECT_TRUE(changelog_key_matches("*-sglang", "dsr1-fp8-h200-sglang"));
  EXPECT_TRUE(changelog_key_matches("dsr1-*-h200-*", "dsr1-fp8-h200-sglang"));
  EXPECT_TRUE(changelog_key_matches("*", "anything"));
  EXPECT_FALSE(changelog_key_matches("dsr1", "dsr1-fp8-h200-sglang"));
  EXPECT_FALSE(changelog_key_matches("*-vllm", "dsr1-fp8-h200-sglang"));
  // '.' and '?' are literal (re.escape), not regex or fnmatch wildcards.
  EXPECT_FALSE(changelog_key_matches("qwen3.5*", "qwen3x5-fp8"));
  EXPECT_FALSE(changelog_key_matches("dsr1-fp?-*", "dsr1-fp8-h200"));
}

// ---- check_changelog -------------------------------------------------------------------------

struct CheckCase {
  std::string name;
  std::optional<std::string> base;
  std::string head;
  std::function<void(ChangelogContext&)> setup;
  std::vector<std::string> expected;  // rule@line, sorted by line
};

TEST(CheckChangelog, EveryRuleOnSmallFixtures) {
  const std::string e1 = entry("dsr1-fp8-h200-sglang");
  const std::string e2 = entry("gptoss-fp4-mi355x-vllm");
  const std::string base = file_of({e1, e2});  // lines 1-5, 7-11
  const std::string add = entry("dsr1-fp4-b200-sglang", "XXX");
  const std::string add2 = entry("gptoss-fp4-mi355x-vllm", "XXX");
  auto none = [](ChangelogContext&) {};
  auto affected = [](std::vector<std::string> keys) {
    return [keys](ChangelogContext& c) { c.affected_keys = keys; };
  };
  auto labels = [](std::vector<std::string> l) {
    return [l](ChangelogContext& c) { c.labels = l; };
  };
  std::string modified = base;
  modified.replace(modified.find("Update gptoss"), 6, "Change");
  std::string spaced = base;
  spaced.insert(spaced.find("\n  description:\n    - \"Update gptoss"), "   ");
  const std::string corrected_base = file_of({e1, entry("gptoss-fp4-mi355x-vllm", "XXX")});
  const std::vector<CheckCase> cases = {
      {"clean append", base, base + "\n" + add, none, {}},
      {"two clean appends", base, base + "\n" + add + "\n" + add2, none, {}},
      {"new file", std::nullopt, add, none, {}},
      {"unchanged", base, base, none, {}},
      {"historical entry changed", base, modified + "\n" + add, none, {"history-modified@10"}},
      {"historical bytes changed", base, spaced + "\n" + add, none, {"history-modified@8"}},
      {"whitespace-only change", base, spaced, none, {"history-modified@8"}},
      {"entry deleted", base, file_of({e1, add}), none, {"history-modified@8"}},
      {"inserted before history", base, file_of({add, e1, e2}), none, {"not-appended-at-end@1"}},
      {"inserted between", base, file_of({e1, add, e2}), none, {"not-appended-at-end@7"}},
      {"no blank line", base, base + add, none, {"separator@12"}},
      {"two blank lines", base, base + "\n\n" + add, none, {"separator@14"}},
      {"blank line of spaces", base, base + "  \n" + add, none, {"separator@13"}},
      {"no blank between new entries", base, base + "\n" + add + add2, none, {"separator@18"}},
      {"trailing whitespace",
       base,
       base + "\n" + entry("dsr1-fp4-b200-sglang  ", "XXX"),
       none,
       {"trailing-whitespace@14"}},
      {"trailing blank line", base, base + "\n" + add + "\n", none, {"trailing-blank-line@18"}},
      {"canonical correction", corrected_base, base, none, {}},
      {"non-canonical correction",
       corrected_base,
       file_of({e1, entry("gptoss-fp4-mi355x-vllm", "https://example.com/1")}),
       none,
       {"pr-link@11"}},
      {"correction mixed with append", corrected_base, base + "\n" + add, none, {"pr-link@11"}},
      {"placeholder on main",
       base,
       base + "\n" + add,
       [](ChangelogContext& c) { c.main = true; },
       {"pr-link@17"}},
      {"canonical link on main",
       base,
       base + "\n" + entry("dsr1-fp4-b200-sglang", "https://github.com/o/r/pull/7"),
       [](ChangelogContext& c) { c.main = true; },
       {}},
      {"other PR's link",
       base,
       base + "\n" + entry("dsr1-fp4-b200-sglang", kLink),
       [](ChangelogContext& c) {
         c.pr_url = "https://github.com/SemiAnalysisAI/InferenceX/pull/42";
       },
       {"pr-link@17"}},
      {"this PR's link",
       base,
       base + "\n" +
           entry("dsr1-fp4-b200-sglang", "https://github.com/SemiAnalysisAI/InferenceX/pull/42"),
       [](ChangelogContext& c) {
         c.pr_url = "https://github.com/SemiAnalysisAI/InferenceX/pull/42";
       },
       {}},
      {"PR placeholder form",
       base,
       base + "\n" + entry("dsr1-fp4-b200-sglang", "https://github.com/o/r/pull/XXX"),
       none,
       {}},
      {"not a link",
       base,
       base + "\n" + entry("dsr1-fp4-b200-sglang", "TBD"),
       none,
       {"pr-link@17"}},
      {"wildcard matches nothing",
       base,
       base + "\n" + entry("llama*", "XXX"),
       none,
       {"wildcard-no-match@14"}},
      {"unknown literal key",
       base,
       base + "\n" + entry("dsr1-fp8-b300-sglang", "XXX"),
       none,
       {"unknown-config-key@14"}},
      {"new entry fails schema",
       base,
       base + "\n- config-keys:\n    - dsr1-fp4-b200-sglang\n  pr-link: XXX\n",
       none,
       {"entry-schema@13"}},
      {"two primary labels",
       base,
       base + "\n" + add,
       labels({"sweep-enabled", "full-sweep-enabled"}),
       {"labels@0"}},
      {"one primary and modifiers",
       base,
       base + "\n" + add,
       labels({"full-sweep-fail-fast", "all-evals", "ci-checklist-complete"}),
       {}},
      {"modifier without primary", base, base + "\n" + add, labels({"all-evals"}), {"labels@0"}},
      {"evals-only with agentx-fast",
       base,
       base + "\n" + entry("minimaxm3-fp4-b200-agentic", "XXX"),
       labels({"sweep-enabled", "evals-only", "agentx-fast"}),
       {"labels@0"}},
      {"agentx-fast without agentic entry",
       base,
       base + "\n" + add,
       labels({"sweep-enabled", "agentx-fast"}),
       {"labels@0"}},
      {"agentx-fast with agentic entry",
       base,
       base + "\n" + entry("minimaxm3-fp4-b200-agentic", "XXX"),
       labels({"sweep-enabled", "agentx-fast"}),
       {}},
      {"sweep label without entry", base, base, labels({"sweep-enabled"}), {"labels@0"}},
      {"append-only mixed with regular",
       base,
       base + "\n" + entry("dsr1-fp4-b200-sglang", "XXX", "  append-only: true\n") + "\n" + add2,
       none,
       {"append-only@20"}},
      {"append-only with evals label",
       base,
       base + "\n" + entry("dsr1-fp4-b200-sglang", "XXX", "  append-only: true\n"),
       labels({"sweep-enabled", "all-evals"}),
       {"labels@0"}},
      {"covered", base, base + "\n" + add, affected({"dsr1-fp4-b200-sglang"}), {}},
      {"covered by wildcard",
       base,
       base + "\n" + entry("dsr1-*", "XXX"),
       affected({"dsr1-fp4-b200-sglang", "dsr1-fp8-h200-sglang"}),
       {}},
      {"missing entry", base, base, affected({"dsr1-fp4-b200-sglang"}), {"missing-entry@11"}},
      {"uncovered key",
       base,
       base + "\n" + add,
       affected({"dsr1-fp4-b200-sglang", "gptoss-fp4-mi355x-vllm"}),
       {"uncovered-key@13"}},
      {"extra entry", base, base + "\n" + add, affected({}), {"extra-entry@13"}},
      {"multiple entries",
       base,
       base + "\n" + add + "\n" + add2,
       affected({"dsr1-fp4-b200-sglang", "gptoss-fp4-mi355x-vllm"}),
       {"multiple-entries@19"}},
      {"several problems at once",
       base,
       modified + add + "\n",
       [](ChangelogContext& c) {
         c.affected_keys = std::vector<std::string>{"gptoss-fp4-mi355x-vllm"};
       },
       {"history-modified@10", "separator@12", "uncovered-key@12", "trailing-blank-line@17"}},
  };
  for (const auto& c : cases) {
    ChangelogContext ctx = context();
    c.setup(ctx);
    auto report = check_changelog(c.base, c.head, ctx);
    EXPECT_EQ(rules(report.violations), c.expected) << c.name << "\n" << dump(report.violations);
  }
}

TEST(CheckChangelog, ReportCountsAndResolvesKeys) {
  const std::string base = file_of({entry("dsr1-fp8-h200-sglang")});
  const std::string head = base + "\n" + entry("dsr1-*", "XXX");
  auto report = check_changelog(base, head, context());
  ASSERT_TRUE(report.ok()) << dump(report.violations);
  EXPECT_EQ(report.base_entries, 1u);
  EXPECT_EQ(report.head_entries, 2u);
  ASSERT_EQ(report.additions.size(), 1u);
  EXPECT_EQ(report.additions[0].line, 7);
  EXPECT_EQ(report.resolved_keys[0],
            (std::vector<std::string>{"dsr1-fp8-h200-sglang", "dsr1-fp4-b200-sglang"}));
  auto j = report.to_json();
  EXPECT_TRUE(j.at("ok").as_bool());
  EXPECT_EQ(j.at("additions").as_array()[0].at("resolved-keys").as_array().size(), 2u);
}

TEST(CheckChangelog, ViolationTextNamesFileLineAndRule) {
  ChangelogViolation v{"separator", 12, "no empty line"};
  EXPECT_EQ(v.str("perf-changelog.yaml"), "perf-changelog.yaml:12: [separator] no empty line");
  ChangelogViolation l{"labels", 0, "two primaries"};
  EXPECT_EQ(l.str("perf-changelog.yaml"), "perf-changelog.yaml: [labels] two primaries");
  EXPECT_EQ(v.to_json().at("line").as_int64(), 12);
}

TEST(CheckChangelog, InvalidHeadStopsAfterParseErrors) {
  const std::string base = file_of({entry("dsr1-fp8-h200-sglang")});
  auto report = check_changelog(base, base + "\n- config-keys: [\n", context());
  EXPECT_EQ(rules(report.violations), std::vector<std::string>{"yaml-syntax@8"})
      << dump(report.violations);
}

TEST(CheckChangelog, AliasBombAndDeepNestingAreYamlLimitViolations) {
  // A changelog comes from a pull request: nine levels of nine aliases must fail in one step,
  // with its line, not expand.
  std::string bomb = "- config-keys: &a [x, x, x, x, x, x, x, x, x]\n";
  std::string prev = "a";
  for (char name = 'b'; name <= 'i'; ++name) {
    bomb += std::string("- config-keys: &") + name + " [";
    for (int i = 0; i < 9; ++i) bomb += (i ? ", *" : "*") + prev;
    bomb += "]\n";
    prev = std::string(1, name);
  }
  const std::string base = file_of({entry("dsr1-fp8-h200-sglang")});
  auto report = check_changelog(base, bomb, context());
  EXPECT_EQ(rules(report.violations), std::vector<std::string>{"yaml-limit@7"})
      << dump(report.violations);
  EXPECT_NE(dump(report.violations).find("too many nodes after alias expansion"),
            std::string::npos);
  const std::string deep = "- config-keys: " + std::string(100000, '[') + "\n";
  report = check_changelog(base, deep, context());
  EXPECT_EQ(rules(report.violations), std::vector<std::string>{"yaml-limit@1"})
      << dump(report.violations);
}

TEST(CheckChangelog, HugeAndControlCharacterValuesAreCutAndEscapedInMessages) {
  const std::string base = file_of({entry("dsr1-fp8-h200-sglang")});
  const std::string head =
      base + "\n" + entry("dsr1-fp8-h200-sglang", "\"https://x/\\e[2J" +
                                                      std::string(1 << 20, 'p') + "\"");
  auto report = check_changelog(base, head, context());
  ASSERT_FALSE(report.violations.empty());
  for (const auto& v : report.violations) {
    EXPECT_LT(v.message.size(), 2100u) << v.rule;
    EXPECT_EQ(v.message.find('\x1b'), std::string::npos) << v.rule;
  }
  EXPECT_NE(dump(report.violations).find("\\x1b[2J"), std::string::npos)
      << dump(report.violations).substr(0, 1000);
}

// ---- the real InferenceX history ------------------------------------------------------------

const std::string kData = INFERBENCH_TEST_DATA "/inferencex";

TEST(RealHistory, ParsesAll772Entries) {
  auto text = read_file(kData + "/perf-changelog.yaml");
  ASSERT_TRUE(text) << text.error().message;
  auto parsed = parse_changelog(*text, "perf-changelog.yaml");
  EXPECT_TRUE(parsed.ok()) << dump(parsed.violations);
  EXPECT_EQ(parsed.entries.size(), 772u);
  EXPECT_EQ(parsed.entries.front().line, 1);
  EXPECT_EQ(parsed.entries.front().config_keys, std::vector<std::string>{"70b-fp8-*-vllm"});
  EXPECT_EQ(parsed.entries.back().pr_link,
            "https://github.com/SemiAnalysisAI/InferenceX/pull/2707");
  // A pr-link folded onto the next line is still one string.
  bool folded = false;
  for (const auto& e : parsed.entries) {
    folded |= e.pr_link == "https://github.com/SemiAnalysisAI/InferenceX/pull/1701";
  }
  EXPECT_TRUE(folded);
}

TEST(RealHistory, AppendingTheLastEntryIsAccepted) {
  auto text = read_file(kData + "/perf-changelog.yaml");
  ASSERT_TRUE(text) << text.error().message;
  const size_t cut = text->rfind("\n- config-keys:");
  ASSERT_NE(cut, std::string::npos);
  const std::string base = text->substr(0, cut);  // ends with the previous entry's newline
  auto configs =
      recipe::load_master_configs({kData + "/amd-master.yaml", kData + "/nvidia-master.yaml"});
  ASSERT_TRUE(configs) << configs.error().message;
  ChangelogContext ctx;
  ctx.config_keys.emplace();
  ctx.agentic_keys.emplace();
  for (const auto& c : *configs) {
    ctx.config_keys->push_back(c.key);
    if (!c.agentic_coding.empty()) ctx.agentic_keys->insert(c.key);
  }
  ctx.main = true;
  ctx.labels = {"full-sweep-fail-fast", "agentx-fast"};
  ctx.affected_keys = std::vector<std::string>{"dsv4-fp4-b200-vllm-agentic-mtp"};
  auto report = check_changelog(base, *text, ctx);
  EXPECT_TRUE(report.ok()) << dump(report.violations);
  EXPECT_EQ(report.base_entries, 771u);
  ASSERT_EQ(report.additions.size(), 1u);
  EXPECT_EQ(report.resolved_keys[0], std::vector<std::string>{"dsv4-fp4-b200-vllm-agentic-mtp"});

  // The same append with one historical byte changed is refused at that line.
  std::string tampered = *text;
  const size_t at = tampered.find("pull/2657");
  tampered.replace(at, 9, "pull/2658");
  auto bad = check_changelog(base, tampered, ctx);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.violations[0].rule, "pr-link");  // a correction mixed with an addition
}

// ---- real git repositories ------------------------------------------------------------------

ChangelogReport check_revisions(const TestRepo& repo, const std::string& base_rev,
                                const std::string& head_rev) {
  auto base = TreeView::open(repo.root(), base_rev);
  auto head = TreeView::open(repo.root(), head_rev);
  EXPECT_TRUE(base && head);
  auto base_bytes = base->read("perf-changelog.yaml");
  auto head_bytes = head->read("perf-changelog.yaml");
  EXPECT_TRUE(base_bytes && head_bytes);
  EXPECT_TRUE(head_bytes->has_value());
  return check_changelog(*base_bytes, head_bytes->value_or(""), context());
}

TEST(ChangelogGit, AppendBetweenCommitsIsAccepted) {
  TestRepo repo;
  const std::string base = file_of({entry("dsr1-fp8-h200-sglang")});
  repo.write("perf-changelog.yaml", base);
  repo.commit("base");
  repo.write("perf-changelog.yaml", base + "\n" + entry("dsr1-fp4-b200-sglang", "XXX"));
  repo.commit("head");
  auto report = check_revisions(repo, "HEAD~1", "HEAD");
  EXPECT_TRUE(report.ok()) << dump(report.violations);
  EXPECT_EQ(report.additions.size(), 1u);
}

TEST(ChangelogGit, NewFileAndWorkingTreeEdits) {
  TestRepo repo;
  repo.write("README", "x\n");
  repo.commit("no changelog yet");
  const std::string first = entry("dsr1-fp8-h200-sglang", "XXX");
  repo.write("perf-changelog.yaml", first);
  repo.commit("add changelog");
  {
    // The file did not exist at the base: every entry is new.
    auto report = check_revisions(repo, "HEAD~1", "HEAD");
    EXPECT_TRUE(report.ok()) << dump(report.violations);
    EXPECT_EQ(report.additions.size(), 1u);
  }
  // An uncommitted edit of history, seen through the working tree.
  std::string edited = first;
  edited.replace(edited.find("Update"), 6, "Revise");
  repo.write("perf-changelog.yaml", edited + "\n" + entry("dsr1-fp4-b200-sglang", "XXX"));
  auto report = check_revisions(repo, "HEAD", "");
  EXPECT_EQ(rules(report.violations), std::vector<std::string>{"history-modified@4"})
      << dump(report.violations);
}

}  // namespace
}  // namespace ib::govern
