#include "sim/router.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <list>

#include "core/clock.h"
#include "http/awaitable.h"
#include "sim/log.h"

// GCC 12 false positive, as in sim_server.cc: after inlining Asio's recycling allocator for
// coroutine frames it reports mismatched new/delete.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace ib::sim {

namespace asio = boost::asio;
namespace json = boost::json;
namespace beast_http = boost::beast::http;

namespace {

constexpr std::string_view kJsonType = "application/json";
constexpr size_t kPrefixBlockChars = 64;     // the prefix policy hashes the prompt in such blocks
constexpr size_t kPrefixBlocksKept = 65536;  // per worker, least recently seen dropped first

std::string error_json(int status, std::string_view type, std::string_view message) {
  json::object e{{"message", message}, {"type", type}, {"param", nullptr}, {"code", status}};
  return json::serialize(json::object{{"error", std::move(e)}});
}

// GET /v1/models: the one served model.
std::string models_json(const std::string& model) {
  json::object card{{"id", model},
                    {"object", "model"},
                    {"owned_by", "inferbench-sim"},
                    {"root", model},
                    {"parent", nullptr}};
  return json::serialize(json::object{{"object", "list"}, {"data", json::array{card}}});
}

}  // namespace

Expected<RoutingPolicy> parse_routing_policy(std::string_view name) {
  if (name == "round_robin") return RoutingPolicy::kRoundRobin;
  if (name == "prefix") return RoutingPolicy::kPrefix;
  return Error{fmt::format("unknown routing policy '{}': round_robin or prefix", name)};
}

std::string_view to_string(RoutingPolicy policy) {
  return policy == RoutingPolicy::kPrefix ? "prefix" : "round_robin";
}

// One worker: where it is, what is in flight on it, and (prefill, prefix policy) the prompt
// blocks it has seen, as a bounded LRU set of hashes.
struct SimRouter::Worker {
  std::string role;
  http::Endpoint endpoint;
  asio::ip::tcp::resolver::results_type addresses;
  int64_t in_flight = 0;
  int64_t requests = 0;
  int64_t failed = 0;
  std::vector<std::unique_ptr<http::HttpConnection>> idle;  // kept-alive connections to it
  std::list<uint64_t> lru;                                  // most recent first
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> seen;

  void remember(const std::vector<uint64_t>& blocks) {
    for (uint64_t h : blocks) {
      if (auto it = seen.find(h); it != seen.end()) {
        lru.splice(lru.begin(), lru, it->second);
        continue;
      }
      lru.push_front(h);
      seen.emplace(h, lru.begin());
      if (lru.size() > kPrefixBlocksKept) {
        seen.erase(lru.back());
        lru.pop_back();
      }
    }
  }
  int64_t matched(const std::vector<uint64_t>& blocks) const {
    int64_t n = 0;
    for (uint64_t h : blocks) {
      if (!seen.contains(h)) break;
      ++n;
    }
    return n;
  }
};

namespace {

// Cumulative hashes of the prompt's 64-character blocks: block i's hash covers blocks 0..i, so
// equal hashes mean an equal prefix.
std::vector<uint64_t> prefix_blocks(const std::string& key) {
  std::vector<uint64_t> out;
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i + kPrefixBlockChars <= key.size(); i += kPrefixBlockChars) {
    h ^= std::hash<std::string_view>{}(std::string_view(key).substr(i, kPrefixBlockChars));
    h *= 1099511628211ULL;
    out.push_back(h);
  }
  return out;
}

