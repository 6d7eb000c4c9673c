#include "metrics/agentic.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

namespace ib::metrics {
namespace {

constexpr int64_t kS = 1'000'000'000;  // one second in ns
constexpr int64_t kMs = 1'000'000;

// A successful streamed request sent at `send_ns`: first content event after `ttft_ms`, last
// after `e2el_ms`, `osl` output tokens by the server's usage.
RequestRecord ok(int64_t send_ns, double ttft_ms, double e2el_ms, int64_t osl,
                 int64_t prompt_tokens = 100) {
  RequestRecord r;
  r.send_ns = send_ns;
  r.content_ns = {send_ns + static_cast<int64_t>(ttft_ms * kMs)};
  if (e2el_ms != ttft_ms) r.content_ns.push_back(send_ns + static_cast<int64_t>(e2el_ms * kMs));
  r.done_ns = r.content_ns.back() + kMs;
  r.completion_tokens = osl;
  r.prompt_tokens = prompt_tokens;
  return r;
}

RequestRecord failed(std::string error, FailureCause cause = FailureCause::kHttpStatus) {
  RequestRecord r;
  r.send_ns = kS;
  r.done_ns = 2 * kS;
  r.failure = cause;
  r.error = std::move(error);
  return r;
}

AgenticMetrics compute(const std::vector<RequestRecord>& records,
                       const std::vector<AgenticRequestInfo>& info = {}, int num_gpus = 1) {
  AgenticOptions options;
  options.num_gpus = num_gpus;
  return compute_agentic_metrics(records, info, options);
}

bool has_reason(const std::vector<AgenticInvalid>& v, const std::string& reason) {
  for (const AgenticInvalid& x : v) {
    if (x.reason == reason) return true;
  }
  return false;
}

TEST(ContextOverflow, MatchesTheFourWordingsCaseInsensitively) {
  EXPECT_TRUE(is_context_overflow(
      "HTTP 400: This model's maximum context length is 131072 tokens. However, you requested "
      "140000 tokens"));
  EXPECT_TRUE(is_context_overflow("Maximum Context exceeded"));
  EXPECT_TRUE(is_context_overflow(R"({"error":{"code":"context_length_exceeded"}})"));
  EXPECT_TRUE(is_context_overflow("prompt is too long: 210000 tokens > 200000 maximum"));
  EXPECT_TRUE(is_context_overflow("The input exceeds the CONTEXT LENGTH"));
  EXPECT_FALSE(is_context_overflow("HTTP 500: internal server error"));
  EXPECT_FALSE(is_context_overflow("context window"));
  EXPECT_FALSE(is_context_overflow(""));
}

TEST(AgenticMetrics, E2eNormalizedInteractivity) {
  // r = 1.0 s / 50 = 0.02 and 2.0 s / 50 = 0.04 s per token.
  const AgenticMetrics m = compute({ok(kS, 30, 1000, 50), ok(2 * kS, 30, 2000, 50)});
  const Interactivity& i = m.e2e_norm_intvty;
  EXPECT_EQ(i.count, 2);
  EXPECT_NEAR(i.mean, 1 / 0.03, 1e-9);  // 1/mean(r)
  EXPECT_NEAR(i.p50, 1 / 0.03, 1e-9);
  EXPECT_NEAR(i.p75, 1 / 0.035, 1e-9);  // r at p75 = 0.02 + 0.75·0.02
  EXPECT_NEAR(i.p90, 1 / 0.038, 1e-9);
  EXPECT_NEAR(i.p95, 1 / 0.039, 1e-9);
  EXPECT_NEAR(i.std, 12.5, 1e-9);  // pstdev(50, 25)
  EXPECT_GE(i.p50, i.p90) << "p90 is the slow tail";
}

TEST(AgenticMetrics, ConventionalInteractivityIsOneOverItl) {
  // ITL = (E2EL − TTFT)/(OSL − 1) = 10, 20 and 100 ms with 11 tokens.
  const AgenticMetrics m =
      compute({ok(kS, 30, 130, 11), ok(2 * kS, 30, 230, 11), ok(3 * kS, 30, 1030, 11)});
  EXPECT_EQ(m.itl_s.count, 3);
  EXPECT_NEAR(m.itl_s.p50, 0.020, 1e-12);
  EXPECT_NEAR(m.itl_s.mean, 0.130 / 3, 1e-12);
  EXPECT_NEAR(m.intvty.p90, 1 / 0.084, 1e-6);  // ITL p90 = 20 + 0.8·80 ms
  EXPECT_NEAR(m.intvty.p75, 1 / 0.060, 1e-6);
  EXPECT_NEAR(m.intvty.p50, 50, 1e-6);
  EXPECT_NEAR(m.intvty.mean, 3 / 0.130, 1e-6);
  // pstdev(100, 50, 10) = sqrt(((100−53.33)² + (50−53.33)² + (10−53.33)²)/3).
  EXPECT_NEAR(m.intvty.std, std::sqrt((2177.7778 + 11.1111 + 1877.7778) / 3), 1e-3);
}

TEST(AgenticMetrics, TtftAndE2elStatistics) {
  std::vector<RequestRecord> records;
  for (int i = 1; i <= 10; ++i) records.push_back(ok(i * kS, 10.0 * i, 100.0 * i, 5));
  const AgenticMetrics m = compute(records);
  EXPECT_NEAR(m.ttft_s.mean, 0.055, 1e-12);
  EXPECT_NEAR(m.ttft_s.p50, 0.055, 1e-12);
  EXPECT_NEAR(m.ttft_s.p90, 0.091, 1e-12);  // h = 8.1
  EXPECT_NEAR(m.ttft_s.p99, 0.0991, 1e-12);
  EXPECT_NEAR(m.e2el_s.mean, 0.55, 1e-12);
  EXPECT_NEAR(m.e2el_s.p50, 0.55, 1e-12);
  EXPECT_NEAR(m.e2el_s.p90, 0.91, 1e-12);
  EXPECT_NEAR(m.e2el_s.p99, 0.991, 1e-12);
}

TEST(AgenticMetrics, ThroughputOverTheSpanOfCountedRequests) {
  std::vector<RequestRecord> records = {ok(1 * kS, 10, 999, 40, 100),
                                        ok(2 * kS, 10, 2999, 40, 300)};
  records.push_back(failed("HTTP 500: boom"));  // not counted, though it starts earlier
  records.back().send_ns = kS / 2;
  // Ends: 1 s + 999 ms + 1 ms = 2 s and 5 s; D = 5 − 1 = 4 s.
  const AgenticMetrics m = compute(records, {}, 4);
  EXPECT_DOUBLE_EQ(m.duration_s, 4);
  EXPECT_DOUBLE_EQ(m.input_tps, 100);  // 400 tokens / 4 s
  EXPECT_DOUBLE_EQ(m.output_tps, 20);
  EXPECT_DOUBLE_EQ(m.total_tps, 120);
  EXPECT_DOUBLE_EQ(m.input_tps_per_gpu, 25);
  EXPECT_DOUBLE_EQ(m.output_tps_per_gpu, 5);
  EXPECT_DOUBLE_EQ(m.total_tps_per_gpu, 30);
}

TEST(AgenticMetrics, CountsSessionsWarmupErrorsAndOverflows) {
  std::vector<RequestRecord> records = {
      ok(kS, 10, 100, 5),
      ok(kS, 10, 100, 5),
      ok(kS, 10, 100, 5),
      failed("HTTP 400: This model's maximum context length is 1024 tokens"),
      failed("connection refused", FailureCause::kConnect),
      ok(kS, 10, 100, 5),  // warmup
  };
  std::vector<AgenticRequestInfo> info(records.size());
  const char* sessions[] = {"a", "a", "b", "b", "a", "c"};
  for (size_t i = 0; i < info.size(); ++i) info[i].session_id = sessions[i];
  info[5].profiling = false;
  const AgenticMetrics m = compute(records, info);
  EXPECT_EQ(m.records_total, 6);
  EXPECT_EQ(m.warmup_records, 1);
  EXPECT_EQ(m.requests, 5);
  EXPECT_EQ(m.successful, 3);
  EXPECT_EQ(m.errors, 2);
  EXPECT_EQ(m.context_overflows, 1);
  EXPECT_EQ(m.error_categories.at("context_overflow"), 1);
  EXPECT_EQ(m.error_categories.at("connect"), 1);
  EXPECT_EQ(m.sessions, 2) << "the warmup-only session c does not count";
  EXPECT_DOUBLE_EQ(m.requests_per_session, 2.5);
  EXPECT_EQ(m.max_requests_per_session, 3);
}

TEST(AgenticMetrics, TheoreticalPrefixCacheHitOverSuccessfulProfilingRequests) {
  std::vector<RequestRecord> records = {ok(kS, 10, 100, 5), ok(kS, 10, 100, 5),
                                        failed("HTTP 500: x"), ok(kS, 10, 100, 5)};
  std::vector<AgenticRequestInfo> info(4);
  info[0].theoretical_hit_blocks = 3;
  info[0].theoretical_total_blocks = 4;
  info[1].theoretical_hit_blocks = 1;
  info[1].theoretical_total_blocks = 4;
  info[2].theoretical_hit_blocks = 10;  // failed
  info[2].theoretical_total_blocks = 10;
  info[3].theoretical_hit_blocks = 9;
  info[3].theoretical_total_blocks = 9;
  info[3].profiling = false;  // warmup
  const AgenticMetrics m = compute(records, info);
  ASSERT_TRUE(m.theoretical_cache_hit_pct);
  EXPECT_DOUBLE_EQ(*m.theoretical_cache_hit_pct, 50);  // 100·4/8
  EXPECT_FALSE(compute({ok(kS, 10, 100, 5)}).theoretical_cache_hit_pct);
}

TEST(AgenticMetrics, TokenDriftAgainstTheTrace) {
  std::vector<RequestRecord> records = {ok(kS, 10, 100, 5, 110), ok(kS, 10, 100, 5, 205),
                                        ok(kS, 10, 100, 5, 50)};
  records[2].prompt_tokens = -1;  // no server usage: not compared
  std::vector<AgenticRequestInfo> info(3);
  info[0].recorded_in = 100;
  info[1].recorded_in = 200;
  info[2].recorded_in = 50;
  info[0].recorded_out = 4;
  info[1].recorded_out = 6;
  const AgenticMetrics m = compute(records, info);
  EXPECT_EQ(m.token_ratio.count, 2);
  EXPECT_NEAR(m.token_ratio.mean, 1.0625, 1e-12);
  EXPECT_NEAR(m.token_ratio.p1, 1.025 + 0.01 * 0.075, 1e-12);
  EXPECT_NEAR(m.token_ratio.p99, 1.025 + 0.99 * 0.075, 1e-12);
  EXPECT_DOUBLE_EQ(m.token_overhead.mean, 7.5);
  EXPECT_DOUBLE_EQ(m.token_overhead.min, 5);
  EXPECT_DOUBLE_EQ(m.token_overhead.max, 10);
  EXPECT_DOUBLE_EQ(m.expected_output_tokens.mean, 5);  // recorded `out` where known
  EXPECT_EQ(m.expected_output_tokens.count, 2);
}

TEST(AgenticMetrics, CoverageOfTtftAndItlObservations) {
  std::vector<RequestRecord> records = {ok(kS, 10, 100, 5), ok(kS, 10, 100, 5),
                                        ok(kS, 10, 10, 1),  // one token: no ITL
                                        ok(kS, 10, 100, 5), failed("HTTP 500: x")};
  records[3].content_ns.clear();  // a success without content events: no TTFT either
  const AgenticMetrics m = compute(records);
  EXPECT_EQ(m.successful, 4);
  EXPECT_EQ(m.ttft_observations, 3);
  EXPECT_EQ(m.itl_observations, 2);
  EXPECT_DOUBLE_EQ(m.ttft_coverage, 0.75);
  EXPECT_DOUBLE_EQ(m.itl_coverage, 0.5);
  EXPECT_DOUBLE_EQ(m.coverage(), 0.5);
}

AgenticMetrics with_ends(const std::vector<int64_t>& offsets_ns) {
  std::vector<RequestRecord> records;
  for (int64_t off : offsets_ns) {
    RequestRecord r = ok(kS / 2, 1, 2, 2);
    r.done_ns = kS + off;
    records.push_back(r);
  }
  return compute(records);
}

TEST(AgenticMetrics, QpsInOneSecondWindowsWithoutTheRightBoundary) {
  AgenticMetrics m = with_ends({0, kS / 2, kS, 3 * kS / 2, 2 * kS});
  EXPECT_EQ(m.qps_windows, 2);
  EXPECT_DOUBLE_EQ(m.qps.mean, 2);  // the end at exactly 2 s is past the last window
  m = with_ends({0, kS, kS, 2 * kS});
  EXPECT_DOUBLE_EQ(m.qps.mean, 1.5);
  EXPECT_DOUBLE_EQ(m.qps.p95, 1.95);
  m = with_ends({0, kS / 4, kS / 2});
  EXPECT_EQ(m.qps_windows, 0);
  EXPECT_DOUBLE_EQ(m.qps.mean, 6);  // 3 completions in 0.5 s
  EXPECT_EQ(m.qps.count, 0);
}

// A run of `ok_n` successes and `err_n` generic errors, `overflow_n` of them overflows.
AgenticMetrics run(int ok_n, int err_n, int overflow_n = 0) {
  std::vector<RequestRecord> records;
  for (int i = 0; i < ok_n; ++i) records.push_back(ok(kS, 10, 100, 5));
  for (int i = 0; i < err_n; ++i) {
    records.push_back(failed(i < overflow_n ? "prompt is too long" : "HTTP 500: x"));
  }
  return compute(records);
}

AgenticRunFacts good_facts() {
  AgenticRunFacts f;
  f.duration_s = 1800;
  return f;
}

TEST(AgenticValidity, AValidRun) {
  const auto reasons = agentic_validity(run(100, 0), good_facts());
  EXPECT_TRUE(reasons.empty());
  EXPECT_TRUE(submission_valid(reasons));
}

TEST(AgenticValidity, ErrorRateAboveTenPercentStrictly) {
  // InferenceX: error/(request + error) <= 0.10 passes, inclusive.
  EXPECT_FALSE(has_reason(agentic_validity(run(90, 10), good_facts()), "error_rate_exceeded"));
  const auto reasons = agentic_validity(run(89, 11), good_facts());
  ASSERT_TRUE(has_reason(reasons, "error_rate_exceeded"));
  EXPECT_EQ(reasons[0].message,
            "11 of 100 profiling requests failed (11.00%), above the 10% limit");
}

TEST(AgenticValidity, ContextOverflowRateAboveOnePercentStrictly) {
  // 1 overflow in 99 successful + 1 error = 100 requests: exactly 1%, valid.
  EXPECT_FALSE(
      has_reason(agentic_validity(run(99, 1, 1), good_facts()), "context_overflow_rate_exceeded"));
  // 1 in 98 + 1 = 99: above.
  auto reasons = agentic_validity(run(98, 1, 1), good_facts());
  ASSERT_TRUE(has_reason(reasons, "context_overflow_rate_exceeded"));
  EXPECT_EQ(reasons[0].message,
            "1 context overflows in 99 requests (98 successful + 1 errors + 0 skipped as "
            "overflowing) = 1.01%, above the 1% limit");
  // Requests skipped as overflowing count in the denominator.
  AgenticRunFacts f = good_facts();
  f.skipped_overflow = 1;
  EXPECT_FALSE(has_reason(agentic_validity(run(98, 1, 1), f), "context_overflow_rate_exceeded"));
  // No responses at all: the rate is 0 (the other gates catch such a run).
  EXPECT_FALSE(
      has_reason(agentic_validity(run(0, 0), good_facts()), "context_overflow_rate_exceeded"));
}

TEST(AgenticValidity, CoverageBelowNinetyEightPercent) {
  std::vector<RequestRecord> records;
  for (int i = 0; i < 49; ++i) records.push_back(ok(kS, 10, 100, 5));
  records.push_back(ok(kS, 10, 10, 1));  // 49/50 = 98% ITL coverage: enough
  EXPECT_FALSE(has_reason(agentic_validity(compute(records), good_facts()),
                          "insufficient_profile_metric_coverage"));
  records.push_back(ok(kS, 10, 10, 1));  // 49/51 = 96.08%
  const auto reasons = agentic_validity(compute(records), good_facts());
  ASSERT_TRUE(has_reason(reasons, "insufficient_profile_metric_coverage"));
  EXPECT_EQ(reasons[0].message,
            "TTFT observed for 51 and ITL for 49 of 51 successful profiling requests (100.00% / "
            "96.08%), below the 98% required");
  EXPECT_TRUE(
      has_reason(agentic_validity(run(0, 5), good_facts()), "insufficient_profile_metric_coverage"))
      << "no successful request covers nothing";
}

TEST(AgenticValidity, DurationFloorCancellationAndTimeScale) {
  AgenticRunFacts f = good_facts();
  f.duration_s = 899;
  auto reasons = agentic_validity(run(10, 0), f);
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_EQ(reasons[0].reason, "duration_below_floor");
  EXPECT_EQ(reasons[0].message, "the benchmark duration 899 s is below the 900 s floor");
  f.duration_s = 900;
  EXPECT_TRUE(agentic_validity(run(10, 0), f).empty());

  // 300 s at K = 3 replays 900 s of recorded time: above the floor, but time-scaled.
  f.duration_s = 300;
  f.time_scale = 3;
  reasons = agentic_validity(run(10, 0), f);
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_EQ(reasons[0].reason, "time_scaled");
  EXPECT_EQ(reasons[0].message,
            "the replay ran 3x faster than recorded: a time-scaled run is not submission-valid");
  f.duration_s = 200;
  reasons = agentic_validity(run(10, 0), f);
  ASSERT_EQ(reasons.size(), 2u);
  EXPECT_EQ(reasons[0].message,
            "the benchmark duration 200 s at time scale 3 replays 600 s of recorded time, below "
            "the 900 s floor");

  f = good_facts();
  f.cancelled = true;
  reasons = agentic_validity(run(10, 0), f);
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_EQ(reasons[0].reason, "run_cancelled");
  EXPECT_FALSE(submission_valid(reasons));
}

TEST(AgenticJson, InferencexKeysRoundingAndValidity) {
  std::vector<RequestRecord> records = {ok(kS, 12.3456789, 1000, 50), failed("HTTP 500: x"),
                                        ok(kS, 10, 100, 5)};
  records[0].content_ns[0] = kS + 12'345'679;  // TTFT 0.012345679 s
  std::vector<AgenticRequestInfo> info(3);
  info[0].theoretical_hit_blocks = 1;
  info[0].theoretical_total_blocks = 4;
  info[2].profiling = false;
  const AgenticMetrics m = compute(records, info, 8);
  const auto reasons = agentic_validity(m, good_facts());
  const boost::json::object o = inferencex_agentic_json(m, reasons);

  EXPECT_EQ(o.at("num_requests_total").as_int64(), 3);
  EXPECT_EQ(o.at("num_requests_successful").as_int64(), 1);
  const auto& acc = o.at("request_accounting").as_object();
  EXPECT_EQ(acc.at("records_total").as_int64(), 3);
  EXPECT_EQ(acc.at("records_profiled").as_int64(), 1);
  EXPECT_EQ(acc.at("records_dropped_total").as_int64(), 2);
  EXPECT_EQ(acc.at("records_warmup_dropped").as_int64(), 1);
  EXPECT_EQ(acc.at("records_error_dropped").as_int64(), 1);
  EXPECT_EQ(acc.at("error_categories").at("http_status").as_int64(), 1);

  auto keys = [](const boost::json::object& x) {
    std::set<std::string> k;
    for (const auto& kv : x) k.insert(std::string(kv.key()));
    return k;
  };
  const auto& rm = o.at("request_metrics").as_object();
  EXPECT_EQ(keys(rm), (std::set<std::string>{"qps", "latency", "tokens", "throughput", "cache"}));
  const auto& latency = rm.at("latency").as_object();
  EXPECT_EQ(keys(latency),
            (std::set<std::string>{"ttft", "e2el", "itl", "tpot", "intvty", "e2e_norm_intvty"}));
  EXPECT_EQ(keys(latency.at("ttft").as_object()),
            (std::set<std::string>{"mean", "p50", "p75", "p90", "p95", "std"}));
  EXPECT_EQ(latency.at("ttft").at("mean").as_double(), 0.01235);  // 5 decimals, seconds
  EXPECT_EQ(latency.at("e2el").at("p90").as_double(), 1.0);
  EXPECT_EQ(latency.at("e2e_norm_intvty").at("p50").as_double(), 50.0);  // 50 tokens in 1 s
  EXPECT_EQ(keys(rm.at("tokens").as_object()),
            (std::set<std::string>{"input", "output_actual", "output_expected"}));
  EXPECT_TRUE(rm.at("tokens").at("output_expected").as_object().empty()) << "no trace `out`";
  EXPECT_EQ(rm.at("tokens").at("output_actual").at("mean").as_double(), 50.0);
  const auto& tput = rm.at("throughput").as_object();
  EXPECT_EQ(keys(tput), (std::set<std::string>{"input_tput_tps", "output_tput_tps",
                                               "total_tput_tps", "duration_seconds", "per_gpu"}));
  EXPECT_EQ(tput.at("duration_seconds").as_double(), 1.001);
  EXPECT_EQ(tput.at("per_gpu").at("output_tput_tps").as_double(), 6.24376);  // 50/1.001/8
  EXPECT_EQ(rm.at("cache").at("theoretical_cache_hit_rate").as_double(), 0.25);
  EXPECT_FALSE(o.at("submission_valid").as_bool());  // 1 of 2 requests failed
  const auto& why = o.at("submission_invalid_reasons").as_array();
  ASSERT_FALSE(why.empty());
  EXPECT_EQ(why[0].at("reason").as_string(), "error_rate_exceeded");
}

TEST(AgenticJson, OurKeys) {
  const AgenticMetrics m = compute({ok(kS, 30, 1000, 50), ok(2 * kS, 30, 2000, 50)});
  const boost::json::object o = agentic_to_json(m);
  EXPECT_EQ(o.at("successful").as_int64(), 2);
  EXPECT_NEAR(o.at("ttft_ms").at("mean").as_double(), 30, 1e-9);
  EXPECT_NEAR(o.at("e2e_norm_intvty").at("p90").as_double(), 1 / 0.038, 1e-9);
  EXPECT_TRUE(o.at("theoretical_prefix_cache_hit_pct").is_null());
  EXPECT_DOUBLE_EQ(o.at("itl_coverage").as_double(), 1.0);
  EXPECT_EQ(o.at("itl_ms").at("count").as_int64(), 2);
  // Two events carrying 50 tokens, uncounted: one gap each, and no tokens per event.
  EXPECT_EQ(o.at("icl_ms").at("count").as_int64(), 2);
  EXPECT_NEAR(o.at("icl_ms").at("mean").as_double(), (970.0 + 1970.0) / 2, 1e-6);
  EXPECT_TRUE(o.at("mean_tokens_per_event").is_null());
  // Counted on every event (continuous usage): 1 then 49.
  RequestRecord counted = ok(kS, 30, 1000, 50);
  counted.content_tokens = {1, 49};
  EXPECT_DOUBLE_EQ(agentic_to_json(compute({counted})).at("mean_tokens_per_event").as_double(), 25);
}

}  // namespace
}  // namespace ib::metrics
