#include "telemetry/timeslices.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace ib::telemetry {
namespace {

metrics::Scrape parse_scrape_ok(const std::string& text) {
  auto r = metrics::parse_prometheus(text);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? std::move(r).value() : metrics::Scrape{};
}

TimedScrape at(double t_s, const std::string& text, std::string url = "http://a/metrics") {
  return TimedScrape{t_s, parse_scrape_ok(text), std::move(url)};
}

struct Vllm {
  double running = 0, waiting = 0, kv = 0, hits = 0, queries = 0, preempt = 0, prompt = 0, gen = 0;
};

// What vLLM v1 answers on /metrics (the lines this module reads, plus a histogram to skip).
std::string vllm_text(const Vllm& v) {
  const std::string l = "{engine=\"0\",model_name=\"m\"}";
  std::string s;
  s += "# HELP vllm:num_requests_running Number of requests in model execution batches.\n";
  s += "# TYPE vllm:num_requests_running gauge\n";
  s += "vllm:num_requests_running" + l + " " + std::to_string(v.running) + "\n";
  s += "# TYPE vllm:num_requests_waiting gauge\n";
  s += "vllm:num_requests_waiting" + l + " " + std::to_string(v.waiting) + "\n";
  s += "# TYPE vllm:kv_cache_usage_perc gauge\n";
  s += "vllm:kv_cache_usage_perc" + l + " " + std::to_string(v.kv) + "\n";
  s += "# TYPE vllm:prefix_cache_queries counter\n";
  s += "vllm:prefix_cache_queries_total" + l + " " + std::to_string(v.queries) + "\n";
  s += "# TYPE vllm:prefix_cache_hits counter\n";
  s += "vllm:prefix_cache_hits_total" + l + " " + std::to_string(v.hits) + "\n";
  s += "# TYPE vllm:num_preemptions counter\n";
  s += "vllm:num_preemptions_total" + l + " " + std::to_string(v.preempt) + "\n";
  s += "# TYPE vllm:prompt_tokens counter\n";
  s += "vllm:prompt_tokens_total" + l + " " + std::to_string(v.prompt) + "\n";
  s += "# TYPE vllm:generation_tokens counter\n";
  s += "vllm:generation_tokens_total" + l + " " + std::to_string(v.gen) + "\n";
  s += "# TYPE vllm:time_to_first_token_seconds histogram\n";
  s += "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 3\n";
  s += "vllm:time_to_first_token_seconds_count" + l + " 3\n";
  s += "vllm:time_to_first_token_seconds_sum" + l + " 0.5\n";
  return s;
}

TEST(ServerTimeslices, VllmGaugesCountersRatesAndHitRate) {
  const std::vector<TimedScrape> scrapes = {
      at(10.0, vllm_text({2, 0, 0.10, 0, 0, 0, 0, 0})),
      at(10.5, vllm_text({4, 1, 0.30, 50, 100, 0, 100, 20})),
      at(11.0, vllm_text({4, 3, 0.50, 50, 100, 1, 100, 60})),
      at(11.5, vllm_text({6, 1, 0.40, 125, 300, 1, 300, 100})),
      at(12.25, vllm_text({1, 0, 0.20, 150, 300, 3, 300, 175})),
  };
  const auto slices = server_timeslices(scrapes, 1.0);
  ASSERT_EQ(slices.size(), 3u);

  const ServerSlice& a = slices[0];  // [10, 11): scrapes 10.0 and 10.5
  EXPECT_EQ(a.index, 0);
  EXPECT_EQ(a.start_s, 0.0);
  EXPECT_EQ(a.end_s, 1.0);
  EXPECT_EQ(a.scrapes, 2);
  EXPECT_EQ(a.engine, "vllm");
  EXPECT_EQ(a.running, 4);
  EXPECT_EQ(a.running_mean, 3);
  EXPECT_EQ(a.waiting, 1);
  EXPECT_EQ(a.waiting_mean, 0.5);
  EXPECT_DOUBLE_EQ(*a.kv_usage, 0.3);
  EXPECT_DOUBLE_EQ(*a.kv_usage_max, 0.3);
  EXPECT_EQ(a.prefix_hits, 50);
  EXPECT_EQ(a.prefix_queries, 100);
  EXPECT_EQ(a.prefix_hit_rate, 0.5);
  EXPECT_EQ(a.preemptions, 0);
  EXPECT_EQ(a.prompt_tokens, 100);
  EXPECT_EQ(a.prompt_tokens_per_s, 200);  // 100 tokens between 10.0 and 10.5
  EXPECT_EQ(a.generation_tokens_per_s, 40);
  EXPECT_FALSE(a.spec_acceptance_length);
  EXPECT_FALSE(a.kv_offload_gpu_to_cpu_bytes);
  EXPECT_FALSE(a.kv_evicted_blocks);
  EXPECT_EQ(a.metric_names, (std::vector<std::string>{
                                "vllm:generation_tokens_total", "vllm:kv_cache_usage_perc",
                                "vllm:num_preemptions_total", "vllm:num_requests_running",
                                "vllm:num_requests_waiting", "vllm:prefix_cache_hits_total",
                                "vllm:prefix_cache_queries_total", "vllm:prompt_tokens_total"}));

  const ServerSlice& b = slices[1];  // [11, 12): bounded by 10.5 and 11.5
  EXPECT_EQ(b.scrapes, 2);
  EXPECT_EQ(b.running, 6);
  EXPECT_EQ(b.running_mean, 5);
  EXPECT_EQ(b.waiting_mean, 2);
  EXPECT_DOUBLE_EQ(*b.kv_usage, 0.4);
  EXPECT_DOUBLE_EQ(*b.kv_usage_max, 0.5);
  EXPECT_EQ(b.prefix_hits, 75);
  EXPECT_EQ(b.prefix_queries, 200);
  EXPECT_EQ(b.prefix_hit_rate, 0.375);
  EXPECT_EQ(b.preemptions, 1);
  EXPECT_EQ(b.prompt_tokens_per_s, 200);
  EXPECT_EQ(b.generation_tokens, 80);
  EXPECT_EQ(b.generation_tokens_per_s, 80);

  const ServerSlice& c = slices[2];  // [12, 13): bounded by 11.5 and 12.25
  EXPECT_EQ(c.scrapes, 1);
  EXPECT_EQ(c.prefix_hits, 25);
  EXPECT_EQ(c.prefix_queries, 0);
  EXPECT_FALSE(c.prefix_hit_rate);  // nothing looked up in the slice
  EXPECT_EQ(c.preemptions, 2);
  EXPECT_EQ(c.prompt_tokens_per_s, 0);
  EXPECT_EQ(c.generation_tokens_per_s, 100);  // 75 tokens in 0.75 s

  const TelemetrySummary t = summarize(slices);
  EXPECT_EQ(t.slices, 3);
  EXPECT_EQ(t.duration_s, 3.0);
  EXPECT_EQ(t.engine, "vllm");
  EXPECT_DOUBLE_EQ(*t.peak_kv_usage, 0.5);
  EXPECT_EQ(t.mean_running, 3);  // (3 + 5 + 1) / 3
  EXPECT_DOUBLE_EQ(*t.mean_waiting, 2.5 / 3);
  EXPECT_EQ(t.preemptions, 3);
  EXPECT_EQ(t.prefix_hits, 150);
  EXPECT_EQ(t.prefix_queries, 300);
  EXPECT_EQ(t.prefix_hit_rate, 0.5);
  EXPECT_EQ(t.prompt_tokens, 300);
  EXPECT_EQ(t.generation_tokens, 175);
  EXPECT_FALSE(t.spec_acceptance_length);
  EXPECT_EQ(t.metric_names.size(), 8u);
}

TEST(ServerTimeslices, CounterResetCountsTheNewValue) {
  const std::vector<TimedScrape> scrapes = {
      at(0, vllm_text({.gen = 0})),
      at(1, vllm_text({.gen = 100})),
      at(2, vllm_text({.gen = 30})),  // the server restarted
      at(3, vllm_text({.gen = 50})),
  };
  const auto slices = server_timeslices(scrapes, 1.0);
  ASSERT_EQ(slices.size(), 4u);
  EXPECT_EQ(slices[0].generation_tokens, 0);
  EXPECT_FALSE(slices[0].generation_tokens_per_s);  // one scrape: no time elapsed
  EXPECT_EQ(slices[1].generation_tokens, 100);
  EXPECT_EQ(slices[2].generation_tokens, 30);
  EXPECT_EQ(slices[2].generation_tokens_per_s, 30);
  EXPECT_EQ(slices[3].generation_tokens, 20);
  EXPECT_EQ(summarize(slices).generation_tokens, 150);
}

TEST(ServerTimeslices, TwoWorkersAreSummedAndKvUsageAveraged) {
  const std::string a = "http://w0:8000/metrics", b = "http://w1:8000/metrics";
  const std::vector<TimedScrape> scrapes = {
      at(0.0, vllm_text({3, 1, 0.2, 0, 0, 0, 0, 0}), a),
      at(0.25, vllm_text({5, 0, 0.6, 0, 0, 0, 0, 0}), b),
      at(1.0, vllm_text({3, 2, 0.2, 10, 20, 1, 0, 100}), a),
      at(1.25, vllm_text({5, 2, 0.6, 30, 40, 0, 0, 50}), b),
      at(2.0, vllm_text({1, 0, 0.1, 10, 20, 1, 0, 200}), a),
      at(2.25, vllm_text({2, 0, 0.3, 30, 40, 2, 0, 150}), b),
  };
  const auto slices = server_timeslices(scrapes, 1.0);
  ASSERT_EQ(slices.size(), 3u);
  EXPECT_EQ(slices[0].scrapes, 2);
  EXPECT_EQ(slices[0].running, 8);
  EXPECT_DOUBLE_EQ(*slices[0].kv_usage, 0.4);
  EXPECT_DOUBLE_EQ(*slices[0].kv_usage_max, 0.6);
  const ServerSlice& s = slices[1];
  EXPECT_EQ(s.running, 8);
  EXPECT_EQ(s.waiting, 4);
  EXPECT_EQ(s.generation_tokens, 150);
  EXPECT_EQ(s.generation_tokens_per_s, 150);  // 100/s + 50/s
  EXPECT_EQ(s.prefix_hits, 40);
  EXPECT_EQ(s.prefix_queries, 60);
  EXPECT_DOUBLE_EQ(*s.prefix_hit_rate, 40.0 / 60.0);
  EXPECT_EQ(s.preemptions, 1);
  EXPECT_EQ(slices[2].running, 3);
  EXPECT_DOUBLE_EQ(*slices[2].kv_usage, 0.2);
  EXPECT_DOUBLE_EQ(*slices[2].kv_usage_max, 0.3);
  EXPECT_EQ(slices[2].generation_tokens, 200);
  EXPECT_EQ(slices[2].preemptions, 2);
  EXPECT_EQ(summarize(slices).preemptions, 3);
}

// SGLang's names (python/sglang/srt/metrics/collector.py), two data-parallel ranks.
std::string sglang_text(double running0, double running1, double usage0, double usage1,
                        double prompt, double cached, double gen, double retracted,
                        double accept_len) {
  std::string s;
  s += "# TYPE sglang:num_running_reqs gauge\n";
  s += "sglang:num_running_reqs{dp_rank=\"0\",model_name=\"m\"} " + std::to_string(running0) + "\n";
  s += "sglang:num_running_reqs{dp_rank=\"1\",model_name=\"m\"} " + std::to_string(running1) + "\n";
  s += "# TYPE sglang:num_queue_reqs gauge\n";
  s += "sglang:num_queue_reqs{dp_rank=\"0\",model_name=\"m\"} 2\n";
  s += "# TYPE sglang:token_usage gauge\n";
  s += "sglang:token_usage{dp_rank=\"0\",model_name=\"m\"} " + std::to_string(usage0) + "\n";
  s += "sglang:token_usage{dp_rank=\"1\",model_name=\"m\"} " + std::to_string(usage1) + "\n";
  s += "# TYPE sglang:cache_hit_rate gauge\n";
  s += "sglang:cache_hit_rate{dp_rank=\"0\",model_name=\"m\"} 0.9\n";
  s += "# TYPE sglang:spec_accept_length gauge\n";
  s += "sglang:spec_accept_length{dp_rank=\"0\",model_name=\"m\"} " + std::to_string(accept_len) +
       "\n";
  s += "# TYPE sglang:num_retracted_reqs gauge\n";
  s += "sglang:num_retracted_reqs{dp_rank=\"0\",model_name=\"m\"} 7\n";
  s += "# TYPE sglang:num_retracted_requests counter\n";
  s += "sglang:num_retracted_requests_total{dp_rank=\"0\",model_name=\"m\"} " +
       std::to_string(retracted) + "\n";
  s += "# TYPE sglang:prompt_tokens counter\n";
  s += "sglang:prompt_tokens_total{model_name=\"m\"} " + std::to_string(prompt) + "\n";
  s += "# TYPE sglang:generation_tokens counter\n";
  s += "sglang:generation_tokens_total{model_name=\"m\"} " + std::to_string(gen) + "\n";
  s += "# TYPE sglang:cached_tokens counter\n";
  s += "sglang:cached_tokens_total{model_name=\"m\"} " + std::to_string(cached) + "\n";
  return s;
}

TEST(ServerTimeslices, SglangNames) {
  const std::vector<TimedScrape> scrapes = {
      at(0.0, sglang_text(1, 1, 0.1, 0.3, 0, 0, 0, 0, 2.5)),
      at(0.5, sglang_text(2, 4, 0.2, 0.4, 1000, 250, 40, 0, 2.5)),
      at(1.0, sglang_text(3, 3, 0.5, 0.7, 1400, 550, 90, 2, 3.0)),
  };
  const auto slices = server_timeslices(scrapes, 0.5);
  ASSERT_EQ(slices.size(), 3u);
  EXPECT_EQ(slices[0].engine, "sglang");
  EXPECT_EQ(slices[0].running, 2);             // ranks summed
  EXPECT_DOUBLE_EQ(*slices[0].kv_usage, 0.2);  // ranks averaged
  const ServerSlice& s = slices[1];
  EXPECT_EQ(s.running, 6);
  EXPECT_EQ(s.waiting, 2);
  EXPECT_DOUBLE_EQ(*s.kv_usage, 0.3);
  EXPECT_EQ(s.prefix_hits, 250);
  EXPECT_EQ(s.prefix_queries, 1000);
  EXPECT_EQ(s.prefix_hit_rate, 0.25);
  EXPECT_EQ(s.prompt_tokens_per_s, 2000);
  EXPECT_EQ(s.generation_tokens_per_s, 80);
  EXPECT_EQ(s.preemptions, 0);
  EXPECT_EQ(s.spec_acceptance_length, 2.5);  // SGLang's own gauge
  EXPECT_FALSE(s.spec_drafts);
  EXPECT_EQ(slices[2].prefix_hit_rate, 0.75);  // 300 of 400
  EXPECT_EQ(slices[2].preemptions, 2);         // the counter, not the num_retracted_reqs gauge
  EXPECT_EQ(slices[2].spec_acceptance_length, 3.0);
  EXPECT_NE(std::find(s.metric_names.begin(), s.metric_names.end(), "sglang:cached_tokens_total"),
            s.metric_names.end());
  const TelemetrySummary t = summarize(slices);
  EXPECT_EQ(t.engine, "sglang");
  EXPECT_DOUBLE_EQ(*t.peak_kv_usage, 0.6);  // a worker's value is its ranks' mean
  EXPECT_EQ(t.prefix_hit_rate, 550.0 / 1400.0);
  EXPECT_DOUBLE_EQ(*t.spec_acceptance_length, (2.5 + 2.5 + 3.0) / 3);
}

// serve-sim: vLLM's names plus its own evicted-blocks counter (docs/serve-sim.md "Metrics").
std::string sim_text(double evicted, double kv, double iterations) {
  Vllm v;
  v.kv = kv;
  std::string s = vllm_text(v);
  s += "# TYPE vllm:gpu_cache_usage_perc gauge\n";
  s += "vllm:gpu_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.99\n";
  s += "# TYPE inferbench_sim:kv_cache_evicted_blocks counter\n";
  s += "inferbench_sim:kv_cache_evicted_blocks_total{engine=\"0\",model_name=\"m\"} " +
       std::to_string(evicted) + "\n";
  s += "# TYPE vllm:iteration counter\n";
  s += "vllm:iteration_total{engine=\"0\",model_name=\"m\"} " + std::to_string(iterations) + "\n";
  return s;
}

TEST(ServerTimeslices, ServeSimEvictedBlocks) {
  const std::vector<TimedScrape> scrapes = {
      at(0, sim_text(0, 0.5, 0)), at(1, sim_text(12, 0.75, 10)), at(2, sim_text(20, 1.0, 20))};
  EXPECT_EQ(detect_engine(scrapes[0].scrape), Engine::kServeSim);
  const auto slices = server_timeslices(scrapes, 1.0);
  ASSERT_EQ(slices.size(), 3u);
  EXPECT_EQ(slices[1].engine, "serve-sim");
  EXPECT_EQ(slices[1].kv_evicted_blocks, 12);
  EXPECT_EQ(slices[2].kv_evicted_blocks, 8);
  EXPECT_EQ(slices[2].kv_usage, 1.0);  // kv_cache_usage_perc, not the deprecated name
  EXPECT_EQ(summarize(slices).kv_evicted_blocks, 20);
}

TEST(ServerTimeslices, VllmSpecDecodeOffloadAndOldNames) {
  auto text = [](double drafts, double draft_tokens, double accepted, double out, double in) {
    std::string s = "# TYPE vllm:gpu_cache_usage_perc gauge\n";
    s += "vllm:gpu_cache_usage_perc{engine=\"0\"} 0.25\n";
    s += "vllm:spec_decode_num_drafts_total{engine=\"0\"} " + std::to_string(drafts) + "\n";
    s += "vllm:spec_decode_num_draft_tokens_total{engine=\"0\"} " + std::to_string(draft_tokens) +
         "\n";
    s += "vllm:spec_decode_num_accepted_tokens_total{engine=\"0\"} " + std::to_string(accepted) +
         "\n";
    s += "vllm:kv_offload_total_bytes_total{engine=\"0\",transfer_type=\"GPU_to_CPU\"} " +
         std::to_string(out) + "\n";
    s += "vllm:kv_offload_total_bytes_total{engine=\"0\",transfer_type=\"CPU_to_GPU\"} " +
         std::to_string(in) + "\n";
    return s;
  };
  const std::vector<TimedScrape> scrapes = {at(0, text(0, 0, 0, 0, 0)),
                                            at(2, text(10, 30, 25, 4096, 1024)),
                                            at(4, text(10, 30, 25, 8192, 1024))};
  const auto slices = server_timeslices(scrapes, 2.0);
  ASSERT_EQ(slices.size(), 3u);
  const ServerSlice& s = slices[1];
  EXPECT_EQ(s.kv_usage, 0.25);  // the pre-0.9 name when the current one is absent
  EXPECT_EQ(s.spec_drafts, 10);
  EXPECT_EQ(s.spec_draft_tokens, 30);
  EXPECT_EQ(s.spec_accepted_tokens, 25);
  EXPECT_EQ(s.spec_acceptance_length, 3.5);  // 1 + 25 / 10
  EXPECT_EQ(s.kv_offload_gpu_to_cpu_bytes, 4096);
  EXPECT_EQ(s.kv_offload_gpu_to_cpu_bytes_per_s, 2048);
  EXPECT_EQ(s.kv_offload_cpu_to_gpu_bytes, 1024);
  EXPECT_FALSE(slices[2].spec_acceptance_length);  // no drafts in the slice
  EXPECT_EQ(slices[2].kv_offload_gpu_to_cpu_bytes, 4096);
  EXPECT_EQ(slices[2].kv_offload_cpu_to_gpu_bytes, 0);
  EXPECT_NE(std::find(s.metric_names.begin(), s.metric_names.end(),
                      "vllm:kv_offload_total_bytes_total{transfer_type=\"GPU_to_CPU\"}"),
            s.metric_names.end());
  const TelemetrySummary t = summarize(slices);
  EXPECT_EQ(t.spec_acceptance_length, 3.5);
  EXPECT_EQ(t.kv_offload_gpu_to_cpu_bytes, 8192);
  EXPECT_FALSE(t.mean_running);
}

TEST(ServerTimeslices, TrtllmNames) {
  auto text = [](double running, double util, double prompt, double cached) {
    std::string s = "trtllm_num_requests_running{model_name=\"m\"} " + std::to_string(running);
    s += "\ntrtllm_num_requests_waiting{model_name=\"m\"} 0\n";
    s += "trtllm_kv_cache_utilization{model_name=\"m\"} " + std::to_string(util) + "\n";
    s += "trtllm_prompt_tokens_total{model_name=\"m\"} " + std::to_string(prompt) + "\n";
    s += "trtllm_prompt_cached_tokens_total{model_name=\"m\"} " + std::to_string(cached) + "\n";
    s += "trtllm_spec_decode_acceptance_length{model_name=\"m\"} 1.75\n";
    return s;
  };
  const std::vector<TimedScrape> scrapes = {at(0, text(1, 0.5, 0, 0)),
                                            at(1, text(2, 0.75, 800, 200))};
  EXPECT_EQ(detect_engine(scrapes[0].scrape), Engine::kTrtllm);
  const auto slices = server_timeslices(scrapes, 1.0);
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(slices[1].engine, "trtllm");
  EXPECT_EQ(slices[1].running, 2);
  EXPECT_EQ(slices[1].kv_usage, 0.75);
  EXPECT_EQ(slices[1].prefix_hit_rate, 0.25);
  EXPECT_EQ(slices[1].prompt_tokens_per_s, 800);
  EXPECT_EQ(slices[1].spec_acceptance_length, 1.75);
  EXPECT_FALSE(slices[1].preemptions);  // TensorRT-LLM exports no preemption counter
}

TEST(ServerTimeslices, EmptySliceAndLateCounter) {
  // No scrape in [1, 2): that slice has no values; the next one's increase spans 0 → 2.5.
  const std::vector<TimedScrape> scrapes = {
      at(0, "vllm:num_requests_running 1\n"),
      at(2.5, "vllm:num_requests_running 2\nvllm:generation_tokens_total 50\n"),
  };
  const auto slices = server_timeslices(scrapes, 1.0);
  ASSERT_EQ(slices.size(), 3u);
  EXPECT_EQ(slices[1].scrapes, 0);
  EXPECT_EQ(slices[1].engine, "unknown");
  EXPECT_FALSE(slices[1].running);
  EXPECT_FALSE(slices[1].generation_tokens);
  EXPECT_FALSE(slices[0].generation_tokens);  // not exported yet
  // It appeared after the first scrape, so it counted from zero.
  EXPECT_EQ(slices[2].generation_tokens, 50);
  EXPECT_EQ(slices[2].generation_tokens_per_s, 20);
  EXPECT_EQ(slices[2].running, 2);
}

TEST(ServerTimeslices, BadInput) {
  EXPECT_TRUE(server_timeslices({}, 1.0).empty());
  EXPECT_TRUE(server_timeslices({at(0, "up 1\n")}, 0).empty());
  const auto one = server_timeslices({at(5, "up 1\n")}, 1.0);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].engine, "unknown");
  EXPECT_EQ(one[0].scrapes, 1);
  EXPECT_FALSE(one[0].running);
  EXPECT_EQ(summarize({}).slices, 0);
}

