// Test-only: a blocking loopback HTTP client built on async operations with a time limit per
// step, so a broken server fails a test instead of hanging it. Used by the http and sim tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

namespace ib::testing {

struct TestResponse {
  boost::system::error_code ec;
  int status = 0;
  boost::beast::http::fields headers;
  std::string body;
  std::vector<std::size_t> chunk_sizes;  // sizes of the chunks, for a chunked body
};

class TestClient {
 public:
  using Response = TestResponse;
  using error_code = boost::system::error_code;
  using Headers = std::vector<std::pair<std::string, std::string>>;

  /// Bound on one client step; reached only when the server is broken.
  static constexpr std::chrono::seconds kStepLimit{10};

  /// Connects to 127.0.0.1:port; throws on failure.
  explicit TestClient(uint16_t port) : socket_(io_) {
    boost::asio::ip::tcp::endpoint endpoint(boost::asio::ip::make_address("127.0.0.1"), port);
    error_code ec = run([&](auto handler) { socket_.async_connect(endpoint, handler); });
    if (ec) throw boost::system::system_error(ec, "connect");
  }

  error_code send_raw(std::string_view bytes) {
    return run([&](auto handler) {
      boost::asio::async_write(socket_, boost::asio::buffer(bytes), handler);
    });
  }

  error_code send(boost::beast::http::verb verb, std::string_view target, std::string body = {},
                  const Headers& headers = {}, int version = 11) {
    namespace http = boost::beast::http;
    http::request<http::string_body> req{verb, target, version};
    req.set(http::field::host, "127.0.0.1");
    for (const auto& [name, value] : headers) req.set(name, value);
    if (!body.empty()) req.set(http::field::content_type, "application/json");
    req.body() = std::move(body);
    req.prepare_payload();
    return run([&](auto handler) { http::async_write(socket_, req, handler); });
  }

  /// Reads one whole response (recording chunk sizes of a chunked body).
  Response read() {
    namespace http = boost::beast::http;
    Response r;
    http::response_parser<http::string_body> parser;
    parser.body_limit(16u << 20);
    auto on_chunk_header = [&r](std::uint64_t size, std::string_view, error_code&) {
      if (size > 0) r.chunk_sizes.push_back(static_cast<std::size_t>(size));
    };
    parser.on_chunk_header(on_chunk_header);
    r.ec = run([&](auto handler) { http::async_read(socket_, buffer_, parser, handler); });
    if (!r.ec) {
      auto message = parser.release();
      r.status = static_cast<int>(message.result_int());
      r.headers = message.base();
      r.body = std::move(message.body());
    }
    return r;
  }

  Response request(boost::beast::http::verb verb, std::string_view target, std::string body = {},
                   const Headers& headers = {}) {
    Response r;
    r.ec = send(verb, target, std::move(body), headers);
    if (r.ec) return r;
    return read();
  }

  Response post(std::string_view target, std::string body) {
    return request(boost::beast::http::verb::post, target, std::move(body));
  }

  /// Reads the response header only (the body of a stream follows later).
  Response read_header() {
    namespace http = boost::beast::http;
    Response r;
    header_parser_.emplace();
    r.ec = run(
        [&](auto handler) { http::async_read_header(socket_, buffer_, *header_parser_, handler); });
    if (!r.ec) r.status = static_cast<int>(header_parser_->get().result_int());
    return r;
  }

  /// Reads whatever arrives next (at least one byte).
  std::string read_some() {
    std::string data(4096, '\0');
    std::size_t n = 0;
    run([&](auto handler) {
      socket_.async_read_some(boost::asio::buffer(data),
                              [&n, handler](error_code ec, std::size_t got) mutable {
                                n = got;
                                handler(ec);
                              });
    });
    data.resize(n);
    return data;
  }

  /// Reads until the server closes the connection; returns what arrived and how reading ended.
  std::pair<std::string, error_code> read_to_end() {
    std::string data(buffer_.size(), '\0');
    boost::asio::buffer_copy(boost::asio::buffer(data), buffer_.data());
    buffer_.consume(buffer_.size());
    std::string rest;
    error_code ec = run([&](auto handler) {
      boost::asio::async_read(socket_, boost::asio::dynamic_buffer(rest), handler);
    });
    return {data + rest, ec};
  }

  /// Waits until the server closes the connection; returns how reading ended.
  error_code wait_closed() { return read_to_end().second; }

  void close() {
    error_code ignored;
    socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

 private:
  template <class Initiate>
  error_code run(Initiate&& initiate) {
    bool done = false;
    error_code result;
    initiate([&](error_code ec, auto&&...) {
      result = ec;
      done = true;
    });
    io_.restart();
    io_.run_for(kStepLimit);
    if (!done) {
      error_code ignored;
      socket_.close(ignored);
      io_.restart();
      io_.run();
      return boost::asio::error::timed_out;
    }
    return result;
  }

  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::response_parser<boost::beast::http::empty_body>>
      header_parser_;
};

}  // namespace ib::testing
