#include "metrics/result.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/json_text.h"
#include "metrics/keys.h"

namespace ib::metrics {
namespace {

constexpr int64_t kNsPerMs = 1'000'000;  // ns per ms

// A successful request: sent at `send` ms, content events at `events` ms, `out` tokens reported.
RequestRecord ok_request(int64_t send, std::vector<int64_t> events, int64_t out, int in = 100) {
  RequestRecord r;
  r.input_len = in;
  r.output_len = static_cast<int>(out);
  r.sched_ns = send * kNsPerMs;
  r.send_ns = send * kNsPerMs;
  r.first_byte_ns = events.front() * kNsPerMs;
  for (int64_t e : events) r.content_ns.push_back(e * kNsPerMs);
  r.done_ns = events.back() * kNsPerMs;
  r.completion_tokens = out;
  r.prompt_tokens = in;
  return r;
}

TEST(ComputeMetrics, SingleRequestByHand) {
  // TTFT 100 ms, E2EL 400 ms, 4 tokens: TPOT = (400-100)/3 = 100 ms; ITL gaps 100,100,100.
  std::vector<RequestRecord> rs = {ok_request(1000, {1100, 1200, 1300, 1400}, 4)};
  BenchMetrics m = compute_metrics(rs, {});
  EXPECT_EQ(m.completed, 1);
  EXPECT_EQ(m.failed, 0);
  EXPECT_DOUBLE_EQ(m.ttft_ms.mean, 100);
  EXPECT_DOUBLE_EQ(m.e2el_ms.mean, 400);
  EXPECT_DOUBLE_EQ(m.tpot_ms.mean, 100);
  EXPECT_EQ(m.itl_ms.count, 3u);
  EXPECT_DOUBLE_EQ(m.itl_ms.median, 100);
  EXPECT_DOUBLE_EQ(m.duration_s, 0.4);
  EXPECT_DOUBLE_EQ(m.request_throughput, 2.5);
  EXPECT_DOUBLE_EQ(m.output_throughput, 10);
  EXPECT_DOUBLE_EQ(m.total_token_throughput, 260);
  // E2E-normalized: r = 0.4 s / 4 tokens = 0.1 s/token.
  EXPECT_DOUBLE_EQ(m.e2e_norm_s_per_tok.median, 0.1);

  auto j = metrics_to_json(m, {});
  EXPECT_DOUBLE_EQ(j.at("median_intvty").as_double(), 10.0);  // 1000 / 100 ms
  EXPECT_DOUBLE_EQ(j.at("median_e2e_norm_intvty").as_double(), 10.0);
  EXPECT_TRUE(j.contains("p99.9_tpot_ms"));
  EXPECT_TRUE(j.contains("p90_ttft_ms"));
  EXPECT_TRUE(j.contains("std_itl_ms"));
}

// The engine's own timing (vLLM's --enable-per-request-metrics), joined with the client's TTFT
// request by request: what is left of it is outside the engine. A response without both its
// queue and its engine TTFT is not counted.
TEST(ComputeMetrics, ServerTimingJoinsTheClientsTtft) {
  RequestRecord a = ok_request(0, {100, 150}, 2);  // TTFT 100 ms
  a.server_queue_ms = 30;
  a.server_ttft_ms = 60;
  a.server_generation_ms = 50;
  RequestRecord b = ok_request(0, {40, 90}, 2);  // TTFT 40 ms
  b.server_queue_ms = 0;
  b.server_ttft_ms = 35;
  RequestRecord c = ok_request(0, {70, 90}, 2);
  c.server_ttft_ms = 20;  // no queue: not joined
  BenchMetrics m = compute_metrics(std::vector<RequestRecord>{a, b, c}, {});
  EXPECT_EQ(m.server_timed, 2);
  EXPECT_DOUBLE_EQ(m.outside_engine_ms.max, 10);  // 100 - 30 - 60
  EXPECT_DOUBLE_EQ(m.outside_engine_ms.min, 5);   // 40 - 0 - 35
  EXPECT_EQ(m.server_generation_ms.count, 1u);
  const auto j = metrics_to_json(m, {});
  const auto& st = j.at("server_timing").as_object();
  EXPECT_EQ(st.at("requests").as_int64(), 2);
  EXPECT_DOUBLE_EQ(st.at("queue").at("mean_ms").as_double(), 15);
  EXPECT_DOUBLE_EQ(st.at("engine_ttft").at("max_ms").as_double(), 60);
  EXPECT_FALSE(metrics_to_json(compute_metrics(std::vector<RequestRecord>{c}, {}), {})
                   .contains("server_timing"));
}

// Tokens, not events (issue 31): an event's gap is shared by the tokens it carried.
TEST(ComputeMetrics, PerTokenItlFromContinuousUsageCounts) {
  // 10 tokens in events of 1, 4, 4, 1 tokens, 10 ms apart (a server streaming 4 tokens an event).
  RequestRecord r = ok_request(0, {100, 110, 120, 130}, 10);
  r.content_tokens = {1, 4, 4, 1};
  const BenchMetrics m = compute_metrics(std::vector<RequestRecord>{r}, {});
  EXPECT_EQ(m.requests_counted_by_usage, 1);
  EXPECT_EQ(m.itl_ms.count, 9u);  // every token after the first
  EXPECT_DOUBLE_EQ(m.itl_ms.median, 2.5);
  EXPECT_DOUBLE_EQ(m.itl_ms.max, 10);
  EXPECT_DOUBLE_EQ(m.itl_ms.mean, 30.0 / 9);  // the 30 ms of gaps over the 9 tokens they brought
  EXPECT_EQ(m.icl_ms.count, 3u);              // the old figure: gaps between events
  EXPECT_DOUBLE_EQ(m.icl_ms.median, 10);
  EXPECT_DOUBLE_EQ(m.tokens_per_event.mean, 2.5);
  EXPECT_DOUBLE_EQ(m.stall_ms.max, 10);
  EXPECT_DOUBLE_EQ(m.tpot_ms.mean, 30.0 / 9);  // TPOT as defined: (E2EL - TTFT) / (out - 1)
  const auto j = metrics_to_json(m, {});
  EXPECT_DOUBLE_EQ(j.at("median_itl_ms").as_double(), 2.5);
  EXPECT_DOUBLE_EQ(j.at("median_icl_ms").as_double(), 10);
  EXPECT_DOUBLE_EQ(j.at("mean_tokens_per_event").as_double(), 2.5);
  EXPECT_EQ(j.at("event_tokens").at("usage_deltas").as_int64(), 1);
  EXPECT_FALSE(j.contains("itl_note"));
}

TEST(ComputeMetrics, OneTokenAnEventWhenTheFinalCountSaysSo) {
  RequestRecord a = ok_request(0, {100, 110, 130}, 3);
  RequestRecord b = ok_request(0, {100, 110, 130}, 4);  // + the EOS token of a natural stop
  b.finish_reason = "stop";
  const BenchMetrics m = compute_metrics(std::vector<RequestRecord>{a, b}, {});
  EXPECT_EQ(m.requests_one_per_event, 2);
  EXPECT_EQ(m.itl_ms.count, 4u);
  EXPECT_DOUBLE_EQ(m.itl_ms.max, 20);
  EXPECT_DOUBLE_EQ(m.tokens_per_event.mean, 1);
}

// Several tokens an event and nothing that counts them: no per-token ITL, said so; the gaps are
// reported as what they are (inter-chunk latency), never under the ITL name.
TEST(ComputeMetrics, UncountedEventsGiveNoItlAndSayWhy) {
  RequestRecord r = ok_request(0, {100, 110, 120, 130}, 10);
  r.finish_reason = "length";
  const BenchMetrics m = compute_metrics(std::vector<RequestRecord>{r}, {});
  EXPECT_EQ(m.requests_uncounted, 1);
  EXPECT_EQ(m.itl_ms.count, 0u);
  EXPECT_EQ(m.icl_ms.count, 3u);
  const auto j = metrics_to_json(m, {});
  EXPECT_TRUE(j.at("median_itl_ms").is_null());
  EXPECT_TRUE(j.at("mean_tokens_per_event").is_null());
  EXPECT_DOUBLE_EQ(j.at("median_icl_ms").as_double(), 10);
  ASSERT_TRUE(j.contains("itl_note"));
  EXPECT_NE(std::string(j.at("itl_note").as_string()).find("per-token ITL is not computed"),
            std::string::npos);
  EXPECT_NE(std::string(j.at("itl_note").as_string()).find("--continuous-usage"),
            std::string::npos);
  EXPECT_TRUE(std::isnan(Headline::from_metrics(m, {}).get("median_itl_ms")));
  // An event without its count among counted ones makes the counts unusable, not a guess.
  RequestRecord partial = ok_request(0, {100, 110, 120}, 6);
  partial.content_tokens = {1, 0, 5};
  EXPECT_EQ(compute_metrics(std::vector<RequestRecord>{partial}, {}).requests_uncounted, 1);
}

// No count on every event, but the client's tokenizer counted each event's text: it says how the
// server's final count was spread over the events (scaled to it: text re-encoded in pieces
// counts a little differently), and the result says how far its own total was.
TEST(ComputeMetrics, TheClientsTokenizerSpreadsTheFinalCountOverTheEvents) {
  RequestRecord r = ok_request(0, {100, 110, 120, 130}, 13);  // 1 + 3 · 4 tokens
  r.finish_reason = "length";
  r.text_tokens = {1, 5, 5, 6};  // the tokenizer's pieces: 17
  std::vector<int32_t> counts;
  EXPECT_EQ(event_token_counts(r, &counts), EventTokens::kTokenizer);
  EXPECT_EQ(counts, (std::vector<int32_t>{1, 4, 4, 4}));
  const BenchMetrics m = compute_metrics(std::vector<RequestRecord>{r}, {});
  EXPECT_EQ(m.requests_counted_by_tokenizer, 1);
  EXPECT_EQ(m.requests_uncounted, 0);
  EXPECT_DOUBLE_EQ(m.itl_ms.median, 2.5);  // each 10 ms gap over its 4 tokens
  const auto j = metrics_to_json(m, {});
  EXPECT_EQ(j.at("event_tokens").at("tokenizer").as_int64(), 1);
  EXPECT_DOUBLE_EQ(j.at("tokenizer_count_ratio").as_double(), 17.0 / 13);
  // Without the server's count the tokenizer's own counts stand (each event at least 1).
  r.completion_tokens = -1;
  r.text_tokens = {0, 5, 5, 6};
  EXPECT_EQ(event_token_counts(r, &counts), EventTokens::kTokenizer);
  EXPECT_EQ(counts, (std::vector<int32_t>{1, 5, 5, 6}));
  // Usage on every event wins over the tokenizer.
  r.content_tokens = {1, 4, 4, 4};
  EXPECT_EQ(event_token_counts(r, &counts), EventTokens::kUsageDeltas);
}

TEST(ComputeMetrics, OneTokenOutputsAreExcludedFromTpot) {
  std::vector<RequestRecord> rs = {ok_request(0, {50}, 1), ok_request(0, {20, 40, 60}, 3)};
  BenchMetrics m = compute_metrics(rs, {});
  EXPECT_EQ(m.completed, 2);
  EXPECT_EQ(m.tpot_ms.count, 1u);
  EXPECT_DOUBLE_EQ(m.tpot_ms.mean, 20);  // (60-20)/2
  EXPECT_EQ(m.ttft_ms.count, 2u);
  EXPECT_DOUBLE_EQ(m.ttft_ms.mean, 35);
}

TEST(ComputeMetrics, OnlyOneTokenOutputsWarnThatTpotIsUndefined) {
  std::vector<RequestRecord> rs = {ok_request(0, {50}, 1)};
  BenchMetrics m = compute_metrics(rs, {});
  EXPECT_EQ(m.tpot_ms.count, 0u);
  ASSERT_FALSE(m.warnings.empty());
  auto j = metrics_to_json(m, {});
  // Undefined is written as null, never as a 0 that was not measured (issue 30).
  EXPECT_TRUE(j.at("median_intvty").is_null());
  EXPECT_TRUE(std::isnan(j.at("mean_intvty").as_double()));
  EXPECT_TRUE(j.at("median_tpot_ms").is_null());
  EXPECT_TRUE(j.at("mean_tpot_ms").is_null());
  EXPECT_NE(json_text(j).find("\"median_intvty\":null"), std::string::npos);
  EXPECT_NE(json_text(j).find("\"median_tpot_ms\":null"), std::string::npos);
}

TEST(ComputeMetrics, FailuresAreCountedByCauseAndExcluded) {
  std::vector<RequestRecord> rs = {ok_request(1, {10, 20}, 2)};
  RequestRecord bad;
  bad.send_ns = 5 * kNsPerMs;
  bad.done_ns = 900 * kNsPerMs;
  bad.failure = FailureCause::kHttpStatus;
  bad.error = "HTTP 500: boom";
  rs.push_back(bad);
  RequestRecord cut = bad;
  cut.failure = FailureCause::kNoDone;
  cut.error = "stream ended without [DONE]";
  rs.push_back(cut);
  BenchMetrics m = compute_metrics(rs, {});
  EXPECT_EQ(m.completed, 1);
  EXPECT_EQ(m.failed, 2);
  EXPECT_EQ(m.failures_by_cause.at("http_status"), 1);
  EXPECT_EQ(m.failures_by_cause.at("no_done"), 1);
  EXPECT_EQ(m.ttft_ms.count, 1u);
  EXPECT_EQ(m.total_output_tokens, 2);
  EXPECT_EQ(m.error_samples.size(), 2u);
  // Duration spans all measured requests, failed ones included: 1 → 900 ms.
  EXPECT_DOUBLE_EQ(m.duration_s, 0.899);
  EXPECT_NEAR(m.failure_rate(), 2.0 / 3.0, 1e-12);
}

TEST(ComputeMetrics, ScheduleBasedLatencyIncludesQueueing) {
  RequestRecord r = ok_request(100, {150, 160}, 2);
  r.sched_ns = 40 * kNsPerMs;  // intended 60 ms before it could be sent
  std::vector<RequestRecord> rs = {r};
  BenchMetrics m = compute_metrics(rs, {});
  EXPECT_DOUBLE_EQ(m.ttft_ms.mean, 50);
  EXPECT_DOUBLE_EQ(m.sched_ttft_ms.mean, 110);
  EXPECT_DOUBLE_EQ(m.sched_e2el_ms.mean, 120);
  EXPECT_DOUBLE_EQ(m.queue_ms.mean, 60);
}

TEST(ComputeMetrics, MissingUsageFallsBackToEventCountAndWarns) {
  RequestRecord r = ok_request(0, {10, 20, 30}, 3);
  r.completion_tokens = -1;
  std::vector<RequestRecord> rs = {r};
  BenchMetrics m = compute_metrics(rs, {});
  EXPECT_EQ(m.total_output_tokens, 3);
  EXPECT_EQ(m.requests_without_usage, 1);
  EXPECT_FALSE(m.warnings.empty());
  EXPECT_TRUE(metrics_to_json(m, {}).at("output_tokens_estimated").as_bool());
}

TEST(ComputeMetrics, UsageMismatchAboveFivePercentWarns) {
  RequestRecord r = ok_request(0, {10, 20}, 2);
  r.output_len = 100;  // asked 100, server says 2
  std::vector<RequestRecord> rs = {r, ok_request(0, {10, 20}, 2)};
  BenchMetrics m = compute_metrics(rs, {});
  EXPECT_EQ(m.usage_length_mismatches, 1);
  EXPECT_FALSE(m.warnings.empty());
}

TEST(ComputeMetrics, PerGpuThroughput) {
  std::vector<RequestRecord> rs = {ok_request(1000, {1100, 1200, 1300, 1400}, 4)};
  MetricsOptions o;
  o.num_gpus = 4;
  auto j = metrics_to_json(compute_metrics(rs, o), o);
  EXPECT_DOUBLE_EQ(j.at("tput_per_gpu").as_double(), 65);
  EXPECT_DOUBLE_EQ(j.at("output_tput_per_gpu").as_double(), 2.5);
}

TEST(ComputeMetrics, GoodputCountsRequestsMeetingEveryObjective) {
  // TTFT 100/ 20 ms, TPOT 100 / 10 ms.
  std::vector<RequestRecord> rs = {ok_request(1000, {1100, 1200, 1300, 1400}, 4),
                                   ok_request(1000, {1020, 1030, 1040}, 3)};
  MetricsOptions o;
  o.goodput.ttft_ms = 50;
  BenchMetrics m = compute_metrics(rs, o);
  EXPECT_EQ(m.good_requests, 1);
  EXPECT_DOUBLE_EQ(m.request_goodput, 1 / 0.4);
  o.goodput.tpot_ms = 5;  // now neither meets both
  EXPECT_EQ(compute_metrics(rs, o).good_requests, 0);
  auto j = metrics_to_json(compute_metrics(rs, o), o);
  EXPECT_EQ(j.at("good_requests").as_int64(), 0);
  EXPECT_DOUBLE_EQ(j.at("goodput_slo").as_object().at("tpot_ms").as_double(), 5);
  EXPECT_FALSE(metrics_to_json(compute_metrics(rs, {}), {}).contains("request_goodput"));
}

TEST(PercentileKey, VllmSpelling) {
  EXPECT_EQ(percentile_key(99), "p99");
  EXPECT_EQ(percentile_key(99.9), "p99.9");
  EXPECT_EQ(percentile_key(50), "p50");
}

TEST(ComputeMetrics, EmptyInput) {
  std::vector<RequestRecord> rs;
  BenchMetrics m = compute_metrics(rs, {});
  EXPECT_EQ(m.completed, 0);
  EXPECT_EQ(m.duration_s, 0);
  EXPECT_EQ(m.failure_rate(), 0);
}

}  // namespace
}  // namespace ib::metrics
