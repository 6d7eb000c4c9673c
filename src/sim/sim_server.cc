#include "sim/sim_server.h"

#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <cmath>
#include <ctime>
#include <optional>
#include <variant>

#include "core/clock.h"
#include "sim/batch_engine.h"
#include "sim/perf_model.h"
#include "sim/responses.h"
#include "sim/tokens.h"

// GCC 12 false positive: after inlining Asio's recycling allocator for coroutine frames
// (aligned_alloc, then its own operator delete) it reports mismatched new/delete.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace ib::sim {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

// Server logs go to stderr: stdout is for results.
spdlog::logger& sim_log() {
  static auto logger = std::make_shared<spdlog::logger>(
      "serve-sim", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  return *logger;
}

// Python repr of a string: single quotes, backslash escapes.
std::string py_str(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  out += '\'';
  return out;
}

// Python repr of a float: always with a decimal point or exponent (20000.0, 0.1).
std::string py_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string py_bool(bool b) {
  return b ? "True" : "False";
}

constexpr std::string_view kJson = "application/json";
constexpr std::string_view kPrometheus = "text/plain; version=0.0.4; charset=utf-8";

Status check_number(const char* name, double value, double min, bool inclusive) {
  if (!std::isfinite(value) || (inclusive ? value < min : value <= min)) {
    return Error{fmt::format("{} must be {} {} and finite, got {}", name, inclusive ? ">=" : ">",
                             min, value)};
  }
  return Status::Ok();
}

}  // namespace

std::string_view to_string(TimingModelKind kind) {
  return kind == TimingModelKind::kSimple ? "simple" : "roofline";
}

Status validate(const SimArgs& args) {
  if (args.model.empty()) return Error{"model must not be empty"};
  if (args.max_model_len < 2) {
    return Error{fmt::format("max_model_len must be at least 2, got {}", args.max_model_len)};
  }
  if (args.max_running < 1) {
    return Error{fmt::format("max_running must be at least 1, got {}", args.max_running)};
  }
  if (auto s = check_number("keep_alive_timeout_s", args.keep_alive_timeout_s, 0, true); !s) {
    return s;
  }
  if (auto s = check_number("time_scale", args.time_scale, 0, false); !s) return s;
  if (args.power_model && args.timing_model != TimingModelKind::kRoofline) {
    return Error{"the power model needs the roofline timing model (its hardware and step costs)"};
  }
  if (args.timing_model == TimingModelKind::kRoofline) {
    if (!args.engine) return Error{"the roofline timing model needs a resolved engine config"};
    const int64_t kv_tokens =
        static_cast<int64_t>(args.engine->scheduler.num_blocks) * args.engine->scheduler.block_size;
    if (args.max_model_len > kv_tokens) {
      return Error{fmt::format("max_model_len {} exceeds the KV cache ({} tokens)",
                               args.max_model_len, kv_tokens)};
    }
    return Status::Ok();
  }
  return validate(args.timing);
}

std::string format_sim_args(const SimArgs& args) {
  std::string out = fmt::format(
      "SimArgs(host={}, port={}, model={}, max_model_len={}, "
      "timing_model={}, ",
      py_str(args.host), args.port, py_str(args.model), args.max_model_len,
      py_str(to_string(args.timing_model)));
  if (args.timing_model == TimingModelKind::kRoofline && args.engine) {
    const EngineConfig& e = *args.engine;
    out += fmt::format(
        "hardware={}, model_preset={}, quantization={}, kv_cache_dtype={}, "
        "tensor_parallel_size={}, enable_expert_parallel={}, max_num_seqs={}, "
        "max_num_batched_tokens={}, block_size={}, num_gpu_blocks={}, gpu_memory_utilization={}, "
        "enable_prefix_caching={}, enable_chunked_prefill=True, disable_custom_all_reduce={}, "
        "quick_reduce_quantization={}, compute_efficiency={}, memory_efficiency={}, "
        "step_overhead_us={}, ",
        py_str(e.hardware->name), py_str(e.model->name), py_str(to_string(e.quantization)),
        py_str(e.kv_cache_dtype), e.tensor_parallel_size, py_bool(e.enable_expert_parallel),
        e.scheduler.max_num_seqs, e.scheduler.max_num_batched_tokens, e.scheduler.block_size,
        e.scheduler.num_blocks, py_float(e.gpu_memory_utilization),
        py_bool(e.scheduler.prefix_caching), py_bool(e.disable_custom_all_reduce),
        py_str(to_string(e.quick_reduce)), py_float(e.perf.compute_efficiency),
        py_float(e.perf.memory_efficiency), py_float(e.perf.step_overhead_s * 1e6));
    out += fmt::format("power_model={}, ", py_bool(args.power_model));
  } else {
    out += fmt::format(
        "prefill_tok_s={}, prefill_overhead_ms={}, decode_base_ms={}, decode_per_running_ms={}, "
        "max_running={}, ",
        py_float(args.timing.prefill_tok_s), py_float(args.timing.prefill_overhead_ms),
        py_float(args.timing.decode_base_ms), py_float(args.timing.decode_per_running_ms),
        args.max_running);
  }
  out += fmt::format("time_scale={}, truth_log={}, seed={}, keep_alive_timeout_s={})",
                     py_float(args.time_scale),
                     args.truth_log.empty() ? "None" : py_str(args.truth_log), args.seed,
                     py_float(args.keep_alive_timeout_s));
  return out;
}

