#include "http/server.h"

#include <fmt/format.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http.hpp>
#include <exception>
#include <list>

#include "core/clock.h"
#include "http/awaitable.h"

namespace ib::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

// Server diagnostics go to stderr: stdout is for results.
spdlog::logger& server_log() {
  static auto logger = std::make_shared<spdlog::logger>(
      "http-server", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  return *logger;
}

Error gone_error(const error_code& ec) {
  return Error{fmt::format("client connection lost: {}", ec.message())};
}

// FastAPI's bodies for router-level errors (what Python OpenAI-compatible servers send).
std::string detail_json(std::string_view detail) {
  return fmt::format(R"({{"detail":"{}"}})", detail);
}

}  // namespace

std::string_view HttpRequest::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (beast::iequals(key, name)) return value;
  }
  return {};
}

std::string_view http_reason(int status) {
  if (status < 100 || status > 999) return "Unknown";
  auto reason = http::obsolete_reason(static_cast<http::status>(status));
  if (reason == "<unknown-status>") return "Unknown";
  return reason;
}

// ---------------------------------------------------------------------------------------------
// ResponseWriter

void ResponseWriter::mark_failed(const error_code& ec) {
  state_ = State::kFailed;
  error_ = ec;
}

Status ResponseWriter::fail(const error_code& ec) {
  mark_failed(ec);
  return gone_error(ec);
}

asio::awaitable<Status> ResponseWriter::send(int status, std::string_view content_type,
                                             std::string body) {
  HttpResponse response;
  response.status = status;
  response.content_type = std::string(content_type);
  response.body = std::move(body);
  co_return co_await send(std::move(response));
}

asio::awaitable<Status> ResponseWriter::send(HttpResponse response) {
  if (state_ == State::kFailed) co_return gone_error(asio::error::not_connected);
  if (state_ != State::kIdle) co_return Error{"send: a response was already started"};
  http::response<http::string_body> res;
  res.version(version_);
  res.result(static_cast<unsigned>(response.status));
  if (!server_.empty()) res.set(http::field::server, server_);
  if (!response.content_type.empty()) res.set(http::field::content_type, response.content_type);
  for (auto& [name, value] : response.headers) res.insert(name, value);
  res.body() = std::move(response.body);
  res.keep_alive(keep_alive_);
  res.prepare_payload();
  status_ = response.status;
  state_ = State::kStreaming;
  auto [ec, n] = co_await http::async_write(socket_, res, use_tuple);
  if (ec) co_return fail(ec);
  state_ = State::kDone;
  co_return Status{};
}

asio::awaitable<Status> ResponseWriter::begin_stream(std::string_view content_type) {
  if (state_ == State::kFailed) co_return gone_error(asio::error::not_connected);
  if (state_ != State::kIdle) co_return Error{"begin_stream: a response was already started"};
  http::response<http::empty_body> res;
  res.version(version_);
  res.result(http::status::ok);
  if (!server_.empty()) res.set(http::field::server, server_);
  res.set(http::field::content_type, content_type);
  res.set(http::field::cache_control, "no-cache");
  // HTTP/1.0 has no chunked coding: the body then ends when the connection closes.
  chunked_ = version_ >= 11;
  if (chunked_) {
    res.chunked(true);
  } else {
    keep_alive_ = false;
  }
  res.keep_alive(keep_alive_);
  status_ = 200;
  state_ = State::kStreaming;
  http::response_serializer<http::empty_body> serializer{res};
  auto [ec, n] = co_await http::async_write_header(socket_, serializer, use_tuple);
  if (ec) co_return fail(ec);
  co_return Status{};
}

Status ResponseWriter::gone() const {
  return gone_error(error_ ? error_ : error_code(asio::error::not_connected));
}

