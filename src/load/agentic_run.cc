#include "load/agentic_run.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cmath>
#include <cstdio>
#include <deque>
#include <memory>
#include <random>
#include <unordered_map>

#include "core/clock.h"
#include "core/interrupt.h"
#include "core/progress.h"
#include "core/strings.h"
#include "load/retry.h"
#include "load/stream_request.h"
#include "metrics/agentic.h"
#include "workload/agentic_prompts.h"

namespace ib::load::agentic {

namespace asio = boost::asio;
using workload::agentic::StreamPrompts;

std::string uuid4() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  const uint64_t a = rng(), b = rng();
  const uint64_t hi = (a & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;  // version 4
  const uint64_t lo = (b & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;  // variant 10
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", hi >> 32, (hi >> 16) & 0xffff,
                     hi & 0xffff, lo >> 48, lo & 0xffffffffffffULL);
}

namespace {

double cpu_seconds_now() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto tv = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return tv(ru.ru_utime) + tv(ru.ru_stime);
}

int64_t agentic_peak_rss_kib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

std::chrono::steady_clock::time_point agentic_to_steady(int64_t mono) {
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(mono));
}

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  append_json_escaped(out, s);
  out += '"';
}

class Driver {
 public:
  Driver(const AgenticRunConfig& config, const std::vector<ReplayTree>& pool,
         asio::ip::tcp::resolver::results_type addresses)
      : config_(config),
        pool_(pool),
        addresses_(std::move(addresses)),
        sched_(pointers(pool), config.replay) {
    for (const auto& tree : pool_)
      models_.push_back(workload::agentic::rewrite_models(tree, config_.models));
  }

  AgenticRunResult run() {
    result_.benchmark_id = config_.benchmark_id.empty() ? uuid4() : config_.benchmark_id;
    result_.origin_ns = mono_ns();
    result_.start_unix = unix_seconds();
    const double cpu0 = cpu_seconds_now();
    asio::co_spawn(io_, main_loop(), asio::detached);
    io_.run();
    result_.end_unix = unix_seconds();
    result_.wall_seconds = seconds_now();
    result_.cpu_seconds = cpu_seconds_now() - cpu0;
    result_.peak_rss_kib = agentic_peak_rss_kib();
    result_.aborted = sched_.aborted();
    result_.abort_reason = sched_.abort_reason();
    if (result_.aborted && !first_root_primer_error_.empty()) {
      result_.abort_reason += ": " + first_root_primer_error_;
    }
    result_.notes = sched_.notes();
    const auto prog = sched_.progress(seconds_now());
    result_.trees_done = prog.trees_done;
    result_.sessions_done = prog.sessions_done;
    result_.profiling_start_s =
        std::isfinite(sched_.profiling_start()) ? sched_.profiling_start() : 0;
    result_.profiling_end_s = seconds_now();
    result_.connections_opened = static_cast<int64_t>(conns_.size());
    progress_.done();
    result_.records.assign(std::make_move_iterator(records_.begin()),
                           std::make_move_iterator(records_.end()));
    result_.requests.assign(std::make_move_iterator(requests_.begin()),
                            std::make_move_iterator(requests_.end()));
    return std::move(result_);
  }

 private:
  struct Conn {
    Conn(asio::any_io_executor ex, const http::Endpoint& ep,
         const asio::ip::tcp::resolver::results_type& addrs, http::ClientTimeouts t)
        : http(ex, ep, addrs, t) {}
    http::HttpConnection http;
    StreamingResponse response;
  };
  struct StreamKey {
    int64_t instance;
    int stream;
    bool operator==(const StreamKey&) const = default;
  };
  struct KeyHash {
    size_t operator()(const StreamKey& k) const {
      return std::hash<int64_t>()(k.instance * 1000003 + k.stream);
    }
  };
  struct Session {
    std::unique_ptr<StreamPrompts> prompts;
    std::string correlation_id;
    std::string headers;  // the router's session headers (session_headers)
  };

  static std::vector<const ReplayTree*> pointers(const std::vector<ReplayTree>& pool) {
    std::vector<const ReplayTree*> out;
    for (const auto& t : pool) out.push_back(&t);
    return out;
  }

  double seconds_now() const { return static_cast<double>(mono_ns() - result_.origin_ns) / 1e9; }

