#include "verify/verdict.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace ib::verify {
namespace {

namespace json = boost::json;

ServerObservation observed(json::object settings, std::map<std::string, bool> reads,
                           json::object identity = {}) {
  ServerObservation o;
  o.observed = true;
  o.config.engine = "sglang";
  o.config.settings = std::move(settings);
  o.env_read = std::move(reads);
  o.identity = metrics::Identity::from_json(identity);
  return o;
}

struct Case {
  const char* name;
  std::vector<ChangedField> fields;
  json::object base_settings, head_settings;
  std::map<std::string, bool> base_reads, head_reads;
  std::vector<std::string> field_verdicts;
  std::string key_verdict;
};

TEST(JudgeKey, FieldAndKeyVerdicts) {
  const json::object tp4{{"tp_size", 4}, {"port", 30000}};
  const json::object tp4_other_port{{"tp_size", 4}, {"port", 30001}, {"random_seed", 77}};
  const json::object tp8{{"tp_size", 8}, {"port", 30000}};
  const Case cases[] = {
      {"variable nobody reads",
       {{"serve.env.X", "added", ""}},
       tp4,
       tp4_other_port,
       {{"X", false}},
       {{"X", false}},
       {"never read"},
       "no-op: skip the sweep"},
      {"variable read and the config moves",
       {{"serve.env.X", "added", ""}},
       tp4,
       tp8,
       {{"X", false}},
       {{"X", true}},
       {"effective"},
       "effective: sweep"},
      {"variable read, nothing visible",
       {{"serve.env.X", "added", ""}},
       tp4,
       tp4,
       {{"X", false}},
       {{"X", true}},
       {"read"},
       "effective: sweep"},
      {"unread variable next to an effective argument",
       {{"serve.env.X", "added", ""}, {"serve.extra-args", "changed", ""}},
       tp4,
       tp8,
       {{"X", false}},
       {{"X", false}},
       {"never read", "effective"},
       "effective: sweep"},
      {"argument with no visible effect",
       {{"serve.extra-args", "changed", ""}},
       tp4,
       tp4,
       {},
       {},
       {"no effect"},
       "no-op: skip the sweep"},
      {"workload only",
       {{"scenarios.fixed-seq-len[0].search-space[0].conc-list", "changed", ""}},
       tp4,
       tp4,
       {},
       {},
       {"workload"},
       "effective: sweep"},
      {"assertions only",
       {{"expect.settings.tp_size", "changed", ""}},
       tp4,
       tp4,
       {},
       {},
       {"no effect"},
       "no-op: skip the sweep"},
      {"runner hardware",
       {{"runner", "runner", ""}},
       tp4,
       tp4,
       {},
       {},
       {"unverified"},
       "effective: sweep (not every change could be verified)"},
      {"untraced variable, config identical",
       {{"serve.env.Y", "added", ""}},
       tp4,
       tp4,
       {},
       {},
       {"unverified"},
       "effective: sweep (not every change could be verified)"},
  };
  for (const Case& c : cases) {
    auto b = observed(c.base_settings, c.base_reads);
    auto h = observed(c.head_settings, c.head_reads);
    if (c.base_reads.empty()) b.env_read.reset();
    if (c.head_reads.empty()) h.env_read.reset();
    KeyVerdict v = judge_key("k", "modified", c.fields, &b, &h);
    ASSERT_EQ(v.fields.size(), c.field_verdicts.size()) << c.name;
    for (size_t i = 0; i < v.fields.size(); ++i) {
      EXPECT_EQ(v.fields[i].verdict, c.field_verdicts[i]) << c.name << ": " << v.fields[i].evidence;
    }
    EXPECT_EQ(v.verdict, c.key_verdict) << c.name;
    EXPECT_EQ(v.no_op(), c.key_verdict.rfind("no-op", 0) == 0) << c.name;
  }
}

// A disaggregated deployment's variable is judged on the role it was set for: read there, it
// counts; read only by another role, it is a no-op where it is set ("other role"); read by none,
// never read; and no "not read" verdict while the role (or, for never read, any role) was not
// fully seen by the tracer.
TEST(JudgeKey, ARolesVariableIsJudgedOnThatRolesProcesses) {
  RoleReads reads;
  reads.read["prefill"] = {{"A", true}, {"B", false}, {"C", false}};
  reads.read["decode"] = {{"A", false}, {"B", true}, {"C", false}};
  reads.read["router"] = {{"A", false}, {"B", false}, {"C", false}};
  ServerObservation base = observed({}, {{"A", true}, {"B", true}, {"C", false}});
  base.role_reads = reads;
  ServerObservation head = base;
  std::vector<ChangedField> fields;
  for (const char* var : {"A", "B", "C"}) {
    ChangedField f;
    f.path = std::string("serve.prefill.env.") + var;
    f.kind = "changed";
    fields.push_back(f);
  }
  auto kv = judge_key("k", "modified", fields, &base, &head);
  ASSERT_EQ(kv.fields.size(), 3u);
  EXPECT_EQ(kv.fields[0].verdict, "read");
  EXPECT_EQ(kv.fields[1].verdict, "other role");
  EXPECT_NE(kv.fields[1].evidence.find("set on prefill, read only by decode"), std::string::npos);
  EXPECT_EQ(kv.fields[2].verdict, "never read");
  // A blind spot in the prefill role: B and C can no longer be called not read there.
  head.role_reads->blind_spots["prefill"] = {"pid 7 (/bin/sh): a shell"};
  kv = judge_key("k", "modified", fields, &base, &head);
  EXPECT_EQ(kv.fields[1].verdict, "unverified");
  EXPECT_EQ(kv.fields[2].verdict, "unverified");
  // One in the router: C (read by no role) is unverified, B (read by decode) still other role.
  head.role_reads->blind_spots.clear();
  head.role_reads->blind_spots["router"] = {"pid 9 (/usr/bin/static): not traced"};
  kv = judge_key("k", "modified", std::vector<ChangedField>{fields[1], fields[2]}, &base, &head);
  EXPECT_EQ(kv.fields[0].verdict, "other role");
  EXPECT_EQ(kv.fields[1].verdict, "unverified");
  EXPECT_FALSE(kv.no_op());
}

TEST(JudgeKey, PortsAndRandomSeedsAreNotDifferences) {
  EffectiveConfig a, b;
  a.settings = {
      {"port", 1}, {"random_seed", 5}, {"nccl_port", 9}, {"listen", "http://x:1"}, {"tp_size", 4}};
  b.settings = {
      {"port", 2}, {"random_seed", 6}, {"nccl_port", 8}, {"listen", "http://x:2"}, {"tp_size", 4}};
  EXPECT_TRUE(stable_diff(a, b).empty());
  b.settings["tp_size"] = 8;
  auto d = stable_diff(a, b);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_TRUE(d.contains("tp_size"));
  EXPECT_TRUE(stable_diff(a, b, {"tp_size"}).empty());
}

TEST(JudgeKey, ServersThatCouldNotStartLeaveEveryServerFieldUnverified) {
  ServerObservation b = observed({}, {});
  ServerObservation h;
  h.error = "server exited during startup (exit code 1)";
  auto v = judge_key("k", "modified",
                     {{"serve.env.X", "added", ""}, {"scenarios.x", "changed", ""}}, &b, &h);
  ASSERT_EQ(v.fields.size(), 2u);
  EXPECT_EQ(v.fields[0].verdict, "unverified");
  EXPECT_EQ(v.fields[1].verdict, "workload");
  EXPECT_FALSE(v.no_op());
  ASSERT_EQ(v.notes.size(), 1u);
  EXPECT_NE(v.notes[0].find("exit code 1"), std::string::npos);
}

TEST(JudgeKey, AddedAndRemovedKeys) {
  EXPECT_EQ(judge_key("k", "added", {}, nullptr, nullptr).verdict, "effective: sweep");
  EXPECT_EQ(judge_key("k", "removed", {}, nullptr, nullptr).verdict, "removed: nothing to sweep");
}

TEST(Confounders, IdentityFieldsThatDifferBesidesTheChange) {
  json::object a{{"image", "sglang:0.5.12"},
                 {"model", "org/m"},
                 {"engine-version", "0.5.12"},
                 {"tool-version", "0.1.0"},
                 {"runner", "mi355x"}};
  json::object b{{"image", "sglang:0.5.22"},
                 {"model", "org/m-0528"},
                 {"engine-version", "0.5.22"},
                 {"tool-version", "0.1.0"},
                 {"runner", "mi355x"}};
  ServerObservation base, head;
  base.identity = metrics::Identity::from_json(a);
  head.identity = metrics::Identity::from_json(b);
  std::vector<std::string> texts;
  for (const auto& c : server_confounders(base, head)) texts.push_back(c.text());
  // One field list and one spelling for every command (metrics/identity.h).
  EXPECT_EQ(texts, (std::vector<std::string>{"model: org/m vs org/m-0528",
                                             "image: sglang:0.5.12 vs sglang:0.5.22",
                                             "engine version: 0.5.12 vs 0.5.22"}));
  EXPECT_TRUE(server_confounders(base, base).empty());
  // Known on one side only: the other cannot be shown to be the same.
  head.identity.set(metrics::IdentityField::kHardware, "H100");
  texts.clear();
  for (const auto& c : server_confounders(base, head)) texts.push_back(c.text());
  ASSERT_EQ(texts.size(), 4u);
  EXPECT_EQ(texts[2], "hardware: unknown vs H100");
}

// A variable nobody was seen reading is "never read" only where the tracer saw everything
// (issue 30: a false no-op is the worst defect).
TEST(JudgeKey, NeverReadOnlyWithoutBlindSpots) {
  const json::object cfg{{"delay_ms", 5}};
  auto base = observed(cfg, {{"X", false}, {"LD_PRELOAD", false}});
  auto head = observed(cfg, {{"X", false}, {"LD_PRELOAD", false}});
  auto verdict_of = [&](const std::string& var) {
    return judge_key("k", "modified", {{"serve.env." + var, "added", ""}}, &base, &head);
  };
  auto v = verdict_of("X");
  EXPECT_EQ(v.fields[0].verdict, "never read");
  EXPECT_TRUE(v.no_op());

  // Variables the loader and libc consume are never claimed unread.
  v = verdict_of("LD_PRELOAD");
  EXPECT_EQ(v.fields[0].verdict, "unverified");
  EXPECT_NE(v.fields[0].evidence.find("dynamic loader"), std::string::npos);
  EXPECT_FALSE(v.no_op());

  // A shell in the head server: it may have expanded $X into an argument.
  head.blind_spots = {
      "pid 7 (/usr/bin/bash): a shell, which expands $VARIABLES without asking "
      "getenv"};
  v = verdict_of("X");
  EXPECT_EQ(v.fields[0].verdict, "unverified");
  EXPECT_NE(v.fields[0].evidence.find("head pid 7 (/usr/bin/bash): a shell"), std::string::npos)
      << v.fields[0].evidence;
  EXPECT_FALSE(v.no_op());
  EXPECT_EQ(v.verdict, "effective: sweep (not every change could be verified)");

  // ... and it did: the head value is an argument of a head process, of no base one.
  head.env = {{"X", "250"}};
  base.commands = {"serve-sim --port 8001 --delay 5"};
  head.commands = {"bash -c exec serve-sim --port 8002 --delay \"$X\"",
                   "serve-sim --port 8002 --delay 250"};
  v = verdict_of("X");
  EXPECT_EQ(v.fields[0].verdict, "effective");
  EXPECT_NE(v.fields[0].evidence.find("'250' is an argument"), std::string::npos)
      << v.fields[0].evidence;
  // A value the base servers had as an argument too proves nothing.
  base.commands.push_back("other --x=250");
  EXPECT_EQ(verdict_of("X").fields[0].verdict, "unverified");
}

TEST(JudgeKey, TraceProcessesAndBlindSpotsAreReadFromTheStoredReport) {
  ServerObservation o;
  read_trace_processes(json::parse(R"({"processes": [{"pid": 3, "cmdline": "engine --a 1"}],
                      "blind_spots": [{"pid": 3, "exe": "/bin/engine", "what": "not traced"}]})")
                           .as_object(),
                       &o);
  EXPECT_EQ(o.commands, std::vector<std::string>{"engine --a 1"});
  EXPECT_EQ(o.blind_spots, std::vector<std::string>{"pid 3 (/bin/engine): not traced"});
}