ResponseWriter::TryWrite ResponseWriter::write_now(bool last) {
  error_code ec;
  if (!non_blocking_) {
    // Non-blocking mode makes write_some() return would_block instead of blocking the event
    // loop; the server's other operations on the socket are asynchronous and unaffected.
    socket_.non_blocking(true, ec);
    if (ec) {
      mark_failed(ec);
      return TryWrite::kFailed;
    }
    non_blocking_ = true;
  }
  frame_last_ = last;
  const std::size_t remaining = frame_.size() - frame_sent_;
  std::size_t written = 0;
  if (remaining > 0) {
    written = socket_.write_some(asio::buffer(frame_.data() + frame_sent_, remaining), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      ec = {};
      written = 0;
    }
    if (ec) {
      mark_failed(ec);
      return TryWrite::kFailed;
    }
  }
  frame_sent_ += written;
  if (frame_sent_ < frame_.size()) {
    pending_ = true;
    return TryWrite::kPending;
  }
  if (last) state_ = State::kDone;
  return TryWrite::kDone;
}

std::string& ResponseWriter::begin_chunk() {
  frame_.assign(kChunkRoom, '\0');
  return frame_;
}

ResponseWriter::TryWrite ResponseWriter::try_write_built(bool last) {
  if (state_ != State::kStreaming || pending_ || frame_.size() < kChunkRoom) {
    if (state_ != State::kFailed) error_ = asio::error::operation_not_supported;
    state_ = State::kFailed;  // a misuse: the response cannot be completed any more
    return TryWrite::kFailed;
  }
  std::size_t start = kChunkRoom;
  if (chunked_) {
    if (std::size_t n = frame_.size() - kChunkRoom; n > 0) {  // an empty chunk would end the body
      // The chunk-size line goes right before the data, in the room kept for it.
      char* p = frame_.data() + kChunkRoom;
      *--p = '\n';
      *--p = '\r';
      do {
        *--p = "0123456789abcdef"[n & 0xf];
        n >>= 4;
      } while (n != 0);
      start = static_cast<std::size_t>(p - frame_.data());
      frame_.append("\r\n");
    }
    if (last) frame_.append("0\r\n\r\n");  // the last-chunk, in the same write
  }
  // HTTP/1.0 (not chunked): the bytes as they are; the body ends when the connection closes.
  frame_sent_ = start;
  return write_now(last);
}

ResponseWriter::TryWrite ResponseWriter::try_write_chunk(std::string_view bytes, bool last) {
  if (state_ != State::kStreaming || pending_) return try_write_built(last);  // fails
  begin_chunk().append(bytes);
  return try_write_built(last);
}

asio::awaitable<Status> ResponseWriter::finish_write() {
  if (state_ == State::kFailed) co_return gone();
  if (!pending_) co_return Status{};
  auto [ec, n] = co_await asio::async_write(
      socket_, asio::buffer(frame_.data() + frame_sent_, frame_.size() - frame_sent_), use_tuple);
  if (ec) co_return fail(ec);
  pending_ = false;
  frame_sent_ = frame_.size();
  if (frame_last_) state_ = State::kDone;
  co_return Status{};
}

asio::awaitable<Status> ResponseWriter::write_all(std::string_view bytes, bool last) {
  if (state_ == State::kFailed) co_return gone();
  if (state_ != State::kStreaming) co_return Error{"no stream in progress"};
  switch (try_write_chunk(bytes, last)) {
    case TryWrite::kDone:
      co_return Status{};
    case TryWrite::kPending:
      co_return co_await finish_write();
    case TryWrite::kFailed:
      break;
  }
  co_return gone();
}

asio::awaitable<Status> ResponseWriter::write_chunk(std::string_view bytes) {
  if (bytes.empty() && state_ == State::kStreaming) co_return Status{};
  co_return co_await write_all(bytes, /*last=*/false);
}

asio::awaitable<Status> ResponseWriter::end_stream(std::string_view last_bytes) {
  co_return co_await write_all(last_bytes, /*last=*/true);
}

asio::awaitable<Status> ResponseWriter::end_stream() {
  co_return co_await write_all({}, /*last=*/true);
}

// ---------------------------------------------------------------------------------------------
// HttpServer

namespace detail {

// One io_context and the connections it serves; touched only on its thread (but in the
// destructor, after every run() returned).
struct IoShard {
  asio::io_context* io = nullptr;
  std::list<tcp::socket*> sockets;  // open connections, for stop()
  bool stopped = false;
};

struct HttpServerState {
  HttpServerState(std::vector<asio::io_context*> ios, HttpHandler h, HttpServerOptions o)
      : handler(std::move(h)), options(std::move(o)), acceptor(*ios.at(0)) {
    shards.resize(ios.size());
    for (std::size_t i = 0; i < ios.size(); ++i) shards[i].io = ios[i];
  }

