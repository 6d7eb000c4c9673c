#include "sim/sim_server.h"

#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <boost/system/system_error.hpp>
#include <chrono>
#include <cmath>
#include <ctime>
#include <optional>
#include <variant>

#include "core/clock.h"
#include "core/json_text.h"
#include "http/awaitable.h"
#include "sim/batch_engine.h"
#include "sim/log.h"
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

spdlog::logger& sim_log() {
  static auto logger = std::make_shared<spdlog::logger>(
      "serve-sim", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  return *logger;
}

namespace {

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

int default_io_threads() {
  // The cores this process may run on (taskset, cpusets), else the machine's.
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) cores = CPU_COUNT(&set);
  return std::clamp(cores / 2, 1, 4);
}

std::string_view to_string(TimingModelKind kind) {
  return kind == TimingModelKind::kSimple ? "simple" : "roofline";
}

std::string_view to_string(SimRole role) {
  switch (role) {
    case SimRole::kPrefill:
      return "prefill";
    case SimRole::kDecode:
      return "decode";
    case SimRole::kBoth:
      break;
  }
  return "both";
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
  if (auto s = validate(args.spec); !s) return s;
  if (args.role != SimRole::kBoth) {
    const KvRoleArgs& kv = args.kv;
    if (auto s = check_number("kv bytes_per_token", kv.bytes_per_token, 0, true); !s) return s;
    if (auto s = check_number("kv link bandwidth", kv.channel.link.bytes_per_s, 0, false); !s) {
      return s;
    }
    if (auto s = check_number("kv link latency", kv.channel.link.latency_s, 0, true); !s) return s;
    if (auto s = check_number("kv pull timeout", kv.pull_timeout_s, 0, false); !s) return s;
    if (auto s = check_number("kv lease", kv.channel.lease_s, 0, false); !s) return s;
    if (kv.channel.wire_max_bytes < 0) return Error{"kv wire_max_bytes must be at least 0"};
  }
  if (args.stream_interval < 1) {
    return Error{fmt::format("stream_interval must be at least 1, got {}", args.stream_interval)};
  }
  if (args.threads < 1 || args.threads > kMaxIoThreads) {
    return Error{fmt::format("threads must be between 1 and {}, got {}", kMaxIoThreads,
                             args.threads)};
  }
  if (args.gsm8k) {
    if (auto s = check_number("gsm8k correct fraction", args.gsm8k->correct, 0, true); !s) return s;
    if (args.gsm8k->correct > 1) {
      return Error{fmt::format("the gsm8k correct fraction must be at most 1, got {}",
                               args.gsm8k->correct)};
    }
    if (auto s = check_number("gsm8k flexible-only fraction", args.gsm8k->flexible_only, 0, true);
        !s) {
      return s;
    }
    if (args.gsm8k->flexible_only > 1) {
      return Error{fmt::format("the gsm8k flexible-only fraction must be at most 1, got {}",
                               args.gsm8k->flexible_only)};
    }
  }
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
  // The answer model is part of the effective configuration: `tune` and `verify` see a change.
  if (args.gsm8k) {
    out += fmt::format("gsm8k_correct={}, gsm8k_flexible_only={}, ", py_float(args.gsm8k->correct),
                       py_float(args.gsm8k->flexible_only));
  } else {
    out += "gsm8k_correct=None, ";
  }
  // The speculative config is part of the effective configuration (as vLLM prints its
  // speculative_config): verify and tune see a change of K or acceptance.
  if (args.spec.enabled()) {
    const bool pinned = args.spec.pinned_length > 0;
    out += fmt::format(
        "speculative_config={{'num_speculative_tokens': {}, 'acceptance': {}, "
        "'acceptance_length': {}, 'rejection_sample_method': '{}', 'draft_ms': {}}}, ",
        args.spec.num_speculative_tokens, py_float(args.spec.acceptance),
        py_float(pinned
                     ? args.spec.pinned_length
                     : acceptance_length(args.spec.acceptance, args.spec.num_speculative_tokens)),
        pinned ? "synthetic" : "per-position", py_float(args.spec.draft_ms));
  } else {
    out += "speculative_config=None, ";
  }
  // The KV connector of a disaggregated worker, as vLLM prints its kv_transfer_config: a change
  // of link, or of the KV size a token, is a change of the effective configuration.
  if (args.role != SimRole::kBoth) {
    const KvRoleArgs& kv = args.kv;
    out += fmt::format(
        "kv_transfer_config={{'kv_connector': 'SimKvConnector', 'kv_role': '{}', 'link': '{}', "
        "'bandwidth_bytes_per_s': {}, 'latency_s': {}, 'kv_bytes_per_token': {}, "
        "'wire_max_bytes': {}, 'lease_s': {}}}, ",
        args.role == SimRole::kPrefill ? "kv_producer" : "kv_consumer", kv.channel.link.name,
        py_float(kv.channel.link.bytes_per_s), py_float(kv.channel.link.latency_s),
        py_float(kv.bytes_per_token), kv.channel.wire_max_bytes, py_float(kv.channel.lease_s));
  } else {
    out += "kv_transfer_config=None, ";
  }
  out += fmt::format("per_request_spec_decode_metrics={}, ",
                     args.per_request_spec_metrics ? "'summary'" : "None");
  out += fmt::format("enable_per_request_metrics={}, ", py_bool(args.per_request_metrics));
  out += fmt::format(
      "stream_interval={}, metrics_engine={}, time_scale={}, truth_log={}, seed={}, "
      "keep_alive_timeout_s={}, threads={})",
      args.stream_interval, py_str(args.metrics_engine), py_float(args.time_scale),
      args.truth_log.empty() ? "None" : py_str(args.truth_log), args.seed,
      py_float(args.keep_alive_timeout_s), args.threads);
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
    SchedulerConfig scheduler = e.scheduler;
    scheduler.spec = args.spec;  // speculative decoding: each decode step verifies K drafts
    return std::make_unique<BatchEngine>(io.get_executor(),
                                         std::make_shared<PerfModel>(*e.model, *e.hardware, e.perf),
                                         scheduler, args.time_scale);
  }
  return std::make_unique<SimpleEngine>(io.get_executor(),
                                        std::make_shared<SimpleTimingModel>(args.timing),
                                        args.max_running, args.time_scale, args.spec);
}