namespace {

http::HttpServerOptions http_options(const SimArgs& args) {
  http::HttpServerOptions options;
  options.keep_alive_timeout = std::chrono::milliseconds(
      static_cast<int64_t>(std::llround(args.keep_alive_timeout_s * 1000.0)));
  options.server_header = "inferbench-sim";
  return options;
}

std::unique_ptr<Engine> default_engine(asio::io_context& io, const SimArgs& args) {
  if (args.timing_model == TimingModelKind::kRoofline) {
    const EngineConfig& e = *args.engine;
    return std::make_unique<BatchEngine>(io.get_executor(),
                                         std::make_shared<PerfModel>(*e.model, *e.hardware, e.perf),
                                         e.scheduler, args.time_scale);
  }
  return std::make_unique<SimpleEngine>(io.get_executor(),
                                        std::make_shared<SimpleTimingModel>(args.timing),
                                        args.max_running, args.time_scale);
}

// What the server records about one generation request: metrics when it ends and, with
// --truth-log, its truth record. Ends as "abort" unless completed() was called (the destructor
// also runs when the handler is cancelled because the client went away).
class RequestTrace {
 public:
  RequestTrace(ServerMetrics& metrics, TruthLog* log, const http::HttpRequest& request, Api api,
               std::string_view id, bool stream, int prompt_tokens, FinishReason finish,
               const Generation& generation)
      : metrics_(metrics),
        log_(log),
        request_(request),
        api_(api),
        id_(id),
        stream_(stream),
        prompt_tokens_(prompt_tokens),
        finish_(finish),
        generation_(generation),
        arrival_ns_(request.received_ns != 0 ? request.received_ns : mono_ns()) {}

  RequestTrace(const RequestTrace&) = delete;
  RequestTrace& operator=(const RequestTrace&) = delete;

  // `n` more tokens are handed to the socket now.
  void tokens_sent(int n, int64_t now_ns) {
    if (sent_ == 0) {
      metrics_.prompt_tokens += prompt_tokens_;
      metrics_.ttft.observe(ns_to_s(now_ns - arrival_ns_));
    }
    sent_ += n;
    last_ns_ = now_ns;
    metrics_.generation_tokens += n;
    if (log_ != nullptr) token_ns_.insert(token_ns_.end(), static_cast<size_t>(n), now_ns);
  }

  void completed() { completed_ = true; }

  ~RequestTrace() {
    if (completed_) {
      (finish_ == FinishReason::kStop ? metrics_.finished_stop : metrics_.finished_length) += 1;
      metrics_.e2e.observe(ns_to_s(last_ns_ - arrival_ns_));
    } else {
      metrics_.finished_abort += 1;
    }
    if (log_ == nullptr) return;
    TruthRecord r;
    r.request_id = request_.header("X-Request-Id");
    r.id = id_;
    r.api = api_ == Api::kChat ? "chat" : "completions";
    r.stream = stream_;
    r.arrival_ns = arrival_ns_;
    r.prompt_tokens = prompt_tokens_;
    r.completion_tokens = sent_;
    r.cached_tokens = generation_.cached_tokens();
    r.preemptions = generation_.preemptions();
    r.finish_reason = completed_ ? to_string(finish_) : "abort";
    r.token_ns = token_ns_;
    auto due = generation_.due_times();
    r.due_ns = due.subspan(0, std::min(due.size(), static_cast<size_t>(sent_)));
    log_->write(r);
  }

 private:
  ServerMetrics& metrics_;
  TruthLog* log_;
  const http::HttpRequest& request_;
  Api api_;
  std::string_view id_;
  bool stream_;
  int prompt_tokens_;
  FinishReason finish_;
  const Generation& generation_;
  int64_t arrival_ns_;
  int64_t last_ns_ = 0;
  int sent_ = 0;
  bool completed_ = false;
  std::vector<int64_t> token_ns_;
};

}  // namespace

