// `inferbench gate --db`: the checks that read stored runs, end to end on git repositories in
// temporary folders with serve-sim sweeps at the base and head commits (docs/gate.md): the seed's
// no-op change, an append-only change that alters an existing point, and a good change whose
// sweep and evals pass.
#include <fmt/format.h>

#include "e2e_util.h"
#include "govern/test_repo.h"

namespace ib::e2e {
namespace {

constexpr const char* kGatePolicy =
    "upstream-images:\n  serve-sim: [\"inferbench/serve-sim\"]\n"
    "deprecated:\n  models:\n  - { model: \"meta-llama/Llama-2-*\", from: 2026-01-31 }\n";

std::string changelog_entry(const std::string& key, const std::string& what, int pr,
                            bool append_only = false) {
  return fmt::format(
      "- config-keys:\n    - {}\n  description:\n    - \"{}\"\n  pr-link: "
      "https://github.com/o/r/pull/{}\n{}",
      key, what, pr, append_only ? "  append-only: true\n" : "");
}

// The seed's key (examples/noop-change), on a small fast workload: on this path serve-sim never
// reads SIM_MINIMAX_ALLOW_CUSTOM_AR.
std::string seed_recipe(const std::string& env) {
  return "minimaxm2-fp4-mi355x-servesim:\n"
         "  image: inferbench/serve-sim\n  model: MiniMaxAI/MiniMax-M2\n"
         "  model-prefix: minimaxm2\n  precision: fp4\n  framework: serve-sim\n"
         "  runner: local\n  multinode: false\n"
         "  serve:\n"
         "    command: [inferbench, serve-sim, --hardware, MI355X, --model-preset, minimax-m2,\n"
         "              --quantization, \"{precision}\", --tp, \"{tp}\", --model, "
         "\"{served-model}\",\n"
         "              --host, \"{host}\", --port, \"{port}\", --time-scale, \"50\"]\n" +
         env +
         "  workload: { prompts-per-conc: 1, min-prompts: 2, warmups-per-conc: 0 }\n"
         "  scenarios:\n"
         "    fixed-seq-len:\n"
         "    - { isl: 64, osl: 8, search-space: [{ tp: 4, conc-list: [2] }] }\n";
}

// A key with an eval row (8k1k at concurrencies 16 and 32: the eval at 32), serve-sim answering
// 95% of GSM8K right.
std::string gate_eval_recipe(const std::string& env) {
  return "simeval:\n  image: inferbench/serve-sim\n  model: sim-eval-model\n"
         "  model-prefix: simprefix\n  precision: bf16\n  framework: serve-sim\n"
         "  runner: local\n  multinode: false\n"
         "  serve:\n"
         "    command: [inferbench, serve-sim, --time-scale, \"50\",\n"
         "              --model, \"{served-model}\", --host, \"{host}\", --port, \"{port}\",\n"
         "              --gsm8k-correct, \"0.95\"]\n" +
         env +
         "  workload: { prompts-per-conc: 1, min-prompts: 2, warmups-per-conc: 0 }\n"
         "  scenarios:\n"
         "    fixed-seq-len:\n"
         "    - isl: 8192\n"
         "      osl: 1024\n"
         "      search-space:\n"
         "      - { tp: 1, conc-list: [16, 32] }\n";
}

class GateRuns : public ::testing::Test {
 protected:
  govern::TestRepo repo;
  TempDir dir;

  fs::path db() const { return dir.path() / "runs" / "inferbench.db"; }

  void sweep(const std::string& tag) {
    auto r = run_inferbench(
        {"sweep", (repo.root() / "recipes" / "r.yaml").string(), "--runs-dir",
         (dir.path() / "runs").string(), "--eval-limit", "100", "--point-timeout", "120"},
        dir.path() / ("sweep-" + tag + ".log"));
    ASSERT_EQ(r.exit.code, 0) << r.output;
  }