// One upstream exchange whose bytes the handler relays: the sink only stores and wakes; every
// write to the client is the handler's. Shared with the coroutine that runs the exchange, so a
// handler cancelled by its client leaves nothing dangling (it closes the connection instead).
//
// Connections are kept alive and reused per worker, as a real router pools them: an exchange that
// completed gives its connection back (release()); a reused one that the worker closed meanwhile
// is replaced and the request sent again, once, before any response byte.
struct Upstream final : http::ResponseSink {
  explicit Upstream(asio::any_io_executor ex, SimRouter::Worker& w, double timeout_s)
      : wake(ex),
        worker(w),
        timeouts{std::chrono::milliseconds(10'000),
                 std::chrono::milliseconds(std::llround(timeout_s * 1000)),
                 std::chrono::milliseconds(std::llround(timeout_s * 1000)),
                 std::chrono::milliseconds(0)} {
    if (!w.idle.empty()) {
      conn = std::move(w.idle.back());
      w.idle.pop_back();
    } else {
      conn = fresh();
    }
  }
  std::unique_ptr<http::HttpConnection> fresh() {
    return std::make_unique<http::HttpConnection>(wake.get_executor(), worker.endpoint,
                                                  worker.addresses, timeouts);
  }
  // Back to the worker's pool, when the exchange completed on a connection still open.
  void release() {
    if (done && outcome.complete && conn && conn->is_open() && worker.idle.size() < 1024) {
      worker.idle.push_back(std::move(conn));
    }
  }
  void on_headers(int s, int64_t) override {
    status = s;
    notify();
  }
  void on_body(std::string_view bytes, int64_t) override {
    buffer.append(bytes);
    notify();
  }
  void notify() {
    woken = true;
    wake.cancel();
  }
  // Waits for news (headers, bytes, the end); throws when the handler was cancelled.
  asio::awaitable<void> wait() {
    if (woken || done) {
      woken = false;
      co_return;
    }
    wake.expires_at(asio::steady_timer::time_point::max());
    auto [ec] = co_await wake.async_wait(use_tuple);
    if (!woken && !done)
      throw boost::system::system_error(ec ? ec : asio::error::operation_aborted);
    woken = false;
  }
  static void start(std::shared_ptr<Upstream> self, std::string path, std::string body) {
    auto ex = self->wake.get_executor();
    asio::co_spawn(
        ex,
        [self = std::move(self), path = std::move(path),
         body = std::move(body)]() -> asio::awaitable<void> {
          const bool reused = self->conn->reused();
          self->outcome = co_await self->conn->request(beast_http::verb::post, path, body, *self);
          if (reused && !self->outcome.response_started && !self->outcome.timed_out()) {
            self->conn = self->fresh();  // the worker closed the idle connection: once more
            self->outcome = co_await self->conn->request(beast_http::verb::post, path, body, *self);
          }
          self->done = true;
          self->notify();
        },
        asio::detached);
  }
  std::string failure(const SimRouter::Worker& w) const {
    if (outcome.timed_out()) {
      return fmt::format("{} worker {} was silent for longer than the router's timeout", w.role,
                         w.endpoint.url());
    }
    return fmt::format("{} worker {} failed: {}", w.role, w.endpoint.url(),
                       outcome.ec ? outcome.ec.message() : "incomplete response");
  }

  asio::steady_timer wake;
  SimRouter::Worker& worker;
  http::ClientTimeouts timeouts;
  std::unique_ptr<http::HttpConnection> conn;
  std::string buffer;
  int status = 0;
  bool woken = false, done = false;
  http::HttpOutcome outcome;
};

// Closes the upstream connection when the handler leaves early (its client went away): the
// worker sees its request aborted, as behind a real router.
struct CloseUnlessDone {
  std::shared_ptr<Upstream> up;
  ~CloseUnlessDone() {
    if (up && !up->done && up->conn) up->conn->close();
    if (up) up->release();
  }
};

// A request body as the prefill worker gets it: one token, not streamed, its KV kept.
std::string prefill_body(json::object body) {
  body["stream"] = false;
  body.erase("stream_options");
  body.erase("max_completion_tokens");
  body.erase("min_tokens");
  body["max_tokens"] = 1;
  body["kv_transfer_params"] = json::object{{"do_remote_decode", true}};
  return json::serialize(body);
}

}  // namespace

SimRouter::SimRouter(asio::io_context& io, RouterArgs args)
    : io_(io), args_(std::move(args)), http_(io, router_.handler(), [&] {
        http::HttpServerOptions o;
        o.keep_alive_timeout = std::chrono::milliseconds(
            static_cast<int64_t>(std::llround(args_.keep_alive_timeout_s * 1000.0)));
        o.server_header = "inferbench-sim-router";
        return o;
      }()) {}