TEST(ServerTimeslices, DetectEngineAndMissingPrefixes) {
  EXPECT_EQ(detect_engine(parse_scrape_ok("up 1\n")), Engine::kUnknown);
  EXPECT_EQ(detect_engine(parse_scrape_ok("vllm:num_requests_running 1\nsglang:x 1\nvllm:y 2\n")),
            Engine::kVllm);
  EXPECT_EQ(detect_engine(parse_scrape_ok("sglang:num_queue_reqs 1\n")), Engine::kSglang);
  const std::vector<TimedScrape> scrapes = {at(0, "up 1\n"),
                                            at(1, "vllm:num_requests_running 1\n", "b")};
  EXPECT_EQ(missing_prefixes(scrapes, {"vllm:", "sglang:", "up"}),
            (std::vector<std::string>{"sglang:"}));
  EXPECT_EQ(missing_prefixes({}, {"vllm:"}), (std::vector<std::string>{"vllm:"}));
  EXPECT_TRUE(missing_prefixes(scrapes, {}).empty());
}

TEST(ServerTimeslices, MetricTableCoversEveryEngine) {
  auto has = [](Quantity q, Engine e) {
    for (const MetricSource& s : metric_sources()) {
      if (s.quantity == q && s.engine == e) return true;
    }
    return false;
  };
  for (Engine e : {Engine::kVllm, Engine::kSglang, Engine::kTrtllm}) {
    for (Quantity q :
         {Quantity::kRunning, Quantity::kWaiting, Quantity::kKvUsage, Quantity::kPrefixHits,
          Quantity::kPrefixQueries, Quantity::kPromptTokens, Quantity::kGenerationTokens}) {
      EXPECT_TRUE(has(q, e)) << to_string(e) << " " << quantity_key(q);
    }
  }
  EXPECT_TRUE(has(Quantity::kKvEvictedBlocks, Engine::kServeSim));
}