// A GSM8K answer as output tokens: one per space-separated word, the space kept with the word that
// follows it, so the tokens concatenate to the text.
std::vector<std::string> split_answer_tokens(std::string_view text) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find(' ', i + 1);
    if (j == std::string_view::npos) j = text.size();
    out.emplace_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

// What the server records about one generation request: metrics when it ends and, with
// --truth-log, its truth record. Ends as "abort" unless completed() was called (the destructor
// also runs when the handler is cancelled because the client went away). Lives on the request's
// I/O thread; `metrics` is that thread's shard.
class RequestTrace {
 public:
  RequestTrace(SimServer::MetricsShard& metrics, TruthLog* log, const http::HttpRequest& request,
               Api api, std::string_view id, bool stream, int prompt_tokens, FinishReason finish)
      : metrics_(metrics),
        log_(log),
        request_(request),
        api_(api),
        id_(id),
        stream_(stream),
        prompt_tokens_(prompt_tokens),
        finish_(finish),
        arrival_ns_(request.received_ns != 0 ? request.received_ns : mono_ns()) {}

  RequestTrace(const RequestTrace&) = delete;
  RequestTrace& operator=(const RequestTrace&) = delete;

  // The engine made `n` more tokens in a step that ended at `due_ns`.
  void tokens_due(int n, int64_t due_ns) {
    if (log_ != nullptr) due_ns_.insert(due_ns_.end(), static_cast<size_t>(n), due_ns);
  }
  void engine_counts(int cached_tokens, int preemptions) {
    cached_tokens_ = cached_tokens;
    preemptions_ = preemptions;
  }

  // `n` more tokens are handed to the socket now.
  void tokens_sent(int n, int64_t now_ns) {
    {
      std::lock_guard lock(metrics_.mutex);
      ServerMetrics& m = metrics_.metrics;
      if (sent_ == 0) {
        m.prompt_tokens += prompt_tokens_;
        m.ttft.observe(ns_to_s(now_ns - arrival_ns_));
      }
      m.generation_tokens += n;
      m.token_writes += 1;
    }
    sent_ += n;
    last_ns_ = now_ns;
    if (log_ != nullptr) token_ns_.insert(token_ns_.end(), static_cast<size_t>(n), now_ns);
  }

  void completed() { completed_ = true; }

  ~RequestTrace() {
    {
      std::lock_guard lock(metrics_.mutex);
      ServerMetrics& m = metrics_.metrics;
      if (completed_) {
        (finish_ == FinishReason::kStop ? m.finished_stop : m.finished_length) += 1;
        m.e2e.observe(ns_to_s(last_ns_ - arrival_ns_));
      } else {
        m.finished_abort += 1;
      }
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
    r.cached_tokens = cached_tokens_;
    r.preemptions = preemptions_;
    r.finish_reason = completed_ ? to_string(finish_) : "abort";
    r.token_ns = token_ns_;
    r.due_ns = std::span<const int64_t>(due_ns_).subspan(
        0, std::min(due_ns_.size(), static_cast<size_t>(sent_)));
    log_->write(r);
  }

 private:
  SimServer::MetricsShard& metrics_;
  TruthLog* log_;
  const http::HttpRequest& request_;
  Api api_;
  std::string_view id_;
  bool stream_;
  int prompt_tokens_;
  FinishReason finish_;
  int64_t arrival_ns_;
  int64_t last_ns_ = 0;
  int sent_ = 0;
  int cached_tokens_ = 0;
  int preemptions_ = 0;
  bool completed_ = false;
  std::vector<int64_t> token_ns_;
  std::vector<int64_t> due_ns_;
};

// What a generation request produces, and how: the output plan, the stream's events.
struct RequestPlan {
  Api api;
  bool stream;
  bool include_usage;
  bool continuous_usage;
  int stream_interval = 1;  // tokens per SSE event (the first event has one)
  int spec_metrics_k = 0;   // > 0: report the request's speculative decoding (K drafts a step)
  bool timing_metrics = false;  // --enable-per-request-metrics: vLLM's timing fields
  // A disaggregated worker's request: where its time to first token went, in the response's
  // metrics (docs/serve-sim.md, "Disaggregated prefill and decode").
  struct Timing {
    bool prefill = false, decode = false;
    int64_t arrival_ns = 0;
    std::map<std::string, double> upstream_ms;  // the router's parts (kv_transfer_params)
    double kv_transfer_ms = 0;
    int64_t kv_done_ns = 0;
  } timing;
  OutputPlan output;
  uint64_t stream_seed;
  std::vector<std::string> answer;  // --gsm8k-correct: the answer's tokens (words), else empty

