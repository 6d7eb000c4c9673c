// `inferbench compare`: real serve-sim sweeps compared end to end (verdicts, confounders, repeats,
// revisions, folders, errors). Small points on the simple timing model, so each sweep takes
// about a second.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "core/command.h"
#include "e2e_util.h"

namespace ib::e2e {
namespace {

// One simulator configuration "sim" at conc 1 and 4; `decode_ms` sets its decode speed.
std::string compare_recipe(const std::string& decode_ms, const std::string& model) {
  return "sim:\n"
         "  image: inferbench/serve-sim\n"
         "  model: " +
         model +
         "\n"
         "  model-prefix: sim\n"
         "  precision: bf16\n"
         "  framework: serve-sim\n"
         "  runner: local\n"
         "  multinode: false\n"
         "  serve:\n"
         "    command: [inferbench, serve-sim, --timing-model, simple, --decode-base-ms, \"" +
         decode_ms +
         "\",\n"
         "              --model, \"{served-model}\", --host, \"{host}\", --port, \"{port}\"]\n"
         "  scenarios:\n"
         "    fixed-seq-len:\n"
         "    - isl: 32\n"
         "      osl: 16\n"
         "      search-space:\n"
         "      - { tp: 1, conc-list: [1, 4] }\n";
}

struct Fixture {
  TempDir dir;
  int calls = 0;
  fs::path db() const { return dir.path() / "runs" / "inferbench.db"; }

  fs::path write(const std::string& name, const std::string& text) {
    fs::path p = dir.path() / name;
    std::ofstream(p) << text;
    return p;
  }

  // Runs a sweep of `recipe_file`; returns the run's id (as text), or "" after a test failure.
  std::string sweep(const fs::path& recipe_file, std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"sweep",
                                     recipe_file.string(),
                                     "--runs-dir",
                                     (dir.path() / "runs").string(),
                                     "--startup-timeout",
                                     "30",
                                     "--point-timeout",
                                     "60",
                                     "--prompts-per-conc",
                                     "10",
                                     "--min-prompts",
                                     "20",
                                     "--no-server-metrics"};
    args.insert(args.end(), more.begin(), more.end());
    auto r = run_inferbench(args, dir.path() / fmt::format("sweep-{}.log", ++calls),
                            std::chrono::seconds(180));
    EXPECT_EQ(r.exit.code, 0) << r.output;
    // "run NAME (id N): ok; ..." — the last one printed.
    const auto at = r.output.rfind("(id ");
    if (at == std::string::npos) {
      ADD_FAILURE() << r.output;
      return "";
    }
    return r.output.substr(at + 4, r.output.find(')', at) - at - 4);
  }

  CommandResult compare(std::vector<std::string> args) {
    std::vector<std::string> a = {"compare", "--db", db().string()};
    a.insert(a.end(), args.begin(), args.end());
    // A log file per command: run_inferbench's log is the command's whole output.
    return run_inferbench(a, dir.path() / fmt::format("compare-{}.log", ++calls),
                          std::chrono::seconds(120));
  }

