// Async HTTP/1.1 client connection on Boost.Beast for benchmark traffic: keep-alive, incremental
// delivery of response body bytes with their arrival time, and a simple blocking GET for health
// checks.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/expected.h"

namespace ib::http {

/// Where a server listens: parsed from a URL such as http://127.0.0.1:8000 or
/// http://host:8000/prefix (the prefix is prepended to request paths).
struct Endpoint {
  std::string host;
  uint16_t port = 80;
  std::string base_path;  // without trailing slash; empty for the root
  /// Sent as "Authorization: Bearer ..." with every request when set (a server started with
  /// --api-key); never part of url() or of anything printed.
  std::string bearer = {};
  std::string url() const;
  /// "host:port", "[::1]:8000": the URL's authority and the Host header.
  std::string authority() const;
};

/// Parses an http:// URL. Error names the URL and what is wrong (https is not supported yet).
Expected<Endpoint> parse_endpoint(std::string_view url);

/// Resolves the host once, before a run (no DNS on the hot path).
Expected<boost::asio::ip::tcp::resolver::results_type> resolve(const Endpoint& endpoint);

/// Client-side limits. A zero duration disables that limit (connect is always bounded).
struct ClientTimeouts {
  std::chrono::milliseconds connect{10'000};
  std::chrono::milliseconds first_byte{300'000};  // send → first response byte
  std::chrono::milliseconds idle{300'000};        // longest silence while a response is read
  // send → response complete; 0: unlimited. Finite by default, as vLLM's benchmark_serving's
  // aiohttp session (6 h): nothing waits forever.
  std::chrono::milliseconds total{6 * 3600 * 1000};
};

/// Receives a response as it arrives. Times are monotonic nanoseconds (ib::mono_ns clock) of
/// the bytes' arrival at the socket: the kernel's receive timestamp (SO_TIMESTAMPNS) where the
/// platform gives one, else the time the read completed. Kernel timestamps do not depend on how
/// busy the client's event loop is, so a burst of events from many streams is timed as it arrived.
class ResponseSink {
 public:
  virtual ~ResponseSink() = default;
  virtual void on_headers(int status, int64_t t_ns) = 0;
  virtual void on_body(std::string_view bytes, int64_t t_ns) = 0;
  /// When the response last made progress, for the idle timeout: an event stream's keep-alive
  /// comments (`: ping`) are bytes but not progress, so a server that only pings still times
  /// out. nullopt (the default): every byte is progress.
  virtual std::optional<int64_t> progress_ns() const { return std::nullopt; }
};

/// Which limit ended an exchange.
enum class TimeoutKind { kNone, kConnect, kFirstByte, kIdle, kTotal };

/// How one exchange ended at the transport level. Protocol meaning (SSE, [DONE]) is the sink's.
struct HttpOutcome {
  boost::system::error_code ec;  // first transport error; empty when the response completed
  bool connect_failed = false;   // ec came from connecting
  TimeoutKind timeout = TimeoutKind::kNone;
  std::chrono::milliseconds timeout_limit{0};  // the limit that fired
  bool response_started = false;               // at least the status line arrived
  bool complete = false;                       // the whole message was read
  int status = 0;
  int64_t send_ns = 0;  // when the request's first byte was handed to the socket
  bool timed_out() const { return timeout != TimeoutKind::kNone; }
  /// The peer reset the connection, or closed it before sending a complete response.
  bool reset() const;
};

namespace detail {
class StreamPoller;
}  // namespace detail

/// One keep-alive connection. Not thread-safe: one request at a time, on one executor.
/// Memory per connection is bounded: a small read buffer and a small body window, whatever the
/// response length: the client must scale to 10k+ streams.
///
/// Cost per event: Asio connects; once connected the socket is taken out of Asio's reactor and
/// watched by one level-triggered epoll set per io_context (detail::StreamPoller), itself one
/// descriptor in Asio's reactor. A readable socket is read (recvmsg with its kernel timestamp),
/// parsed and handed to the sink right in the poller's dispatch, with no coroutine resumption, no
/// reactor re-arm and no timer operation per read: the request's coroutine sleeps on one timer
/// that is its deadline, and wakes once, when the exchange ends or the deadline passes.
class HttpConnection {
 public:
  /// `source` (optional) is the local address to bind before connecting, to spread many
  /// connections over several loopback source addresses.
  HttpConnection(boost::asio::any_io_executor executor, const Endpoint& endpoint,
                 const boost::asio::ip::tcp::resolver::results_type& addresses,
                 ClientTimeouts timeouts = {},
                 std::optional<boost::asio::ip::address> source = std::nullopt);

  /// Sends one request (connecting first when needed) and streams the response into `sink`.
  /// `path` is appended to the endpoint's base path; `request_id`, when not empty, is sent as
  /// the X-Request-Id header; `correlation_id`, when not empty, as X-Correlation-ID (the session
  /// an agentic request belongs to); `extra_headers`: more header lines, each "Name: value\r\n"
  /// (a router's session-affinity headers).
  boost::asio::awaitable<HttpOutcome> request(boost::beast::http::verb verb, std::string_view path,
                                              std::string_view body, ResponseSink& sink,
                                              std::string_view request_id = {},
                                              std::string_view correlation_id = {},
                                              std::string_view extra_headers = {});

  /// Connects now (nothing when already open), so that a later request starts writing at once
  /// (a timed trace's burst); the error when it failed (a request then connects again).
  boost::asio::awaitable<boost::system::error_code> open();

  /// True when a connection is open and was used before (a keep-alive reuse may race the
  /// server closing an idle connection).
  bool reused() const { return open_ && requests_on_connection_ > 0; }
  bool is_open() const { return open_; }
  /// Reads done, and how many of them carried a kernel receive timestamp.
  uint64_t reads() const { return reads_; }
  uint64_t stamped_reads() const { return stamped_reads_; }
  /// Closes the socket; a request in progress completes with an error.
  void close();

  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  /// Called by the poller when the socket is ready (epoll event bits). Internal.
  void on_ready(uint32_t events);

 private:
  void write_head(boost::beast::http::verb verb, std::string_view path, std::string_view body,
                  std::string_view request_id, std::string_view correlation_id,
                  std::string_view extra_headers);
  enum class Phase { kIdle, kWriting, kReading, kDone };
  struct Exchange;
  boost::asio::awaitable<boost::system::error_code> connect();
  // Reads what is available into `into`; returns bytes read (0: orderly close), sets rx_ns.
  ssize_t receive(char* into, size_t size, boost::system::error_code& ec, int64_t& rx_ns);
  // Sends what remains of the request; true when all of it is written (or it failed).
  bool send_some();
  // Feeds `input` to the parser and the sink, keeping what it could not parse yet in pending_;
  // false when the exchange ended.
  bool parse(std::string_view input, int64_t rx_ns);
  // Ends the exchange: records ec (empty: complete) and wakes the request's coroutine.
  void finish(boost::system::error_code ec, TimeoutKind timeout = TimeoutKind::kNone);
  // The deadline now in force: first byte or idle (from the sink's progress), capped by total.
  int64_t current_deadline() const;
  void close_socket();

  const Endpoint* endpoint_;
  const boost::asio::ip::tcp::resolver::results_type* addresses_;
  ClientTimeouts timeouts_;
  std::optional<boost::asio::ip::address> source_;
  boost::beast::tcp_stream stream_;  // connects; then the descriptor is released to fd_
  detail::StreamPoller* poller_;
  int fd_ = -1;
  std::string pending_;  // bytes a read left unparsed (a partial chunk header); usually empty
  std::string host_header_;
  std::string head_;  // the request's header block, reused
  std::unique_ptr<Exchange> exchange_;
  Phase phase_ = Phase::kIdle;
  bool open_ = false;
  int requests_on_connection_ = 0;
  // The request's coroutine sleeps on this timer, set to the exchange's deadline: the poller
  // cancels it when the exchange ends; when it fires, the deadline is recomputed (reads move the
  // idle deadline with a plain store) and the timer re-armed, or the exchange times out.
  boost::asio::steady_timer deadline_timer_;
  int64_t timer_at_ns_ = INT64_MAX;  // when deadline_timer_ is set to fire
  int64_t last_rx_ns_ = 0;
  uint64_t reads_ = 0;
  uint64_t stamped_reads_ = 0;
};

struct SimpleResponse {
  int status = 0;
  std::string body;
};

/// Blocking GET with an overall timeout, for health checks and metadata. Error on connection
/// failure or timeout.
Expected<SimpleResponse> http_get(const Endpoint& endpoint, std::string_view path,
                                  std::chrono::milliseconds timeout);
/// The same with the request's own limits (connect, first byte, idle, total); a timeout's error
/// names the limit and its option ("no first byte within 5 s (--first-byte-timeout)").
Expected<SimpleResponse> http_get(const Endpoint& endpoint, std::string_view path,
                                  const ClientTimeouts& timeouts);
/// A blocking POST of a JSON body, with the same limits and messages; `extra_headers` as
/// HttpConnection::request's.
Expected<SimpleResponse> http_post(const Endpoint& endpoint, std::string_view path,
                                   std::string_view body, const ClientTimeouts& timeouts,
                                   std::string_view extra_headers = {});

}  // namespace ib::http