  asio::io_context& io() { return *shards[0].io; }  // the acceptor's

  // On shard `i`'s thread: stops accepting (shard 0) and closes its connections.
  void stop_shard(std::size_t i) {
    IoShard& shard = shards[i];
    if (shard.stopped) return;
    shard.stopped = true;
    error_code ec;
    if (i == 0) acceptor.close(ec);
    // Closing a socket aborts the operations pending on it; each session then unwinds.
    for (tcp::socket* socket : shard.sockets) {
      socket->shutdown(tcp::socket::shutdown_both, ec);
      socket->close(ec);
    }
  }

  HttpHandler handler;
  HttpServerOptions options;
  tcp::acceptor acceptor;
  std::vector<IoShard> shards;  // fixed after construction
  std::size_t next_shard = 0;   // the accept loop's round-robin position
  std::atomic<std::size_t> connections{0};
};

}  // namespace detail

namespace {

using detail::HttpServerState;
using ServerState = std::shared_ptr<HttpServerState>;
using RequestParser = http::request_parser<http::string_body>;

// Reads a request header, giving up after the keep-alive timeout (beast::error::timeout).
asio::awaitable<error_code> read_header(tcp::socket& socket, beast::flat_buffer& buffer,
                                        RequestParser& parser, std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) {
    auto [ec, n] = co_await http::async_read_header(socket, buffer, parser, use_tuple);
    co_return ec;
  }
  asio::steady_timer timer(socket.get_executor(), timeout);
  auto [order, read_ec, n, timer_ec] =
      co_await asio::experimental::make_parallel_group(
          http::async_read_header(socket, buffer, parser, asio::deferred),
          timer.async_wait(asio::deferred))
          .async_wait(asio::experimental::wait_for_one(), asio::use_awaitable);
  if (order[0] == 1) co_return error_code(beast::error::timeout);
  co_return read_ec;
}

// Completes when the client closes the connection (or the server closes it in stop()). Bytes the
// client sends meanwhile (a pipelined next request) are kept in `buffer` for the parser; after
// them, closing can no longer be told apart from the next request, so it waits to be cancelled.
asio::awaitable<void> watch_disconnect(tcp::socket& socket, beast::flat_buffer& buffer) {
  auto [ec, n] = co_await socket.async_read_some(buffer.prepare(4096), use_tuple);
  buffer.commit(n);
  if (ec) co_return;
  asio::steady_timer forever(socket.get_executor(), asio::steady_timer::time_point::max());
  co_await forever.async_wait(use_tuple);
  // Cancellation ends the wait; the caller then ignores this branch.
  throw boost::system::system_error(asio::error::operation_aborted);
}

asio::awaitable<void> call_handler(const HttpHandler& handler, const HttpRequest& request,
                                   ResponseWriter& writer) {
  co_await handler(request, writer);
}

// Best-effort error answer for a request that could not be parsed; the connection then closes.
asio::awaitable<void> reject(tcp::socket& socket, int status, std::string_view server) {
  ResponseWriter writer(socket, 11, /*keep_alive=*/false, server);
  co_await writer.send(status, "application/json", detail_json(http_reason(status)));
}