  // With finish "stop" the last token is EOS, which detokenizes to "" (as in vLLM).
  std::string_view token_text(int index) const {
    if (output.finish == FinishReason::kStop && index == output.tokens - 1) return "";
    if (!answer.empty()) return answer.at(static_cast<size_t>(index));
    return output_token_text(stream_seed, index);
  }
};

// Receives one request's news on its I/O thread (TokenRelay). For a stream it formats the SSE
// events straight into the writer's chunk buffer and writes them to the socket from the delivery
// callback (commit(): one write for everything a delivery brought): no coroutine resumption,
// timer or allocation per token. The handler coroutine only waits (wait()) for the end, for a
// write the socket could not take at once, or for the client to go away (its cancellation).
class RequestReceiver final : public NewsReceiver {
 public:
  RequestReceiver(asio::any_io_executor executor, http::ResponseWriter& writer,
                  RequestTrace& trace, const ResponseFormatter& format, const RequestPlan& plan,
                  int prompt_tokens)
      : writer_(writer),
        trace_(trace),
        format_(format),
        plan_(plan),
        usage_{prompt_tokens, 0},
        timer_(std::move(executor)) {}

  void on_news(const TokenNews& news) override {
    trace_.engine_counts(news.cached_tokens, news.preemptions);
    const bool admission = (news.admitted || news.tokens > 0) && !admitted_;
    if (admission) {
      admitted_ = true;
      admitted_ns_ = news.admitted ? news.admitted_ns : news.due_ns;
    }
    if (news.tokens > 0 && first_due_ns_ == 0) first_due_ns_ = news.due_ns;
    if (news.tokens > 0) {
      last_due_ns_ = news.due_ns;
      tokens_due_ += news.tokens;
    }
    if (news.tokens > 0) trace_.tokens_due(news.tokens, news.due_ns);
    if (news.accepted >= 0 && plan_.spec_metrics_k > 0) {
      spec_.count(news.accepted, plan_.spec_metrics_k);
    }
    if (!plan_.stream) {
      usage_.completion_tokens += news.tokens;
      if (news.finished || usage_.completion_tokens >= plan_.output.tokens) finished_ = true;
      return;
    }
    // The chat role event goes out at admission, before the prefill ends (vLLM's order).
    if (admission && plan_.api == Api::kChat) format_.append_role_event(sink(), running_usage());
    // Tokens that exist together go out in one write (one HTTP chunk holding their events); the
    // final events and the end of the body go with the last token.
    // One news is one engine step: its tokens (several with speculative decoding) go out in one
    // event, as vLLM sends a step's output. With --stream-interval N tokens wait until N are
    // held (the first goes at once, the last takes what is left); continuous usage counts them.
    if (news.tokens > 0) {
      const int begin = usage_.completion_tokens;
      usage_.completion_tokens += news.tokens;
      held_tokens_ += news.tokens;
      const bool last = usage_.completion_tokens >= plan_.output.tokens;
      const bool flush = begin == 0 || last || held_tokens_ >= plan_.stream_interval;
      const std::optional<FinishReason> finish =
          last ? std::optional<FinishReason>(plan_.output.finish) : std::nullopt;
      if (flush && held_tokens_ == 1) {
        // One token and none held (every step without speculation): its text as it is, no copy.
        format_.append_token_event(sink(), plan_.token_text(begin), finish, running_usage());
        unsent_tokens_ += 1;
        held_tokens_ = 0;
      } else {
        for (int i = begin; i < usage_.completion_tokens; ++i) held_text_ += plan_.token_text(i);
        if (flush) flush_held(finish);
      }
    }
    if ((news.finished || usage_.completion_tokens >= plan_.output.tokens) && !finished_) {
      finished_ = true;
      if (held_tokens_ > 0) flush_held(std::nullopt);  // the engine ended the request early
      std::string& out = sink();
      if (plan_.include_usage) format_.append_usage_event(out, usage_, metrics_json());
      out += kSseDone;
      end_queued_ = true;
    }
  }

  void commit() override {
    if (!plan_.stream) {
      if (finished_) wake();
      return;
    }
    write();
  }

  // Handler side. The response header is out: events can be written.
  void header_sent() {
    header_sent_ = true;
    write();
  }
  // Writes what the news left unwritten (after finish_write() completed).
  void write_done() { write(); }

  // Parks the handler until it has something to do: failed(), writer.write_pending(),
  // end_written(), or (not streamed) finished(). Cancellation of the handler throws.
  asio::awaitable<void> wait() {
    if (handler_has_work()) co_return;
    waiting_ = true;
    timer_.expires_at(asio::steady_timer::time_point::max());
    auto [ec] = co_await timer_.async_wait(use_tuple);
    waiting_ = false;
    if (!woken_) throw boost::system::system_error(ec ? ec : asio::error::operation_aborted);
    woken_ = false;
  }

