#include "workload/weka_trace.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/temp_dir.h"

namespace ib::workload {
namespace {

const std::string kWekaTraces = std::string(INFERBENCH_TEST_DATA) + "/agentx-traces";

TEST(WekaTrace, LoadsTheRecordedTracesWithTheirSubagents) {
  auto traces = load_weka_traces({kWekaTraces});
  ASSERT_TRUE(traces.ok()) << traces.error().message;
  ASSERT_EQ(traces->size(), 6u);
  EXPECT_EQ(traces->front().id, "trace_0014");  // sorted by file name
  const WekaTrace& t = traces->front();
  EXPECT_EQ(t.block_size, 64);
  EXPECT_EQ(t.hash_id_scope, "local");
  EXPECT_EQ(t.tool_tokens, 12319);
  EXPECT_EQ(t.system_tokens, 2882);
  const auto c = trace_stats(t);
  EXPECT_EQ(c.subagents, 1);
  // The trace's own totals (an opaque summary in the format) agree with the requests.
  EXPECT_EQ(c.input_tokens, 12621267);
  EXPECT_EQ(c.output_tokens, 59028);
  const TraceRequest& first = *t.entries.front().request;
  EXPECT_EQ(first.in, 15678);
  EXPECT_EQ(first.out, 175);
  EXPECT_EQ(first.hash_ids.size(), static_cast<size_t>(first.in / t.block_size));
  EXPECT_EQ(first.stop, "tool_use");
  // The subagent of trace_0014: spawned at 961.349 s, 10.509 s long, its requests absolute.
  const TraceSubagent* sub = nullptr;
  for (const auto& e : t.entries) {
    if (e.subagent) sub = e.subagent.get();
  }
  ASSERT_NE(sub, nullptr);
  EXPECT_EQ(sub->agent_id, "agent_001");
  EXPECT_DOUBLE_EQ(sub->end(), 961.349 + 10.509);
  for (const auto& e : sub->entries) {
    ASSERT_TRUE(e.request);
    EXPECT_GE(e.request->t, sub->t);  // relative inner times were made absolute
  }
  int with_subagents = 0;
  for (const auto& tr : *traces) with_subagents += trace_stats(tr).subagents > 0;
  EXPECT_EQ(with_subagents, 3);  // 0014, 0274, 0277
}

std::string trace_text(const std::string& request) {
  return R"({"id":"x","block_size":64,"hash_id_scope":"local","requests":[)" + request + "]}";
}

TEST(WekaTrace, BadTracesNameTheFileTheRequestAndTheField) {
  const std::string ok = R"({"type":"n","t":0,"in":130,"out":5,"hash_ids":[1,2]})";
  ASSERT_TRUE(parse_weka_trace(trace_text(ok), "f.json").ok());
  struct Case {
    std::string text;
    std::string message;
  } cases[] = {
      {trace_text(ok + R"(,{"type":"n","t":1,"in":-3,"out":5,"hash_ids":[]})"),
       "f.json: requests[1].in: expected an integer >= 0, got -3"},
      {trace_text(R"({"type":"n","t":0,"in":1,"out":1,"hash_ids":[1,"a"]})"),
       "f.json: requests[0].hash_ids[1]: expected an integer >= 0, got \"a\""},
      {trace_text(R"({"type":"n","t":0,"in":64,"out":1,"hash_ids":[1,2]})"),
       "f.json: requests[0].hash_ids: 2 hash blocks for a prompt of 64 tokens (\"in\"): at most 1 "
       "blocks of 64 tokens"},
      {trace_text(R"({"type":"n","t":0,"in":1,"out":1,"hash_ids":[],"extra":1})"),
       "f.json: requests[0].extra: unknown field"},
      {trace_text(R"({"type":"n","t":0,"in":1,"out":1,"hash_ids":[],"ttft":0.2})"),
       "f.json: requests[0].ttft: unknown field"},  // only streaming requests have a TTFT
      {trace_text(R"({"type":"q","t":0})"),
       "f.json: requests[0].type: expected \"n\", \"s\" or \"subagent\", got \"q\""},
      {trace_text(
           R"({"type":"subagent","t":5,"agent_id":"a","requests":[{"type":"n","t":0,"out":1,"hash_ids":[]}]})"),
       "f.json: requests[0].requests[0].in: required field is missing"},
      {trace_text(
           R"({"type":"subagent","t":5,"agent_id":"a","requests":[]},{"type":"subagent","t":6,"agent_id":"a","requests":[]})"),
       "f.json: requests[1].agent_id: \"a\" is not unique in the trace"},
      {trace_text(R"({"type":"n","t":0,"in":1,"out":1,"hash_ids":[],"stop":"max"})"),
       "f.json: requests[0].stop: expected \"\", \"tool_use\" or \"end_turn\", got \"max\""},
      {R"({"id":"x","hash_id_scope":"corpus","requests":[]})",
       "f.json: trace.hash_id_scope: expected \"local\" or \"global\", got \"corpus\""},
      {R"({"requests":[]})", "f.json: trace.id: required field is missing"},
      {"{", "f.json: not valid JSON"},
      // A key twice in one object: JSON readers keep one of them, silently (issue 30).
      {trace_text(R"({"type":"n","t":0,"in":64,"out":1,"hash_ids":[1],"in":5000})"),
       "f.json:1: requests[0]: key \"in\" appears twice in one object"},
  };
  for (const auto& c : cases) {
    auto t = parse_weka_trace(c.text, "f.json");
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_EQ(t.error().message.substr(0, c.message.size()), c.message) << t.error().message;
  }
}

TEST(WekaTrace, RelativeInnerTimesBecomeAbsoluteAndEndsFollowTheSpec) {
  auto t = parse_weka_trace(trace_text(R"({"type":"subagent","t":100,"agent_id":"a","requests":[
        {"type":"n","t":0,"in":1,"out":1,"hash_ids":[],"api_time":2},
        {"type":"s","t":3,"in":1,"out":1,"hash_ids":[],"api_time":4,"ttft":0.5}]},
        {"type":"subagent","t":7,"agent_id":"b","duration_ms":-5,"requests":[]})"),
                            "f.json");
  ASSERT_TRUE(t.ok()) << t.error().message;
  const auto& a = *t->entries[0].subagent;
  EXPECT_TRUE(a.relative_times);
  EXPECT_DOUBLE_EQ(a.entries[0].request->t, 100);
  EXPECT_DOUBLE_EQ(a.entries[1].request->t, 103);
  EXPECT_EQ(a.entries[1].request->ttft, std::optional<double>(0.5));
  EXPECT_DOUBLE_EQ(a.end(), 107);                      // no duration: latest t + api_time
  EXPECT_DOUBLE_EQ(t->entries[1].subagent->end(), 7);  // negative duration clamped to 0
  EXPECT_EQ(trace_stats(*t).streaming, 1);
}

