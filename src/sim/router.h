// The frontend of a disaggregated serve-sim deployment (serve-sim --role router; docs/serve-sim.md,
// "Disaggregated prefill and decode"): an OpenAI-compatible server that sends each generation
// request to a prefill worker (one token, its KV kept there: kv_transfer_params
// {"do_remote_decode": true}), then to a decode worker with the prefill's kv_transfer_params (it
// pulls the KV and decodes), and relays the decode worker's response, as vLLM's P/D proxy and
// SGLang's router do. Prefill workers are picked round robin, or by the longest prompt prefix a
// worker has already seen (its prefix cache: SGLang's cache-aware and Dynamo's KV-aware routing);
// decode workers by the fewest requests in flight. With a session-affinity TTL (Dynamo's
// --router-session-affinity-ttl-secs), a request that names its session (X-Dynamo-Session-ID,
// X-SMG-Routing-Key, or the body's nvext.session_control) goes to the workers its session's first
// request went to, until the session closes or idles past the TTL.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/expected.h"
#include "http/client.h"
#include "http/server.h"

namespace ib::sim {

/// How the router picks a prefill worker.
enum class RoutingPolicy { kRoundRobin, kPrefix };

struct RouterArgs {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;
  std::string model = "sim-model";  // the served model name (/v1/models)
  std::string api_key;              // as the workers' --api-key: required from clients, sent on
  std::vector<std::string> prefill_urls, decode_urls;  // http://host:port of each worker
  RoutingPolicy policy = RoutingPolicy::kRoundRobin;
  double timeout_s = 600;  // a worker's silence longer than this fails the request
  double session_affinity_ttl_s = 0;  // > 0: sessions stick to their workers (see above)
  double keep_alive_timeout_s = 5.0;
};

/// "round_robin" or "prefix"; error names the choices.
Expected<RoutingPolicy> parse_routing_policy(std::string_view name);
std::string_view to_string(RoutingPolicy policy);

class SimRouter {
 public:
  /// Serves on `io`. Error: a worker URL that does not parse or resolve, or no worker of a role.
  static Expected<std::unique_ptr<SimRouter>> create(boost::asio::io_context& io, RouterArgs args);
  ~SimRouter();

  Expected<uint16_t> listen();
  void stop();

  struct Worker;  // one prefill or decode worker (router.cc)
  struct InFlight;

 private:
  SimRouter(boost::asio::io_context& io, RouterArgs args);
  boost::asio::awaitable<void> handle_generate(std::string_view path,
                                               const http::HttpRequest& request,
                                               http::ResponseWriter& writer);
  boost::asio::awaitable<void> handle_metrics(http::ResponseWriter& writer);
  /// The prefill phase: the worker's answer (its kv_transfer_params checked), or nullopt when it
  /// failed and the client was answered.
  boost::asio::awaitable<std::optional<boost::json::object>> run_prefill(
      std::string_view path, const boost::json::object& body, Worker& prefill,
      http::ResponseWriter& writer);
  Worker& pick_prefill(const std::string& prompt_key);
  Worker& pick_decode();
  /// The session's bound workers, or nullptr (then the caller binds them with bind_session).
  struct Binding {
    Worker* prefill = nullptr;
    Worker* decode = nullptr;
    int64_t expires_ns = 0;
  };
  Binding* session_binding(const std::string& id);
  void purge_expired_sessions();
  /// The prefill and decode workers of a request: its session's, else by the policy.
  std::pair<Worker*, Worker*> pick_workers(const http::HttpRequest& request,
                                           const boost::json::object& body,
                                           const std::string& prompt_key);

  boost::asio::io_context& io_;
  RouterArgs args_;
  std::vector<std::unique_ptr<Worker>> prefill_, decode_;
  uint64_t next_prefill_ = 0;
  int64_t prefix_queried_blocks_ = 0, prefix_hit_blocks_ = 0;
  std::unordered_map<std::string, Binding> sessions_;
  int64_t session_hits_ = 0, session_binds_ = 0, session_closes_ = 0, session_expiries_ = 0;
  int64_t unnamed_requests_ = 0;  // with affinity on, requests that named no session
  size_t next_purge_size_ = 1024;  // sessions_ is swept of expired ones when it reaches this
  http::HttpRouter router_;
  http::HttpServer http_;
};

}  // namespace ib::sim
