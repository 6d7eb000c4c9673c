// The embedded simulated OpenAI-compatible engine behind `inferbench serve-sim`: /health,
// /v1/models, /metrics, /v1/completions and /v1/chat/completions with vLLM's wire format, timed
// by an Engine (engine.h): the continuous-batching BatchEngine on the roofline PerfModel, or the
// per-request SimpleEngine whose timing tests know exactly. See docs/serve-sim.md.
//
// Threading (SimArgs::threads, docs/serve-sim.md "Threads"): the engine always runs on the
// io_context given at construction, run by the caller's thread. With threads == 1 the HTTP
// connections run there too. With threads == N > 1 the server starts N I/O threads of its own
// and spreads the connections over them; the engine's news reaches them through a TokenRelay
// (token_relay.h), one post per I/O thread per engine step.
#pragma once

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/expected.h"
#include "http/server.h"
#include "sim/config.h"
#include "sim/engine.h"
#include "sim/gsm8k_answers.h"
#include "sim/kv_transfer.h"
#include "sim/power_model.h"
#include "sim/requests.h"
#include "sim/server_metrics.h"
#include "sim/timing_model.h"
#include "sim/token_relay.h"
#include "sim/truth_log.h"
#include "tokenizer/serving.h"

namespace ib::sim {

enum class TimingModelKind {
  kSimple,    // SimpleEngine + SimpleTimingModel: fixed, known per-request timing
  kRoofline,  // BatchEngine + PerfModel: continuous batching on a hardware/model roofline
};
/// "simple" or "roofline".
std::string_view to_string(TimingModelKind kind);

/// A disaggregated deployment's worker roles (docs/serve-sim.md, "Disaggregated prefill and
/// decode"); the router is a server of its own (sim/router.h).
enum class SimRole {
  kBoth,     // an aggregated server: prefill and decode in one engine
  kPrefill,  // computes prefills and keeps their KV for a decode instance (kv_transfer_params)
  kDecode,   // pulls a request's KV from its prefill instance, then decodes and streams
};
/// "both", "prefill", "decode".
std::string_view to_string(SimRole role);

/// The KV side of a disaggregated worker.
struct KvRoleArgs {
  KvChannelOptions channel;    // link, wire cap, lease (both sides)
  uint16_t port = 0;           // prefill: the side channel's port (0: a free one)
  double bytes_per_token = 0;  // KV bytes a prompt token (all GPUs); 0: the model preset's
  double pull_timeout_s = 30;  // decode: a pull that takes longer fails
};

struct SimArgs;
/// KV bytes a prompt token, all GPUs together: --kv-bytes-per-token, else the model preset's (per
/// GPU times the tensor-parallel size), else Llama 3.1 8B's in bf16 (131072).
double transfer_kv_bytes_per_token(const SimArgs& args);

/// Every setting of the simulated server (the `serve-sim` options).
struct SimArgs {
  std::string host = "127.0.0.1";
  std::string api_key;  // --api-key: the /v1 routes answer 401 without "Bearer KEY" (as vLLM)
  uint16_t port = 8000;             // 0 picks a free port
  std::string model = "sim-model";  // served model name
  int max_model_len = 32768;
  /// The library default is the simple model (exact timing, no presets); the serve-sim command
  /// defaults to the roofline model.
  TimingModelKind timing_model = TimingModelKind::kSimple;
  SimpleTimingParams timing;  // simple model
  int max_running = 256;      // simple model: running slots; later requests wait in FIFO order
  std::optional<EngineConfig> engine;  // roofline model: the resolved configuration (required)
  double time_scale = 1.0;             // every duration divided by this
  /// --stream-interval N: a stream's tokens go out N to an SSE event (vLLM's and SGLang's
  /// --stream-interval): the first at once, then every N-th, the rest with the last token.
  int stream_interval = 1;
  /// --metrics-engine: /metrics in vLLM's names ("vllm") or SGLang's ("sglang": its gauges and
  /// counters, and sglang:spec_accept_length over the steps since the previous scrape).
  std::string metrics_engine = "vllm";
  /// --spec-decode K and its acceptance (sim/spec_decode.h): speculative decoding, either timing
  /// model (the roofline's decode steps verify K + 1 tokens per sequence).
  SpecDecodeConfig spec;
  /// --per-request-spec-decode-metrics summary (vLLM's): with speculative decoding, each
  /// response (a stream's final usage event) carries "metrics":{"speculative_decoding":{...}}.
  bool per_request_spec_metrics = false;
  /// --enable-per-request-metrics (vLLM's): each response (a stream's final usage event) carries
  /// the request's timing: metrics {queue_time_ms, time_to_first_token_ms, generation_time_ms,
  /// mean_itl_ms, tokens_per_second}.
  bool per_request_metrics = false;
  /// --role: an aggregated server, or one worker of a disaggregated deployment.
  SimRole role = SimRole::kBoth;
  KvRoleArgs kv;
  std::string truth_log;               // --truth-log path; empty: none
  uint64_t seed = 0;                   // output lengths and texts depend on it
  double keep_alive_timeout_s = 5.0;   // idle keep-alive connections close after this; 0 = never
  /// --power-model: /metrics also carries a GPU power trace per tensor-parallel rank in
  /// dcgm-exporter's names, derived from the engine's steps (sim/power_model.h). Roofline only.
  bool power_model = false;
  /// --threads: 1 serves everything (engine and connections) on one thread; N > 1 adds N I/O
  /// threads for the connections, the engine keeping its own. serve-sim defaults to
  /// default_io_threads().
  int threads = 1;
  /// --gsm8k-correct: GSM8K questions are answered in lm-eval's format, this share of them
  /// correctly (sim/gsm8k_answers.h); nullopt: every prompt gets the word text.
  std::optional<Gsm8kAnswerOptions> gsm8k;
  /// --tokenizer: count prompts with a real model's tokenizer and chat template, like a real
  /// server (sim/requests.h ServedModel::tokenizer); null: words.
  std::shared_ptr<const tokenizer::ServingTokenizer> tokenizer;
};

/// The most I/O threads --threads accepts.
inline constexpr int kMaxIoThreads = 64;

/// serve-sim's --threads auto: min(4, cores / 2), at least 1, counting the cores this process
/// may run on. Half the cores, because
/// the load generator usually runs on the same host; at most 4, because one I/O thread streams
/// well over 100k tokens/s and the kernel's loopback cost, not the thread count, is the limit
/// beyond that. 1 (everything on one thread, no cross-thread hand-off) on a 2- or 3-core host.
int default_io_threads();

/// Error naming the first setting out of range.
Status validate(const SimArgs& args);

/// All settings on one line, in the style of SGLang's `server_args=ServerArgs(...)` log line so
/// the same parser reads both: SimArgs(host='127.0.0.1', port=8000, model='sim-model', ...).
std::string format_sim_args(const SimArgs& args);

class SimServer {
 public:
  /// Serves `args` with the engine its timing model names. REQUIRES: validate(args).ok().
  SimServer(boost::asio::io_context& io, SimArgs args);
  /// Serves with the given engine; args' timing settings are then only reported. The engine must
  /// run on `io`.
  SimServer(boost::asio::io_context& io, SimArgs args, std::unique_ptr<Engine> engine);
  /// Joins the I/O threads. REQUIRES: `io`'s run() returned (after stop()), or never ran.
  ~SimServer();
  SimServer(const SimServer&) = delete;
  SimServer& operator=(const SimServer&) = delete;

