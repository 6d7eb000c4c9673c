// Eval rows in a sweep (docs/evals.md): GSM8K runs on the server of its configuration's
// throughput points (one start), is stored and shown with its scores, gates the sweep without
// stopping throughput points, runs alone with evals-only, and is compared with its interval.
#include <fstream>

#include "e2e_util.h"
#include "store/store.h"

namespace ib::e2e {
namespace {

// serve-sim answering 95% of GSM8K right (5% of those flexible-only), simple fast timing. The 8k1k
// row at concurrencies 16 and 32 is marked for an eval at 32 (InferenceX: the highest and median
// concurrency of at least 16).
std::string eval_recipe(const std::string& correct) {
  return "simeval:\n  image: inferbench/serve-sim\n  model: sim-eval-model\n"
         "  model-prefix: simprefix\n  precision: bf16\n  framework: serve-sim\n"
         "  runner: local\n  multinode: false\n"
         "  serve:\n"
         "    command: [inferbench, serve-sim, --timing-model, simple, --time-scale, \"50\",\n"
         "              --model, \"{served-model}\", --host, \"{host}\", --port, \"{port}\",\n"
         "              --gsm8k-correct, \"" +
         correct +
         "\", --gsm8k-flexible-only, \"0.05\"]\n"
         "  workload: { prompts-per-conc: 1, min-prompts: 2, warmups-per-conc: 0 }\n"
         "  scenarios:\n"
         "    fixed-seq-len:\n"
         "    - isl: 8192\n"
         "      osl: 1024\n"
         "      search-space:\n"
         "      - { tp: 1, conc-list: [16, 32] }\n";
}

class SweepEval : public ::testing::Test {
 protected:
  TempDir dir;
  fs::path runs() const { return dir.path() / "runs"; }