SimRouter::~SimRouter() = default;

Expected<std::unique_ptr<SimRouter>> SimRouter::create(asio::io_context& io, RouterArgs args) {
  if (args.prefill_urls.empty() || args.decode_urls.empty()) {
    return Error{"a router needs at least one --prefill URL and one --decode URL"};
  }
  std::unique_ptr<SimRouter> r(new SimRouter(io, std::move(args)));
  for (const auto& [urls, role, out] : {std::tuple{&r->args_.prefill_urls, "prefill", &r->prefill_},
                                        std::tuple{&r->args_.decode_urls, "decode", &r->decode_}}) {
    for (const std::string& url : *urls) {
      auto endpoint = http::parse_endpoint(url);
      if (!endpoint) return Error{fmt::format("--{} {}: {}", role, url, endpoint.error().message)};
      auto addresses = http::resolve(*endpoint);
      if (!addresses) {
        return Error{fmt::format("--{} {}: {}", role, url, addresses.error().message)};
      }
      auto w = std::make_unique<Worker>();
      w->role = role;
      w->endpoint = std::move(*endpoint);
      w->endpoint.bearer = r->args_.api_key;
      w->addresses = std::move(*addresses);
      out->push_back(std::move(w));
    }
  }
  SimRouter* self = r.get();
  auto authorized = [self](const http::HttpRequest& q) {
    return self->args_.api_key.empty() ||
           q.header("Authorization") == "Bearer " + self->args_.api_key;
  };
  r->router_.add("GET", "/health",
                 [](const http::HttpRequest&, http::ResponseWriter& w) -> asio::awaitable<void> {
                   co_await w.send(200, "", "");
                 });
  r->router_.add(
      "GET", "/v1/models",
      [self](const http::HttpRequest&, http::ResponseWriter& w) -> asio::awaitable<void> {
        co_await w.send(200, kJsonType, models_json(self->args_.model));
      });
  r->router_.add("GET", "/metrics", [self](const http::HttpRequest&, http::ResponseWriter& w) {
    return self->handle_metrics(w);
  });
  for (std::string_view path :
       {std::string_view("/v1/completions"), std::string_view("/v1/chat/completions")}) {
    r->router_.add("POST", std::string(path),
                   [self, authorized, path](const http::HttpRequest& q,
                                            http::ResponseWriter& w) -> asio::awaitable<void> {
                     if (!authorized(q)) {
                       co_await w.send(401, kJsonType, R"({"error":"Unauthorized"})");
                       co_return;
                     }
                     co_await self->handle_generate(path, q, w);
                   });
  }
  return r;
}

Expected<uint16_t> SimRouter::listen() {
  auto port = http_.listen(args_.host, args_.port);
  if (port) args_.port = *port;
  return port;
}

void SimRouter::stop() {
  http_.stop();
}

SimRouter::Worker& SimRouter::pick_prefill(const std::string& prompt_key) {
  const size_t n = prefill_.size();
  Worker* best = prefill_[next_prefill_++ % n].get();
  if (args_.policy != RoutingPolicy::kPrefix) return *best;
  const std::vector<uint64_t> blocks = prefix_blocks(prompt_key);
  int64_t best_match = best->matched(blocks);
  for (const auto& w : prefill_) {
    const int64_t m = w->matched(blocks);
    if (m > best_match || (m == best_match && w->in_flight < best->in_flight)) {
      best = w.get();
      best_match = m;
    }
  }
  prefix_queried_blocks_ += static_cast<int64_t>(blocks.size());
  prefix_hit_blocks_ += best_match;
  best->remember(blocks);
  return *best;
}

// Sessions that never come back (cut at the end of a replay) are forgotten after their TTL, as a
// router's reaper does: swept whenever the table has doubled since the last sweep.
void SimRouter::purge_expired_sessions() {
  if (sessions_.size() < next_purge_size_) return;
  const int64_t now = mono_ns();
  session_expiries_ += static_cast<int64_t>(
      std::erase_if(sessions_, [now](const auto& kv) { return kv.second.expires_ns < now; }));
  next_purge_size_ = std::max<size_t>(1024, 2 * sessions_.size());
}

