#include "http/client.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/parse.hpp>
#include <fmt/format.h>

#include "core/clock.h"

namespace ib {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

std::string Endpoint::url() const { return fmt::format("http://{}:{}{}", host, port, base_path); }

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

HttpConnection::HttpConnection(asio::any_io_executor executor, Endpoint endpoint,
                               tcp::resolver::results_type addresses, ClientTimeouts timeouts)
    : endpoint_(std::move(endpoint)),
      addresses_(std::move(addresses)),
      timeouts_(timeouts),
      stream_(std::move(executor)) {
  body_buf_.resize(64 * 1024);
}

void HttpConnection::close() {
  if (!open_) return;
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
  stream_.close();
  buffer_.clear();
  open_ = false;
  requests_on_connection_ = 0;
}

asio::awaitable<boost::system::error_code> HttpConnection::connect() {
  stream_.expires_after(timeouts_.connect);
  auto [ec, ep] = co_await stream_.async_connect(addresses_, use_tuple);
  if (!ec) {
    stream_.socket().set_option(tcp::no_delay(true), ec);
    open_ = true;
    requests_on_connection_ = 0;
    buffer_.clear();
  }
  co_return ec;
}

asio::awaitable<HttpOutcome> HttpConnection::request(http::verb verb, std::string_view path,
                                                     std::string_view body, ResponseSink& sink) {
  HttpOutcome out;
  out.send_ns = mono_ns();  // replaced by the write time once connected
  if (!open_) {
    out.ec = co_await connect();
    if (out.ec) {
      out.connect_failed = true;
      out.timed_out = out.ec == beast::error::timeout;
      close();
      co_return out;
    }
  }
  http::request<http::string_body> req{verb, endpoint_.base_path + std::string(path), 11};
  req.set(http::field::host, fmt::format("{}:{}", endpoint_.host, endpoint_.port));
  req.set(http::field::user_agent, "inferbench");
  req.keep_alive(true);
  if (!body.empty() || verb == http::verb::post) {
    req.set(http::field::content_type, "application/json");
    req.set(http::field::accept, "text/event-stream, application/json");
    req.body() = std::string(body);
    req.prepare_payload();
  }

  stream_.expires_after(timeouts_.idle);
  out.send_ns = mono_ns();
  auto [wec, wn] = co_await http::async_write(stream_, req, use_tuple);
  ++requests_on_connection_;
  if (wec) {
    out.ec = wec;
    out.timed_out = wec == beast::error::timeout;
    close();
    co_return out;
  }

  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);
  auto [hec, hn] = co_await http::async_read_header(stream_, buffer_, parser, use_tuple);
  if (hec) {
    out.ec = hec;
    out.timed_out = hec == beast::error::timeout;
    close();
    co_return out;
  }
  out.response_started = true;
  out.status = static_cast<int>(parser.get().result_int());
  sink.on_headers(out.status, mono_ns());

  while (!parser.is_done()) {
    parser.get().body().data = body_buf_.data();
    parser.get().body().size = body_buf_.size();
    stream_.expires_after(timeouts_.idle);
    auto [ec, n] = co_await http::async_read_some(stream_, buffer_, parser, use_tuple);
    if (ec == http::error::need_buffer) ec = {};
    const size_t got = body_buf_.size() - parser.get().body().size;
    if (got > 0) sink.on_body(std::string_view(body_buf_.data(), got), mono_ns());
    if (ec) {
      // A server closing the connection ends a body without length: that is the message end.
      if (ec == http::error::end_of_stream && parser.is_done()) break;
      out.ec = ec;
      out.timed_out = ec == beast::error::timeout;
      close();
      co_return out;
    }
  }
  out.complete = true;
  if (!parser.get().keep_alive()) close();
  co_return out;
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
  auto addresses = resolve(endpoint);
  if (!addresses) return addresses.error();
  asio::io_context io;
  ClientTimeouts t{timeout, timeout};
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
  io.run_for(timeout + std::chrono::milliseconds(100));
  if (!outcome) return Error{fmt::format("GET {}{}: timed out", endpoint.url(), path)};
  if (outcome->ec) {
    return Error{fmt::format("GET {}{}: {}", endpoint.url(), path, outcome->ec.message())};
  }
  return SimpleResponse{sink.status_, std::move(sink.body_)};
}

}  // namespace ib