TEST(JudgeKey, EngineFilesWrittenAtRunTimeAreNoted) {
  std::string writes = R"({"engine_writes": [)";
  for (int i = 0; i < 7; ++i) {
    writes += fmt::format(R"({}{{"pid": {}, "exe": "/usr/bin/sed", "function": "rename",
                             "path": "/v/site-packages/vllm/m{}.py"}})",
                          i == 0 ? "" : ",", 10 + i, i);
  }
  writes += "]}";
  ServerObservation b = observed({}, {{"X", false}});
  ServerObservation h = observed({}, {{"X", true}});
  read_trace_processes(json::parse(writes).as_object(), &h);
  ASSERT_EQ(h.engine_writes.size(), 7u);
  EXPECT_EQ(h.engine_writes[0], "/v/site-packages/vllm/m0.py (pid 10 sed, rename)");
  auto v = judge_key("k", "modified", {{"serve.env.X", "added", ""}}, &b, &h);
  ASSERT_EQ(v.notes.size(), 6u);
  EXPECT_EQ(v.notes[0],
            "head server wrote an engine file at run time: /v/site-packages/vllm/m0.py (pid 10 "
            "sed, rename)");
  EXPECT_EQ(v.notes[5], "head server wrote 2 more engine files at run time");
  // A stored run from before writes were traced, and one that wrote nothing: no note.
  ServerObservation old = observed({}, {{"X", true}});
  read_trace_processes(json::parse(R"({"engine_writes": []})").as_object(), &old);
  EXPECT_TRUE(judge_key("k", "modified", {{"serve.env.X", "added", ""}}, &b, &old).notes.empty());
}

TEST(VerdictsMarkdown, SummaryTableAndEscaping) {
  KeyVerdict v;
  v.key = "k";
  v.status = "modified";
  v.fields.push_back({"serve.env.X", "set to \"a|b\"", "never read", "no process read it"});
  v.verdict = "no-op: skip the sweep";
  v.confounders.push_back(
      metrics::Confounder{metrics::IdentityField::kImage, {"a"}, {"b"}, true, false});
  std::string md = verdicts_markdown("title", {v});
  EXPECT_NE(md.find("1 config key checked: **1 no-op**, 0 to sweep."), std::string::npos) << md;
  EXPECT_NE(md.find("#### `k`: **no-op: skip the sweep**"), std::string::npos) << md;
  EXPECT_NE(md.find("| `serve.env.X` | set to \"a\\|b\" | never read | no process read it |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("- confounder: image: a vs b"), std::string::npos) << md;
  EXPECT_NE(verdicts_markdown("t", {}).find("No config key is affected"), std::string::npos);
}

}  // namespace
}  // namespace ib::verify