  const std::string& marker_of(int64_t instance) {
    auto it = markers_.find(instance);
    if (it != markers_.end()) return it->second;
    const TreeInstance& inst = sched_.instance(instance);
    const ReplayTree& tree = sched_.tree_of(instance);
    return markers_[instance] = workload::agentic::cache_bust_marker(
               result_.benchmark_id, inst.recycle_pass, inst.lane, tree.trace_id);
  }

  Session& session(const Dispatch& d) {
    StreamKey key{d.instance, d.stream};
    auto it = sessions_.find(key);
    if (it != sessions_.end()) return it->second;
    Session s;
    const std::string& marker = marker_of(d.instance);
    int64_t marker_tokens = -1;
    if (config_.tokenizer) {
      // The marker's tokens where it stands: in front of a block's first word.
      const auto& tok = config_.tokenizer->tokenizer();
      const std::string word(config_.corpus ? config_.corpus->token(0) : "the");
      marker_tokens =
          static_cast<int64_t>(tok.count(marker + word)) - static_cast<int64_t>(tok.count(word));
    }
    s.prompts = std::make_unique<StreamPrompts>(
        sched_.tree_of(d.instance), d.stream, config_.seed, marker,
        config_.corpus ? *config_.corpus : workload::agentic::Corpus::words(), marker_tokens);
    s.correlation_id = correlation_of(key);
    s.headers = session_headers(d, s.correlation_id);
    return sessions_.emplace(key, std::move(s)).first->second;
  }

  // A live session's id (X-Correlation-ID): a fresh UUID4 for each (AgentX), kept after the
  // session ends so that a subagent spawned later still names its parent.
  const std::string& correlation_of(const StreamKey& key) {
    auto it = correlation_ids_.find(key);
    if (it != correlation_ids_.end()) return it->second;
    return correlation_ids_.emplace(key, uuid4()).first->second;
  }

  // What a session tells the router of itself in headers: Dynamo's session id (and a
  // subagent's parent's), or SGLang Model Gateway's routing key; nothing else.
  std::string session_headers(const Dispatch& d, const std::string& id) {
    using workload::SessionRouting;
    switch (config_.session_routing) {
      case SessionRouting::kDynamoHeader: {
        std::string h = "X-Dynamo-Session-ID: " + id + "\r\n";
        const ReplayTree& tree = sched_.tree_of(d.instance);
        const auto& stream = tree.streams[static_cast<size_t>(d.stream)];
        if (stream.branch >= 0) {
          const int parent = tree.branches[static_cast<size_t>(stream.branch)].spawn.stream;
          h += "X-Dynamo-Parent-Session-ID: " + correlation_of(StreamKey{d.instance, parent}) +
               "\r\n";
        }
        return h;
      }
      case SessionRouting::kSmgRoutingKey:
        return "X-SMG-Routing-Key: " + id + "\r\n";
      default:
        return {};
    }
  }

  // The request body: model, the stream's whole history, streaming with usage, the recorded
  // output length (1 for warmup) with ignore_eos so it is reached.
  std::string build_body(const Dispatch& d, ReplayRequest& info) {
    const int64_t t0 = mono_ns();
    Session& s = session(d);
    s.prompts->advance_to(d.turn);
    const ReplayTree& tree = sched_.tree_of(d.instance);
    const auto& stream = tree.streams[static_cast<size_t>(d.stream)];
    const auto& turn = stream.turns[static_cast<size_t>(d.turn)];
    const auto& models = models_[static_cast<size_t>(sched_.instance(d.instance).tree)];
    std::string body;
    body.reserve(s.prompts->messages_json().size() + 256);
    body += "{\"model\":";
    append_json_string(body, models[static_cast<size_t>(turn.model)]);
    body += ",\"messages\":";
    body += s.prompts->messages_json();
    body += ",\"stream\":true,\"stream_options\":{\"include_usage\":true},";
    body += config_.legacy_max_tokens ? "\"max_tokens\":" : "\"max_completion_tokens\":";
    body += std::to_string(d.max_tokens);
    body += ",\"ignore_eos\":true";
    const bool last_turn =
        d.phase != ReplayPhase::kPrimer && d.turn + 1 >= static_cast<int>(stream.turns.size());
    if (config_.session_routing == workload::SessionRouting::kDynamoNvext) {
      // Bind on every turn (idempotent, refreshes the router's TTL), close on the last.
      body += ",\"nvext\":{\"session_control\":{\"session_id\":";
      append_json_string(body, s.correlation_id);
      body += last_turn ? ",\"action\":\"close\"}}"
                        : fmt::format(",\"action\":\"bind\",\"timeout\":{}}}}}",
                                      config_.session_timeout_s);
    }
    body += '}';
    info.trace_id = tree.trace_id;
    info.session_id = stream.session_id;
    info.correlation_id = s.correlation_id;
    info.headers = s.headers;
    info.messages = s.prompts->message_count();
    info.recorded_in = turn.in;
    info.recorded_out = turn.out;
    info.content_tokens = s.prompts->content_tokens();
    info.theoretical_hit_blocks = turn.theoretical_hit_blocks;
    info.theoretical_total_blocks = static_cast<int64_t>(turn.hash_ids.size());
    info.body_bytes = static_cast<int64_t>(body.size());
    result_.body_bytes_built += info.body_bytes;
    result_.body_build_seconds += static_cast<double>(mono_ns() - t0) / 1e9;
    // The session's last turn: its history is not needed any more.
    if (last_turn) {
      sessions_.erase(StreamKey{d.instance, d.stream});
    }
    return body;
  }