  // The gate's JSON report and its markdown comment.
  std::pair<boost::json::object, std::string> gate(const std::vector<std::string>& extra = {},
                                                   bool with_db = true) {
    const fs::path md = dir.path() / "gate.md";
    std::vector<std::string> args = {
        "gate", "-C",     repo.root().string(), "--base",    "HEAD~1", "--head",
        "HEAD", "--json", "--markdown",         md.string(), "--date", "2026-12-01"};
    if (with_db) args.insert(args.end(), {"--db", db().string()});
    args.insert(args.end(), extra.begin(), extra.end());
    static int calls = 0;  // one log per call: run_inferbench appends
    auto r = run_inferbench(args, dir.path() / fmt::format("gate-{}.log", ++calls));
    EXPECT_EQ(r.exit.code, 0) << r.output;
    boost::system::error_code ec;
    auto v = boost::json::parse(r.output, ec);
    EXPECT_FALSE(ec) << r.output;
    auto text = read_file(md);
    EXPECT_TRUE(text.ok());
    return {ec ? boost::json::object() : v.as_object(), text.ok() ? *text : ""};
  }
};

std::string check_verdict(const boost::json::object& report, int number) {
  for (const auto& c : report.at("checks").as_array()) {
    if (c.at("number").as_int64() == number) return std::string(c.at("verdict").as_string());
  }
  return "missing";
}

std::string evidence_of(const boost::json::object& report, int number) {
  std::string out;
  for (const auto& c : report.at("checks").as_array()) {
    if (c.at("number").as_int64() != number) continue;
    for (const auto& e : c.at("evidence").as_array()) {
      out += std::string(e.at("text").as_string()) + " | " + std::string(e.at("what").as_string()) +
             "\n";
    }
  }
  return out;
}

// The seed's pull request: a variable the server never reads on this path. Swept at base and
// head, the gate fails on check 10 with the environment-read evidence; the changelog and the
// image pass, and the sweep at the head commit counts for check 1.
TEST_F(GateRuns, TheSeedsNoOpChangeFailsCheckTenWithItsEnvironmentReads) {
  const std::string key = "minimaxm2-fp4-mi355x-servesim";
  repo.write("recipes/r.yaml", seed_recipe(""));
  repo.write("perf-changelog.yaml", changelog_entry(key, "Add MiniMax-M2 FP4 on MI355X", 1));
  repo.write("gate-policy.yaml", kGatePolicy);
  repo.commit("base");
  sweep("base");
  repo.write("recipes/r.yaml", seed_recipe("    env: { SIM_MINIMAX_ALLOW_CUSTOM_AR: \"1\" }\n"));
  repo.write("perf-changelog.yaml", changelog_entry(key, "Add MiniMax-M2 FP4 on MI355X", 1) + "\n" +
                                        changelog_entry(key, "Enable the custom all-reduce", 2));
  repo.commit("head");
  sweep("head");
  auto [report, md] = gate();
  EXPECT_EQ(report.at("verdict").as_string(), "fail") << md;
  EXPECT_EQ(check_verdict(report, 10), "fail") << md;
  const std::string ev = evidence_of(report, 10);
  EXPECT_NE(ev.find("serve.env.SIM_MINIMAX_ALLOW_CUSTOM_AR"), std::string::npos) << ev;
  EXPECT_NE(ev.find("never read"), std::string::npos) << ev;
  EXPECT_EQ(check_verdict(report, 2), "pass") << md;
  EXPECT_EQ(check_verdict(report, 4), "pass") << md;
  EXPECT_EQ(check_verdict(report, 1), "pass") << md;
  EXPECT_NE(md.find("| 10 | The change has an effect | verify | ❌ fail |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("never read"), std::string::npos) << md;
  std::printf("%s\n", md.c_str());
}

// An append-only entry whose change adds a point and also gives every existing point a server
// argument: check 9 fails naming the point, from the recipes alone (no run needed).
TEST_F(GateRuns, AnAppendOnlyChangeThatAltersAnExistingPointFailsCheckNine) {
  repo.write("recipes/r.yaml", govern::kVKeyRecipe);
  repo.write("perf-changelog.yaml", changelog_entry("v-key", "Add v-key", 1));
  repo.commit("base");
  std::string head = govern::kVKeyRecipe;
  const std::string port = R"(--port, "{port}"])";
  head.replace(head.find(port), port.size(), R"(--port, "{port}", --max-num-seqs, "64"])");
  const std::string concs = "conc-list: [4, 8]";
  head.replace(head.find(concs), concs.size(), "conc-list: [4, 8, 16]");
  repo.write("recipes/r.yaml", head);
  repo.write("perf-changelog.yaml", changelog_entry("v-key", "Add v-key", 1) + "\n" +
                                        changelog_entry("v-key", "conc 16", 2, true));
  repo.commit("head");
  auto [report, md] = gate({}, /*with_db=*/false);
  EXPECT_EQ(check_verdict(report, 9), "fail") << md;
  const std::string ev = evidence_of(report, 9);
  EXPECT_NE(ev.find("m_1k1k tp 8 conc 4 |"), std::string::npos) << ev;
  EXPECT_NE(ev.find("m_1k1k tp 8 conc 8 |"), std::string::npos) << ev;
  EXPECT_EQ(ev.find("conc 16"), std::string::npos) << ev;  // the new point is allowed
  EXPECT_NE(ev.find("max-num-seqs"), std::string::npos) << ev;
  EXPECT_NE(md.find("| 9 | Append-only isolation | Check 12 | ❌ fail |"), std::string::npos) << md;
  std::printf("%s\n", md.c_str());
}

// A good change: a variable the server reads (shown as max_num_seqs), swept with its eval at the
// head commit: every check passes or does not apply; the same runs reused under evals-only fail
// check 3.
TEST_F(GateRuns, AGoodChangeWithASweepAndPassingEvalsPassesEveryCheck) {
  repo.write("recipes/r.yaml", gate_eval_recipe(""));
  repo.write("perf-changelog.yaml", changelog_entry("simeval", "Add simeval", 1));
  repo.write("gate-policy.yaml", kGatePolicy);
  repo.commit("base");
  sweep("base");
  repo.write("recipes/r.yaml", gate_eval_recipe("    env: { SIM_MAX_NUM_SEQS: \"8\" }\n"));
  repo.write("perf-changelog.yaml", changelog_entry("simeval", "Add simeval", 1) + "\n" +
                                        changelog_entry("simeval", "Fewer sequences", 2));
  repo.commit("head");
  sweep("head");
  auto [report, md] = gate();
  EXPECT_EQ(report.at("verdict").as_string(), "pass") << md;
  for (int n = 1; n <= 10; ++n) {
    const std::string v = check_verdict(report, n);
    EXPECT_TRUE(v == "pass" || v == "n/a") << "check " << n << ": " << v << "\n" << md;
  }
  EXPECT_NE(evidence_of(report, 1).find("evals at conc 32 passing"), std::string::npos)
      << evidence_of(report, 1);
  // The head run's server was traced for writes into the engine's files, and made none.
  EXPECT_NE(md.find("the servers of 1 head run wrote no engine file at run time"),
            std::string::npos)
      << md;
  std::printf("%s\n", md.c_str());

  // The base run is not of a commit in the range: reusing it fails check 3.
  auto [reuse, reuse_md] = gate({"--reuse", "1"});
  EXPECT_EQ(check_verdict(reuse, 3), "fail") << reuse_md;
  EXPECT_NE(evidence_of(reuse, 3).find("not of a commit in the range"), std::string::npos)
      << evidence_of(reuse, 3);
}

// A serve script that rewrites a file of the installed engine before starting it: the change's
// text shows nothing the pattern scan knows, the environment tracer sees the write, check 7 fails
// naming the file.
TEST_F(GateRuns, AWriteIntoTheEnginesInstalledFilesAtRunTimeFailsCheckSeven) {
  const fs::path engine = dir.path() / "venv" / "lib" / "site-packages" / "engine";
  fs::create_directories(engine);
  repo.write("recipes/r.yaml", gate_eval_recipe(""));
  repo.write("perf-changelog.yaml", changelog_entry("simeval", "Add simeval", 1));
  repo.write("gate-policy.yaml", kGatePolicy);
  repo.commit("base");
  std::string head = gate_eval_recipe("");
  const std::string from = "    command: [inferbench, serve-sim,";
  head.replace(head.find(from), from.size(),
               "    command: [/bin/sh, -c, 'echo \"# tuned\" >> \"$0\"/attn.py; exec \"$@\"', \"" +
                   engine.string() + "\", " INFERBENCH_BIN ", serve-sim,");
  repo.write("recipes/r.yaml", head);
  repo.write("perf-changelog.yaml", changelog_entry("simeval", "Add simeval", 1) + "\n" +
                                        changelog_entry("simeval", "Tune attention", 2));
  repo.commit("head");
  sweep("head");
  auto [report, md] = gate();
  EXPECT_EQ(check_verdict(report, 7), "fail") << md;
  const std::string ev = evidence_of(report, 7);
  EXPECT_NE(ev.find((engine / "attn.py").string() + " | simeval: "), std::string::npos) << ev;
  EXPECT_NE(ev.find("wrote into the engine's installed files at run time"), std::string::npos)
      << ev;
}

}  // namespace
}  // namespace ib::e2e