  bool failed() const { return failed_; }
  bool finished() const { return finished_; }
  bool end_written() const { return end_written_; }
  const Usage& usage() const { return usage_; }
  // The response's "metrics" value (vLLM's per-request speculative decoding), or empty.
  // The response's "metrics" value: the request's speculative decoding, and a disaggregated
  // worker's timing (a prefill's queue and prefill; a decode's KV transfer, queue and first
  // decode, after the router's parts); empty when there is nothing to say.
  //
  // The timing fields are vLLM's (--enable-per-request-metrics): queue_time_ms from arrival (a
  // decode worker: from its KV's arrival) to scheduling, time_to_first_token_ms from scheduling to
  // the first token, generation_time_ms from the first token to the last. A prefill worker always
  // gives its queue and time to first token (the router reads them).
  std::string metrics_json() const {
    const RequestPlan::Timing& t = plan_.timing;
    const std::string spec = spec_metrics();
    if (!t.prefill && !t.decode && !plan_.timing_metrics) return spec;
    json::object o;
    if (!spec.empty()) o = json::parse(spec).as_object();
    auto ms = [](int64_t from, int64_t to) {
      return from > 0 && to >= from ? static_cast<double>(to - from) / 1e6 : 0.0;
    };
    const int64_t queued_ns = t.decode ? t.kv_done_ns : t.arrival_ns;
    if (t.prefill || plan_.timing_metrics) {
      o["queue_time_ms"] = ms(queued_ns, admitted_ns_);
      o["time_to_first_token_ms"] = ms(admitted_ns_, first_due_ns_);
    }
    if (plan_.timing_metrics && !t.prefill) {
      const double generation = ms(first_due_ns_, last_due_ns_);
      o["generation_time_ms"] = generation;
      o["mean_itl_ms"] = tokens_due_ > 1
                             ? json::value(generation / static_cast<double>(tokens_due_ - 1))
                             : json::value(nullptr);
      const double inference_s = ms(admitted_ns_, last_due_ns_) / 1e3;
      o["tokens_per_second"] =
          inference_s > 0 ? json::value(tokens_due_ / inference_s) : json::value(nullptr);
    }
    if (t.decode) {
      json::object d;
      for (const auto& [name, value] : t.upstream_ms) d[name] = value;
      d["kv_transfer_ms"] = t.kv_transfer_ms;
      d["decode_queue_ms"] = ms(t.kv_done_ns, admitted_ns_);
      d["first_decode_ms"] = ms(admitted_ns_, first_due_ns_);
      o["disagg"] = std::move(d);
    }
    return json::serialize(o);
  }
  std::string spec_metrics() const {
    return plan_.spec_metrics_k > 0 ? request_spec_metrics_json(spec_, plan_.spec_metrics_k)
                                    : std::string();
  }

 private:
  const Usage* running_usage() const { return plan_.continuous_usage ? &usage_ : nullptr; }

  // One event for the tokens held back so far.
  void flush_held(std::optional<FinishReason> finish) {
    format_.append_token_event(sink(), held_text_, finish, running_usage());
    unsent_tokens_ += held_tokens_;
    held_tokens_ = 0;
    held_text_.clear();
  }

  bool handler_has_work() const {
    return failed_ || writer_.write_pending() || end_written_ || (!plan_.stream && finished_);
  }
  void wake() {
    if (!waiting_ || woken_) return;
    woken_ = true;
    timer_.cancel();
  }

  // Where events go: straight into the writer's chunk buffer when the socket can be written
  // now (the common case: no copy), else into out_ until it can.
  std::string& sink() {
    if (building_ != nullptr) return *building_;
    if (header_sent_ && !failed_ && !end_written_ && !writer_.write_pending() &&
        !writer_.client_gone() && out_.empty()) {
      building_ = &writer_.begin_chunk();
      return *building_;
    }
    return out_;
  }

  // Writes the events not written yet, as far as the socket takes them now.
  void write() {
    using TryWrite = http::ResponseWriter::TryWrite;
    TryWrite result;
    // The time the tokens' bytes are handed to the socket (the truth log's token_ns).
    int64_t now = 0;
    if (building_ != nullptr) {
      building_ = nullptr;
      now = mono_ns();
      result = writer_.try_write_built(end_queued_);
    } else {
      if (!header_sent_ || failed_ || end_written_ || writer_.write_pending()) return;
      if (out_.empty()) return;
      now = mono_ns();
      result = writer_.try_write_chunk(out_, end_queued_);
      out_.clear();
    }
    if (result == TryWrite::kFailed) {
      failed_ = true;
      wake();
      return;
    }
    if (unsent_tokens_ > 0) trace_.tokens_sent(unsent_tokens_, now);
    unsent_tokens_ = 0;
    if (end_queued_) end_written_ = true;
    if (result == TryWrite::kPending || end_written_) wake();
  }

  http::ResponseWriter& writer_;
  RequestTrace& trace_;
  const ResponseFormatter& format_;
  const RequestPlan& plan_;
  Usage usage_;
  asio::steady_timer timer_;
  std::string out_;  // events waiting for the socket (the header, a pending write)
  std::string* building_ = nullptr;  // the writer's chunk buffer holding this delivery's events
  int unsent_tokens_ = 0;            // in events formatted, not yet handed to the socket
  SpecDecodeCounters spec_;          // --per-request-spec-decode-metrics: this request's steps
  int held_tokens_ = 0;              // --stream-interval: tokens waiting for their event
  std::string held_text_;            // their text
  bool admitted_ = false;
  int64_t admitted_ns_ = 0;   // the first admission (steady-clock ns)
  int64_t first_due_ns_ = 0;  // when the first token came to exist
  int64_t last_due_ns_ = 0;   // when the latest token came to exist
  int64_t tokens_due_ = 0;    // tokens generated so far
  bool finished_ = false;     // every token arrived
  bool end_queued_ = false;   // the final events were formatted
  bool end_written_ = false;  // the write ending the body was started
  bool header_sent_ = false;
  bool failed_ = false;
  bool waiting_ = false;
  bool woken_ = false;
};

}  // namespace

