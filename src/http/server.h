// Small asynchronous HTTP/1.1 server on Boost.Beast: keep-alive connections, complete responses
// and chunked streaming responses (Server-Sent Events) written one flushed chunk at a time.
// Requests are served by one coroutine handler; HttpRouter maps method and path to handlers.
//
// Threading: every connection runs on one io_context, run by ONE thread, so a connection's
// handlers need no locks. Either all connections share the io_context given at construction, or
// (the constructor taking several) one acceptor hands accepted connections to several io_contexts
// in turn, each run by its own thread; handlers of different io_contexts then run concurrently
// and must synchronise what they share. stop() may be called from any thread.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/expected.h"

namespace ib::http {

namespace detail {
struct HttpServerState;
}  // namespace detail

/// One received request. Header names keep the case the client sent; look them up with header().
struct HttpRequest {
  std::string method;  // e.g. "POST", as sent
  std::string target;  // request-target as sent, e.g. "/v1/models?x=1"
  std::string path;    // target without the query string
  int version = 11;    // 10 for HTTP/1.0, 11 for HTTP/1.1
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  /// ib::mono_ns() when the server finished reading the request header (its arrival).
  int64_t received_ns = 0;
  /// Index of the io_context (so the thread) serving the connection, in the order given to
  /// HttpServer; 0 with a single io_context.
  std::size_t io_index = 0;

  /// Value of the first header named `name` (case-insensitive); empty when absent.
  std::string_view header(std::string_view name) const;
};

/// A complete (non-streamed) response. The body is sent with Content-Length.
struct HttpResponse {
  int status = 200;
  std::string content_type;  // omitted from the headers when empty
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers, e.g. Allow
};

/// Writes the response to one request: either one complete response, or a streamed one
/// (begin_stream, write_chunk..., end_stream). Every method returns an error Status once the
/// client is gone (a write failed, the connection was closed, or the server is stopping); a
/// handler should then stop working on the request. Created by HttpServer for each request.
class ResponseWriter {
 public:
  /// `server` is the Server header value (omitted when empty); it must outlive the writer.
  ResponseWriter(boost::asio::ip::tcp::socket& socket, int version, bool keep_alive,
                 std::string_view server = {})
      : socket_(socket), server_(server), version_(version), keep_alive_(keep_alive) {}
  ResponseWriter(const ResponseWriter&) = delete;
  ResponseWriter& operator=(const ResponseWriter&) = delete;

  /// Sends a complete response. REQUIRES: nothing was sent for this request yet.
  boost::asio::awaitable<Status> send(HttpResponse response);
  boost::asio::awaitable<Status> send(int status, std::string_view content_type, std::string body);

  /// Sends the header of a streamed response: status 200, the given Content-Type,
  /// `Cache-Control: no-cache` and `Transfer-Encoding: chunked` (for an HTTP/1.0 client the body
  /// is delimited by closing the connection instead). REQUIRES: nothing was sent yet.
  boost::asio::awaitable<Status> begin_stream(std::string_view content_type = "text/event-stream");

  /// Sends `bytes` as one chunk, written to the socket at once (TCP_NODELAY is set). An empty
  /// `bytes` sends nothing. REQUIRES: begin_stream() succeeded and end_stream() was not called.
  boost::asio::awaitable<Status> write_chunk(std::string_view bytes);

  /// Sends the last-chunk, completing the response. A handler that returns without calling it
  /// leaves the body unterminated: the server closes the connection (the client sees a cut
  /// stream, as with a server that fails mid-stream).
  boost::asio::awaitable<Status> end_stream();
  /// Sends `last_bytes` as a final chunk and the last-chunk in one gathered write (one syscall
  /// where end_stream() after write_chunk() needs two). Empty `last_bytes` is end_stream().
  boost::asio::awaitable<Status> end_stream(std::string_view last_bytes);

  /// The streaming fast path for code that is not a coroutine (a callback delivering tokens):
  /// frames `bytes` as one chunk (with `last`, followed by the end of the body) and writes what
  /// the socket takes now, without waiting and without a trip through the event loop.
  enum class TryWrite {
    kDone,     // all written; with `last` the response is complete
    kPending,  // the rest is kept: co_await finish_write() must write it before anything else
    kFailed,   // the client is gone (client_gone())
  };
  /// REQUIRES: begin_stream() succeeded, the stream was not ended, !write_pending().
  TryWrite try_write_chunk(std::string_view bytes, bool last = false);
  /// try_write_chunk() without copying the bytes: begin_chunk() returns the writer's own buffer,
  /// holding only room for the chunk-size line; append the chunk's bytes to it (nothing else),
  /// then try_write_built() frames and writes them. REQUIRES (both): as try_write_chunk().
  std::string& begin_chunk();
  TryWrite try_write_built(bool last = false);
  /// Writes what try_write_chunk() left pending; at once when nothing is.
  boost::asio::awaitable<Status> finish_write();
  /// True while bytes of the last try_write_chunk() wait for finish_write().
  bool write_pending() const { return pending_; }

