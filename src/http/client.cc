#include "http/client.h"

#include <fmt/format.h>
#include <sys/socket.h>
#include <time.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/parse.hpp>
#include <cerrno>
#include <cstring>
#include <tuple>

#include "core/clock.h"

namespace ib::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

std::string Endpoint::url() const {
  return fmt::format("http://{}:{}{}", host, port, base_path);
}

Expected<Endpoint> parse_endpoint(std::string_view url) {
  auto parsed = boost::urls::parse_uri(url);
  if (!parsed) {
    return Error{fmt::format("invalid endpoint URL '{}': {}", url, parsed.error().message())};
  }
  const auto& u = *parsed;
  if (u.scheme() != "http") {
    return Error{fmt::format("endpoint URL '{}': scheme '{}' is not supported (use http://)", url,
                             u.scheme())};
  }
  Endpoint e;
  e.host = std::string(u.encoded_host());
  if (e.host.empty()) return Error{fmt::format("endpoint URL '{}' has no host", url)};
  if (e.host.front() == '[' && e.host.back() == ']') e.host = e.host.substr(1, e.host.size() - 2);
  if (u.has_port()) {
    if (u.port().empty() || u.port_number() == 0) {
      return Error{fmt::format("endpoint URL '{}' has an invalid port", url)};
    }
    e.port = u.port_number();
  }
  e.base_path = std::string(u.encoded_path());
  while (!e.base_path.empty() && e.base_path.back() == '/') e.base_path.pop_back();
  return e;
}

Expected<tcp::resolver::results_type> resolve(const Endpoint& endpoint) {
  asio::io_context io;
  tcp::resolver resolver(io);
  boost::system::error_code ec;
  auto results = resolver.resolve(endpoint.host, std::to_string(endpoint.port), ec);
  if (ec) {
    return Error{fmt::format("cannot resolve '{}': {}", endpoint.host, ec.message())};
  }
  return results;
}

bool HttpOutcome::reset() const {
  return ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         (!response_started && (ec == http::error::end_of_stream || ec == asio::error::eof));
}

namespace {

// Size of the window body bytes are parsed into, and the most the read buffer may hold. SSE
// events of OpenAI-compatible servers are a few hundred bytes; larger bodies take more reads.
constexpr size_t kBodyWindow = 2048;
constexpr size_t kReadBufferMax = 8192;

using steady_time = std::chrono::steady_clock::time_point;

}  // namespace

HttpConnection::HttpConnection(asio::any_io_executor executor, const Endpoint& endpoint,
                               const tcp::resolver::results_type& addresses,
                               ClientTimeouts timeouts, std::optional<asio::ip::address> source)
    : endpoint_(&endpoint),
      addresses_(&addresses),
      timeouts_(timeouts),
      source_(std::move(source)),
      stream_(std::move(executor)),
      buffer_(kReadBufferMax),
      host_header_(fmt::format("{}:{}", endpoint.host, endpoint.port)),
      body_window_(new char[kBodyWindow]),
      deadline_timer_(stream_.get_executor()) {}

void HttpConnection::close() {
  disarm_deadline_timer();
  waiting_ = false;
  if (!open_) return;
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
  stream_.close();
  buffer_.clear();
  buffer_.shrink_to_fit();
  open_ = false;
  requests_on_connection_ = 0;
}