  boost::json::object compare_json(std::vector<std::string> args) {
    args.push_back("--json");
    auto r = compare(args);
    EXPECT_EQ(r.exit.code, 0) << r.output;
    boost::system::error_code ec;
    auto v = boost::json::parse(r.output, ec);
    if (ec || !v.is_object()) {
      ADD_FAILURE() << "not JSON: " << r.output;
      return {};
    }
    return v.as_object();
  }
};

const boost::json::object& metric(const boost::json::object& c, size_t pair, const char* key) {
  return c.at("pairs").as_array().at(pair).at("metrics").at(key).as_object();
}

std::string verdict_of(const boost::json::object& c) {
  return std::string(c.at("verdict").as_string());
}

TEST(CompareCli, FasterDecodeIsImprovedWithAnIntervalExcludingZero) {
  Fixture f;
  const std::string model = "sim-compare-" + std::to_string(::getpid());
  const std::string base = f.sweep(f.write("base.yaml", compare_recipe("4", model)));
  const std::string head = f.sweep(f.write("head.yaml", compare_recipe("2", model)));
  const auto c = f.compare_json({base, head});
  // The same runs' steady states (issue 31): the window at 95% of each point's concurrency.
  const auto steady = f.compare_json({base, head, "--window", "steady"});
  EXPECT_EQ(steady.at("window").as_string(), "steady");
  // Tokens per event describe the stream: shown, never judged better or worse.
  EXPECT_EQ(metric(c, 0, "mean_tokens_per_event").at("verdict").as_string(), "descriptive");
  ASSERT_EQ(steady.at("pairs").as_array().size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(metric(steady, i, "median_tpot_ms").at("verdict").as_string(), "improved");
    EXPECT_EQ(metric(steady, i, "median_tpot_ms").at("interval").as_string(), "bootstrap");
    EXPECT_GT(metric(steady, i, "output_throughput").at("delta_pct").to_number<double>(), 0);
  }
  // TTFT is not what the change touches; on a loaded test machine its small intervals can come
  // out either way, so the summary is IMPROVED, or MIXED by a TTFT verdict.
  EXPECT_TRUE(verdict_of(c).starts_with("IMPROVED") || verdict_of(c).starts_with("MIXED"))
      << verdict_of(c);
  EXPECT_FALSE(c.at("confounded").as_bool());
  ASSERT_EQ(c.at("pairs").as_array().size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const auto& tpot = metric(c, i, "median_tpot_ms");
    EXPECT_EQ(tpot.at("verdict").as_string(), "improved");
    EXPECT_EQ(tpot.at("interval").as_string(), "bootstrap");
    const auto& ci = tpot.at("bootstrap_ci_pct").as_array();
    EXPECT_LT(ci.at(1).to_number<double>(), 0);  // the whole interval below 0: faster
    const auto& intvty = metric(c, i, "median_intvty");
    EXPECT_EQ(intvty.at("verdict").as_string(), "improved");
    EXPECT_GT(intvty.at("bootstrap_ci_pct").as_array().at(0).to_number<double>(), 0);
  }
  // Per-token timing is what the setting changes, and the simulator keeps it however loaded the
  // machine is; throughput also counts the wall-clock gaps a loaded test machine adds (a stall
  // of the last request widens its interval), so only its direction is asserted.
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_GT(metric(c, i, "output_throughput").at("delta_pct").to_number<double>(), 0);
  }
  for (const char* key : {"median_tpot_ms", "median_itl_ms", "median_intvty"}) {
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(metric(c, i, key).at("verdict").as_string(), "improved")
          << key << " conc " << c.at("pairs").as_array().at(i).at("concurrency") << ": "
          << boost::json::serialize(metric(c, i, key));
    }
  }
  // The markdown for a PR comment: the verdict first.
  const fs::path md = f.dir.path() / "compare.md";
  auto r = f.compare({base, head, "--markdown", md.string(), "--exit-code"});
  // Exit 1 only when a metric regressed (a TTFT verdict can, by noise; see above).
  EXPECT_EQ(r.exit.code, c.at("counts").at("regressed").as_int64() > 0 ? 1 : 0) << r.output;
  auto text = read_file(md);
  ASSERT_TRUE(text.ok());
  // The same stored data and seed: the same verdict as the JSON's.
  EXPECT_TRUE(text->starts_with("### inferbench compare: " + verdict_of(c) + "\n")) << *text;
  EXPECT_NE(text->find("**improved**"), std::string::npos);
  // Swapped, the same change is a regression, and --exit-code says so.
  r = f.compare({head, base, "--exit-code"});
  EXPECT_EQ(r.exit.code, 1) << r.output;
  EXPECT_TRUE(r.output.find("VERDICT: REGRESSED") != std::string::npos ||
              r.output.find("VERDICT: MIXED") != std::string::npos)
      << r.output;
}

TEST(CompareCli, IdenticalSweepsShowNoSignificantChange) {
  Fixture f;
  const std::string model = "sim-compare-" + std::to_string(::getpid());
  const fs::path rec = f.write("same.yaml", compare_recipe("4", model));
  const std::string a = f.sweep(rec);
  const std::string b = f.sweep(rec);
  // A 5% minimum effect: the simulator's timers on a loaded test machine (tests run in parallel)
  // move tail latencies of two identical runs by a few percent.
  const auto c = f.compare_json({a, b, "--min-effect", "5"});
  // No metric the simulator times (TPOT, ITL, interactivity, throughput) changes. TTFT, a few
  // milliseconds of queueing and scheduling here, can move by more than 5% between two identical
  // runs when the machine is loaded (a p99 TTFT "improved" once in a full ctest run), so only
  // TTFT may carry a verdict; without one the whole verdict is no significant change.
  int changed = 0;
  for (const auto& pair : c.at("pairs").as_array()) {
    for (const auto& [key, m] : pair.at("metrics").as_object()) {
      const std::string verdict(m.at("verdict").as_string());
      if (verdict != "improved" && verdict != "regressed") continue;
      ++changed;
      EXPECT_NE(std::string(key).find("ttft"), std::string::npos)
          << key << " " << verdict << ": " << boost::json::serialize(m);
    }
  }
  EXPECT_EQ(c.at("counts").at("improved").as_int64() + c.at("counts").at("regressed").as_int64(),
            changed);
  if (changed == 0) {
    EXPECT_TRUE(verdict_of(c).starts_with("NO SIGNIFICANT CHANGE")) << verdict_of(c);
  }
  EXPECT_TRUE(c.at("confounders").as_array().empty());
  // The simulator's TPOT is nearly exact: it has a bootstrap interval, and no verdict. (How
  // narrow the interval is depends on the machine's load; no bound on it is asserted here.)
  const auto& tpot = metric(c, 0, "median_tpot_ms");
  EXPECT_EQ(tpot.at("verdict").as_string(), "no significant change");
  const auto& ci = tpot.at("bootstrap_ci_pct").as_array();
  ASSERT_EQ(ci.size(), 2u);
  EXPECT_LE(ci.at(0).to_number<double>(), ci.at(1).to_number<double>());
  // Both sides cover the same interactivity: the curves are compared at equal interactivity.
  const auto& curve = c.at("curves").as_array().at(0).as_object();
  EXPECT_TRUE(curve.at("equal_interactivity").at("overlap").as_bool());
}