struct SimServer::IoThread {
  asio::io_context io{1};
  asio::executor_work_guard<asio::io_context::executor_type> guard{io.get_executor()};
  std::thread thread;
};

std::vector<std::unique_ptr<SimServer::IoThread>> SimServer::make_io_threads(int threads) {
  std::vector<std::unique_ptr<IoThread>> out;
  if (threads > 1) {
    for (int i = 0; i < threads; ++i) out.push_back(std::make_unique<IoThread>());
  }
  return out;
}

std::vector<asio::io_context*> SimServer::http_contexts() {
  std::vector<asio::io_context*> ios;
  for (auto& t : io_threads_) ios.push_back(&t->io);
  if (ios.empty()) ios.push_back(&io_);
  return ios;
}

namespace {

std::unique_ptr<TokenRelay> make_relay(Engine& engine, asio::io_context& engine_io,
                                       const std::vector<asio::io_context*>& ios) {
  std::vector<asio::any_io_executor> executors;
  std::vector<bool> shares_engine;
  for (asio::io_context* io : ios) {
    executors.emplace_back(io->get_executor());
    shares_engine.push_back(io == &engine_io);
  }
  return std::make_unique<TokenRelay>(engine, engine_io.get_executor(), std::move(executors),
                                      std::move(shares_engine));
}

}  // namespace

SimServer::SimServer(asio::io_context& io, SimArgs args)
    : SimServer(io, args, default_engine(io, args)) {}

SimServer::SimServer(asio::io_context& io, SimArgs args, std::unique_ptr<Engine> engine)
    : io_(io),
      args_(std::move(args)),
      served_{args_.model, args_.max_model_len, args_.gsm8k.has_value(), args_.tokenizer.get()},
      started_unix_s_(static_cast<int64_t>(std::time(nullptr))),
      engine_(std::move(engine)),
      io_threads_(make_io_threads(args_.threads)),
      relay_(make_relay(*engine_, io_, http_contexts())),
      http_(http_contexts(), router_.handler(), http_options(args_)) {
  for (std::size_t i = 0; i < std::max<std::size_t>(io_threads_.size(), 1); ++i) {
    metrics_.push_back(std::make_unique<MetricsShard>());
  }
  if (args_.gsm8k) gsm8k_ = std::make_unique<const Gsm8kAnswers>(*args_.gsm8k);
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
    return authorized(r) ? handle_models(r, w) : unauthorized(w);
  });
  router_.add("GET", "/metrics", [this](const http::HttpRequest& r, http::ResponseWriter& w) {
    return handle_metrics(r, w);
  });
  router_.add("POST", "/flush_cache", [this](const http::HttpRequest& r, http::ResponseWriter& w) {
    return handle_flush_cache(r, w);
  });
  router_.add("POST", "/tokenize", [this](const http::HttpRequest& r, http::ResponseWriter& w) {
    return handle_tokenize(r, w);
  });
  router_.add("POST", "/v1/completions",
              [this](const http::HttpRequest& r, http::ResponseWriter& w) {
                return authorized(r) ? handle_generate(Api::kCompletions, r, w) : unauthorized(w);
              });
  router_.add("POST", "/v1/chat/completions",
              [this](const http::HttpRequest& r, http::ResponseWriter& w) {
                return authorized(r) ? handle_generate(Api::kChat, r, w) : unauthorized(w);
              });
}

SimServer::~SimServer() {
  if (!io_threads_.empty()) {
    stop();
    for (auto& t : io_threads_) {
      if (t->thread.joinable()) t->thread.join();
    }
  }
  // Requests of a forced teardown (run() stopped early) no longer reach the engine.
  relay_->close();
}

Expected<uint16_t> SimServer::listen() {
  if (!args_.truth_log.empty() && truth_log_ == nullptr) {
    auto log = TruthLog::open(args_.truth_log);
    if (!log) return log.error();
    truth_log_ = std::move(*log);
  }
  auto port = http_.listen(args_.host, args_.port);
  if (!port) return port;
  args_.port = *port;
  if (args_.role == SimRole::kPrefill) {
    // The KV side channel, on the first HTTP thread (its pacing timers stay off the engine's).
    kv_sender_ = std::make_unique<KvSender>(*http_contexts().front(), args_.kv.channel);
    auto kv_port = kv_sender_->listen(args_.host, args_.kv.port);
    if (!kv_port) return kv_port.error();
    kv_port_ = *kv_port;
    sim_log().info("KV side channel on {}:{} ({} link)", args_.host, kv_port_,
                   args_.kv.channel.link.name);
  }
  if (!io_threads_.empty()) {
    // The I/O threads post to the engine's io_context: it keeps running until they are done.
    engine_guard_.emplace(io_.get_executor());
    io_threads_running_.store(static_cast<int>(io_threads_.size()));
    for (std::size_t i = 0; i < io_threads_.size(); ++i) {
      IoThread* thread = io_threads_[i].get();
      thread->thread = std::thread([this, thread, i] {
        // Named for top -H, perf and the throughput benchmark ("sim-io-0", ...).
        const std::string name = fmt::format("sim-io-{}", i);
        ::pthread_setname_np(::pthread_self(), name.c_str());
        thread->io.run();
        on_io_thread_exit();
      });
    }
  }
  sim_log().info("server_args={}", format_sim_args(args_));
  if (args_.timing_model == TimingModelKind::kRoofline && args_.engine) {
    for (const std::string& line : args_.engine->decisions) sim_log().info("{}", line);
  }
  return port;
}