TEST(ServerTimeslices, JsonRowsAndCsv) {
  const auto slices = server_timeslices(
      {at(0, vllm_text({1, 0, 0.5, 0, 0, 0, 0, 0})), at(1, vllm_text({2, 0, 0.5, 1, 4, 0, 8, 2}))},
      1.0);
  const boost::json::array rows = slices_to_json(slices);
  ASSERT_EQ(rows.size(), 2u);
  const boost::json::object& r = rows[1].as_object();
  EXPECT_EQ(r.at("index").as_int64(), 1);
  EXPECT_EQ(r.at("start_s").as_double(), 1.0);
  EXPECT_EQ(r.at("engine").as_string(), "vllm");
  EXPECT_EQ(r.at("running").as_double(), 2.0);
  EXPECT_EQ(r.at("prefix_hit_rate").as_double(), 0.25);
  EXPECT_TRUE(r.at("spec_acceptance_length").is_null());
  EXPECT_TRUE(rows[0].as_object().at("prefix_hit_rate").is_null());
  EXPECT_EQ(r.size(), rows[0].as_object().size());  // the same keys in every row
  EXPECT_EQ(r.at("metric_names").as_array().size(), 8u);

  const std::string csv = slices_to_csv(slices);
  const std::string header = csv.substr(0, csv.find('\n'));
  EXPECT_EQ(header.substr(0, 45), "index,start_s,end_s,scrapes,engine,running,ru");
  EXPECT_NE(header.find(",kv_evicted_blocks"), std::string::npos);
  const std::string row1 =
      csv.substr(csv.find('\n') + 1, csv.find('\n', csv.find('\n') + 1) - csv.find('\n') - 1);
  EXPECT_EQ(row1.substr(0, 22), "0,0,1,1,vllm,1,1,0,0,0");
  // Slice 0 has no hit rate: an empty cell between prefix_queries and preemptions.
  EXPECT_NE(row1.find(",0,0,,0,"), std::string::npos);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);

  const boost::json::object s = summary_to_json(summarize(slices));
  EXPECT_EQ(s.at("slices").as_int64(), 2);
  EXPECT_EQ(s.at("prefix_hit_rate").as_double(), 0.25);
  EXPECT_TRUE(s.at("preemptions").as_double() == 0.0);
}