TEST(CompareCli, ADifferentModelIsConfounded) {
  Fixture f;
  const std::string base = f.sweep(f.write("a.yaml", compare_recipe("4", "sim-model-a")));
  const std::string head = f.sweep(f.write("b.yaml", compare_recipe("2", "sim-model-b")));
  auto r = f.compare({base, head});
  EXPECT_EQ(r.exit.code, 0) << r.output;
  // Confounders come before any number.
  const auto conf = r.output.find("model: sim-model-a \u2192 sim-model-b (confounded)");
  ASSERT_NE(conf, std::string::npos) << r.output;
  EXPECT_LT(conf, r.output.find("METRICS"));
  EXPECT_NE(r.output.find("VERDICT: CONFOUNDED: not evidence for this change"), std::string::npos);
  auto c = f.compare_json({base, head});
  EXPECT_TRUE(c.at("confounded").as_bool());
  c = f.compare_json({"--accept-confounder", "model", base, head});  // one value per option
  EXPECT_FALSE(c.at("confounded").as_bool());
  EXPECT_FALSE(verdict_of(c).starts_with("CONFOUNDED")) << verdict_of(c);
  EXPECT_EQ(metric(c, 0, "median_tpot_ms").at("verdict").as_string(), "improved");
}

TEST(CompareCli, RepeatedRunsGiveAWelchInterval) {
  Fixture f;
  const std::string model = "sim-compare-" + std::to_string(::getpid());
  const std::string base =
      f.sweep(f.write("base.yaml", compare_recipe("4", model)), {"--repeat", "2"});
  const std::string head = f.sweep(f.write("head.yaml", compare_recipe("2", model)));
  // The repeats are distinguishable: two runs, each saying which repeat it is.
  auto show = run_inferbench({"show", base, "--db", f.db().string()}, f.dir.path() / "show.log");
  EXPECT_EQ(show.exit.code, 0) << show.output;
  EXPECT_NE(show.output.find("repeat 2 of 2 (group "), std::string::npos) << show.output;
  const auto c = f.compare_json({base, head});
  const auto& pair = c.at("pairs").as_array().at(0).as_object();
  EXPECT_EQ(pair.at("base_runs").as_int64(), 2);
  EXPECT_EQ(pair.at("head_runs").as_int64(), 1);
  const auto& tpot = metric(c, 0, "median_tpot_ms");
  EXPECT_EQ(tpot.at("interval").as_string(), "welch");
  EXPECT_EQ(tpot.at("verdict").as_string(), "improved");
  EXPECT_TRUE(tpot.at("welch_ci_pct").is_array());
  EXPECT_TRUE(tpot.at("bootstrap_ci_pct").is_array());
}

