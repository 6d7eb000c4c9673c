#include "sim/server_metrics.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <string>
#include <vector>

#include "sim/truth_log.h"

namespace ib::sim {
namespace {

TEST(Histogram, CumulativeBuckets) {
  static constexpr double kBounds[] = {0.1, 1.0, 10.0};
  Histogram h(kBounds);
  for (double v : {0.05, 0.1, 0.5, 5.0, 50.0}) h.observe(v);
  EXPECT_EQ(h.count(), 5u);
  EXPECT_DOUBLE_EQ(h.sum(), 55.65);
  EXPECT_EQ(h.cumulative(0), 2u);  // le="0.1" includes 0.1
  EXPECT_EQ(h.cumulative(1), 3u);
  EXPECT_EQ(h.cumulative(2), 4u);
  EXPECT_EQ(h.cumulative(3), 5u);  // +Inf
}

TEST(RenderMetrics, VllmNamesTypesAndLabels) {
  EngineStats engine;
  engine.running = 3;
  engine.waiting = 2;
  engine.kv_cache_usage = 0.25;
  engine.prefix_queries = 100;
  engine.prefix_hits = 40;
  engine.preemptions = 7;
  engine.kv_evicted_blocks = 12;
  ServerMetrics server;
  server.prompt_tokens = 1000;
  server.generation_tokens = 64;
  server.token_writes = 40;
  server.finished_length = 2;
  server.ttft.observe(0.03);
  const std::string text = render_metrics("m\"x", engine, server, nullptr);
  const std::string labels = R"(model_name="m\"x",engine="0")";
  for (const std::string& line : std::vector<std::string>{
           "vllm:num_requests_running{" + labels + "} 3",
           "vllm:num_requests_waiting{" + labels + "} 2",
           "vllm:kv_cache_usage_perc{" + labels + "} 0.25",
           "vllm:gpu_cache_usage_perc{" + labels + "} 0.25",
           "vllm:prefix_cache_queries_total{" + labels + "} 100",
           "vllm:prefix_cache_hits_total{" + labels + "} 40",
           "vllm:num_preemptions_total{" + labels + "} 7",
           "inferbench_sim:kv_cache_evicted_blocks_total{" + labels + "} 12",
           std::string("# TYPE inferbench_sim:kv_cache_evicted_blocks_total counter"),
           "vllm:prompt_tokens_total{" + labels + "} 1000",
           "vllm:generation_tokens_total{" + labels + "} 64",
           "inferbench_sim:token_writes_total{" + labels + "} 40",
           "vllm:request_success_total{" + labels + R"(,finished_reason="length"} 2)",
           "vllm:time_to_first_token_seconds_bucket{" + labels + R"(,le="0.04"} 1)",
           "vllm:time_to_first_token_seconds_bucket{" + labels + R"(,le="0.02"} 0)",
           "vllm:time_to_first_token_seconds_count{" + labels + "} 1",
           std::string("# TYPE vllm:num_preemptions_total counter"),
           std::string("# TYPE vllm:num_requests_running gauge"),
       }) {
    EXPECT_NE(text.find(line + "\n"), std::string::npos) << line;
  }
  EXPECT_EQ(text.find("cache_config_info"), std::string::npos);
  CacheConfigInfo cache{16, 1234, "bf16", true, 0.9};
  EXPECT_NE(render_metrics("m", engine, server, &cache).find(R"(num_gpu_blocks="1234")"),
            std::string::npos);
}

// /metrics with several I/O threads adds up each thread's counters.
TEST(ServerMetrics, AddSumsCountersAndHistograms) {
  ServerMetrics a, b;
  a.prompt_tokens = 10;
  a.generation_tokens = 5;
  a.token_writes = 3;
  a.finished_length = 1;
  a.ttft.observe(0.03);
  a.e2e.observe(2.0);
  b.prompt_tokens = 7;
  b.generation_tokens = 4;
  b.token_writes = 4;
  b.finished_stop = 2;
  b.finished_abort = 1;
  b.ttft.observe(0.5);
  ServerMetrics total;
  total.add(a);
  total.add(b);
  EXPECT_EQ(total.prompt_tokens, 17);
  EXPECT_EQ(total.generation_tokens, 9);
  EXPECT_EQ(total.token_writes, 7);
  EXPECT_EQ(total.finished_length, 1);
  EXPECT_EQ(total.finished_stop, 2);
  EXPECT_EQ(total.finished_abort, 1);
  EXPECT_EQ(total.ttft.count(), 2u);
  EXPECT_DOUBLE_EQ(total.ttft.sum(), 0.53);
  EXPECT_EQ(total.ttft.cumulative(4), 1u);  // le="0.04"
  EXPECT_EQ(total.e2e.count(), 1u);
}

TEST(TruthJson, OneParseableObject) {
  const int64_t sent[] = {10, 20};
  const int64_t due[] = {9, 19};
  TruthRecord r;
  r.request_id = "a\"b";
  r.id = "cmpl-1";
  r.api = "completions";
  r.stream = true;
  r.arrival_ns = 5;
  r.prompt_tokens = 3;
  r.completion_tokens = 2;
  r.finish_reason = "length";
  r.token_ns = sent;
  r.due_ns = due;
  const auto v = boost::json::parse(truth_json(r)).as_object();
  EXPECT_EQ(v.at("request_id").as_string(), "a\"b");
  EXPECT_EQ(v.at("token_ns").as_array().size(), 2u);
  EXPECT_EQ(v.at("due_ns").at(1).as_int64(), 19);
  r.request_id = "";
  EXPECT_TRUE(boost::json::parse(truth_json(r)).as_object().at("request_id").is_null());
}

}  // namespace
}  // namespace ib::sim

namespace ib::sim {
namespace {

// SGLang's acceptance gauges cover the steps since the previous scrape, and keep their last
// values while nothing drafts; before anything drafted there is no series.
TEST(SglangMetrics, TheAcceptanceGaugeIsOverTheWindowSinceTheLastScrape) {
  SpecGaugeWindow w;
  SpecDecodeCounters c;
  for (int i = 0; i < 10; ++i) c.count(3, 3);  // every draft accepted: 4 tokens a step
  w.advance(c);
  EXPECT_DOUBLE_EQ(w.accept_length, 4);
  EXPECT_DOUBLE_EQ(w.accept_rate, 1);
  for (int i = 0; i < 10; ++i) c.count(0, 3);  // none accepted since
  w.advance(c);
  EXPECT_DOUBLE_EQ(w.accept_length, 1);
  w.advance(c);  // nothing drafted: the last values stay
  EXPECT_DOUBLE_EQ(w.accept_length, 1);

  EngineStats e;
  e.num_speculative_tokens = 3;
  const std::string body = render_sglang_metrics("m", e, ServerMetrics{}, w);
  EXPECT_NE(body.find("sglang:spec_accept_length{model_name=\"m\"} 1\n"), std::string::npos)
      << body;
  EXPECT_NE(body.find("sglang:num_running_reqs{model_name=\"m\"} 0\n"), std::string::npos);
  EXPECT_EQ(body.find("vllm:"), std::string::npos);
  EXPECT_EQ(render_sglang_metrics("m", e, ServerMetrics{}, SpecGaugeWindow{}).find("spec_accept"),
            std::string::npos);
}

}  // namespace
}  // namespace ib::sim