SimRouter::Binding* SimRouter::session_binding(const std::string& id) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return nullptr;
  if (it->second.expires_ns < mono_ns()) {
    ++session_expiries_;
    sessions_.erase(it);
    return nullptr;
  }
  return &it->second;
}

namespace {

// The session a request names, and what the body asks of it ("bind", "open", "close", or ""):
// Dynamo's header first, then SGLang Model Gateway's routing key, then the body's
// nvext.session_control (AIPerf's conversation-aware routing).
struct NamedSession {
  std::string id, action;
};
std::optional<NamedSession> named_session(const http::HttpRequest& request,
                                          const json::object& body) {
  NamedSession s;
  if (const auto* nv = body.if_contains("nvext"); nv && nv->is_object()) {
    if (const auto* sc = nv->as_object().if_contains("session_control"); sc && sc->is_object()) {
      const auto& o = sc->as_object();
      if (const auto* id = o.if_contains("session_id"); id && id->is_string()) {
        s.id = std::string(id->as_string());
      }
      if (const auto* a = o.if_contains("action"); a && a->is_string()) {
        s.action = std::string(a->as_string());
      }
    }
  }
  for (std::string_view h : {"X-Dynamo-Session-ID", "X-SMG-Routing-Key"}) {
    const std::string_view v = request.header(h);
    if (!v.empty()) {
      s.id = std::string(v);
      break;
    }
  }
  if (s.id.empty()) return std::nullopt;
  return s;
}

}  // namespace

std::pair<SimRouter::Worker*, SimRouter::Worker*> SimRouter::pick_workers(
    const http::HttpRequest& request, const json::object& body, const std::string& prompt_key) {
  // Session affinity: a named session's requests go where its first one went.
  std::optional<NamedSession> session;
  Binding* bound = nullptr;
  if (args_.session_affinity_ttl_s > 0) {
    session = named_session(request, body);
    if (!session) ++unnamed_requests_;
    if (session) bound = session_binding(session->id);
    if (bound != nullptr) ++session_hits_;
  }
  Worker* prefill = bound != nullptr ? bound->prefill : &pick_prefill(prompt_key);
  Worker* decode = bound != nullptr ? bound->decode : &pick_decode();
  if (session) {
    if (session->action == "close") {
      if (sessions_.erase(session->id) > 0) ++session_closes_;
    } else {
      if (bound == nullptr) {
        ++session_binds_;
        purge_expired_sessions();
      }
      Binding& b = sessions_[session->id];
      b.prefill = prefill;
      b.decode = decode;
      b.expires_ns =
          mono_ns() + static_cast<int64_t>(args_.session_affinity_ttl_s * 1e9);  // refreshed
    }
  }
  return {prefill, decode};
}

SimRouter::Worker& SimRouter::pick_decode() {
  Worker* best = decode_.front().get();
  for (const auto& w : decode_) {
    if (w->in_flight < best->in_flight) best = w.get();
  }
  return *best;
}

// Counts a request in flight on a worker for as long as it lives (a cancelled handler too).
struct SimRouter::InFlight {
  explicit InFlight(Worker& worker) : w(worker) {
    ++w.in_flight;
    ++w.requests;
  }
  ~InFlight() { --w.in_flight; }
  Worker& w;
};

asio::awaitable<std::optional<json::object>> SimRouter::run_prefill(std::string_view path,
                                                                    const json::object& body,
                                                                    Worker& prefill,
                                                                    http::ResponseWriter& writer) {
  auto executor = co_await asio::this_coro::executor;
  auto pre = std::make_shared<Upstream>(executor, prefill, args_.timeout_s);
  CloseUnlessDone pre_guard{pre};
  {
    InFlight in_flight{prefill};
    Upstream::start(pre, std::string(path), prefill_body(body));
    while (!pre->done) co_await pre->wait();
  }
  if (pre->status != 200 || !pre->outcome.complete) {
    ++prefill.failed;
    if (pre->status != 0 && pre->outcome.complete) {
      // The worker's own answer (a bad request, a context overflow) is the client's answer.
      co_await writer.send(pre->status, kJsonType, pre->buffer);
    } else {
      sim_log().warn("{}", pre->failure(prefill));
      co_await writer.send(502, kJsonType, error_json(502, "BadGateway", pre->failure(prefill)));
    }
    co_return std::nullopt;
  }
  boost::system::error_code ec;
  json::value answer = json::parse(pre->buffer, ec);
  const json::value* params =
      !ec && answer.is_object() ? answer.as_object().if_contains("kv_transfer_params") : nullptr;
  if (params == nullptr || !params->is_object()) {
    ++prefill.failed;
    co_await writer.send(
        502, kJsonType,
        error_json(502, "BadGateway",
                   fmt::format("prefill worker {} answered without kv_transfer_params (is it "
                               "serve-sim --role prefill?)",
                               prefill.endpoint.url())));
    co_return std::nullopt;
  }
  co_return std::move(answer.as_object());
}