TEST(CompareCli, RevisionsAndFoldersOfResultFiles) {
  Fixture f;
  const std::string model = "sim-compare-" + std::to_string(::getpid());
  // A git checkout of the recipe: the sweep records its revision.
  const fs::path repo = f.dir.path() / "repo";
  fs::create_directories(repo);
  std::ofstream(repo / "r.yaml") << compare_recipe("4", model);
  const std::string git = "git -C " + repo.string() + " -c user.email=t@e -c user.name=t ";
  ASSERT_EQ(std::system(
                (git + "init -q && " + git + "add r.yaml && " + git + "commit -qm base >/dev/null")
                    .c_str()),
            0);
  const std::string base = f.sweep(repo / "r.yaml");
  const std::string head = f.sweep(f.write("head.yaml", compare_recipe("2", model)));
  auto rev = run_command({"git", "-C", repo.string(), "rev-parse", "--short=10", "HEAD"}, {});
  ASSERT_TRUE(rev.ok() && rev->ok());
  std::string sha = rev->out.substr(0, rev->out.find('\n'));
  auto c = f.compare_json({"--base-rev", sha, head});
  EXPECT_EQ(metric(c, 0, "median_tpot_ms").at("verdict").as_string(), "improved");
  EXPECT_NE(std::string(c.at("base").as_string()).find("rev " + sha), std::string::npos);
  // The same runs as folders of result files (conc_<C>.json and records beside them).
  const fs::path runs = f.dir.path() / "runs";
  std::vector<fs::path> folders;
  for (const auto& e : fs::directory_iterator(runs)) {
    if (e.is_directory()) folders.push_back(e.path());
  }
  std::sort(folders.begin(), folders.end());
  ASSERT_EQ(folders.size(), 2u);
  c = f.compare_json({folders[0].string(), folders[1].string()});
  EXPECT_EQ(metric(c, 0, "median_tpot_ms").at("verdict").as_string(), "improved");
  EXPECT_EQ(c.at("pairs").as_array().size(), 2u);
  EXPECT_TRUE(c.at("pairs").as_array().at(0).at("records").as_bool());
}

TEST(CompareCli, BadInputIsAUsageErrorNamingIt) {
  Fixture f;
  const fs::path empty = f.dir.path() / "empty";
  fs::create_directories(empty);
  const fs::path bad = f.dir.path() / "bad";
  fs::create_directories(bad);
  std::ofstream(bad / "conc_1.json") << "{\"request_throughput\": ";
  auto r = f.compare({empty.string(), bad.string()});
  EXPECT_EQ(r.exit.code, 2);
  EXPECT_NE(r.output.find(empty.string() + ": no result files"), std::string::npos) << r.output;
  const fs::path good = f.dir.path() / "good";
  fs::create_directories(good);
  std::ofstream(good / "r.json") << "{\"request_throughput\": 1.5, \"median_ttft_ms\": 20}";
  r = f.compare({good.string(), bad.string()});
  EXPECT_EQ(r.exit.code, 2);
  EXPECT_NE(r.output.find((bad / "conc_1.json").string() + ": not valid JSON"), std::string::npos)
      << r.output;
  // A metric twice in one result: which one would be read is up to the JSON library (issue 30).
  const fs::path twice = f.dir.path() / "twice";
  fs::create_directories(twice);
  std::ofstream(twice / "r.json") << "{\"request_throughput\": 1.5,\n \"request_throughput\": 3}";
  r = f.compare({good.string(), twice.string()});
  EXPECT_EQ(r.exit.code, 2);
  EXPECT_NE(r.output.find((twice / "r.json").string() +
                          ":2: key \"request_throughput\" appears twice in one object"),
            std::string::npos)
      << r.output;
  // The same side twice is a usage error, not a comparison.
  r = f.compare({good.string(), good.string()});
  EXPECT_EQ(r.exit.code, 2);
  EXPECT_NE(r.output.find("BASE and HEAD are the same"), std::string::npos) << r.output;
  // A vLLM-style result without records: the point estimate only, "no interval".
  const fs::path good2 = f.dir.path() / "good2";
  fs::create_directories(good2);
  fs::copy_file(good / "r.json", good2 / "r.json");
  const auto c = f.compare_json({good.string(), good2.string()});
  EXPECT_TRUE(verdict_of(c).starts_with("NO VERDICT")) << verdict_of(c);
  EXPECT_EQ(c.at("pairs").as_array().size(), 1u);
  EXPECT_NE(std::string(metric(c, 0, "median_ttft_ms").at("note").as_string())
                .find("no per-request records"),
            std::string::npos);
  r = f.compare({"no-such-run", "1"});
  EXPECT_EQ(r.exit.code, 2);
  EXPECT_NE(r.output.find("no results database"), std::string::npos) << r.output;
  r = f.compare({good.string(), good.string(), "--confidence", "150"});
  EXPECT_EQ(r.exit.code, 2);
  EXPECT_NE(r.output.find("--confidence"), std::string::npos) << r.output;
  r = f.compare({good.string(), good.string(), "--accept-confounder", "colour"});
  EXPECT_EQ(r.exit.code, 2);
  EXPECT_NE(r.output.find("--accept-confounder: unknown field 'colour'"), std::string::npos);
  // A --pair naming a key that is not there pairs nothing: a usage error, not silence.
  r = f.compare({good.string(), good2.string(), "--pair", "no-such-key=other"});
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("--pair no-such-key=other: the base"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ib::e2e