asio::awaitable<boost::system::error_code> HttpConnection::connect() {
  stream_.expires_after(timeouts_.connect);
  boost::system::error_code ec;
  if (source_) {
    // Bind the local address first; connect to each resolved address in turn.
    for (const auto& entry : *addresses_) {
      const tcp::endpoint target = entry.endpoint();
      if (target.address().is_v4() != source_->is_v4()) continue;
      stream_.socket().open(target.protocol(), ec);
      if (!ec) stream_.socket().bind(tcp::endpoint(*source_, 0), ec);
      if (!ec) std::tie(ec) = co_await stream_.async_connect(target, use_tuple);
      if (!ec) break;
      stream_.close();
    }
    if (!ec && !stream_.socket().is_open()) ec = asio::error::address_family_not_supported;
  } else {
    tcp::endpoint ep;
    std::tie(ec, ep) = co_await stream_.async_connect(*addresses_, use_tuple);
  }
  if (!ec) {
    stream_.socket().set_option(tcp::no_delay(true), ec);
    // Kernel receive timestamps; failure only costs precision.
    const int on = 1;
    ::setsockopt(stream_.socket().native_handle(), SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
    ec = {};
    open_ = true;
    requests_on_connection_ = 0;
    buffer_.clear();
  }
  co_return ec;
}

asio::awaitable<HttpOutcome> HttpConnection::request(http::verb verb, std::string_view path,
                                                     std::string_view body, ResponseSink& sink,
                                                     std::string_view request_id,
                                                     std::string_view correlation_id) {
  HttpOutcome out;
  out.send_ns = mono_ns();  // replaced by the write time once connected
  if (!open_) {
    out.ec = co_await connect();
    if (out.ec) {
      out.connect_failed = true;
      if (out.ec == beast::error::timeout) {
        out.timeout = TimeoutKind::kConnect;
        out.timeout_limit = timeouts_.connect;
      }
      close();
      co_return out;
    }
  }
  http::request<http::string_body> req{verb, endpoint_->base_path + std::string(path), 11};
  req.set(http::field::host, host_header_);
  req.set(http::field::user_agent, "inferbench");
  if (!request_id.empty()) req.set("X-Request-Id", request_id);
  if (!correlation_id.empty()) req.set("X-Correlation-ID", correlation_id);
  req.keep_alive(true);
  if (!body.empty() || verb == http::verb::post) {
    req.set(http::field::content_type, "application/json");
    req.set(http::field::accept, "text/event-stream, application/json");
    req.body() = std::string(body);
    req.prepare_payload();
  }

  // Deadlines on the monotonic clock: first byte and whole request from the send, idle from
  // each read (kept in deadline_ns_ by the read loop).
  out.send_ns = mono_ns();
  auto after_send = [&](std::chrono::milliseconds limit) {
    return limit.count() > 0 ? out.send_ns + std::chrono::nanoseconds(limit).count() : INT64_MAX;
  };
  const int64_t total_ns = after_send(timeouts_.total);
  const int64_t first_byte_ns = after_send(timeouts_.first_byte);
  const int64_t idle_ns =
      timeouts_.idle.count() > 0 ? std::chrono::nanoseconds(timeouts_.idle).count() : 0;
  // Records which limit ended the exchange, and closes the connection.
  auto fail = [&](boost::system::error_code ec, bool timed_out) {
    out.ec = ec;
    if (timed_out) {
      out.timeout = mono_ns() >= total_ns  ? TimeoutKind::kTotal
                    : out.response_started ? TimeoutKind::kIdle
                                           : TimeoutKind::kFirstByte;
      out.timeout_limit = out.timeout == TimeoutKind::kTotal       ? timeouts_.total
                          : out.timeout == TimeoutKind::kFirstByte ? timeouts_.first_byte
                                                                   : timeouts_.idle;
    }
    close();
  };

  stream_.expires_at(steady_time(std::chrono::nanoseconds(std::min(first_byte_ns, total_ns))));
  auto [wec, wn] = co_await http::async_write(stream_, req, use_tuple);
  ++requests_on_connection_;
  if (wec) {
    fail(wec, wec == beast::error::timeout);
    co_return out;
  }

  stream_.expires_never();  // reads below keep their own deadline
  // Read loop: recvmsg with kernel timestamps into buffer_, Beast's parser fed from it.
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);
  parser.eager(true);
  int64_t rx_ns = mono_ns();  // arrival time of the bytes now in buffer_
  timed_out_ = false;
  for (;;) {
    if (buffer_.size() > 0) {
      parser.get().body().data = body_window_.get();
      parser.get().body().size = kBodyWindow;
      boost::system::error_code ec;
      const size_t used = parser.put(buffer_.data(), ec);
      buffer_.consume(used);
      if (ec == http::error::need_buffer || ec == http::error::need_more) ec = {};
      if (!out.response_started && parser.is_header_done()) {
        out.response_started = true;
        out.status = static_cast<int>(parser.get().result_int());
        sink.on_headers(out.status, rx_ns);
      }
      const size_t got = kBodyWindow - parser.get().body().size;
      if (got > 0) sink.on_body(std::string_view(body_window_.get(), got), rx_ns);
      if (ec) {
        fail(ec, false);
        co_return out;
      }
      if (parser.is_done()) break;
      if (used > 0 || got > 0) continue;  // parse the rest of what is buffered
    }
    // More bytes needed: wait for them until the current deadline.
    int64_t idle_deadline = INT64_MAX;
    if (idle_ns > 0) {
      const std::optional<int64_t> progress = sink.progress_ns();
      idle_deadline = (progress ? *progress : mono_ns()) + idle_ns;
    }
    deadline_ns_ = std::min(total_ns, out.response_started ? idle_deadline : first_byte_ns);
    boost::system::error_code ec = co_await wait_readable();
    if (timed_out_) {
      fail(beast::error::timeout, true);
      co_return out;
    }
    if (ec) {
      fail(ec, false);
      co_return out;
    }
    const ssize_t n = receive(ec, rx_ns);
    if (ec == asio::error::would_block) continue;
    if (ec) {
      fail(ec, false);
      co_return out;
    }
    if (n == 0) {
      // Orderly close: ends a body delimited by the connection, else cuts the message.
      if (out.response_started) {
        parser.put_eof(ec);
        if (!ec && parser.is_done()) break;
      }
      fail(out.response_started ? http::error::partial_message : http::error::end_of_stream, false);
      co_return out;
    }
  }
  waiting_ = false;
  disarm_deadline_timer();
  out.complete = true;
  if (!parser.get().keep_alive()) close();
  co_return out;
}

void HttpConnection::disarm_deadline_timer() {
  // A pending timer would keep the event loop alive; nothing may outlive the request.
  if (timer_armed_) {
    deadline_timer_.cancel();
    timer_armed_ = false;
  }
}

