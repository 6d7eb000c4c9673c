#include "metrics/prometheus.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace ib::metrics {
namespace {

Scrape parse_ok(std::string_view text) {
  auto r = parse_prometheus(text);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? std::move(r).value() : Scrape{};
}

std::string parse_error(std::string_view text) {
  auto r = parse_prometheus(text);
  EXPECT_FALSE(r.ok());
  return r.ok() ? std::string() : r.error().message;
}

TEST(Prometheus, SamplesLabelsHelpAndTypes) {
  const Scrape s = parse_ok(
      "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{model_name=\"m\",engine=\"0\"} 3\n"
      "# a plain comment\n"
      "\n"
      "# TYPE vllm:prefix_cache_hits_total counter\n"
      "vllm:prefix_cache_hits_total{engine=\"1\",model_name=\"m\"} 4.5e3 1700000000000\n"
      "up 1\n");
  ASSERT_EQ(s.samples.size(), 3u);
  const Sample& a = s.samples[0];
  EXPECT_EQ(a.name, "vllm:num_requests_running");
  // Sorted by label name.
  ASSERT_EQ(a.labels.size(), 2u);
  EXPECT_EQ(a.labels[0], (std::pair<std::string, std::string>{"engine", "0"}));
  EXPECT_EQ(a.labels[1], (std::pair<std::string, std::string>{"model_name", "m"}));
  EXPECT_EQ(a.value, 3);
  EXPECT_FALSE(a.timestamp_ms);
  EXPECT_EQ(s.samples[1].value, 4500);
  EXPECT_EQ(s.samples[1].timestamp_ms, 1700000000000);
  EXPECT_EQ(*s.samples[1].label("engine"), "1");
  EXPECT_EQ(s.samples[1].label("nope"), nullptr);
  EXPECT_TRUE(s.samples[2].labels.empty());
  EXPECT_EQ(s.families.at("vllm:num_requests_running").help,
            "Number of requests in model execution batches.");
  EXPECT_EQ(s.type_of("vllm:num_requests_running"), MetricType::kGauge);
  EXPECT_EQ(s.type_of("vllm:prefix_cache_hits_total"), MetricType::kCounter);
  EXPECT_EQ(s.type_of("up"), MetricType::kUntyped);
}

TEST(Prometheus, EscapedLabelValuesAndHelp) {
  const Scrape s = parse_ok(
      "# HELP x a \\\\ backslash\\nand a newline\n"
      "x{path=\"C:\\\\dir\",quote=\"say \\\"hi\\\"\",nl=\"a\\nb\",empty=\"\"} 1\n");
  ASSERT_EQ(s.samples.size(), 1u);
  EXPECT_EQ(*s.samples[0].label("path"), "C:\\dir");
  EXPECT_EQ(*s.samples[0].label("quote"), "say \"hi\"");
  EXPECT_EQ(*s.samples[0].label("nl"), "a\nb");
  EXPECT_EQ(*s.samples[0].label("empty"), "");
  EXPECT_EQ(s.families.at("x").help, "a \\ backslash\nand a newline");
}

TEST(Prometheus, SpecialValuesWhitespaceAndTrailingComma) {
  const Scrape s = parse_ok(
      "a NaN\n"
      "b +Inf\n"
      "c -Inf\n"
      "d{ k = \"v\" , } -0.5  -12\r\n"
      "  e\t2\n");
  ASSERT_EQ(s.samples.size(), 5u);
  EXPECT_TRUE(std::isnan(s.samples[0].value));
  EXPECT_EQ(s.samples[1].value, INFINITY);
  EXPECT_EQ(s.samples[2].value, -INFINITY);
  EXPECT_EQ(s.samples[3].value, -0.5);
  EXPECT_EQ(s.samples[3].timestamp_ms, -12);
  EXPECT_EQ(*s.samples[3].label("k"), "v");
  EXPECT_EQ(s.samples[4].value, 2);
  EXPECT_NE(parse_error("f 0x10\n").find("not a number"), std::string::npos);
}

TEST(Prometheus, HistogramsAndSummariesAsTheirSamples) {
  const Scrape s = parse_ok(
      "# TYPE vllm:e2e_request_latency_seconds histogram\n"
      "vllm:e2e_request_latency_seconds_bucket{le=\"0.3\",model_name=\"m\"} 1\n"
      "vllm:e2e_request_latency_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 4\n"
      "vllm:e2e_request_latency_seconds_count{model_name=\"m\"} 4\n"
      "vllm:e2e_request_latency_seconds_sum{model_name=\"m\"} 2.5\n"
      "# TYPE rpc summary\n"
      "rpc{quantile=\"0.5\"} 0.01\n"
      "rpc_sum 7\n"
      "rpc_count 100\n");
  ASSERT_EQ(s.samples.size(), 7u);
  EXPECT_EQ(s.type_of("vllm:e2e_request_latency_seconds_bucket"), MetricType::kHistogram);
  EXPECT_EQ(s.type_of("vllm:e2e_request_latency_seconds_sum"), MetricType::kHistogram);
  EXPECT_EQ(s.type_of("rpc_count"), MetricType::kSummary);
  EXPECT_EQ(s.type_of("rpc"), MetricType::kSummary);
  EXPECT_EQ(*s.samples[1].label("le"), "+Inf");
  EXPECT_EQ(sum_samples(s, "vllm:e2e_request_latency_seconds_count"), 4);
  EXPECT_EQ(sum_samples(s, "vllm:e2e_request_latency_seconds_bucket", {{"le", "0.3"}}), 1);
}

TEST(Prometheus, ErrorsNameTheLine) {
  EXPECT_EQ(parse_error("ok 1\n9bad 1\n").rfind("line 2:", 0), 0u);
  EXPECT_NE(parse_error("a{k=\"v} 1\n").find("line 1: label value of k in a is not terminated"),
            std::string::npos);
  EXPECT_NE(parse_error("a{k=v} 1\n").find("must be quoted"), std::string::npos);
  EXPECT_NE(parse_error("a{k=\"\\t\"} 1\n").find("invalid escape"), std::string::npos);
  EXPECT_NE(parse_error("a{k=\"1\",k=\"2\"} 1\n").find("label k appears twice"), std::string::npos);
  EXPECT_NE(parse_error("a{k=\"1\"\n").find("not closed"), std::string::npos);
  EXPECT_NE(parse_error("a{k=\"1\" j=\"2\"} 1\n").find("expected ','"), std::string::npos);
  EXPECT_NE(parse_error("a{1k=\"1\"} 1\n").find("expected a label name"), std::string::npos);
  EXPECT_NE(parse_error("\n\na\n").find("line 3: a has no value"), std::string::npos);
  EXPECT_NE(parse_error("a one\n").find("value 'one' of a is not a number"), std::string::npos);
  EXPECT_NE(parse_error("a 1 soon\n").find("timestamp 'soon'"), std::string::npos);
  EXPECT_NE(parse_error("a 1 2 3\n").find("unexpected '3'"), std::string::npos);
  EXPECT_NE(parse_error("# TYPE a countr\n").find("line 1: unknown type 'countr'"),
            std::string::npos);
  EXPECT_NE(parse_error("# TYPE a gauge\n# TYPE a gauge\n").find("line 2: a second # TYPE"),
            std::string::npos);
  EXPECT_NE(parse_error("# TYPE\n").find("needs a metric name"), std::string::npos);
  EXPECT_NE(parse_error("# TYPE h histogram\nh_bucket 1\n").find("line 2: histogram bucket"),
            std::string::npos);
  EXPECT_NE(parse_error("# TYPE h histogram\nh_bucket{le=\"x\"} 1\n").find("le=\"x\""),
            std::string::npos);
  EXPECT_NE(parse_error("# TYPE s summary\ns 1\n").find("no quantile label"), std::string::npos);
}

TEST(Prometheus, SumOverLabelSets) {
  const Scrape s = parse_ok(
      "vllm:prefix_cache_hits_total{engine=\"0\"} 10\n"
      "vllm:prefix_cache_hits_total{engine=\"1\"} 32\n"
      "other 5\n");
  EXPECT_EQ(sum_samples(s, "vllm:prefix_cache_hits_total"), 42);
  EXPECT_EQ(sum_samples(s, "vllm:prefix_cache_hits_total", {{"engine", "1"}}), 32);
  EXPECT_FALSE(sum_samples(s, "vllm:prefix_cache_hits_total", {{"engine", "2"}}));
  EXPECT_FALSE(sum_samples(s, "missing"));
}

TEST(PrefixCache, VllmCountersAndTheirDelta) {
  const Scrape before = parse_ok(
      "vllm:prefix_cache_queries_total{engine=\"0\"} 1000\n"
      "vllm:prefix_cache_hits_total{engine=\"0\"} 200\n"
      "vllm:gpu_prefix_cache_queries_total{engine=\"0\"} 1\n"
      "vllm:gpu_prefix_cache_hits_total{engine=\"0\"} 1\n");
  const Scrape after = parse_ok(
      "vllm:prefix_cache_queries_total{engine=\"0\"} 5000\n"
      "vllm:prefix_cache_hits_total{engine=\"0\"} 3200\n");
  const PrefixCacheCounters b = read_prefix_cache(before);
  const PrefixCacheCounters a = read_prefix_cache(after);
  EXPECT_EQ(b.source, PrefixCacheSource::kVllm) << "the current names win";
  EXPECT_EQ(b.queries, 1000);
  EXPECT_EQ(b.hits, 200);
  EXPECT_EQ(prefix_hit_rate(b, a), 0.75);  // 3000 / 4000
  EXPECT_FALSE(prefix_hit_rate(a, a)) << "nothing was looked up";
  EXPECT_FALSE(prefix_hit_rate(a, b)) << "counters went back: a restart";
  EXPECT_EQ(to_string(a.source), "vllm");
}

TEST(PrefixCache, OlderVllmNames) {
  const PrefixCacheCounters c =
      read_prefix_cache(parse_ok("vllm:gpu_prefix_cache_queries_total{engine=\"0\"} 10\n"
                                 "vllm:gpu_prefix_cache_hits_total{engine=\"0\"} 4\n"));
  EXPECT_EQ(c.source, PrefixCacheSource::kVllmGpu);
  EXPECT_EQ(c.queries, 10);
  EXPECT_EQ(c.hits, 4);
}

TEST(PrefixCache, SglangCountersThenRealtimeThenGauge) {
  const PrefixCacheCounters tokens =
      read_prefix_cache(parse_ok("sglang:prompt_tokens_total{model_name=\"m\"} 800\n"
                                 "sglang:cached_tokens_total{model_name=\"m\"} 600\n"
                                 "sglang:cache_hit_rate{model_name=\"m\"} 0.1\n"));
  EXPECT_EQ(tokens.source, PrefixCacheSource::kSglangTokens);
  EXPECT_EQ(tokens.queries, 800);
  EXPECT_EQ(tokens.hits, 600);

  const PrefixCacheCounters realtime = read_prefix_cache(
      parse_ok("sglang:realtime_tokens_total{mode=\"prefill_compute\",tp_rank=\"0\"} 30\n"
               "sglang:realtime_tokens_total{mode=\"prefill_cache\",tp_rank=\"0\"} 70\n"
               "sglang:realtime_tokens_total{mode=\"decode\",tp_rank=\"0\"} 999\n"));
  EXPECT_EQ(realtime.source, PrefixCacheSource::kSglangRealtime);
  EXPECT_EQ(realtime.queries, 100);
  EXPECT_EQ(realtime.hits, 70);

  const PrefixCacheCounters g0 = read_prefix_cache(parse_ok(
      "sglang:cache_hit_rate{tp_rank=\"0\"} 0.2\nsglang:cache_hit_rate{tp_rank=\"1\"} 0.4\n"));
  EXPECT_EQ(g0.source, PrefixCacheSource::kSglangGauge);
  EXPECT_DOUBLE_EQ(g0.gauge, 0.3);
  // A gauge is a rate already: the value after the run.
  EXPECT_DOUBLE_EQ(*prefix_hit_rate(PrefixCacheCounters{}, g0), 0.3);

  EXPECT_EQ(read_prefix_cache(parse_ok("up 1\n")).source, PrefixCacheSource::kNone);
  EXPECT_FALSE(prefix_hit_rate({}, {}));
  EXPECT_FALSE(prefix_hit_rate(realtime, tokens)) << "different sources";
}

TEST(Prometheus, ReadsServeSimMetrics) {
  // The exact shape serve-sim writes (src/sim/server_metrics.cc).
  const Scrape s = parse_ok(
      "# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried "
      "tokens.\n"
      "# TYPE vllm:prefix_cache_queries_total counter\n"
      "vllm:prefix_cache_queries_total{model_name=\"sim-model\",engine=\"0\"} 600\n"
      "# TYPE vllm:prefix_cache_hits_total counter\n"
      "vllm:prefix_cache_hits_total{model_name=\"sim-model\",engine=\"0\"} 288\n"
      "# TYPE vllm:cache_config_info gauge\n"
      "vllm:cache_config_info{model_name=\"sim-model\",engine=\"0\",block_size=\"16\","
      "cache_dtype=\"bf16\",enable_prefix_caching=\"True\",gpu_memory_utilization=\"0.9\","
      "num_gpu_blocks=\"56290\"} 1\n");
  const PrefixCacheCounters c = read_prefix_cache(s);
  EXPECT_EQ(c.source, PrefixCacheSource::kVllm);
  EXPECT_EQ(c.hits, 288);
  EXPECT_EQ(*s.samples[2].label("num_gpu_blocks"), "56290");
}

}  // namespace
}  // namespace ib::metrics