HttpRequest to_request(http::request<http::string_body>&& message) {
  HttpRequest request;
  request.method = std::string(message.method_string());
  request.target = std::string(message.target());
  auto query = request.target.find('?');
  request.path = request.target.substr(0, query);
  request.version = message.version();
  request.headers.reserve(8);
  for (const auto& field : message) {
    request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  request.body = std::move(message.body());
  return request;
}

// Serves one parsed request: runs the handler while watching for the client to disconnect.
// Returns true when the connection can serve another request.
asio::awaitable<bool> serve_request(const ServerState& state, tcp::socket& socket,
                                    beast::flat_buffer& buffer, const HttpRequest& request,
                                    bool keep_alive) {
  ResponseWriter writer(socket, request.version, keep_alive, state->options.server_header);
  auto executor = co_await asio::this_coro::executor;
  auto [order, handler_error, watch_error] =
      co_await asio::experimental::make_parallel_group(
          asio::co_spawn(executor, call_handler(state->handler, request, writer), asio::deferred),
          asio::co_spawn(executor, watch_disconnect(socket, buffer), asio::deferred))
          .async_wait(asio::experimental::wait_for_one(), asio::use_awaitable);
  (void)watch_error;  // the watcher's result only matters through `order`
  if (order[0] == 1) {
    // The client went away (or stop() closed the socket) first; the handler was cancelled.
    writer.mark_client_gone();
    co_return false;
  }
  if (handler_error) {
    try {
      std::rethrow_exception(handler_error);
    } catch (const std::exception& e) {
      server_log().error("handler for {} {} failed: {}", request.method, request.target, e.what());
    } catch (...) {
      server_log().error("handler for {} {} failed with a non-standard exception", request.method,
                         request.target);
    }
    if (!writer.started()) {
      co_await writer.send(500, "application/json", detail_json("Internal Server Error"));
    }
    co_return false;
  }
  if (!writer.started()) {
    server_log().error("handler for {} {} sent no response", request.method, request.target);
    co_await writer.send(500, "application/json", detail_json("Internal Server Error"));
    co_return false;
  }
  co_return writer.complete() && writer.keep_alive();
}

// Maps a failed header or body read to the status to answer with; 0 to close silently.
int error_status(const error_code& ec) {
  if (ec == http::error::body_limit) return 413;
  if (ec == http::error::header_limit) return 431;
  if (ec == http::error::end_of_stream || ec == http::error::partial_message) return 0;
  if (ec.category() == error_code(http::error::bad_target).category()) return 400;  // parse error
  return 0;  // socket errors, timeouts, stop()
}

asio::awaitable<void> session(ServerState state, tcp::socket socket, std::size_t shard_index) {
  detail::IoShard& shard = state->shards[shard_index];
  auto registration = shard.sockets.insert(shard.sockets.end(), &socket);
  state->connections.fetch_add(1, std::memory_order_relaxed);
  struct Unregister {
    HttpServerState& state;
    detail::IoShard& shard;
    std::list<tcp::socket*>::iterator it;
    ~Unregister() {
      shard.sockets.erase(it);
      state.connections.fetch_sub(1, std::memory_order_relaxed);
    }
  } unregister{*state, shard, registration};

  error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  beast::flat_buffer buffer;
  try {
    while (!shard.stopped) {
      RequestParser parser;
      parser.header_limit(static_cast<std::uint32_t>(state->options.max_header_bytes));
      parser.body_limit(state->options.max_body_bytes);
      error_code ec =
          co_await read_header(socket, buffer, parser, state->options.keep_alive_timeout);
      const int64_t received_ns = mono_ns();
      if (!ec && beast::iequals(parser.get()[http::field::expect], "100-continue")) {
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        std::tie(ec, std::ignore) =
            co_await asio::async_write(socket, asio::buffer(kContinue), use_tuple);
      }
      if (!ec && !parser.is_done()) {
        std::tie(ec, std::ignore) = co_await http::async_read(socket, buffer, parser, use_tuple);
      }
      if (ec) {
        if (int status = error_status(ec); status != 0) {
          server_log().warn("bad HTTP request: {}; answering {} and closing the connection",
                            ec.message(), status);
          co_await reject(socket, status, state->options.server_header);
        }
        break;
      }
      bool keep_alive = parser.get().keep_alive();
      HttpRequest request = to_request(parser.release());
      request.received_ns = received_ns;
      request.io_index = shard_index;
      if (!co_await serve_request(state, socket, buffer, request, keep_alive)) break;
    }
  } catch (const std::exception& e) {
    server_log().debug("connection ended: {}", e.what());
  }
  socket.shutdown(tcp::socket::shutdown_send, ignored);
  socket.close(ignored);
}

asio::awaitable<void> accept_loop(ServerState state) {
  detail::IoShard& first = state->shards[0];
  while (!first.stopped) {
    // The next connection goes to the next io_context in turn; its socket is created on it.
    const std::size_t target = state->next_shard;
    asio::any_io_executor executor = state->shards[target].io->get_executor();
    auto [ec, socket] = co_await state->acceptor.async_accept(executor, use_tuple);
    if (first.stopped || ec == asio::error::operation_aborted) break;
    if (ec) {
      // E.g. out of file descriptors: back off briefly instead of spinning.
      server_log().warn("accept failed: {}", ec.message());
      asio::steady_timer backoff(state->io(), std::chrono::milliseconds(50));
      co_await backoff.async_wait(use_tuple);
      continue;
    }
    state->next_shard = (target + 1) % state->shards.size();
    asio::co_spawn(executor, session(state, std::move(socket), target), asio::detached);
  }
}

}  // namespace

