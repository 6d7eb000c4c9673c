#include "workload/timed_trace.h"

#include <gtest/gtest.h>

namespace ib::workload {
namespace {

TEST(TimedTrace, MooncakeMillisecondsAnd512TokenBlocks) {
  auto t = parse_timed_trace(
      "{\"timestamp\": 27482, \"input_length\": 655, \"output_length\": 52, \"hash_ids\": [46, "
      "47]}\n"
      "{\"timestamp\": 10535, \"input_length\": 672, \"output_length\": 26, \"hash_ids\": [46, "
      "47]}\n"
      "\n"
      "{\"timestamp\": 12000, \"input_length\": 1100, \"output_length\": 9, \"hash_ids\": [46, 48, "
      "49]}\n",
      TraceFormat::kMooncake, "m.jsonl");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->block_size, 512);
  ASSERT_EQ(t->requests.size(), 3u);
  // Sorted by time (and said so), relative to the first arrival, in seconds.
  EXPECT_EQ(t->notes.size(), 1u);
  EXPECT_EQ(t->requests[0].line, 2);
  EXPECT_DOUBLE_EQ(t->requests[0].t_s, 0);
  EXPECT_NEAR(t->requests[1].t_s, 1.465, 1e-9);
  EXPECT_NEAR(t->requests[2].t_s, 16.947, 1e-9);
  EXPECT_EQ(t->requests[2].input_len, 655);
  // Hits with an unbounded cache: the first request none; the third's first block (46) only;
  // the last two blocks of the second request (46, 47) were seen: all of its 655 tokens.
  EXPECT_EQ(theoretical_hits(*t), (std::vector<int64_t>{0, 512, 655}));
  const auto s = timed_trace_stats(*t);
  EXPECT_EQ(s.requests, 3);
  EXPECT_EQ(s.distinct_blocks, 4);
  EXPECT_EQ(s.reused_blocks, 2);
  EXPECT_EQ(s.hit_tokens, 1167);
  EXPECT_NEAR(s.theoretical_hit_pct, 100.0 * 1167 / (672 + 1100 + 655), 1e-9);
}

TEST(TimedTrace, BailianSecondsAnd16TokenBlocks) {
  auto t = parse_timed_trace(
      "{\"chat_id\": 1, \"parent_chat_id\": -1, \"timestamp\": 100.5, \"input_length\": 40, "
      "\"output_length\": 7, \"type\": \"text\", \"turn\": 1, \"hash_ids\": [9, 10, 11]}\n"
      "{\"chat_id\": 2, \"parent_chat_id\": 1, \"timestamp\": 102.25, \"input_length\": 60, "
      "\"output_length\": 3, \"type\": \"text\", \"turn\": 2, \"hash_ids\": [9, 10, 11, 12]}\n",
      TraceFormat::kBailian, "b.jsonl");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->block_size, 16);
  EXPECT_DOUBLE_EQ(t->requests[1].t_s, 1.75);
  EXPECT_EQ(theoretical_hits(*t), (std::vector<int64_t>{0, 48}));
}

TEST(TimedTrace, BurstGptAndAzureCsvByHeaderName) {
  auto b = parse_timed_trace(
      "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\r\n"
      "5,ChatGPT,472,18,490,Conversation log\r\n"
      "45,ChatGPT,1087,0,1087,API log\r\n"
      "118.5,GPT-4,417,276,693,Conversation log\r\n",
      TraceFormat::kBurstGpt, "burst.csv");
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_FALSE(b->has_prefix());
  ASSERT_EQ(b->requests.size(), 2u);  // the failed request (0 response tokens) left out, noted
  ASSERT_EQ(b->notes.size(), 1u);
  EXPECT_NE(b->notes[0].find("1 row with 0"), std::string::npos) << b->notes[0];
  EXPECT_DOUBLE_EQ(b->requests[1].t_s, 113.5);
  EXPECT_EQ(b->requests[1].input_len, 417);
  EXPECT_EQ(b->requests[1].line, 4);

  auto a = parse_timed_trace(
      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
      "2023-11-16 23:59:59.5000000,374,44\n"
      "2023-11-17 00:00:01.2500000,396,109\n",
      TraceFormat::kAzure, "azure.csv");
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_NEAR(a->requests[1].t_s, 1.75, 1e-6);  // across midnight
  EXPECT_EQ(a->requests[1].output_len, 109);
}