  /// True once a write failed or the connection was closed under the handler.
  bool client_gone() const { return state_ == State::kFailed; }
  /// True once any response bytes were sent (or attempted).
  bool started() const { return state_ != State::kIdle; }
  /// True when a complete response (or a terminated stream) was sent.
  bool complete() const { return state_ == State::kDone; }
  /// True when the connection may serve another request after this response.
  bool keep_alive() const { return keep_alive_; }
  /// Status code of the response, 0 before one was started.
  int status() const { return status_; }

  /// Marks the connection as gone (used by the server when it sees the client disconnect).
  void mark_client_gone() { state_ = State::kFailed; }

 private:
  enum class State { kIdle, kStreaming, kDone, kFailed };
  Status fail(const boost::system::error_code& ec);
  void mark_failed(const boost::system::error_code& ec);  // fail() without the Status
  Status gone() const;
  // Writes `frame_` as far as the socket takes it now.
  TryWrite write_now(bool last);
  // try_write_chunk() then finish_write(): the whole chunk, asynchronously when it must wait.
  boost::asio::awaitable<Status> write_all(std::string_view bytes, bool last);

  boost::asio::ip::tcp::socket& socket_;
  std::string_view server_;
  int version_;
  bool keep_alive_;
  bool chunked_ = true;
  int status_ = 0;
  State state_ = State::kIdle;
  // Room at the front of frame_ for a chunk-size line: 16 hex digits and CRLF.
  static constexpr std::size_t kChunkRoom = 2 * sizeof(std::size_t) + 2;

  bool non_blocking_ = false;  // the socket was switched to non-blocking mode for write_now()
  bool frame_last_ = false;    // frame_ ends the body
  bool pending_ = false;       // frame_ has bytes left for finish_write()
  std::string frame_;          // the chunk being written (reused: no allocation per chunk)
  std::size_t frame_sent_ = 0;  // frame_ is written up to here
  boost::system::error_code error_;  // why the client is gone
};

/// Serves one request. Exceptions escaping a handler are logged and answered with 500 when no
/// response was started (otherwise the connection is closed).
using HttpHandler =
    std::function<boost::asio::awaitable<void>(const HttpRequest&, ResponseWriter&)>;

struct HttpServerOptions {
  std::size_t max_body_bytes = 64u << 20;    // larger bodies are answered with 413
  std::size_t max_header_bytes = 64u << 10;  // larger headers are answered with 431
  /// Close a keep-alive connection that stays idle this long between requests (uvicorn, and so
  /// vLLM, SGLang and TRT-LLM, use 5 s). Zero disables the timeout.
  std::chrono::milliseconds keep_alive_timeout{5000};
  std::string server_header = "inferbench";  // value of the Server header; omitted when empty
};

/// Asynchronous HTTP/1.1 server. While a handler runs, the server watches the connection and
/// cancels the handler (its pending co_await throws boost::system::system_error with
/// operation_aborted) when the client disconnects, so abandoned requests stop early.
class HttpServer {
 public:
  /// Serves every connection on `io`.
  HttpServer(boost::asio::io_context& io, HttpHandler handler, HttpServerOptions options = {});
  /// Serves connections on several io_contexts, each run by its own thread: the acceptor runs on
  /// the first and hands accepted connections to all of them in turn (round-robin); a connection
  /// stays on its io_context. The caller keeps each io_context running (a work guard) until
  /// stop(). REQUIRES: `ios` not empty; they outlive the server.
  HttpServer(std::vector<boost::asio::io_context*> ios, HttpHandler handler,
             HttpServerOptions options = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Binds host:port (port 0 picks a free port) and starts accepting once the (first)
  /// io_context runs. Returns the bound port, or an Error naming the address and the OS reason.
  /// REQUIRES: called once, before the io_contexts run or on the first one's thread.
  Expected<uint16_t> listen(const std::string& host, uint16_t port);

  /// Stops accepting and closes every connection (each on its own io_context's thread); handlers
  /// in progress are cancelled. An io_context's run() then returns once they have unwound
  /// (nothing else pending). Idempotent; safe from any thread. Destroy the server only after
  /// every io_context's run() has returned.
  void stop();

  /// Number of open connections (for tests and diagnostics; safe from any thread).
  std::size_t open_connections() const;

 private:
  std::shared_ptr<detail::HttpServerState> state_;
};

/// Dispatches by exact path and method. Unknown paths get 404 and known paths with another method
/// get 405 (with an Allow header), both with a FastAPI-style JSON body {"detail": "..."}, which is
/// what vLLM, SGLang and TRT-LLM answer.
class HttpRouter {
 public:
  /// Adds a route. REQUIRES: (method, path) not added before.
  HttpRouter& add(std::string method, std::string path, HttpHandler handler);

  /// The handler to give to HttpServer. The router must outlive the server's handlers.
  HttpHandler handler() const;

  /// Dispatches one request.
  boost::asio::awaitable<void> dispatch(const HttpRequest& request, ResponseWriter& writer) const;

 private:
  struct Route {
    std::string method;
    std::string path;
    HttpHandler handler;
  };
  std::vector<Route> routes_;
};

/// Reason phrase of a status code ("Not Found"); "Unknown" for codes not in the table.
std::string_view http_reason(int status);

}  // namespace ib::http