constexpr int64_t kOrigin = 1'000'000'000;
int64_t at_ms(int64_t ms) {
  return kOrigin + ms * 1'000'000;
}

TEST(ClientTimeslices, StartsFinishesTokensTtftAndInverseTpot) {
  std::vector<metrics::RequestRecord> records(4);
  records[0].send_ns = at_ms(100);
  records[0].content_ns = {at_ms(300), at_ms(500), at_ms(1200)};
  records[0].done_ns = at_ms(1200);
  records[0].completion_tokens = 3;
  records[1].send_ns = at_ms(200);
  records[1].content_ns = {at_ms(1100), at_ms(1300), at_ms(1500), at_ms(1700)};
  records[1].done_ns = at_ms(1700);  // no usage: 4 content events are 4 tokens
  records[2].send_ns = at_ms(1500);
  records[2].done_ns = at_ms(2100);
  records[2].failure = metrics::FailureCause::kHttpStatus;
  records[3].send_ns = at_ms(-500);  // sent before the origin: not a start of this run
  records[3].content_ns = {at_ms(400)};
  records[3].done_ns = at_ms(400);
  records[3].completion_tokens = 1;

  const auto slices = client_timeslices(records, kOrigin, 1.0);
  ASSERT_EQ(slices.size(), 3u);
  const ClientSlice& a = slices[0];
  EXPECT_EQ(a.start_s, 0.0);
  EXPECT_EQ(a.end_s, 1.0);
  EXPECT_EQ(a.started, 2);
  EXPECT_EQ(a.finished, 1);
  EXPECT_EQ(a.failed, 0);
  EXPECT_EQ(a.output_tokens, 3);
  EXPECT_EQ(a.ttft_requests, 2);
  EXPECT_DOUBLE_EQ(*a.mean_ttft_ms, (200.0 + 900.0) / 2);
  EXPECT_FALSE(a.mean_inverse_tpot);  // the one finishing request had one token

  const ClientSlice& b = slices[1];
  EXPECT_EQ(b.started, 1);
  EXPECT_EQ(b.finished, 2);
  EXPECT_EQ(b.output_tokens, 5);
  EXPECT_EQ(b.ttft_requests, 1);
  EXPECT_DOUBLE_EQ(*b.mean_ttft_ms, 900.0);
  EXPECT_EQ(b.tpot_requests, 2);
  EXPECT_DOUBLE_EQ(*b.mean_inverse_tpot, (2 / 0.9 + 3 / 0.6) / 2);

  const ClientSlice& c = slices[2];
  EXPECT_EQ(c.started, 0);
  EXPECT_EQ(c.finished, 1);
  EXPECT_EQ(c.failed, 1);
  EXPECT_EQ(c.output_tokens, 0);
  EXPECT_FALSE(c.mean_ttft_ms);

  const boost::json::array rows = slices_to_json(slices);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2].as_object().at("failed").as_int64(), 1);
  EXPECT_TRUE(rows[2].as_object().at("mean_ttft_ms").is_null());
  const std::string csv = slices_to_csv(slices);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "index,start_s,end_s,started,finished,failed,output_tokens,mean_ttft_ms,"
            "ttft_requests,mean_inverse_tpot,tpot_requests");
  EXPECT_NE(csv.find("\n0,0,1,2,1,0,3,550,2,,0\n"), std::string::npos);
  EXPECT_NE(csv.find("\n2,2,3,0,1,1,0,,0,,0\n"), std::string::npos);
}

TEST(ClientTimeslices, NothingAfterTheOrigin) {
  std::vector<metrics::RequestRecord> records(1);
  records[0].send_ns = at_ms(-10);
  records[0].done_ns = at_ms(-5);
  EXPECT_TRUE(client_timeslices(records, kOrigin, 1.0).empty());
  EXPECT_TRUE(client_timeslices({}, kOrigin, 1.0).empty());
  records[0].done_ns = at_ms(10);
  EXPECT_TRUE(client_timeslices(records, kOrigin, -1.0).empty());
  EXPECT_EQ(client_timeslices(records, kOrigin, 1.0).size(), 1u);
}

}  // namespace
}  // namespace ib::telemetry
