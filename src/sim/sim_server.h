// The embedded simulated OpenAI-compatible engine behind `inferbench serve-sim`: /health,
// /v1/models, /metrics, /v1/completions and /v1/chat/completions with vLLM's wire format, timed
// by an Engine (engine.h): the continuous-batching BatchEngine on the roofline PerfModel, or the
// per-request SimpleEngine whose timing tests know exactly. See docs/serve-sim.md.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/expected.h"
#include "http/server.h"
#include "sim/config.h"
#include "sim/engine.h"
#include "sim/power_model.h"
#include "sim/requests.h"
#include "sim/server_metrics.h"
#include "sim/timing_model.h"
#include "sim/truth_log.h"

namespace ib::sim {

enum class TimingModelKind {
  kSimple,    // SimpleEngine + SimpleTimingModel: fixed, known per-request timing
  kRoofline,  // BatchEngine + PerfModel: continuous batching on a hardware/model roofline
};
/// "simple" or "roofline".
std::string_view to_string(TimingModelKind kind);

/// Every setting of the simulated server (the `serve-sim` options).
struct SimArgs {
  std::string host = "127.0.0.1";
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
  std::string truth_log;               // --truth-log path; empty: none
  uint64_t seed = 0;                   // output lengths and texts depend on it
  double keep_alive_timeout_s = 5.0;   // idle keep-alive connections close after this; 0 = never
  /// --power-model: /metrics also carries a GPU power trace per tensor-parallel rank in
  /// dcgm-exporter's names, derived from the engine's steps (sim/power_model.h). Roofline only.
  bool power_model = false;
};

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
  ~SimServer();
  SimServer(const SimServer&) = delete;
  SimServer& operator=(const SimServer&) = delete;

  /// Opens the truth log (when asked), binds args.host:args.port and logs the server_args line
  /// (with the bound port) and the configuration decisions to stderr. Returns the bound port or
  /// an Error naming the address or file.
  Expected<uint16_t> listen();

  /// Stops accepting and closes connections; in-flight requests are cancelled. The io_context's
  /// run() returns once they have unwound. Safe from any thread. Destroy the server only after
  /// run() returned.
  void stop();

  /// The settings, with the bound port once listening.
  const SimArgs& args() const { return args_; }
  const Engine& engine() const { return *engine_; }
  const ServerMetrics& metrics() const { return metrics_; }

 private:
  boost::asio::awaitable<void> handle_health(const http::HttpRequest& request,
                                             http::ResponseWriter& writer);
  boost::asio::awaitable<void> handle_models(const http::HttpRequest& request,
                                             http::ResponseWriter& writer);
  boost::asio::awaitable<void> handle_metrics(const http::HttpRequest& request,
                                              http::ResponseWriter& writer);
  boost::asio::awaitable<void> handle_generate(Api api, const http::HttpRequest& request,
                                               http::ResponseWriter& writer);
  std::string next_request_id(Api api);

  SimArgs args_;
  ServedModel served_;
  int64_t started_unix_s_;
  uint64_t request_counter_ = 0;
  ServerMetrics metrics_;
  std::unique_ptr<TruthLog> truth_log_;
  std::unique_ptr<Engine> engine_;
  std::shared_ptr<PowerMeter> power_;  // --power-model: every rank draws the same
  std::string hostname_;
  http::HttpRouter router_;
  http::HttpServer http_;
};

}  // namespace ib::sim