  Conn& acquire_conn() {
    if (!idle_.empty()) {
      Conn* c = idle_.back();
      idle_.pop_back();
      return *c;
    }
    conns_.push_back(
        std::make_unique<Conn>(io_.get_executor(), config_.endpoint, addresses_, config_.timeouts));
    return *conns_.back();
  }

  asio::awaitable<void> one_request(Dispatch d) {
    const size_t i = static_cast<size_t>(d.id);
    // Deques: growing them keeps the references other requests in flight hold.
    if (records_.size() <= i) {
      records_.resize(i + 1);
      requests_.resize(i + 1);
    }
    ReplayRequest& info = requests_[i];
    info.dispatch = d;
    std::string body = build_body(d, info);
    metrics::RequestRecord& rec = records_[i];
    rec.index = d.id;
    rec.input_len = static_cast<int>(info.recorded_in);
    rec.output_len = static_cast<int>(d.max_tokens);
    rec.sched_ns = result_.origin_ns + static_cast<int64_t>(d.at * 1e9);
    rec.content_ns.reserve(static_cast<size_t>(std::min<int64_t>(d.max_tokens, 1 << 16)) + 2);
    Conn& conn = acquire_conn();
    in_flight_.push_back(&conn);
    ++live_;
    result_.peak_in_flight = std::max(result_.peak_in_flight, live_);
    const std::string request_id = fmt::format("{}-{}", result_.benchmark_id.substr(0, 8), d.id);
    RetriedRequest send;
    send.path = config_.path;
    send.body = body;
    send.request_id = request_id;
    send.correlation_id = info.correlation_id;
    send.extra_headers = info.headers;
    send.max_retries = 1;
    send.cut_reason = [this]() -> std::string_view {
      if (!cutting_) return "";
      return interrupted_ ? "run interrupted" : "cut at the end of the grace period";
    };
    info.cancelled = co_await send_with_retry(conn.http, conn.response, rec, send);
    std::erase(in_flight_, &conn);
    --live_;
    if (conn.http.is_open()) idle_.push_back(&conn);
    if (d.phase == ReplayPhase::kPrimer && d.stream == 0 && !rec.ok() &&
        first_root_primer_error_.empty()) {
      first_root_primer_error_ =
          rec.error.empty() ? std::string(metrics::failure_cause_name(rec.failure)) : rec.error;
    }
    Outcome o = Outcome::kOk;
    if (info.cancelled) {
      o = Outcome::kCancelled;
    } else if (!rec.ok()) {
      o = metrics::is_context_overflow(rec.error) ? Outcome::kContextOverflow : Outcome::kError;
    }
    sched_.complete(d.id, static_cast<double>(rec.done_ns - result_.origin_ns) / 1e9, o);
    wake_.cancel();
  }

  void cut(bool interrupted) {
    if (cutting_) return;
    cutting_ = true;
    interrupted_ = interrupted;
    for (Conn* c : in_flight_) c->http.close();
  }

