// `inferbench trace stats`: the recorded traces in tests/data, as a table and as JSON.
#include "e2e_util.h"

namespace ib::e2e {
namespace {

const std::string kTraceFiles = std::string(INFERBENCH_TEST_DATA) + "/agentx-traces";

TEST(TraceCli, StatsAsTableAndJson) {
  TempDir dir;
  auto table = run_inferbench({"trace", "stats", kTraceFiles}, dir.path() / "t.log");
  ASSERT_EQ(table.exit.code, 0) << table.output;
  EXPECT_NE(table.output.find("trace_0014"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find("total (6 traces)"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find("sessions  branches  background"), std::string::npos) << table.output;
  auto js = run_inferbench({"trace", "stats", kTraceFiles + "/trace_0014.json", "--json"},
                           dir.path() / "j.log");
  ASSERT_EQ(js.exit.code, 0) << js.output;
  boost::system::error_code ec;
  auto v = boost::json::parse(js.output, ec);
  ASSERT_FALSE(ec) << js.output;
  const auto& t = v.at("traces").as_array().at(0).as_object();
  EXPECT_EQ(t.at("id").as_string(), "trace_0014");
  EXPECT_EQ(t.at("requests").as_int64(), 123);
  EXPECT_EQ(t.at("subagents").as_int64(), 1);
  EXPECT_EQ(t.at("input_tokens").as_int64(), 12621267);  // the trace's own totals agree
  // The conversations of its replay: the root, its subagent and one flattened agent (a session
  // resumed hours later on the same base prefix), each in a branch; two interval barriers.
  const auto& dag = t.at("dag").as_object();
  EXPECT_EQ(dag.at("sessions").as_int64(), 3);
  EXPECT_EQ(dag.at("root").as_int64(), 1);
  EXPECT_EQ(dag.at("subagent").as_int64(), 1);
  EXPECT_EQ(dag.at("flat").as_int64(), 1);
  EXPECT_EQ(dag.at("aux").as_int64(), 0);
  EXPECT_EQ(dag.at("aux_reduction").as_int64(), 0);
  EXPECT_EQ(dag.at("worker_group").as_int64(), 0);
  EXPECT_EQ(dag.at("branches").as_int64(), 2);
  EXPECT_EQ(dag.at("background_branches").as_int64(), 0);
  EXPECT_EQ(dag.at("flat_branches").as_int64(), 1);
  EXPECT_EQ(dag.at("barriers").as_int64(), 2);
  EXPECT_EQ(dag.at("dropped_subagents").as_int64(), 0);
  // All six: 15 sessions (6 roots, 8 subagents, 1 flattened agent), 8 branches, 1 background.
  auto all = run_inferbench({"trace", "stats", kTraceFiles, "--json"}, dir.path() / "a.log");
  ASSERT_EQ(all.exit.code, 0) << all.output;
  auto va = boost::json::parse(all.output, ec);
  ASSERT_FALSE(ec) << all.output;
  const auto& total = va.at("total").at("dag").as_object();
  EXPECT_EQ(total.at("sessions").as_int64(), 15);
  EXPECT_EQ(total.at("subagent").as_int64(), 8);
  EXPECT_EQ(total.at("branches").as_int64(), 8);
  EXPECT_EQ(total.at("background_branches").as_int64(), 1);
  // A path that is not there is a usage error naming it.
  auto bad =
      run_inferbench({"trace", "stats", (dir.path() / "nope").string()}, dir.path() / "b.log");
  EXPECT_EQ(bad.exit.code, 2);
  EXPECT_NE(bad.output.find("nope"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace ib::e2e

namespace ib::e2e {
namespace {

// Timed request traces in the four formats: requests, rates, lengths and, with hash ids, the
// theoretical prefix hit of the committed traces (figures of tests/data/timed-traces/README.md).
TEST(TraceCli, StatsOfTimedTraces) {
  TempDir dir;
  const std::string data = std::string(INFERBENCH_TEST_DATA) + "/timed-traces/";
  auto js = run_inferbench({"trace", "stats", "--format", "mooncake",
                            data + "mooncake_conversation_300.jsonl", "--json"},
                           dir.path() / "m.log");
  ASSERT_EQ(js.exit.code, 0) << js.output;
  const auto m = boost::json::parse(js.output).at("traces").at(0).as_object();
  EXPECT_EQ(m.at("requests").as_int64(), 300);
  EXPECT_EQ(m.at("block_size").as_int64(), 512);
  EXPECT_NEAR(m.at("theoretical_prefix_hit_pct").as_double(), 8.1, 0.05);
  EXPECT_NEAR(m.at("span_s").as_double(), 102.0, 1e-9);
  auto table = run_inferbench(
      {"trace", "stats", "--format", "burstgpt", data + "burstgpt_synthetic_200.csv"},
      dir.path() / "b.log");
  ASSERT_EQ(table.exit.code, 0) << table.output;
  EXPECT_NE(table.output.find("- (no hash ids)"), std::string::npos) << table.output;
  // The wrong format is an error naming the file, line and field.
  auto wrong =
      run_inferbench({"trace", "stats", "--format", "mooncake", data + "azure_synthetic_200.csv"},
                     dir.path() / "w.log");
  EXPECT_EQ(wrong.exit.code, 2);
  EXPECT_NE(wrong.output.find("azure_synthetic_200.csv:1: not JSON"), std::string::npos)
      << wrong.output;
  auto bad = run_inferbench({"trace", "stats", "--format", "sharegpt", data}, dir.path() / "f.log");
  EXPECT_EQ(bad.exit.code, 2);
  EXPECT_NE(bad.output.find("--format must be weka, mooncake"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace ib::e2e
