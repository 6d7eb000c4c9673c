#include "sim/sim_server.h"

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

// Server logs go to stderr (DESIGN.md §2: stdout is for results).
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

constexpr std::string_view kJson = "application/json";

}  // namespace

Status validate(const SimArgs& args) {
  if (args.model.empty()) return Error{"model must not be empty"};
  if (args.max_model_len < 2) {
    return Error{fmt::format("max_model_len must be at least 2, got {}", args.max_model_len)};
  }
  if (args.max_running < 1) {
    return Error{fmt::format("max_running must be at least 1, got {}", args.max_running)};
  }
  if (!std::isfinite(args.keep_alive_timeout_s) || args.keep_alive_timeout_s < 0) {
    return Error{fmt::format("keep_alive_timeout_s must be >= 0 and finite, got {}",
                             args.keep_alive_timeout_s)};
  }
  return validate(args.timing);
}

std::string format_sim_args(const SimArgs& args) {
  return fmt::format(
      "SimArgs(host={}, port={}, model={}, max_model_len={}, timing_model='simple', "
      "prefill_tok_s={}, prefill_overhead_ms={}, decode_base_ms={}, decode_per_running_ms={}, "
      "max_running={}, seed={}, keep_alive_timeout_s={})",
      py_str(args.host), args.port, py_str(args.model), args.max_model_len,
      py_float(args.timing.prefill_tok_s), py_float(args.timing.prefill_overhead_ms),
      py_float(args.timing.decode_base_ms), py_float(args.timing.decode_per_running_ms),
      args.max_running, args.seed, py_float(args.keep_alive_timeout_s));
}

namespace {

HttpServerOptions http_options(const SimArgs& args) {
  HttpServerOptions options;
  options.keep_alive_timeout = std::chrono::milliseconds(
      static_cast<int64_t>(std::llround(args.keep_alive_timeout_s * 1000.0)));
  options.server_header = "inferbench-sim";
  return options;
}

std::unique_ptr<Engine> default_engine(asio::io_context& io, const SimArgs& args) {
  return std::make_unique<SimpleEngine>(
      io.get_executor(), std::make_shared<SimpleTimingModel>(args.timing), args.max_running);
}

}  // namespace

SimServer::SimServer(asio::io_context& io, SimArgs args)
    : SimServer(io, args, default_engine(io, args)) {}

SimServer::SimServer(asio::io_context& io, SimArgs args, std::unique_ptr<Engine> engine)
    : args_(std::move(args)),
      served_{args_.model, args_.max_model_len},
      started_unix_s_(static_cast<int64_t>(std::time(nullptr))),
      engine_(std::move(engine)),
      http_(io, router_.handler(), http_options(args_)) {
  router_.add("GET", "/health",
              [this](const HttpRequest& r, ResponseWriter& w) { return handle_health(r, w); });
  router_.add("GET", "/v1/models",
              [this](const HttpRequest& r, ResponseWriter& w) { return handle_models(r, w); });
  router_.add("POST", "/v1/completions", [this](const HttpRequest& r, ResponseWriter& w) {
    return handle_generate(Api::kCompletions, r, w);
  });
  router_.add("POST", "/v1/chat/completions", [this](const HttpRequest& r, ResponseWriter& w) {
    return handle_generate(Api::kChat, r, w);
  });
}

SimServer::~SimServer() = default;

Expected<uint16_t> SimServer::listen() {
  auto port = http_.listen(args_.host, args_.port);
  if (!port) return port;
  args_.port = *port;
  sim_log().info("server_args={}", format_sim_args(args_));
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

asio::awaitable<void> SimServer::handle_health(const HttpRequest&, ResponseWriter& writer) {
  // vLLM answers 200 with an empty body.
  co_await writer.send(200, "", "");
}

asio::awaitable<void> SimServer::handle_models(const HttpRequest&, ResponseWriter& writer) {
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

asio::awaitable<void> SimServer::handle_generate(Api api, const HttpRequest& request,
                                                 ResponseWriter& writer) {
  ParseResult parsed = api == Api::kChat ? parse_chat_request(request.body, served_)
                                         : parse_completion_request(request.body, served_);
  if (const ApiError* error = std::get_if<ApiError>(&parsed)) {
    co_await writer.send(error->status, kJson, error->to_json());
    co_return;
  }
  const GenerateRequest& req = std::get<GenerateRequest>(parsed);
  const OutputPlan plan =
      plan_output(req.prompt_hash, args_.seed, req.max_tokens, req.min_tokens, req.ignore_eos);
  const uint64_t stream_seed = mix64(req.prompt_hash ^ mix64(args_.seed + 1));
  const ResponseFormatter format(api, next_request_id(api),
                                 static_cast<int64_t>(std::time(nullptr)), args_.model);
  // With finish "stop" the last token is EOS, which detokenizes to "" (as in vLLM).
  auto token_text = [&](int index) -> std::string_view {
    if (plan.finish == FinishReason::kStop && index == plan.tokens - 1) return "";
    return output_token_text(stream_seed, index);
  };
  Usage usage{req.prompt_tokens, 0};

  std::unique_ptr<Generation> generation = engine_->submit(req.prompt_tokens, plan.tokens);

  if (!req.stream) {
    std::string text;
    while (co_await generation->next_token()) {
      text += token_text(usage.completion_tokens);
      ++usage.completion_tokens;
    }
    co_await writer.send(200, kJson, format.full_response(text, plan.finish, usage));
    co_return;
  }

  // Like vLLM, the response header goes out at once; tokens follow as the engine makes them.
  if (!co_await writer.begin_stream()) co_return;
  co_await generation->admitted();
  const Usage* running_usage = req.continuous_usage ? &usage : nullptr;
  if (api == Api::kChat) {
    if (!co_await writer.write_chunk(format.role_event(running_usage))) co_return;
  }
  while (co_await generation->next_token()) {
    std::string_view text = token_text(usage.completion_tokens);
    ++usage.completion_tokens;
    std::optional<FinishReason> finish;
    if (usage.completion_tokens == plan.tokens) finish = plan.finish;
    if (!co_await writer.write_chunk(format.token_event(text, finish, running_usage))) co_return;
  }
  if (req.include_usage) {
    if (!co_await writer.write_chunk(format.usage_event(usage))) co_return;
  }
  if (!co_await writer.write_chunk(kSseDone)) co_return;
  co_await writer.end_stream();
}

}  // namespace ib::sim