asio::awaitable<void> SimRouter::handle_generate(std::string_view path,
                                                 const http::HttpRequest& request,
                                                 http::ResponseWriter& writer) {
  boost::system::error_code ec;
  json::value parsed = json::parse(request.body, ec);
  if (ec || !parsed.is_object()) {
    co_await writer.send(
        400, kJsonType,
        error_json(400, "BadRequestError", "the request body is not a JSON object"));
    co_return;
  }
  json::object body = std::move(parsed.as_object());
  const json::value* stream_v = body.if_contains("stream");
  const bool stream = stream_v && stream_v->is_bool() && stream_v->as_bool();
  const json::value* prompt = body.if_contains(path == "/v1/completions" ? "prompt" : "messages");
  const auto [prefill_ptr, decode_ptr] =
      pick_workers(request, body, prompt ? json::serialize(*prompt) : std::string());
  Worker& prefill = *prefill_ptr;
  Worker& decode = *decode_ptr;
  auto executor = co_await asio::this_coro::executor;

  // 1. The prefill worker: one token, its KV kept; its answer says where.
  const int64_t prefill_sent = mono_ns();
  std::optional<json::object> answer = co_await run_prefill(path, body, prefill, writer);
  if (!answer) co_return;  // answered: the prefill failed
  const int64_t prefill_done = mono_ns();
  json::object params = answer->at("kv_transfer_params").as_object();
  // Where the time to first token went before the decode worker (its own parts follow in its
  // response's metrics): the router's own time, the prefill's queue and compute as the worker
  // says, and the rest of the round trip (HTTP to and from the prefill worker).
  const auto* pm = answer->if_contains("metrics");
  auto prefill_ms = [&](const char* key) {
    const auto* v = pm && pm->is_object() ? pm->as_object().if_contains(key) : nullptr;
    return v && v->is_number() ? v->to_number<double>() : 0.0;
  };
  const double round_trip_ms = static_cast<double>(prefill_done - prefill_sent) / 1e6;
  // vLLM's fields: the queue, then scheduling to the first token (the prefill itself).
  const double queue = prefill_ms("queue_time_ms"), compute = prefill_ms("time_to_first_token_ms");
  json::object upstream{{"prefill_queue_ms", queue},
                        {"prefill_ms", compute},
                        {"prefill_transport_ms", std::max(0.0, round_trip_ms - queue - compute)}};

  // 2. The decode worker: pulls the KV, decodes; its response is relayed as it comes.
  auto dec = std::make_shared<Upstream>(executor, decode, args_.timeout_s);
  CloseUnlessDone dec_guard{dec};
  InFlight in_flight{decode};
  const int64_t decode_sent = mono_ns();
  upstream["router_ms"] =
      static_cast<double>((prefill_sent - request.received_ns) + (decode_sent - prefill_done)) /
      1e6;
  params["inferbench_ttft"] = std::move(upstream);
  body["kv_transfer_params"] = std::move(params);
  Upstream::start(dec, std::string(path), json::serialize(body));
  while (dec->status == 0 && !dec->done) co_await dec->wait();
  if (dec->status != 200 || !stream) {
    while (!dec->done) co_await dec->wait();
    if (dec->status == 0 || !dec->outcome.complete) {
      ++decode.failed;
      sim_log().warn("{}", dec->failure(decode));
      co_await writer.send(502, kJsonType, error_json(502, "BadGateway", dec->failure(decode)));
      co_return;
    }
    if (dec->status != 200) ++decode.failed;
    co_await writer.send(dec->status, kJsonType, dec->buffer);
    co_return;
  }
  if (!co_await writer.begin_stream()) co_return;
  while (true) {
    if (!dec->buffer.empty()) {
      std::string chunk = std::move(dec->buffer);
      dec->buffer.clear();
      if (!co_await writer.write_chunk(chunk)) co_return;  // the client is gone
      continue;
    }
    if (dec->done) break;
    co_await dec->wait();
  }
  if (!dec->outcome.complete) {
    // The decode worker died mid-stream: the client sees a cut stream, as it would behind a
    // real router; the log says which worker.
    ++decode.failed;
    sim_log().warn("{} mid-stream: the client's stream is cut", dec->failure(decode));
    co_return;
  }
  co_await writer.end_stream();
}