  /// Opens the truth log (when asked), binds args.host:args.port, starts the I/O threads (when
  /// args.threads > 1) and logs the server_args line (with the bound port) and the configuration
  /// decisions to stderr. Returns the bound port or an Error naming the address or file.
  Expected<uint16_t> listen();

  /// Stops accepting and closes connections; in-flight requests are cancelled. The io_context's
  /// run() returns once they have unwound and every I/O thread has finished. Safe from any
  /// thread. Destroy the server only after run() returned.
  void stop();

  /// The settings, with the bound port once listening.
  const SimArgs& args() const { return args_; }
  /// Read on the engine's thread (or once run() returned).
  const Engine& engine() const { return *engine_; }
  /// The request counters of all I/O threads added up (safe from any thread).
  ServerMetrics metrics() const;
  /// Native handles of the I/O threads (empty with threads == 1), e.g. to read their CPU time.
  std::vector<std::thread::native_handle_type> io_thread_handles();

 private:
  boost::asio::awaitable<void> handle_health(const http::HttpRequest& request,
                                             http::ResponseWriter& writer);
  bool authorized(const http::HttpRequest& r) const;
  boost::asio::awaitable<void> unauthorized(http::ResponseWriter& writer);
  boost::asio::awaitable<void> handle_models(const http::HttpRequest& request,
                                             http::ResponseWriter& writer);
  boost::asio::awaitable<void> handle_tokenize(const http::HttpRequest& request,
                                               http::ResponseWriter& writer);
  boost::asio::awaitable<void> handle_metrics(const http::HttpRequest& request,
                                              http::ResponseWriter& writer);
  boost::asio::awaitable<void> handle_flush_cache(const http::HttpRequest& request,
                                                  http::ResponseWriter& writer);
  boost::asio::awaitable<bool> reset_prefix_cache_coro();
  boost::asio::awaitable<void> handle_generate(Api api, const http::HttpRequest& request,
                                               http::ResponseWriter& writer);
  std::string next_request_id(Api api);

