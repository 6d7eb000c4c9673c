#include "sim/server_metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <iterator>

namespace ib::sim {

namespace {

// vllm/v1/metrics/loggers.py (PrometheusStatLogger).
constexpr std::array<double, 22> kTtftBuckets = {
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
    1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
constexpr std::array<double, 21> kE2eBuckets = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                                5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                                60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

using Out = std::back_insert_iterator<std::string>;

void header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  fmt::format_to(Out(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void sample(std::string& out, std::string_view name, std::string_view labels, double value) {
  fmt::format_to(Out(out), "{}{{{}}} {}\n", name, labels, value);
}

void histogram(std::string& out, std::string_view name, std::string_view help,
               std::string_view labels, const Histogram& h) {
  header(out, name, "histogram", help);
  const auto bounds = h.bounds();
  for (size_t i = 0; i <= bounds.size(); ++i) {
    if (i < bounds.size()) {
      fmt::format_to(Out(out), "{}_bucket{{{},le=\"{}\"}} {}\n", name, labels, bounds[i],
                     h.cumulative(i));
    } else {
      fmt::format_to(Out(out), "{}_bucket{{{},le=\"+Inf\"}} {}\n", name, labels, h.count());
    }
  }
  fmt::format_to(Out(out), "{}_count{{{}}} {}\n{}_sum{{{}}} {}\n", name, labels, h.count(), name,
                 labels, h.sum());
}

}  // namespace

namespace {

// vLLM's NixlPromMetrics buckets for vllm:nixl_xfer_time_seconds; bytes from 1 MB to 10 GB.
constexpr double kXferBuckets[] = {0.005, 0.01, 0.025, 0.05, 0.075, 0.1,
                                   0.2,   0.3,  0.5,   0.75, 1.0,   5.0};
constexpr double kKvBytesBuckets[] = {1e6, 5e6, 1e7, 5e7, 1e8, 5e8, 1e9, 5e9, 1e10};

}  // namespace

KvTransferCounters::KvTransferCounters() : xfer_s(kXferBuckets), bytes(kKvBytesBuckets) {}

void render_kv_transfer_metrics(std::string& out, std::string_view model,
                                const KvTransferCounters& kv) {
  const std::string labels = fmt::format(R"(engine="0",model_name="{}")", escape_label(model));
  histogram(out, "vllm:nixl_xfer_time_seconds",
            "Histogram of transfer duration for NIXL KV Cache transfers.", labels, kv.xfer_s);
  histogram(out, "vllm:nixl_bytes_transferred",
            "Histogram of bytes transferred per NIXL KV Cache transfers.", labels, kv.bytes);
  header(out, "vllm:nixl_num_failed_transfers_total", "counter",
         "Number of failed NIXL KV Cache transfers.");
  sample(out, "vllm:nixl_num_failed_transfers_total", labels, static_cast<double>(kv.failed));
  header(out, "vllm:nixl_num_kv_expired_reqs_total", "counter",
         "Number of requests that had their KV expire. NOTE: This metric is tracked on the P "
         "instance.");
  sample(out, "vllm:nixl_num_kv_expired_reqs_total", labels, static_cast<double>(kv.expired));
  header(out, "inferbench_sim:kv_held_requests", "gauge",
         "Requests whose KV waits for a decode instance to pull it (inferbench-sim).");
  sample(out, "inferbench_sim:kv_held_requests", labels, static_cast<double>(kv.held));
  header(out, "inferbench_sim:kv_served_total", "counter",
         "KV pulls answered by this prefill instance (inferbench-sim).");
  sample(out, "inferbench_sim:kv_served_total", labels, static_cast<double>(kv.served));
  header(out, "inferbench_sim:kv_wire_bytes_total", "counter",
         "KV bytes that crossed the socket (inferbench-sim).");
  sample(out, "inferbench_sim:kv_wire_bytes_total", labels, static_cast<double>(kv.wire_bytes));
}

std::string escape_label(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

Histogram::Histogram(std::span<const double> bounds)
    : bounds_(bounds), counts_(bounds.size() + 1, 0) {}

void Histogram::observe(double value) {
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), value);
  ++counts_[static_cast<size_t>(it - bounds_.begin())];
  ++count_;
  sum_ += value;
}

void Histogram::add(const Histogram& other) {
  for (size_t i = 0; i < counts_.size() && i < other.counts_.size(); ++i) {
    counts_[i] += other.counts_[i];
  }
  count_ += other.count_;
  sum_ += other.sum_;
}

uint64_t Histogram::cumulative(size_t i) const {
  uint64_t total = 0;
  for (size_t j = 0; j <= i && j < counts_.size(); ++j) total += counts_[j];
  return total;
}

std::span<const double> ttft_buckets() {
  return kTtftBuckets;
}
std::span<const double> e2e_latency_buckets() {
  return kE2eBuckets;
}

ServerMetrics::ServerMetrics() : ttft(kTtftBuckets), e2e(kE2eBuckets) {}

void ServerMetrics::add(const ServerMetrics& other) {
  prompt_tokens += other.prompt_tokens;
  generation_tokens += other.generation_tokens;
  token_writes += other.token_writes;
  finished_stop += other.finished_stop;
  finished_length += other.finished_length;
  finished_abort += other.finished_abort;
  ttft.add(other.ttft);
  e2e.add(other.e2e);
}

std::string render_metrics(std::string_view model, const EngineStats& engine,
                           const ServerMetrics& server, const CacheConfigInfo* cache) {
  std::string out;
  out.reserve(8192);
  const std::string labels = fmt::format(R"(model_name="{}",engine="0")", escape_label(model));

  header(out, "vllm:num_requests_running", "gauge",
         "Number of requests in model execution batches.");
  sample(out, "vllm:num_requests_running", labels, engine.running);
  header(out, "vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.");
  sample(out, "vllm:num_requests_waiting", labels, engine.waiting);
  header(out, "vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.");
  sample(out, "vllm:kv_cache_usage_perc", labels, engine.kv_cache_usage);
  header(out, "vllm:gpu_cache_usage_perc", "gauge",
         "GPU KV-cache usage. 1 means 100 percent usage (deprecated name of kv_cache_usage_perc).");
  sample(out, "vllm:gpu_cache_usage_perc", labels, engine.kv_cache_usage);

  header(out, "vllm:num_preemptions_total", "counter", "Cumulative number of preemptions.");
  sample(out, "vllm:num_preemptions_total", labels, static_cast<double>(engine.preemptions));
  // vLLM has no eviction counter; under KV pressure (long agentic prompts) evictions are what
  // turn prefix-cache hits into recomputation, so ours is exported in our own namespace.
  header(out, "inferbench_sim:kv_cache_evicted_blocks_total", "counter",
         "Cached KV-cache blocks evicted to make room for new allocations (inferbench-sim).");
  sample(out, "inferbench_sim:kv_cache_evicted_blocks_total", labels,
         static_cast<double>(engine.kv_evicted_blocks));
  header(out, "vllm:prefix_cache_queries_total", "counter",
         "Prefix cache queries, in terms of number of queried tokens.");
  sample(out, "vllm:prefix_cache_queries_total", labels,
         static_cast<double>(engine.prefix_queries));
  header(out, "vllm:prefix_cache_hits_total", "counter",
         "Prefix cache hits, in terms of number of cached tokens.");
  sample(out, "vllm:prefix_cache_hits_total", labels, static_cast<double>(engine.prefix_hits));
  if (engine.num_speculative_tokens > 0) {
    // vLLM v1's spec-decode counters (vllm/v1/spec_decode/metrics.py): AL = 1 + accepted / drafts.
    header(out, "vllm:spec_decode_num_drafts_total", "counter", "Number of spec decoding drafts.");
    sample(out, "vllm:spec_decode_num_drafts_total", labels,
           static_cast<double>(engine.spec.drafts));
    header(out, "vllm:spec_decode_num_draft_tokens_total", "counter", "Number of draft tokens.");
    sample(out, "vllm:spec_decode_num_draft_tokens_total", labels,
           static_cast<double>(engine.spec.draft_tokens));
    header(out, "vllm:spec_decode_num_accepted_tokens_total", "counter",
           "Number of accepted tokens.");
    sample(out, "vllm:spec_decode_num_accepted_tokens_total", labels,
           static_cast<double>(engine.spec.accepted));
    header(out, "vllm:spec_decode_num_accepted_tokens_per_pos_total", "counter",
           "Accepted tokens per draft position.");
    for (int j = 0; j < engine.num_speculative_tokens; ++j) {
      const size_t pos = static_cast<size_t>(j);
      sample(out, "vllm:spec_decode_num_accepted_tokens_per_pos_total",
             fmt::format(R"({},position="{}")", labels, j),
             static_cast<double>(pos < engine.spec.accepted_per_pos.size()
                                     ? engine.spec.accepted_per_pos[pos]
                                     : 0));
    }
  }
  header(out, "vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.");
  sample(out, "vllm:prompt_tokens_total", labels, static_cast<double>(server.prompt_tokens));
  header(out, "vllm:generation_tokens_total", "counter", "Number of generation tokens processed.");
  sample(out, "vllm:generation_tokens_total", labels,
         static_cast<double>(server.generation_tokens));
  // Tokens per write above 1 means tokens went out together: the client or the server fell
  // behind the engine (ours: vLLM has no such counter).
  header(out, "inferbench_sim:token_writes_total", "counter",
         "Socket writes that carried generated tokens (a non-streamed response counts one) "
         "(inferbench-sim).");
  sample(out, "inferbench_sim:token_writes_total", labels,
         static_cast<double>(server.token_writes));
  header(out, "vllm:request_success_total", "counter", "Count of successfully processed requests.");
  sample(out, "vllm:request_success_total", labels + R"(,finished_reason="stop")",
         static_cast<double>(server.finished_stop));
  sample(out, "vllm:request_success_total", labels + R"(,finished_reason="length")",
         static_cast<double>(server.finished_length));
  sample(out, "vllm:request_success_total", labels + R"(,finished_reason="abort")",
         static_cast<double>(server.finished_abort));
  header(out, "vllm:iteration_total", "counter", "Engine steps run (inferbench-sim).");
  sample(out, "vllm:iteration_total", labels, static_cast<double>(engine.steps));

  histogram(out, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
            labels, server.ttft);
  histogram(out, "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
            labels, server.e2e);

  if (cache != nullptr) {
    header(out, "vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig");
    fmt::format_to(Out(out),
                   "vllm:cache_config_info{{{},block_size=\"{}\",cache_dtype=\"{}\","
                   "enable_prefix_caching=\"{}\",gpu_memory_utilization=\"{}\","
                   "num_gpu_blocks=\"{}\"}} 1\n",
                   labels, cache->block_size, escape_label(cache->cache_dtype),
                   cache->enable_prefix_caching ? "True" : "False", cache->gpu_memory_utilization,
                   cache->num_gpu_blocks);
  }
  return out;
}

void SpecGaugeWindow::advance(const SpecDecodeCounters& now) {
  const int64_t d = now.drafts - drafts;
  if (d > 0) {
    accept_length = 1.0 + static_cast<double>(now.accepted - accepted) / static_cast<double>(d);
    const int64_t dt = now.draft_tokens - draft_tokens;
    accept_rate =
        dt > 0 ? static_cast<double>(now.accepted - accepted) / static_cast<double>(dt) : 0.0;
  }
  drafts = now.drafts;
  draft_tokens = now.draft_tokens;
  accepted = now.accepted;
}

std::string render_sglang_metrics(std::string_view model, const EngineStats& engine,
                                  const ServerMetrics& server, const SpecGaugeWindow& window) {
  std::string out;
  out.reserve(4096);
  const std::string labels = fmt::format(R"(model_name="{}")", escape_label(model));
  auto gauge = [&](const char* name, const char* help, double v) {
    header(out, name, "gauge", help);
    sample(out, name, labels, v);
  };
  auto counter = [&](const char* name, const char* help, double v) {
    header(out, name, "counter", help);
    sample(out, name, labels, v);
  };
  gauge("sglang:num_running_reqs", "The number of running requests.", engine.running);
  gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.", engine.waiting);
  gauge("sglang:token_usage", "The token usage.", engine.kv_cache_usage);
  counter("sglang:prompt_tokens_total", "Number of prefill tokens processed.",
          static_cast<double>(server.prompt_tokens));
  counter("sglang:generation_tokens_total", "Number of generation tokens processed.",
          static_cast<double>(server.generation_tokens));
  counter("sglang:cached_tokens_total", "Number of cached prompt tokens.",
          static_cast<double>(engine.prefix_hits));
  counter("sglang:num_retracted_requests_total", "Number of retracted requests.",
          static_cast<double>(engine.preemptions));
  if (engine.num_speculative_tokens > 0 && window.accept_length > 0) {
    gauge("sglang:spec_accept_length", "The average acceptance length of speculative decoding.",
          window.accept_length);
    gauge("sglang:spec_accept_rate", "The average acceptance rate of speculative decoding.",
          window.accept_rate);
  }
  return out;
}

}  // namespace ib::sim