asio::awaitable<void> SimRouter::handle_metrics(http::ResponseWriter& writer) {
  std::string out;
  auto line = [&](std::string_view name, std::string_view labels, double v) {
    out += labels.empty() ? fmt::format("{} {}\n", name, v)
                          : fmt::format("{}{{{}}} {}\n", name, labels, v);
  };
  // Per worker: requests routed to it, requests it failed, requests in flight on it.
  struct Series {
    const char* name;
    const char* type;
    const char* help;
    int64_t Worker::*value;
  };
  for (const Series& m : {Series{"router_requests_total", "counter", "Requests routed, by worker.",
                                 &Worker::requests},
                          Series{"router_failed_total", "counter",
                                 "Requests a worker failed, by worker.", &Worker::failed},
                          Series{"router_in_flight", "gauge", "Requests in flight, by worker.",
                                 &Worker::in_flight}}) {
    const std::string name = fmt::format("inferbench_sim:{}", m.name);
    out += fmt::format("# HELP {0} {1}\n# TYPE {0} {2}\n", name, m.help, m.type);
    for (const auto* group : {&prefill_, &decode_}) {
      for (const auto& w : *group) {
        line(name, fmt::format(R"(role="{}",worker="{}")", w->role, w->endpoint.url()),
             static_cast<double>((*w).*m.value));
      }
    }
  }
  const std::string policy = fmt::format(R"(policy="{}")", to_string(args_.policy));
  out +=
      "# HELP inferbench_sim:router_prefix_blocks_total Prompt blocks looked up by the prefix "
      "policy, and found on the chosen prefill worker.\n"
      "# TYPE inferbench_sim:router_prefix_blocks_total counter\n";
  line("inferbench_sim:router_prefix_blocks_total", policy + R"(,result="queried")",
       static_cast<double>(prefix_queried_blocks_));
  line("inferbench_sim:router_prefix_blocks_total", policy + R"(,result="hit")",
       static_cast<double>(prefix_hit_blocks_));
  if (args_.session_affinity_ttl_s > 0) {
    out +=
        "# HELP inferbench_sim:router_session_requests_total Requests by what session affinity "
        "did: hit (sent to its session's workers), bind (a new session), close, unnamed (no "
        "session named); expired: sessions idle past the TTL.\n"
        "# TYPE inferbench_sim:router_session_requests_total counter\n";
    for (const auto& [result, n] : {std::pair<const char*, int64_t>{"hit", session_hits_},
                                    {"bind", session_binds_},
                                    {"close", session_closes_},
                                    {"unnamed", unnamed_requests_},
                                    {"expired", session_expiries_}}) {
      line("inferbench_sim:router_session_requests_total", fmt::format(R"(result="{}")", result),
           static_cast<double>(n));
    }
    out +=
        "# HELP inferbench_sim:router_sessions Sessions bound to workers now.\n"
        "# TYPE inferbench_sim:router_sessions gauge\n";
    line("inferbench_sim:router_sessions", "", static_cast<double>(sessions_.size()));
  }
  co_await writer.send(200, "text/plain; version=0.0.4; charset=utf-8", std::move(out));
}

}  // namespace ib::sim
