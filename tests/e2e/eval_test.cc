// `inferbench eval` against `inferbench serve-sim --gsm8k-correct`: the simulator answers a known
// share of the problems correctly (some only for the flexible filter), so the measured accuracy,
// both filters and the threshold gate are checked against the truth.
#include <csignal>
#include <cmath>
#include <fstream>

#include "e2e_util.h"

namespace ib::e2e {
namespace {

// Fast simple-model timing: an eval of hundreds of problems takes a few seconds.
std::vector<std::string> eval_sim_args(const std::string& correct, const std::string& flexible_only) {
  return {"--timing-model", "simple",        "--time-scale",          "50",
          "--gsm8k-correct", correct,        "--gsm8k-flexible-only", flexible_only};
}

double number(const boost::json::object& o, std::string_view key) {
  return o.at(key).to_number<double>();
}

class Eval : public ::testing::Test {
 protected:
  TempDir dir;
};

TEST_F(Eval, MeasuredAccuracyMatchesTheSimulatorsTruthForBothFilters) {
  SimServer sim(dir.path(), eval_sim_args("0.95", "0.1"));
  ASSERT_TRUE(sim.running());
  const fs::path out = dir.path() / "eval.json";
  const fs::path samples = dir.path() / "samples.jsonl";
  auto r = run_inferbench({"eval", "--endpoint", sim.url(), "--limit", "400", "--concurrency",
                           "32", "--min-score", "0.8", "--output", out.string(), "--samples",
                           samples.string()},
                          dir.path() / "eval.log");
  ASSERT_EQ(r.exit.code, 0) << r.output;
  const auto j = read_json(out);
  // Of the first 400 problems floor(400 x 0.95) = 380 are answered right, and floor(380 x 0.1) = 38
  // of those without the "#### N" line.
  EXPECT_EQ(j.at("n_eff").as_int64(), 400);
  EXPECT_EQ(j.at("correct_flexible").as_int64(), 380);
  EXPECT_EQ(j.at("correct_strict").as_int64(), 342);
  const double flex = number(j, "exact_match,flexible-extract");
  const double flex_se = number(j, "exact_match_stderr,flexible-extract");
  EXPECT_DOUBLE_EQ(flex, 0.95);
  EXPECT_NEAR(flex_se, std::sqrt(400 * 0.95 * 0.05 / 399 / 400), 1e-12);
  // The accuracy the simulator was set to lies within one standard error of the measured one.
  EXPECT_LE(std::abs(flex - 0.95), flex_se);
  EXPECT_DOUBLE_EQ(number(j, "em_strict"), 342.0 / 400);
  EXPECT_EQ(j.at("gate").as_object().at("passed").as_bool(), true);
  EXPECT_EQ(std::string(j.at("gate").as_object().at("threshold_source").as_string()),
            "--min-score");
  // One sample line a problem, with what was extracted and the target.
  std::ifstream in(samples);
  std::string line;
  int lines = 0, strict_invalid = 0;
  while (std::getline(in, line)) {
    auto s = boost::json::parse(line).as_object();
    EXPECT_EQ(s.at("doc_id").as_int64(), lines);
    EXPECT_TRUE(s.at("answered").as_bool());
    if (s.at("strict_match").as_string() == "[invalid]") ++strict_invalid;
    if (lines == 0) {
      EXPECT_EQ(std::string(s.at("target").as_string()), "18");
    }
    ++lines;
  }
  EXPECT_EQ(lines, 400);
  EXPECT_EQ(strict_invalid, 38);
  // The text summary names both filters.
  EXPECT_NE(r.output.find("strict-match"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("gate: passed"), std::string::npos) << r.output;
}

TEST_F(Eval, TheGateFailsBelowThresholdNamingTheFilterAndTheThresholdsSource) {
  SimServer sim(dir.path(), eval_sim_args("0.80", "0"));
  ASSERT_TRUE(sim.running());
  const fs::path thresholds = dir.path() / "thresholds.yaml";
  std::ofstream(thresholds) << "default:\n  gsm8k: 0.75\nmodels:\n  sim:\n    gsm8k: 0.90\n";
  auto pass = run_inferbench({"eval", "--endpoint", sim.url(), "--limit", "100", "--thresholds",
                              thresholds.string(), "--json"},
                             dir.path() / "pass.log");
  ASSERT_EQ(pass.exit.code, 0) << pass.output;
  auto pj = boost::json::parse(pass.output).as_object();
  EXPECT_DOUBLE_EQ(number(pj, "em_strict"), 0.80);
  EXPECT_NE(std::string(pj.at("gate").as_object().at("threshold_source").as_string())
                .find("default.gsm8k in"),
            std::string::npos);
  auto fail = run_inferbench({"eval", "--endpoint", sim.url(), "--limit", "100", "--thresholds",
                              thresholds.string(), "--model-prefix", "sim",
                              "--prompt-style", "completions"},
                             dir.path() / "fail.log");
  EXPECT_EQ(fail.exit.code, 1) << fail.output;
  EXPECT_NE(fail.output.find("gate: FAILED"), std::string::npos) << fail.output;
  EXPECT_NE(fail.output.find("exact_match,strict-match 0.8000 is below the threshold 0.9000 "
                             "(models.sim.gsm8k in " +
                             thresholds.string() + ")"),
            std::string::npos)
      << fail.output;
  EXPECT_NE(fail.output.find("exact_match,flexible-extract 0.8000 is below"), std::string::npos)
      << fail.output;
}

TEST_F(Eval, AServerThatAnswersNothingUsefulFailsTheGateAndAnUnreachableOneIsAnError) {
  // Without --gsm8k-correct the simulator answers with words and no numbers: both filters miss.
  SimServer sim(dir.path(), {"--timing-model", "simple", "--time-scale", "50"});
  ASSERT_TRUE(sim.running());
  auto r = run_inferbench({"eval", "--endpoint", sim.url(), "--limit", "20", "--json"},
                          dir.path() / "words.log");
  EXPECT_EQ(r.exit.code, 1) << r.output;
  auto j = boost::json::parse(r.output.substr(0, r.output.find('\n'))).as_object();
  EXPECT_EQ(j.at("gate").as_object().at("passed").as_bool(), false);
  EXPECT_EQ(j.at("n_eff").as_int64(), 20);
  EXPECT_LE(number(j, "em_flexible"), 0.1);
  // A port nobody listens on.
  auto gone = run_inferbench({"eval", "--endpoint", "http://127.0.0.1:1", "--limit", "5"},
                             dir.path() / "gone.log");
  EXPECT_EQ(gone.exit.code, 2) << gone.output;
  EXPECT_NE(gone.output.find("inferbench eval:"), std::string::npos) << gone.output;
}

TEST_F(Eval, InterruptWritesThePartialScoresAndExits130) {
  // About 1 s per answer (20 ms a word): 200 problems at concurrency 2 would take minutes.
  SimServer sim(dir.path(), {"--timing-model", "simple", "--decode-base-ms", "20",
                             "--decode-per-running-ms", "0", "--gsm8k-correct", "1"});
  ASSERT_TRUE(sim.running());
  const fs::path out = dir.path() / "partial.json";
  SpawnOptions so;
  so.argv = {INFERBENCH_BIN, "eval",          "--endpoint", sim.url(),   "--limit",
             "200",          "--concurrency", "2",          "--output", out.string()};
  so.log_path = dir.path() / "partial.log";
  auto child = ChildProcess::spawn(so);
  ASSERT_TRUE(child.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));  // a few problems answered
  ::kill(child->pid(), SIGINT);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!child->poll() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  auto exit = child->poll();
  ASSERT_TRUE(exit.has_value()) << "eval did not stop after SIGINT";
  EXPECT_EQ(exit->code, 130) << file_tail(dir.path() / "partial.log");
  const auto j = read_json(out);
  EXPECT_TRUE(j.at("interrupted").as_bool());
  const int64_t answered = j.at("n_eff").as_int64();
  EXPECT_GT(answered, 0);
  EXPECT_LT(answered, 200);
  EXPECT_EQ(j.at("failed").as_int64(), 0);  // cut by the interrupt, not failed
  EXPECT_EQ(j.at("not_run").as_int64(), 200 - answered);
  EXPECT_EQ(j.at("correct_strict").as_int64(), answered);
  EXPECT_FALSE(j.at("gate").as_object().at("passed").as_bool());
  EXPECT_TRUE(sim.running());
}

TEST_F(Eval, BadInputIsAUsageErrorNamingTheOptionFileAndLine) {
  const fs::path bad = dir.path() / "bad.jsonl";
  std::ofstream(bad) << "{\"question\": \"q\", \"answer\": \"#### 1\"}\n{\"question\": 3}\n";
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--prompt-style", "bogus"}, "--prompt-style must be chat, chat-single-turn or completions"},
      {{"--task", "mmlu"}, "--task must be inferencex or lm-eval"},
      {{"--dataset", bad.string()}, bad.string() + ":2: field \"question\" must be a string"},
      {{"--num-fewshot", "100"}, "--num-fewshot 100 is more than the 64 few-shot problems"},
      {{"--max-tokens", "10", "--max-model-len", "4096"}, "not both"},
      {{"--min-score", "1.5"}, "--min-score"},
      {{"--concurrency", "0"}, "--concurrency"},
      {{"--model-prefix", "dsr1"}, "--model-prefix selects a threshold of --thresholds"},
      {{"--output", (dir.path() / "same").string(), "--samples", (dir.path() / "same").string()},
       "--samples"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"eval", "--endpoint", "http://127.0.0.1:1"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto r = run_inferbench(args, dir.path() / "bad.log");
    EXPECT_EQ(r.exit.code, 2) << c.args.front() << ": " << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args.front() << ": " << r.output;
  }
}

}  // namespace
}  // namespace ib::e2e