  void show_progress(double now) {
    if (progress_.mode() == ProgressMode::kOff || now < next_progress_) return;
    next_progress_ = now + 1.0;
    const auto p = sched_.progress(now);
    if (p.warmup) {
      progress_.show(fmt::format("agentic: warmup {} requests sent, {} in flight",
                                 p.warmup_dispatched, p.in_flight));
    } else {
      progress_.show(fmt::format(
          "agentic: lanes busy {}/{} | sessions done {} | requests {}/{} | {:.0f}/{:.0f} s",
          p.lanes_busy, config_.replay.concurrency, p.sessions_done, p.completed, p.dispatched,
          p.elapsed_s, p.duration_s));
    }
  }

  asio::awaitable<void> main_loop() {
    sched_.start(0);
    while (!sched_.finished() || live_ > 0) {
      const double now = seconds_now();
      if (!cutting_) {
        if (interrupt_requested()) {
          result_.interrupted = true;
          cut(true);
        } else if (config_.deadline_ns > 0 && mono_ns() >= config_.deadline_ns) {
          result_.interrupted = result_.deadline_hit = true;
          cut(true);
        } else if (now >= sched_.hard_stop()) {
          cut(false);
        }
      }
      if (!cutting_) sched_.update(now);
      if (!profiling_seen_ && std::isfinite(sched_.profiling_start())) {
        profiling_seen_ = true;
        if (config_.on_profiling_start) config_.on_profiling_start();
      }
      if (!cutting_ && !sched_.finished()) {
        for (const Dispatch& d : sched_.poll(now))
          asio::co_spawn(io_, one_request(d), asio::detached);
      }
      if (sched_.finished() && live_ == 0) break;
      if (cutting_ && live_ == 0) break;
      show_progress(now);
      double wake = std::min(sched_.next_wake(), now + 0.1);  // interrupts, progress
      if (!cutting_) wake = std::min(wake, sched_.hard_stop());
      wake_.expires_at(
          agentic_to_steady(result_.origin_ns + static_cast<int64_t>(std::max(wake, now) * 1e9)));
      boost::system::error_code ec;
      co_await wake_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    result_.trees = static_cast<int64_t>(markers_.size());
  }

  const AgenticRunConfig& config_;
  const std::vector<ReplayTree>& pool_;
  asio::ip::tcp::resolver::results_type addresses_;
  ReplayScheduler sched_;
  std::vector<std::vector<std::string>> models_;  // per pool tree: recorded model -> served
  asio::io_context io_{1};
  asio::steady_timer wake_{io_};
  std::vector<std::unique_ptr<Conn>> conns_;
  std::vector<Conn*> idle_, in_flight_;
  std::unordered_map<StreamKey, Session, KeyHash> sessions_;
  std::unordered_map<StreamKey, std::string, KeyHash> correlation_ids_;  // correlation_of
  std::unordered_map<int64_t, std::string> markers_;
  AgenticRunResult result_;
  std::deque<metrics::RequestRecord> records_;
  std::deque<ReplayRequest> requests_;
  int64_t live_ = 0;
  bool cutting_ = false, interrupted_ = false;
  bool profiling_seen_ = false;
  std::string first_root_primer_error_;
  ProgressLine progress_{ProgressMode::kOff};
  double next_progress_ = 0;

 public:
  void set_progress(ProgressMode mode) { progress_.reset(mode); }
};

}  // namespace

Expected<AgenticRunResult> run_agentic(const AgenticRunConfig& config,
                                       const std::vector<ReplayTree>& pool) {
  if (pool.empty()) return Error{"no traces to replay"};
  if (config.models.empty()) return Error{"no model to send the replay to"};
  for (const auto& tree : pool) {
    if (tree.streams.empty() || tree.streams[0].turns.empty()) {
      return Error{fmt::format("trace {}: the root conversation has no request", tree.trace_id)};
    }
  }
  if (config.replay.concurrency < 1) {
    return Error{
        fmt::format("--concurrency must be at least 1 (got {})", config.replay.concurrency)};
  }
  auto addresses = http::resolve(config.endpoint);
  if (!addresses) return addresses.error();
  Driver driver(config, pool, *addresses);
  driver.set_progress(progress_mode(config.show_progress));
  return driver.run();
}

}  // namespace ib::load::agentic