 public:
  /// One I/O thread's request counters (public for the request code in sim_server.cc).
  struct MetricsShard {
    std::mutex mutex;  // taken by its thread per update, by /metrics to add them up
    ServerMetrics metrics;
  };
  /// Engine state read on the engine's thread for one /metrics scrape.
  struct EngineSnapshot {
    EngineStats stats;
    std::optional<GpuPowerReading> power;  // --power-model: every rank's reading
  };

 private:
  struct IoThread;
  static std::vector<std::unique_ptr<IoThread>> make_io_threads(int threads);
  std::vector<boost::asio::io_context*> http_contexts();
  EngineSnapshot engine_snapshot_now() const;
  double kv_bytes(int prompt_tokens) const;
  std::string hold_kv(int prompt_tokens);
  boost::asio::awaitable<std::optional<double>> receive_kv(const GenerateRequest::KvTransfer& kv,
                                                           http::ResponseWriter& writer);
  KvTransferCounters kv_counters() const;
  boost::asio::awaitable<EngineSnapshot> engine_snapshot_coro() const;
  void on_io_thread_exit();

  boost::asio::io_context& io_;  // the engine's
  SimArgs args_;
  ServedModel served_;
  int64_t started_unix_s_;
  std::atomic<uint64_t> request_counter_{0};
  std::vector<std::unique_ptr<MetricsShard>> metrics_;  // one per I/O thread
  std::mutex spec_window_mutex_;
  SpecGaugeWindow spec_window_;  // --metrics-engine sglang: the acceptance gauge's window
  std::unique_ptr<TruthLog> truth_log_;
  std::unique_ptr<Engine> engine_;
  std::shared_ptr<PowerMeter> power_;
  std::unique_ptr<KvSender> kv_sender_;  // --role prefill
  uint16_t kv_port_ = 0;
  mutable std::mutex kv_mutex_;
  KvTransferCounters kv_pulls_;                // --role decode
  std::unique_ptr<const Gsm8kAnswers> gsm8k_;  // --gsm8k-correct  // --power-model: every rank draws the same
  std::string hostname_;
  http::HttpRouter router_;
  std::vector<std::unique_ptr<IoThread>> io_threads_;  // threads > 1
  std::unique_ptr<TokenRelay> relay_;
  http::HttpServer http_;
  /// Keeps the engine's run() going while I/O threads run (they post to it); threads > 1.
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>
      engine_guard_;
  std::atomic<int> io_threads_running_{0};
};

}  // namespace ib::sim