  CommandResult sweep(const std::string& correct, std::vector<std::string> extra,
                      const std::string& tag) {
    const fs::path file = dir.path() / ("recipe-" + tag + ".yaml");
    std::ofstream(file) << eval_recipe(correct);
    std::vector<std::string> args = {"sweep",           file.string(), "--runs-dir",
                                     runs().string(),   "--eval-limit", "100",
                                     "--point-timeout", "120"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_inferbench(args, dir.path() / ("sweep-" + tag + ".log"));
  }

  boost::json::object show(const std::string& run) {
    auto r = run_inferbench({"show", run, "--db", (runs() / "inferbench.db").string(), "--json"},
                            dir.path() / "show.log");
    EXPECT_EQ(r.exit.code, 0) << r.output;
    return boost::json::parse(r.output).as_object();
  }

  std::string newest_run() {
    auto st = store::Store::open_existing(runs() / "inferbench.db");
    EXPECT_TRUE(st.ok());
    auto list = st->list_runs();
    EXPECT_TRUE(list.ok() && !list->empty());
    return list->front().run.name;
  }
};

bool is_eval(const boost::json::object& p) {
  return std::string(p.at("workload_key").as_string()).rfind("gsm8k:", 0) == 0;
}

TEST_F(SweepEval, TheEvalRunsOnTheThroughputServerAndIsStoredShownAndCompared) {
  auto r = sweep("0.95", {}, "a");
  ASSERT_EQ(r.exit.code, 0) << r.output;
  EXPECT_NE(r.output.find("gsm8k 5-shot chat"), std::string::npos) << r.output;
  const std::string run_a = newest_run();
  auto s = show(run_a);
  // One server configuration for both kinds of point: the eval used the same server start.
  ASSERT_EQ(s.at("server_configs").as_array().size(), 1u) << s;
  const auto& points = s.at("points").as_array();
  ASSERT_EQ(points.size(), 3u);
  int evals = 0;
  for (const auto& v : points) {
    const auto& p = v.as_object();
    EXPECT_EQ(std::string(p.at("status").as_string()), "ok") << p;
    if (!is_eval(p)) continue;
    ++evals;
    EXPECT_EQ(p.at("concurrency").as_int64(), 32);
    const auto& res = p.at("result").as_object();
    // floor(100 x 0.95) = 95 right, floor(95 x 0.05) = 4 of them without "#### N".
    EXPECT_EQ(res.at("correct_flexible").as_int64(), 95);
    EXPECT_EQ(res.at("correct_strict").as_int64(), 91);
    EXPECT_EQ(res.at("n_eff").as_int64(), 100);
    EXPECT_EQ(std::string(res.at("model_prefix").as_string()), "simprefix");
    EXPECT_TRUE(res.at("gate").as_object().at("passed").as_bool());
    // Its files in the configuration's folder.
    const fs::path files = std::string(p.at("artifacts_dir").as_string());
    EXPECT_TRUE(fs::exists(files / "eval_gsm8k_conc_32.json"));
    auto samples = read_file(files / "eval_gsm8k_conc_32_samples.jsonl");
    ASSERT_TRUE(samples.ok());
    EXPECT_EQ(std::count(samples->begin(), samples->end(), '\n'), 100);
  }
  EXPECT_EQ(evals, 1);
  auto text = run_inferbench({"show", run_a, "--db", (runs() / "inferbench.db").string()},
                             dir.path() / "show-text.log");
  EXPECT_NE(text.output.find("ACCURACY"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("0.9100 ± 0.0288"), std::string::npos) << text.output;

  // A head whose server gets 80% right: the accuracy change is measured and regressed.
  auto head = sweep("0.80", {"--min-score", "0.5"}, "b");
  ASSERT_EQ(head.exit.code, 0) << head.output;
  const std::string run_b = newest_run();
  auto cmp = run_inferbench({"compare", run_a, run_b, "--db", (runs() / "inferbench.db").string(),
                             "--json"},
                            dir.path() / "compare.log");
  ASSERT_EQ(cmp.exit.code, 0) << cmp.output;
  auto cj = boost::json::parse(cmp.output).as_object();
  int accuracy_pairs = 0;
  for (const auto& v : cj.at("pairs").as_array()) {
    const auto& p = v.as_object();
    if (!p.contains("accuracy")) continue;
    ++accuracy_pairs;
    const auto& strict = p.at("accuracy").as_object().at("exact_match,strict-match").as_object();
    EXPECT_NEAR(strict.at("base").to_number<double>(), 0.91, 1e-9);
    EXPECT_NEAR(strict.at("head").to_number<double>(), 0.76, 1e-9);  // 80 - floor(80 x 0.05)
    EXPECT_NEAR(strict.at("delta").to_number<double>(), -0.15, 1e-9);
    EXPECT_EQ(std::string(strict.at("verdict").as_string()), "regressed");
    const auto& ci = strict.at("ci").as_array();
    EXPECT_LT(ci[0].to_number<double>(), -0.15);
    EXPECT_LT(ci[1].to_number<double>(), 0);
  }
  EXPECT_EQ(accuracy_pairs, 1);
  auto cmp_text = run_inferbench(
      {"compare", run_a, run_b, "--db", (runs() / "inferbench.db").string()},
      dir.path() / "compare-text.log");
  EXPECT_NE(cmp_text.output.find("exact_match,strict-match"), std::string::npos)
      << cmp_text.output;
  EXPECT_NE(cmp_text.output.find("-15.0 pts"), std::string::npos) << cmp_text.output;
}

TEST_F(SweepEval, AFailedGateFailsTheSweepButNoThroughputPoint) {
  const fs::path thresholds = dir.path() / "thresholds.yaml";
  std::ofstream(thresholds) << "default:\n  gsm8k: 0.5\nmodels:\n  simprefix: { gsm8k: 0.99 }\n";
  // Fail-fast everywhere: a failed eval still stops nothing.
  auto r = sweep("0.95", {"--thresholds", thresholds.string(), "--fail-fast"}, "gate");
  EXPECT_EQ(r.exit.code, 1) << r.output;
  auto s = show(newest_run());
  int throughput_ok = 0;
  for (const auto& v : s.at("points").as_array()) {
    const auto& p = v.as_object();
    if (!is_eval(p)) {
      throughput_ok += p.at("status").as_string() == "ok";
      continue;
    }
    EXPECT_EQ(std::string(p.at("status").as_string()), "invalid");
    const auto& why = p.at("validity").as_array().at(0).as_object();
    EXPECT_EQ(std::string(why.at("kind").as_string()), "eval_gate");
    EXPECT_NE(std::string(why.at("message").as_string())
                  .find("exact_match,strict-match 0.9100 is below the threshold 0.9900 "
                        "(models.simprefix.gsm8k in"),
              std::string::npos)
        << why;
  }
  EXPECT_EQ(throughput_ok, 2);
}

TEST_F(SweepEval, EvalsOnlyStartsTheServerForTheEvalAlone) {
  auto r = sweep("0.95", {"--labels", "evals-only"}, "only");
  ASSERT_EQ(r.exit.code, 0) << r.output;
  auto s = show(newest_run());
  ASSERT_EQ(s.at("points").as_array().size(), 1u);
  EXPECT_TRUE(is_eval(s.at("points").as_array()[0].as_object()));
  // The server was started with the row's max-model-len (ISL + OSL + 256), and the eval asked
  // InferenceX's max_tokens for it: 9472 - 4096.
  const auto& res = s.at("points").as_array()[0].as_object().at("result").as_object();
  EXPECT_EQ(res.at("max_tokens").as_int64(), 5376);
  // Bad eval options are usage errors before anything runs.
  auto bad = sweep("0.95", {"--eval-prompt-style", "essay"}, "bad");
  EXPECT_EQ(bad.exit.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--eval-prompt-style must be chat"), std::string::npos) << bad.output;
  const fs::path broken = dir.path() / "broken.yaml";
  std::ofstream(broken) << "default:\n  gsm8k: 1.5\n";
  auto bad_t = sweep("0.95", {"--thresholds", broken.string()}, "bad-t");
  EXPECT_EQ(bad_t.exit.code, 2) << bad_t.output;
  EXPECT_NE(bad_t.output.find(broken.string() + ":2:10: default.gsm8k"), std::string::npos)
      << bad_t.output;
}

}  // namespace
}  // namespace ib::e2e