void SimServer::on_io_thread_exit() {
  // The last I/O thread out lets the engine's run() return, after the releases they posted.
  if (io_threads_running_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    asio::post(io_, [this] { engine_guard_.reset(); });
  }
}

void SimServer::stop() {
  http_.stop();
  if (kv_sender_) kv_sender_->stop();
  for (auto& t : io_threads_) {
    // After the server closed this thread's connections: its run() returns once they unwound.
    asio::post(t->io, [thread = t.get()] { thread->guard.reset(); });
  }
}

std::vector<std::thread::native_handle_type> SimServer::io_thread_handles() {
  std::vector<std::thread::native_handle_type> out;
  for (auto& t : io_threads_) out.push_back(t->thread.native_handle());
  return out;
}

ServerMetrics SimServer::metrics() const {
  ServerMetrics total;
  for (const auto& shard : metrics_) {
    std::lock_guard lock(shard->mutex);
    total.add(shard->metrics);
  }
  return total;
}

SimServer::EngineSnapshot SimServer::engine_snapshot_now() const {
  EngineSnapshot snap;
  snap.stats = engine_->stats();
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
    snap.power = r;
  }
  return snap;
}

asio::awaitable<SimServer::EngineSnapshot> SimServer::engine_snapshot_coro() const {
  co_return engine_snapshot_now();
}

double transfer_kv_bytes_per_token(const SimArgs& args) {
  if (args.kv.bytes_per_token > 0) return args.kv.bytes_per_token;
  if (args.engine && args.engine->kv_bytes_per_token > 0) {
    return args.engine->kv_bytes_per_token * args.engine->tensor_parallel_size;
  }
  return 131072.0;  // Llama 3.1 8B in bf16: 32 layers x 8 KV heads x 128 x (K, V) x 2 bytes
}

double SimServer::kv_bytes(int prompt_tokens) const {
  return transfer_kv_bytes_per_token(args_) * prompt_tokens;
}

KvTransferCounters SimServer::kv_counters() const {
  if (kv_sender_) return kv_sender_->counters();
  std::lock_guard lock(kv_mutex_);
  return kv_pulls_;
}

// Keeps a finished prefill's KV for a decode instance; the response's kv_transfer_params (vLLM's
// NixlConnector fields), which the router hands to the decode instance.
std::string SimServer::hold_kv(int prompt_tokens) {
  const std::string id = kv_sender_->hold(kv_bytes(prompt_tokens));
  const int tp = args_.engine ? args_.engine->tensor_parallel_size : 1;
  return fmt::format(
      R"({{"do_remote_prefill":true,"do_remote_decode":false,"remote_engine_id":"sim-{}",)"
      R"("remote_block_ids":[],"remote_host":{},"remote_port":{},"remote_request_id":"{}",)"
      R"("tp_size":{}}})",
      args_.port, json_quote(args_.host), kv_port_, id, tp);
}

// A decode instance pulls a request's KV from its prefill instance, timed and counted; the pull's
// milliseconds, or nullopt when it failed and the request was answered with the reason.
asio::awaitable<std::optional<double>> SimServer::receive_kv(const GenerateRequest::KvTransfer& kv,
                                                             http::ResponseWriter& writer) {
  const KvPull pull = co_await pull_kv(kv.remote_host, kv.remote_port, kv.remote_request_id,
                                       args_.kv.channel.link, args_.kv.pull_timeout_s);
  {
    std::lock_guard lock(kv_mutex_);
    if (pull.ok) {
      kv_pulls_.xfer_s.observe(pull.seconds);
      kv_pulls_.bytes.observe(pull.bytes);
      kv_pulls_.wire_bytes += pull.wire_bytes;
    } else {
      ++kv_pulls_.failed;
    }
  }
  if (pull.ok) co_return pull.seconds * 1000.0;
  sim_log().warn("{}", pull.error);
  ApiError e{500, "InternalServerError", pull.error, std::nullopt};
  co_await writer.send(e.status, kJson, e.to_json());
  co_return std::nullopt;
}

std::string SimServer::next_request_id(Api api) {
  // 32 hex digits like vLLM's ids; unique per server run, reproducible for a seed (and, with
  // one I/O thread, for the order requests arrive in).
  uint64_t n = request_counter_.fetch_add(1, std::memory_order_relaxed) + 1;
  return fmt::format("{}{:016x}{:016x}", api == Api::kChat ? "chatcmpl-" : "cmpl-",
                     mix64(args_.seed ^ 0x5eedULL), mix64(n));
}

asio::awaitable<void> SimServer::handle_health(const http::HttpRequest&,
                                               http::ResponseWriter& writer) {
  // vLLM answers 200 with an empty body.
  co_await writer.send(200, "", "");
}