TEST(TimedTrace, ErrorsNameTheFileLineAndField) {
  auto expect_error = [](const char* text, TraceFormat f, const std::string& want) {
    auto t = parse_timed_trace(text, f, "t.jsonl");
    ASSERT_FALSE(t.ok()) << text;
    EXPECT_NE(t.error().message.find(want), std::string::npos) << t.error().message;
  };
  expect_error(
      "{\"timestamp\": 0, \"input_length\": 2000, \"output_length\": 5, \"hash_ids\": [1]}",
      TraceFormat::kMooncake, "t.jsonl:1: hash_ids: 1 ids for input_length 2000");
  expect_error(
      "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]}\n"
      "{\"timestamp\": -3, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]}",
      TraceFormat::kMooncake, "t.jsonl:2: timestamp: expected a time >= 0");
  expect_error("{\"timestamp\": 0, \"input_length\": 0, \"output_length\": 1, \"hash_ids\": []}",
               TraceFormat::kMooncake, "t.jsonl:1: input_length: expected 1 to");
  expect_error("{\"timestamp\": 0, \"input_length\": 3, \"output_length\": 1.5, \"hash_ids\": [1]}",
               TraceFormat::kMooncake, "output_length: expected a whole number, got 1.5");
  expect_error("{\"timestamp\": 0, \"input_length\": 3, \"output_length\": 1}",
               TraceFormat::kBailian, "t.jsonl:1: hash_ids: missing");
  expect_error("not json", TraceFormat::kMooncake, "t.jsonl:1: not JSON");
  expect_error("Timestamp,Model\n1,x\n", TraceFormat::kBurstGpt,
               "t.jsonl:1: the header has no 'Request tokens' column");
  expect_error("TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,1,1\n", TraceFormat::kAzure,
               "t.jsonl:2: TIMESTAMP: expected YYYY-MM-DD HH:MM:SS");
  expect_error("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.1,-4,1\n",
               TraceFormat::kAzure, "t.jsonl:2: ContextTokens: expected a whole number");
  expect_error("", TraceFormat::kMooncake, "t.jsonl: no request in the trace");
  EXPECT_FALSE(parse_timed_trace("a", TraceFormat::kAzure, "x", 16).ok());  // no hash ids there
}

TEST(TimedTrace, WindowsCutTheTraceAndRestartItsClock) {
  auto t = parse_timed_trace(
      "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
      "0,a,1,1,2,x\n10,a,1,1,2,x\n20,a,1,1,2,x\n30,a,1,1,2,x\n",
      TraceFormat::kBurstGpt, "b.csv");
  ASSERT_TRUE(t.ok());
  auto w = parse_trace_window("10:30");
  ASSERT_TRUE(w.ok());
  const TimedTrace cut = cut_window(*t, *w);
  ASSERT_EQ(cut.requests.size(), 2u);
  EXPECT_DOUBLE_EQ(cut.requests[1].t_s, 10);
  EXPECT_EQ(cut_window(*t, *parse_trace_window("15:")).requests.size(), 2u);
  EXPECT_EQ(cut_window(*t, *parse_trace_window(":15")).requests.size(), 2u);
  for (const char* bad : {"10", "30:10", "a:b", "-1:5", "5:5"}) {
    auto e = parse_trace_window(bad);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_NE(e.error().message.find("--window"), std::string::npos);
  }
  const auto s = timed_trace_stats(*t, 10);
  EXPECT_DOUBLE_EQ(s.span_s, 30);
  EXPECT_EQ(s.arrivals_per_bucket, (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_DOUBLE_EQ(s.peak_rate_1s, 1);
}

}  // namespace
}  // namespace ib::workload
