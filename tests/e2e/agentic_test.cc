// AgentX replay end to end: `inferbench bench --workload agentic` and an agentic sweep against
// `inferbench serve-sim`, both time-scaled 100x, on the recorded traces in tests/data.
#include <fstream>
#include <set>

#include "e2e_util.h"

namespace ib::e2e {
namespace {

const std::string kTraces = std::string(INFERBENCH_TEST_DATA) + "/agentx-traces";
constexpr const char* kScale = "100";

std::vector<std::string> agentic_sim_args() {
  return {"--time-scale", kScale};
}

std::vector<boost::json::object> read_jsonl(const fs::path& p) {
  std::vector<boost::json::object> out;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(boost::json::parse(line).as_object());
  }
  return out;
}

class AgenticAgainstSim : public ::testing::Test {
 protected:
  TempDir dir;
};

TEST_F(AgenticAgainstSim, BenchReplaysTracesWithExactPromptsAndPrefixStructure) {
  SimServer sim(dir.path(), agentic_sim_args());
  ASSERT_TRUE(sim.running());
  const fs::path out = dir.path() / "result.json";
  const fs::path details = dir.path() / "details.jsonl";
  // trace_0277 has four subagents; trace_0022 and trace_0460 are plain.
  auto r = run_inferbench(
      {"bench", "--workload", "agentic", "--endpoint", sim.url(), "--traces",
       kTraces + "/trace_0277.json", kTraces + "/trace_0022.json", kTraces + "/trace_0460.json",
       "--concurrency", "2", "--agentx-fast", "--time-scale", kScale, "--output", out.string(),
       "--details", details.string()},
      dir.path() / "bench.log", std::chrono::seconds(180));
  ASSERT_FALSE(r.timed_out) << r.output;
  ASSERT_EQ(r.exit.code, 0) << r.output;
  EXPECT_NE(r.output.find("Agentic Replay Result"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("not submission-valid: time_scaled"), std::string::npos) << r.output;

  auto j = read_json(out);
  const auto& a = j.at("agentic").as_object();
  const auto& replay = a.at("replay").as_object();
  EXPECT_EQ(replay.at("lanes").as_int64(), 2);
  EXPECT_GT(replay.at("warmup_requests").as_int64(), 0);
  EXPECT_FALSE(j.at("submission_valid").as_bool());
  std::set<std::string> reasons;
  for (const auto& x : j.at("submission_invalid_reasons").as_array()) {
    reasons.insert(std::string(x.at("reason").as_string()));
  }
  EXPECT_EQ(reasons, std::set<std::string>{"time_scaled"}) << boost::json::serialize(j);
  EXPECT_TRUE(j.contains("inferencex_agentic"));

  // Details: profiling requests only (warmup excluded), each with its session and the exact
  // prompt size: serve-sim counts words, so prompt_tokens = recorded in + the marker (1) + the
  // chat template (4 per message + 3).
  auto lines = read_jsonl(details);
  ASSERT_FALSE(lines.empty());
  std::set<std::string> sessions;
  int64_t ok = 0;
  for (const auto& l : lines) {
    EXPECT_EQ(l.at("phase").as_string(), "profiling");
    sessions.insert(std::string(l.at("correlation_id").as_string()));
    EXPECT_EQ(l.at("correlation_id").as_string().size(), 36u);
    if (!l.at("ok").as_bool()) continue;
    ++ok;
    const int64_t messages = l.at("messages").as_int64();
    EXPECT_EQ(l.at("prompt_tokens").as_int64(),
              l.at("recorded_in").as_int64() + 1 + 4 * messages + 3)
        << boost::json::serialize(l);
    EXPECT_EQ(l.at("completion_tokens").as_int64(), l.at("max_tokens").as_int64());
  }
  EXPECT_GT(ok, 0);
  EXPECT_EQ(static_cast<int64_t>(lines.size()), num(j, "num_prompts"));
  // The overhead the result reports is that template and marker.
  const auto& drift = a.at("prompt_token_overhead").as_object();
  EXPECT_GT(drift.at("mean").to_number<double>(), 4);

  // The server's own prefix-cache hit rate over the profiling phase follows the traces' block
  // structure: close to the theoretical hit of the requests sent.
  const auto& sc = a.at("server_prefix_cache").as_object();
  ASSERT_TRUE(sc.at("hit_rate_pct").is_number()) << boost::json::serialize(sc);
  const double server = sc.at("hit_rate_pct").to_number<double>();
  const double theoretical = a.at("theoretical_prefix_cache_hit_pct").to_number<double>();
  EXPECT_GT(theoretical, 50);
  EXPECT_NEAR(server, theoretical, 10) << "server " << server << " theoretical " << theoretical;
}

TEST_F(AgenticAgainstSim, BadTracesAndOptionsAreUsageErrors) {
  auto missing = run_inferbench(
      {"bench", "--workload", "agentic", "--traces", (dir.path() / "nope.json").string()},
      dir.path() / "m.log");
  EXPECT_EQ(missing.exit.code, 2);
  EXPECT_NE(missing.output.find("nope.json"), std::string::npos) << missing.output;

  const fs::path bad = dir.path() / "bad.json";
  {
    std::ofstream f(bad);
    f << R"({"id":"x","requests":[{"type":"n","t":0,"model":"m","in":10,"out":2,"hash_ids":["a"],)"
         R"("input_types":[],"output_types":[],"stop":"","api_time":1,"think_time":0}]})";
  }
  auto malformed = run_inferbench({"bench", "--workload", "agentic", "--traces", bad.string()},
                                  dir.path() / "b.log");
  EXPECT_EQ(malformed.exit.code, 2);
  EXPECT_NE(malformed.output.find("requests[0].hash_ids[0]"), std::string::npos)
      << malformed.output;

  auto no_traces = run_inferbench({"bench", "--workload", "agentic"}, dir.path() / "n.log");
  EXPECT_EQ(no_traces.exit.code, 2);
  EXPECT_NE(no_traces.output.find("--traces"), std::string::npos) << no_traces.output;

  auto wrong = run_inferbench({"bench", "--traces", kTraces}, dir.path() / "w.log");
  EXPECT_EQ(wrong.exit.code, 2);
  EXPECT_NE(wrong.output.find("--workload agentic"), std::string::npos) << wrong.output;
}

TEST_F(AgenticAgainstSim, SweepRunsAgenticRowsAndStoresThemAsInvalidWhenScaled) {
  const fs::path recipe = dir.path() / "agentic.yaml";
  {
    std::ofstream f(recipe);
    f << "llama8b-servesim-agentic:\n"
         "  image: inferbench/serve-sim\n"
         "  model: sim-model\n"
         "  model-prefix: llama8b\n"
         "  precision: bf16\n"
         "  framework: serve-sim\n"
         "  runner: cluster:local\n"
         "  multinode: false\n"
         "  serve:\n"
         "    command: [inferbench, serve-sim, --model, \"{served-model}\", --host, \"{host}\",\n"
         "              --port, \"{port}\", --time-scale, \""
      << kScale
      << "\"]\n"
         "  workload: { traces: "
      << kTraces << "/trace_0460.json, time-scale: " << kScale
      << ", warmup-requests-per-lane: 1, duration: 300 }\n"
         "  scenarios:\n"
         "    agentic-coding:\n"
         "    - search-space:\n"
         "      - { tp: 1, kv-offloading: none, conc-list: [1, 2] }\n";
  }
  // A modifier label alone keeps the default primary label.
  auto r = run_inferbench({"sweep", recipe.string(), "--runs-dir", (dir.path() / "runs").string(),
                           "--labels", "agentx-fast", "--json"},
                          dir.path() / "sweep.log", std::chrono::seconds(180));
  ASSERT_FALSE(r.timed_out) << r.output;
  boost::system::error_code ec;
  const size_t brace = r.output.find('{');
  ASSERT_NE(brace, std::string::npos) << r.output;
  auto v = boost::json::parse(r.output.substr(brace), ec);
  ASSERT_FALSE(ec) << r.output;
  const auto& points = v.at("points").as_array();
  ASSERT_EQ(points.size(), 2u) << r.output;
  for (const auto& p : points) {
    EXPECT_EQ(p.at("status").as_string(), "invalid") << boost::json::serialize(p);
    const std::string why = boost::json::serialize(p.at("validity"));
    EXPECT_NE(why.find("time_scaled"), std::string::npos) << why;
    EXPECT_NE(why.find("duration_below_floor"), std::string::npos) << why;  // 300 s < 900 s
  }
  // Not submission-valid by the user's own choice (time scaling) is no failure of the run: it
  // says what was measured and exits 0.
  EXPECT_EQ(r.exit.code, 0) << r.output;
  EXPECT_EQ(v.at("status").as_string(), "ok") << r.output;
  const size_t said = r.output.find("measured 2 points, none submission-valid: ");
  ASSERT_NE(said, std::string::npos) << r.output;
  const std::string why = r.output.substr(said, r.output.find('\n', said) - said);
  EXPECT_NE(why.find("time-scaled"), std::string::npos) << why;
  EXPECT_NE(why.find("duration-below-floor"), std::string::npos) << why;
  EXPECT_EQ(r.output.find("nothing was measured"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ib::e2e