TEST(WekaTrace, CorporaAndDuplicateIds) {
  TempDir dir;
  const auto corpus = dir.path() / "corpus.jsonl";
  const std::string a = R"({"id":"a","requests":[]})";
  std::ofstream(corpus) << a << "\n\n"
                        << R"({"id":"b","requests":[]})"
                        << "\n";
  auto traces = load_weka_traces({corpus});
  ASSERT_TRUE(traces.ok()) << traces.error().message;
  EXPECT_EQ(traces->size(), 2u);
  std::ofstream(dir.path() / "a.json") << a;
  auto dup = load_weka_traces({corpus, dir.path() / "a.json"});
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().message.find("trace.id \"a\" appears twice"), std::string::npos);
  std::ofstream(corpus, std::ios::app) << "{\"id\":3}\n";
  auto bad = load_weka_traces({corpus});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("corpus.jsonl:4: trace.id: expected a string"),
            std::string::npos)
      << bad.error().message;
}

}  // namespace
}  // namespace ib::workload

namespace ib::workload {
namespace {

TEST(WekaTraceStats, TheoreticalPrefixHitWalksRequestsInStartOrderAgainstOneSeenSet) {
  // Start order: r0 (t 0: ids 1 2), sub's r (t 1: ids 1 2 3 -> hit 2), r1 (t 2: ids 1 9 3 ->
  // hit 1: the leading run only), s (t 3: ids 5 -> hit 0).
  auto t = parse_weka_trace(R"({"id":"x","requests":[
      {"type":"n","t":0,"in":128,"out":4,"hash_ids":[1,2]},
      {"type":"n","t":2,"in":192,"out":4,"hash_ids":[1,9,3]},
      {"type":"subagent","t":1,"agent_id":"a","requests":[
        {"type":"n","t":1,"in":192,"out":2,"hash_ids":[1,2,3]}]},
      {"type":"s","t":3,"in":64,"out":1,"hash_ids":[5],"ttft":0.1}]})",
                            "x.json");
  ASSERT_TRUE(t.ok()) << t.error().message;
  const TraceStats s = trace_stats(*t);
  EXPECT_EQ(s.requests, 4);
  EXPECT_EQ(s.streaming, 1);
  EXPECT_EQ(s.subagent_requests, 1);
  EXPECT_EQ(s.top_level_requests, 3);
  EXPECT_EQ(s.subagents, 1);
  EXPECT_EQ(s.input_tokens, 576);
  EXPECT_EQ(s.output_tokens, 11);
  EXPECT_EQ(s.hit_blocks, 3);
  EXPECT_EQ(s.total_blocks, 9);
  EXPECT_DOUBLE_EQ(s.theoretical_prefix_hit_pct, 100.0 * 3 / 9);
}

TEST(WekaTraceStats, RecordedTracesReuseMostOfTheirPrefix) {
  auto traces = load_weka_traces({kWekaTraces});
  ASSERT_TRUE(traces.ok()) << traces.error().message;
  for (const auto& tr : *traces) {
    const TraceStats s = trace_stats(tr);
    EXPECT_EQ(s.requests, s.top_level_requests + s.subagent_requests);
    EXPECT_EQ(s.requests, s.normal + s.streaming);
    // Agentic sessions append to their context: most blocks were seen before.
    EXPECT_GT(s.theoretical_prefix_hit_pct, 50) << tr.id;
    EXPECT_LE(s.theoretical_prefix_hit_pct, 100) << tr.id;
  }
}

}  // namespace
}  // namespace ib::workload