SimServer::SimServer(asio::io_context& io, SimArgs args)
    : SimServer(io, args, default_engine(io, args)) {}

SimServer::SimServer(asio::io_context& io, SimArgs args, std::unique_ptr<Engine> engine)
    : args_(std::move(args)),
      served_{args_.model, args_.max_model_len},
      started_unix_s_(static_cast<int64_t>(std::time(nullptr))),
      engine_(std::move(engine)),
      http_(io, router_.handler(), http_options(args_)) {
  if (args_.power_model && args_.engine) {
    if (auto* batch = dynamic_cast<BatchEngine*>(engine_.get())) {
      const HardwareSpec& hw = *args_.engine->hardware;
      power_ = std::make_shared<PowerMeter>(hw.tdp_w * kIdlePowerFraction, hw.tdp_w,
                                            steady_now_s());
      batch->set_power_meter(power_);
    }
  }
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) hostname_ = host;
  router_.add("GET", "/health", [this](const http::HttpRequest& r, http::ResponseWriter& w) {
    return handle_health(r, w);
  });
  router_.add("GET", "/v1/models", [this](const http::HttpRequest& r, http::ResponseWriter& w) {
    return handle_models(r, w);
  });
  router_.add("GET", "/metrics", [this](const http::HttpRequest& r, http::ResponseWriter& w) {
    return handle_metrics(r, w);
  });
  router_.add("POST", "/v1/completions",
              [this](const http::HttpRequest& r, http::ResponseWriter& w) {
                return handle_generate(Api::kCompletions, r, w);
              });
  router_.add("POST", "/v1/chat/completions",
              [this](const http::HttpRequest& r, http::ResponseWriter& w) {
                return handle_generate(Api::kChat, r, w);
              });
}

SimServer::~SimServer() = default;

Expected<uint16_t> SimServer::listen() {
  if (!args_.truth_log.empty() && truth_log_ == nullptr) {
    auto log = TruthLog::open(args_.truth_log);
    if (!log) return log.error();
    truth_log_ = std::move(*log);
  }
  auto port = http_.listen(args_.host, args_.port);
  if (!port) return port;
  args_.port = *port;
  sim_log().info("server_args={}", format_sim_args(args_));
  if (args_.timing_model == TimingModelKind::kRoofline && args_.engine) {
    for (const std::string& line : args_.engine->decisions) sim_log().info("{}", line);
  }
  return port;
}

void SimServer::stop() {
  http_.stop();
}

std::string SimServer::next_request_id(Api api) {
  // 32 hex digits like vLLM's ids; unique per server run, reproducible for a seed.
  uint64_t n = ++request_counter_;
  return fmt::format("{}{:016x}{:016x}", api == Api::kChat ? "chatcmpl-" : "cmpl-",
                     mix64(args_.seed ^ 0x5eedULL), mix64(n));
}

asio::awaitable<void> SimServer::handle_health(const http::HttpRequest&,
                                               http::ResponseWriter& writer) {
  // vLLM answers 200 with an empty body.
  co_await writer.send(200, "", "");
}

asio::awaitable<void> SimServer::handle_models(const http::HttpRequest&,
                                               http::ResponseWriter& writer) {
  json::object card;
  card["id"] = args_.model;
  card["object"] = "model";
  card["created"] = started_unix_s_;
  card["owned_by"] = "inferbench-sim";
  card["root"] = args_.model;
  card["parent"] = nullptr;
  card["max_model_len"] = args_.max_model_len;
  json::object list;
  list["object"] = "list";
  list["data"] = json::array{std::move(card)};
  co_await writer.send(200, kJson, json::serialize(list));
}

asio::awaitable<void> SimServer::handle_metrics(const http::HttpRequest&,
                                                http::ResponseWriter& writer) {
  std::optional<CacheConfigInfo> cache;
  if (args_.timing_model == TimingModelKind::kRoofline && args_.engine) {
    const EngineConfig& e = *args_.engine;
    cache = CacheConfigInfo{e.scheduler.block_size, e.scheduler.num_blocks, e.kv_cache_dtype,
                            e.scheduler.prefix_caching, e.gpu_memory_utilization};
  }
  std::string body =
      render_metrics(args_.model, engine_->stats(), metrics_, cache ? &*cache : nullptr);
  if (power_) {
    // Every rank of the tensor-parallel group runs the same steps; power.draw-like 1 s means.
    const EngineConfig& e = *args_.engine;
    const double now = steady_now_s();
    GpuPowerReading r;
    r.power_w = power_->average_power_w(now, 1.0);
    r.energy_mj = power_->energy_j(now) * 1000.0;
    r.util_pct = power_->busy_fraction(now, 1.0) * 100.0;
    // vLLM-style engines take their memory share at startup and keep it.
    r.fb_used_mib = e.gpu_memory_utilization * e.hardware->memory_gib * 1024.0;
    std::vector<GpuPowerReading> gpus(static_cast<size_t>(e.tensor_parallel_size), r);
    for (int g = 0; g < e.tensor_parallel_size; ++g) gpus[static_cast<size_t>(g)].gpu = g;
    render_dcgm_metrics(body, gpus, e.hardware->product, hostname_);
  }
  co_await writer.send(200, kPrometheus, std::move(body));
}

