// GET /metrics of the simulated server: Prometheus text exposition (format 0.0.4) with vLLM's
// metric names (vLLM vllm/v1/metrics/loggers.py), from the engine's state (EngineStats) and
// request-level counters the server keeps (ServerMetrics).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/engine.h"

namespace ib::sim {

/// A cumulative Prometheus histogram over fixed upper bounds.
class Histogram {
 public:
  /// REQUIRES: `bounds` ascending; it must outlive the histogram.
  explicit Histogram(std::span<const double> bounds);
  void observe(double value);
  /// Adds `other`'s observations. REQUIRES: the same bounds.
  void add(const Histogram& other);
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }
  /// Observations <= bounds[i] (cumulative); i == bounds.size() is +Inf.
  uint64_t cumulative(size_t i) const;
  std::span<const double> bounds() const { return bounds_; }

 private:
  std::span<const double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; the last is +Inf
  uint64_t count_ = 0;
  double sum_ = 0;
};

/// vLLM v1's buckets for vllm:time_to_first_token_seconds and vllm:e2e_request_latency_seconds.
std::span<const double> ttft_buckets();
std::span<const double> e2e_latency_buckets();

/// Request-level counters of the server (both timing models). With several I/O threads each
/// keeps its own (under its own lock) and /metrics adds them up.
struct ServerMetrics {
  ServerMetrics();
  /// Adds `other`'s counts.
  void add(const ServerMetrics& other);
  int64_t prompt_tokens = 0;      // of requests that produced a first token
  int64_t generation_tokens = 0;  // tokens sent
  int64_t token_writes = 0;       // socket writes that carried them
  int64_t finished_stop = 0;
  int64_t finished_length = 0;
  int64_t finished_abort = 0;  // client went away or the server stopped mid-request
  Histogram ttft;              // arrival to first token sent, seconds
  Histogram e2e;               // arrival to last token sent, seconds
};

/// KV transfers of a disaggregated instance (serve-sim --role prefill | decode), for /metrics in
/// the names of vLLM's NixlConnector (vllm:nixl_*): the decode side times and sizes each pull
/// and counts the failed ones; the prefill side counts KV that expired unpulled.
struct KvTransferCounters {
  KvTransferCounters();
  Histogram xfer_s;        // decode: each pull, from connect to the last byte, seconds
  Histogram bytes;         // decode: each pull's KV bytes (the model's; see wire_bytes)
  int64_t failed = 0;      // decode: pulls that failed
  int64_t expired = 0;     // prefill: KV held past its lease and dropped, never pulled
  int64_t held = 0;        // prefill: KV waiting to be pulled now (a gauge)
  int64_t served = 0;      // prefill: pulls answered
  int64_t wire_bytes = 0;  // bytes that crossed the socket (at most --kv-wire-max-bytes a pull)
};

/// Appends the KV-transfer series: vllm:nixl_xfer_time_seconds, vllm:nixl_bytes_transferred,
/// vllm:nixl_num_failed_transfers_total, vllm:nixl_num_kv_expired_reqs_total, and serve-sim's
/// own inferbench_sim:kv_held_requests, kv_served_total and kv_wire_bytes_total.
void render_kv_transfer_metrics(std::string& out, std::string_view model,
                                const KvTransferCounters& kv);

/// Static labels of vllm:cache_config_info (empty strings are omitted).
struct CacheConfigInfo {
  int block_size = 0;
  int num_gpu_blocks = 0;
  std::string cache_dtype;
  bool enable_prefix_caching = false;
  double gpu_memory_utilization = 0;
};

/// A Prometheus label value escaped for the text format (backslash, double quote, newline).
std::string escape_label(std::string_view v);

/// The whole /metrics body. Every series carries model_name="<model>" and engine="0".
std::string render_metrics(std::string_view model, const EngineStats& engine,
                           const ServerMetrics& server, const CacheConfigInfo* cache);

/// SGLang's acceptance gauges are over a recent window, not the server's life: the counters at the
/// previous scrape, and the last values (kept when no step drafted since).
struct SpecGaugeWindow {
  int64_t drafts = 0, draft_tokens = 0, accepted = 0;
  double accept_length = 0, accept_rate = 0;  // 0: nothing drafted yet
  /// Moves the window to `now`'s counters and updates the values when something was drafted.
  void advance(const SpecDecodeCounters& now);
};

/// The /metrics body in SGLang's names (--metrics-engine sglang): sglang:num_running_reqs,
/// num_queue_reqs, token_usage, prompt_tokens_total, generation_tokens_total,
/// cached_tokens_total, num_retracted_requests_total and, when speculating (and once something
/// was drafted), spec_accept_length and spec_accept_rate from `window`. Series carry
/// model_name="<model>".
std::string render_sglang_metrics(std::string_view model, const EngineStats& engine,
                                  const ServerMetrics& server, const SpecGaugeWindow& window);

}  // namespace ib::sim