// vLLM's --api-key: the /v1 routes want "Authorization: Bearer KEY"; /health and /metrics stay
// open (vllm/entrypoints/openai/api_server.py, AuthenticationMiddleware).
bool SimServer::authorized(const http::HttpRequest& r) const {
  return args_.api_key.empty() || r.header("Authorization") == "Bearer " + args_.api_key;
}

asio::awaitable<void> SimServer::unauthorized(http::ResponseWriter& writer) {
  co_await writer.send(401, kJson, R"({"error":"Unauthorized"})");
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
  co_await writer.send(200, kJson, json_text(list));
}

asio::awaitable<void> SimServer::handle_tokenize(const http::HttpRequest& request,
                                                 http::ResponseWriter& writer) {
  ParseResult parsed = parse_tokenize_request(request.body, served_);
  if (const ApiError* error = std::get_if<ApiError>(&parsed)) {
    co_await writer.send(error->status, kJson, error->to_json());
    co_return;
  }
  const GenerateRequest& req = std::get<GenerateRequest>(parsed);
  // vLLM's TokenizeResponse: count, max_model_len, tokens (ids; empty without --tokenizer, as
  // serve-sim then counts words, which have no ids).
  json::object o;
  o["count"] = req.prompt_tokens;
  o["max_model_len"] = args_.max_model_len;
  json::array ids;
  for (int32_t id : req.prompt_ids) ids.emplace_back(id);
  o["tokens"] = std::move(ids);
  co_await writer.send(200, kJson, json_text(o));
}

asio::awaitable<bool> SimServer::reset_prefix_cache_coro() {
  co_return engine_->reset_prefix_cache();
}

// SGLang's POST /flush_cache: the prefix cache emptied when no request is waiting or running
// (200), else nothing done (400); clients drain and retry (InferenceX's trace_replay.sh).
asio::awaitable<void> SimServer::handle_flush_cache(const http::HttpRequest&,
                                                    http::ResponseWriter& writer) {
  bool flushed = false;
  if (io_threads_.empty()) {
    flushed = engine_->reset_prefix_cache();
  } else {
    flushed = co_await asio::co_spawn(io_, reset_prefix_cache_coro(), asio::use_awaitable);
  }
  if (flushed) sim_log().info("prefix cache flushed");
  co_await writer.send(
      flushed ? 200 : 400, "text/plain; charset=utf-8",
      flushed ? "Cache flushed.\nPlease check backend logs for more details. (When there are "
                "running or waiting requests, the operation will not be performed.)\n"
              : "Cache not flushed.\nPlease check backend logs for more details. (When there "
                "are running or waiting requests, the operation will not be performed.)\n");
}

asio::awaitable<void> SimServer::handle_metrics(const http::HttpRequest&,
                                                http::ResponseWriter& writer) {
  std::optional<CacheConfigInfo> cache;
  if (args_.timing_model == TimingModelKind::kRoofline && args_.engine) {
    const EngineConfig& e = *args_.engine;
    cache = CacheConfigInfo{e.scheduler.block_size, e.scheduler.num_blocks, e.kv_cache_dtype,
                            e.scheduler.prefix_caching, e.gpu_memory_utilization};
  }
  // The engine's state is read on its own thread. Not `c ? x : co_await y`: g++ 12 destroys the
  // result of a co_await in a conditional expression twice (a double free once the snapshot
  // holds a vector).
  EngineSnapshot snap;
  if (io_threads_.empty()) {
    snap = engine_snapshot_now();
  } else {
    snap = co_await asio::co_spawn(io_, engine_snapshot_coro(), asio::use_awaitable);
  }
  std::string body;
  if (args_.metrics_engine == "sglang") {
    SpecGaugeWindow window;
    {
      std::lock_guard lock(spec_window_mutex_);
      spec_window_.advance(snap.stats.spec);
      window = spec_window_;
    }
    body = render_sglang_metrics(args_.model, snap.stats, metrics(), window);
  } else {
    body = render_metrics(args_.model, snap.stats, metrics(), cache ? &*cache : nullptr);
  }
  if (args_.role != SimRole::kBoth) render_kv_transfer_metrics(body, args_.model, kv_counters());
  if (snap.power) {
    const EngineConfig& e = *args_.engine;
    std::vector<GpuPowerReading> gpus(static_cast<size_t>(e.tensor_parallel_size), *snap.power);
    for (int g = 0; g < e.tensor_parallel_size; ++g) gpus[static_cast<size_t>(g)].gpu = g;
    render_dcgm_metrics(body, gpus, e.hardware->product, hostname_);
  }
  co_await writer.send(200, kPrometheus, std::move(body));
}