asio::awaitable<void> SimServer::handle_generate(Api api, const http::HttpRequest& request,
                                                 http::ResponseWriter& writer) {
  ParseResult parsed = api == Api::kChat ? parse_chat_request(request.body, served_)
                                         : parse_completion_request(request.body, served_);
  if (const ApiError* error = std::get_if<ApiError>(&parsed)) {
    co_await writer.send(error->status, kJson, error->to_json());
    co_return;
  }
  GenerateRequest& req = std::get<GenerateRequest>(parsed);
  const OutputPlan plan =
      plan_output(req.prompt_hash, args_.seed, req.max_tokens, req.min_tokens, req.ignore_eos);
  const uint64_t stream_seed = mix64(req.prompt_hash ^ mix64(args_.seed + 1));
  const std::string id = next_request_id(api);
  const ResponseFormatter format(api, id, static_cast<int64_t>(std::time(nullptr)), args_.model);
  // With finish "stop" the last token is EOS, which detokenizes to "" (as in vLLM).
  auto token_text = [&](int index) -> std::string_view {
    if (plan.finish == FinishReason::kStop && index == plan.tokens - 1) return "";
    return output_token_text(stream_seed, index);
  };
  Usage usage{req.prompt_tokens, 0};

  GenerationRequest submission;
  submission.prompt_tokens = req.prompt_tokens;
  submission.output_tokens = plan.tokens;
  submission.prompt_keys = std::move(req.prompt_keys);
  submission.output_seed = stream_seed;
  submission.ends_with_eos = plan.finish == FinishReason::kStop;
  submission.record_due_times = truth_log_ != nullptr;
  std::unique_ptr<Generation> generation = engine_->submit(std::move(submission));
  // Declared after the generation, so it is destroyed first and can still read it.
  RequestTrace trace(metrics_, truth_log_.get(), request, api, id, req.stream, req.prompt_tokens,
                     plan.finish, *generation);

  if (!req.stream) {
    std::string text;
    while (const int n = co_await generation->next_tokens()) {
      for (int i = 0; i < n; ++i) text += token_text(usage.completion_tokens++);
    }
    trace.tokens_sent(usage.completion_tokens, mono_ns());
    if (co_await writer.send(200, kJson, format.full_response(text, plan.finish, usage))) {
      trace.completed();
    }
    co_return;
  }

  // Like vLLM, the response header goes out at once; tokens follow as the engine makes them.
  if (!co_await writer.begin_stream()) co_return;
  co_await generation->admitted();
  const Usage* running_usage = req.continuous_usage ? &usage : nullptr;
  if (api == Api::kChat) {
    if (!co_await writer.write_chunk(format.role_event(running_usage))) co_return;
  }
  // Tokens that exist together go out in one write (one HTTP chunk holding their events), and
  // the final events and the end of the body go with the last token, so a stream costs about
  // one socket write per engine step.
  std::string chunk;
  chunk.reserve(1024);
  while (true) {
    const int n = co_await generation->next_tokens();
    if (n == 0) break;
    chunk.clear();
    for (int i = 0; i < n; ++i) {
      const int index = usage.completion_tokens++;
      std::optional<FinishReason> finish;
      if (usage.completion_tokens == plan.tokens) finish = plan.finish;
      format.append_token_event(chunk, token_text(index), finish, running_usage);
    }
    const bool last = usage.completion_tokens == plan.tokens;
    if (last) {
      if (req.include_usage) format.append_usage_event(chunk, usage);
      chunk += kSseDone;
    }
    trace.tokens_sent(n, mono_ns());
    if (!last) {
      if (!co_await writer.write_chunk(chunk)) co_return;
      continue;
    }
    if (co_await writer.end_stream(chunk)) trace.completed();
    co_return;
  }
}

}  // namespace ib::sim