HttpServer::HttpServer(asio::io_context& io, HttpHandler handler, HttpServerOptions options)
    : HttpServer(std::vector<asio::io_context*>{&io}, std::move(handler), std::move(options)) {}

HttpServer::HttpServer(std::vector<asio::io_context*> ios, HttpHandler handler,
                       HttpServerOptions options)
    : state_(std::make_shared<detail::HttpServerState>(std::move(ios), std::move(handler),
                                                       std::move(options))) {}

HttpServer::~HttpServer() {
  // Every io_context's run() has returned (REQUIRES), so no shard's thread touches its state.
  for (std::size_t i = 0; i < state_->shards.size(); ++i) state_->stop_shard(i);
}

Expected<uint16_t> HttpServer::listen(const std::string& host, uint16_t port) {
  auto where = [&] {
    return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port)
                                               : fmt::format("{}:{}", host, port);
  };
  if (state_->acceptor.is_open())
    return Error{fmt::format("listen {}: already listening", where())};
  error_code ec;
  tcp::resolver resolver(state_->io());
  auto results = resolver.resolve(host, std::to_string(port),
                                  tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec) return Error{fmt::format("cannot listen on {}: {}", where(), ec.message())};
  error_code last = asio::error::host_not_found;
  for (const auto& entry : results) {
    tcp::acceptor& acceptor = state_->acceptor;
    error_code step;
    acceptor.open(entry.endpoint().protocol(), step);
    if (!step) acceptor.set_option(tcp::acceptor::reuse_address(true), step);
    if (!step) acceptor.bind(entry.endpoint(), step);
    // The kernel caps the backlog at net.core.somaxconn; ask for more than SOMAXCONN so a raised
    // limit takes effect (bursts of thousands of connections).
    if (!step) acceptor.listen(65535, step);
    if (!step) {
      auto bound = acceptor.local_endpoint(step);
      if (!step) {
        asio::co_spawn(state_->io(), accept_loop(state_), asio::detached);
        return bound.port();
      }
    }
    last = step;
    error_code ignored;
    acceptor.close(ignored);
  }
  return Error{fmt::format("cannot listen on {}: {}", where(), last.message())};
}

void HttpServer::stop() {
  for (std::size_t i = 0; i < state_->shards.size(); ++i) {
    asio::post(*state_->shards[i].io, [state = state_, i] { state->stop_shard(i); });
  }
}

std::size_t HttpServer::open_connections() const {
  return state_->connections.load(std::memory_order_relaxed);
}

// ---------------------------------------------------------------------------------------------
// HttpRouter

HttpRouter& HttpRouter::add(std::string method, std::string path, HttpHandler handler) {
  routes_.push_back(Route{std::move(method), std::move(path), std::move(handler)});
  return *this;
}

HttpHandler HttpRouter::handler() const {
  return [this](const HttpRequest& request, ResponseWriter& writer) {
    return dispatch(request, writer);
  };
}

asio::awaitable<void> HttpRouter::dispatch(const HttpRequest& request,
                                           ResponseWriter& writer) const {
  std::string allow;
  for (const Route& route : routes_) {
    if (route.path != request.path) continue;
    if (route.method == request.method) {
      co_await route.handler(request, writer);
      co_return;
    }
    if (!allow.empty()) allow += ", ";
    allow += route.method;
  }
  HttpResponse response;
  response.content_type = "application/json";
  if (allow.empty()) {
    response.status = 404;
  } else {
    response.status = 405;
    response.headers.emplace_back("Allow", allow);
  }
  response.body = detail_json(http_reason(response.status));
  co_await writer.send(std::move(response));
}

}  // namespace ib::http