namespace {

// What a request produces (its output plan, the stream's events), from the request and the
// server's settings.
void fill_plan(RequestPlan& plan, Api api, const GenerateRequest& req, const SimArgs& args,
               const Gsm8kAnswers* gsm8k) {
  plan.api = api;
  plan.stream = req.stream;
  plan.include_usage = req.include_usage;
  plan.continuous_usage = req.continuous_usage;
  plan.stream_interval = args.stream_interval;
  if (args.per_request_spec_metrics) plan.spec_metrics_k = args.spec.num_speculative_tokens;
  plan.timing_metrics = args.per_request_metrics;
  plan.output =
      plan_output(req.prompt_hash, args.seed, req.max_tokens, req.min_tokens, req.ignore_eos);
  plan.stream_seed = mix64(req.prompt_hash ^ mix64(args.seed + 1));
  if (gsm8k != nullptr) {
    if (auto text = gsm8k->answer(req.prompt_text)) {
      // One token a word (with its leading space), then EOS; cut at max_tokens ("length").
      plan.answer = split_answer_tokens(*text);
      const int words = static_cast<int>(plan.answer.size());
      plan.output = words + 1 <= req.max_tokens ? OutputPlan{words + 1, FinishReason::kStop}
                                                : OutputPlan{req.max_tokens, FinishReason::kLength};
    }
  }
}

}  // namespace

asio::awaitable<void> SimServer::handle_generate(Api api, const http::HttpRequest& request,
                                                 http::ResponseWriter& writer) {
  ParseResult parsed = api == Api::kChat ? parse_chat_request(request.body, served_)
                                         : parse_completion_request(request.body, served_);
  if (const ApiError* error = std::get_if<ApiError>(&parsed)) {
    co_await writer.send(error->status, kJson, error->to_json());
    co_return;
  }
  GenerateRequest& req = std::get<GenerateRequest>(parsed);
  // Disaggregated roles: a prefill instance asked to keep the KV answers one non-streamed
  // token; a decode instance told where the KV is pulls it first, and computes only the rest.
  const bool hold =
      args_.role == SimRole::kPrefill && req.kv_transfer && req.kv_transfer->do_remote_decode;
  if (hold && req.stream) {
    ApiError e{400, "BadRequestError",
               "kv_transfer_params.do_remote_decode needs stream false: a prefill instance "
               "answers with the KV's whereabouts, not a stream",
               "kv_transfer_params"};
    co_await writer.send(e.status, kJson, e.to_json());
    co_return;
  }
  int external_tokens = 0;
  RequestPlan plan;
  plan.timing.arrival_ns = request.received_ns;
  plan.timing.prefill = hold;
  if (args_.role == SimRole::kDecode && req.kv_transfer && req.kv_transfer->remote()) {
    const int64_t pull_start = mono_ns();
    const std::optional<double> kv_ms = co_await receive_kv(*req.kv_transfer, writer);
    if (!kv_ms) co_return;
    external_tokens = req.prompt_tokens - 1;
    plan.timing.decode = true;
    plan.timing.kv_transfer_ms = *kv_ms;
    plan.timing.kv_done_ns = mono_ns();
    plan.timing.upstream_ms = req.kv_transfer->upstream_ms;
    // The worker's own handling before the pull: reading and parsing the request.
    plan.timing.upstream_ms["decode_receive_ms"] =
        static_cast<double>(std::max<int64_t>(0, pull_start - request.received_ns)) / 1e6;
  }
  fill_plan(plan, api, req, args_, gsm8k_.get());
  const std::string id = next_request_id(api);
  const ResponseFormatter format(api, id, static_cast<int64_t>(std::time(nullptr)), args_.model);

  GenerationRequest submission;
  submission.prompt_tokens = req.prompt_tokens;
  submission.output_tokens = plan.output.tokens;
  submission.prompt_keys = std::move(req.prompt_keys);
  submission.output_seed = plan.stream_seed;
  submission.ends_with_eos = plan.output.finish == FinishReason::kStop;
  submission.external_tokens = external_tokens;

  // Destroyed in reverse order: the ticket first (no more news, the engine drops the request),
  // then the receiver, then the trace (which writes the truth record).
  RequestTrace trace(*metrics_.at(request.io_index), truth_log_.get(), request, api, id,
                     req.stream, req.prompt_tokens, plan.output.finish);
  auto executor = co_await asio::this_coro::executor;
  RequestReceiver receiver(executor, writer, trace, format, plan, req.prompt_tokens);
  // Submitted before the response header is written, so the request joins the next step.
  TokenRelay::Ticket ticket = relay_->submit(request.io_index, receiver, std::move(submission));

  if (!req.stream) {
    while (!receiver.finished()) co_await receiver.wait();
    std::string text;
    for (int i = 0; i < receiver.usage().completion_tokens; ++i) text += plan.token_text(i);
    trace.tokens_sent(receiver.usage().completion_tokens, mono_ns());
    const std::string kv_params = hold ? hold_kv(req.prompt_tokens) : std::string();
    if (co_await writer.send(200, kJson,
                             format.full_response(text, plan.output.finish, receiver.usage(),
                                                  receiver.metrics_json(), kv_params))) {
      trace.completed();
    }
    co_return;
  }

  // Like vLLM, the response header goes out at once; the events follow as the engine makes the
  // tokens, written by the receiver (about one socket write per engine step per stream).
  if (!co_await writer.begin_stream()) co_return;
  receiver.header_sent();
  while (true) {
    if (receiver.failed()) co_return;  // the client is gone: the trace records an abort
    if (writer.write_pending()) {
      // The socket's buffer was full: the rest goes out asynchronously, then what came meanwhile.
      if (!co_await writer.finish_write()) co_return;
      receiver.write_done();
      continue;
    }
    if (receiver.end_written()) {
      if (writer.complete()) trace.completed();
      co_return;
    }
    co_await receiver.wait();
  }
}

}  // namespace ib::sim