void HttpConnection::arm_deadline_timer() {
  if (deadline_ns_ == INT64_MAX) return;
  if (timer_armed_ && timer_at_ns_ <= deadline_ns_) return;  // fires first, re-arms if needed
  timer_armed_ = true;
  timer_at_ns_ = deadline_ns_;
  deadline_timer_.expires_at(steady_time(std::chrono::nanoseconds(deadline_ns_)));
  deadline_timer_.async_wait([this](boost::system::error_code ec) {
    if (ec) return;  // replaced by an earlier deadline, or the connection is going away
    timer_armed_ = false;
    if (!waiting_) return;
    if (mono_ns() >= deadline_ns_) {
      timed_out_ = true;
      boost::system::error_code ignored;
      stream_.socket().cancel(ignored);
    } else {
      arm_deadline_timer();  // the deadline moved while the timer slept
    }
  });
}

asio::awaitable<boost::system::error_code> HttpConnection::wait_readable() {
  waiting_ = true;
  arm_deadline_timer();
  auto [ec] = co_await stream_.socket().async_wait(tcp::socket::wait_read, use_tuple);
  waiting_ = false;
  co_return ec;
}

ssize_t HttpConnection::receive(boost::system::error_code& ec, int64_t& rx_ns) {
  auto space = buffer_.prepare(std::min<size_t>(kReadBufferMax - buffer_.size(), 4096));
  iovec iov{space.data(), space.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(stream_.socket().native_handle(), &msg, MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  const int64_t now = mono_ns();
  if (n < 0) {
    ec = boost::system::error_code(errno, boost::system::system_category());
    if (errno == EAGAIN || errno == EWOULDBLOCK) ec = asio::error::would_block;
    return n;
  }
  buffer_.commit(static_cast<size_t>(n));
  rx_ns = now;
  ++reads_;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
      timespec ts;
      std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
      // The kernel stamps with CLOCK_REALTIME; move it onto the monotonic clock.
      timespec real_now;
      ::clock_gettime(CLOCK_REALTIME, &real_now);
      const int64_t real_ns = ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
      const int64_t real_now_ns = real_now.tv_sec * 1'000'000'000LL + real_now.tv_nsec;
      const int64_t stamped = now - (real_now_ns - real_ns);
      // Never later than the read, never absurdly early (clock steps): else keep the read time.
      if (stamped <= now && now - stamped < 60'000'000'000LL) {
        rx_ns = stamped;
        ++stamped_reads_;
      }
    }
  }
  // Bytes of one stream cannot arrive before earlier bytes of it; the kernel's stamps of coalesced
  // segments can be a few nanoseconds out of order, so keep them monotonic.
  if (rx_ns < last_rx_ns_) rx_ns = last_rx_ns_;
  last_rx_ns_ = rx_ns;
  return n;
}

namespace {

class CollectSink : public ResponseSink {
 public:
  void on_headers(int status, int64_t) override { status_ = status; }
  void on_body(std::string_view bytes, int64_t) override { body_.append(bytes); }
  int status_ = 0;
  std::string body_;
};

}  // namespace

Expected<SimpleResponse> http_get(const Endpoint& endpoint, std::string_view path,
                                  std::chrono::milliseconds timeout) {
  return http_get(endpoint, path, ClientTimeouts{timeout, timeout, timeout, timeout});
}

Expected<SimpleResponse> http_get(const Endpoint& endpoint, std::string_view path,
                                  const ClientTimeouts& t) {
  auto addresses = resolve(endpoint);
  if (!addresses) return addresses.error();
  asio::io_context io;
  HttpConnection conn(io.get_executor(), endpoint, *addresses, t);
  CollectSink sink;
  std::optional<HttpOutcome> outcome;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        outcome = co_await conn.request(http::verb::get, path, {}, sink);
        conn.close();
      },
      asio::detached);
  // The connection enforces each limit; this bound only guards against a bug there.
  const auto bound = t.total.count() > 0 ? t.total : t.connect + t.first_byte + t.idle;
  io.run_for(bound + std::chrono::milliseconds(100));
  if (!outcome) return Error{fmt::format("GET {}{}: timed out", endpoint.url(), path)};
  if (outcome->timed_out()) {
    const double limit_s = static_cast<double>(outcome->timeout_limit.count()) / 1000.0;
    const char* what = "";
    switch (outcome->timeout) {
      case TimeoutKind::kConnect:
        what = "not connected within {} s (--connect-timeout)";
        break;
      case TimeoutKind::kFirstByte:
        what = "no first byte within {} s (--first-byte-timeout)";
        break;
      case TimeoutKind::kIdle:
        what = "no progress for {} s (--idle-timeout)";
        break;
      case TimeoutKind::kTotal:
      case TimeoutKind::kNone:
        what = "not complete within {} s (--request-timeout)";
        break;
    }
    return Error{fmt::format("GET {}{}: {}", endpoint.url(), path,
                             fmt::format(fmt::runtime(what), limit_s))};
  }
  if (outcome->ec) {
    return Error{fmt::format("GET {}{}: {}", endpoint.url(), path, outcome->ec.message())};
  }
  return SimpleResponse{sink.status_, std::move(sink.body_)};
}

}  // namespace ib::http
