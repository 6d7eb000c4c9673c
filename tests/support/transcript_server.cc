#include "support/transcript_server.h"

#include <fmt/format.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <mutex>
#include <optional>
#include <thread>

#include "core/clock.h"
#include "core/strings.h"
#include "http/awaitable.h"

namespace ib::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// ---- Script -------------------------------------------------------------------------------

Script& Script::write(std::string bytes, Ms delay) {
  steps_.push_back(Step{Step::Kind::kWrite, std::move(bytes), delay});
  return *this;
}

Script& Script::chunk(std::string_view payload, Ms delay) {
  return write(http_chunk(payload), delay);
}

Script& Script::end_chunks(Ms delay) {
  return write("0\r\n\r\n", delay);
}

Script& Script::write_bytewise(std::string_view bytes, Ms delay) {
  for (size_t i = 0; i < bytes.size(); ++i) write(std::string(1, bytes[i]), i == 0 ? delay : Ms{0});
  return *this;
}

Script& Script::chunk_bytewise(std::string_view payload, Ms delay) {
  for (size_t i = 0; i < payload.size(); ++i) chunk(payload.substr(i, 1), i == 0 ? delay : Ms{0});
  return *this;
}

Script& Script::stall(Ms duration) {
  steps_.push_back(Step{Step::Kind::kStall, {}, duration});
  return *this;
}

Script& Script::close(Ms delay) {
  steps_.push_back(Step{Step::Kind::kClose, {}, delay});
  return *this;
}

Script& Script::reset(Ms delay) {
  steps_.push_back(Step{Step::Kind::kReset, {}, delay});
  return *this;
}

Script& Script::hang() {
  steps_.push_back(Step{Step::Kind::kHang, {}, Ms{0}});
  return *this;
}

std::string http_chunk(std::string_view payload) {
  return fmt::format("{:x}\r\n{}\r\n", payload.size(), payload);
}

std::string response_head(int status, std::string_view reason,
                          const std::vector<std::pair<std::string, std::string>>& headers) {
  std::string s = fmt::format("HTTP/1.1 {} {}\r\n", status, reason);
  for (const auto& [k, v] : headers) s += fmt::format("{}: {}\r\n", k, v);
  s += "\r\n";
  return s;
}

std::string full_response(int status, std::string_view reason,
                          std::vector<std::pair<std::string, std::string>> headers,
                          std::string_view body) {
  headers.emplace_back("content-length", std::to_string(body.size()));
  return response_head(status, reason, headers) + std::string(body);
}

std::string RequestInfo::header(std::string_view name) const {
  const std::string want = lower(name);
  for (const auto& [k, v] : headers) {
    if (lower(k) == want) return v;
  }
  return {};
}

// ---- Server -------------------------------------------------------------------------------

struct TranscriptServer::Impl {
  // Declared first: destroyed last, after everything that refers to it.
  asio::io_context io{1};
  std::optional<tcp::acceptor> acceptor;
  Responder responder;
  std::thread thread;
  uint16_t port = 0;

  mutable std::mutex mu;
  std::vector<Exchange> exchanges;
  int connections = 0;

  explicit Impl(Responder r) : responder(std::move(r)) {
    acceptor.emplace(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    port = acceptor->local_endpoint().port();
    asio::co_spawn(io, accept_loop(), asio::detached);
    thread = std::thread([this] {
      auto guard = asio::make_work_guard(io);
      io.run();
    });
  }

  ~Impl() {
    io.stop();
    if (thread.joinable()) thread.join();
    // Pending coroutines (and their sockets) are destroyed with `io`, which outlives `acceptor`.
    acceptor.reset();
  }

  asio::awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, sock] = co_await acceptor->async_accept(use_tuple);
      if (ec) {
        if (ec == asio::error::operation_aborted) co_return;
        continue;
      }
      // Connections are numbered when their first scripted request arrives, so that the
      // client's metrics scrapes (their own connections) do not shift the numbers.
      asio::co_spawn(io, serve(std::move(sock), -1), asio::detached);
    }
  }

  // Reads and discards until the peer closes (or the server stops).
  static asio::awaitable<void> drain(tcp::socket& sock) {
    char buf[4096];
    for (;;) {
      auto [ec, n] = co_await sock.async_read_some(asio::buffer(buf), use_tuple);
      if (ec) co_return;
    }
  }

  asio::awaitable<void> serve(tcp::socket sock, int conn) {
    boost::system::error_code ec;
    sock.set_option(tcp::no_delay(true), ec);
    beast::flat_buffer buf;
    asio::steady_timer timer(io);
    for (int n = 0;; ++n) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(64u << 20);
      auto [rec, nread] = co_await http::async_read(sock, buf, parser, use_tuple);
      if (rec) co_return;  // the client closed (or sent garbage): nothing more to answer
      const auto& msg = parser.get();
      // The client scrapes GET /metrics during a point; transcript servers export none, like a
      // server without Prometheus: 404, not recorded, not scripted.
      if (msg.method() == http::verb::get && msg.target() == "/metrics") {
        static constexpr std::string_view k404 =
            "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        co_await asio::async_write(sock, asio::buffer(k404.data(), k404.size()), use_tuple);
        sock.shutdown(tcp::socket::shutdown_send, ec);
        co_return;
      }
      if (conn < 0) {
        std::lock_guard lock(mu);
        conn = connections++;
      }
      RequestInfo info;
      info.connection = conn;
      info.on_connection = n;
      info.method = std::string(msg.method_string());
      info.target = std::string(msg.target());
      for (const auto& f : msg) {
        info.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
      }
      info.body = msg.body();
      info.received_ns = mono_ns();
      size_t slot = 0;
      {
        std::lock_guard lock(mu);
        info.index = static_cast<int>(exchanges.size());
        slot = exchanges.size();
        exchanges.push_back(Exchange{info, {}, false, {}});
      }
      const Script script = responder(info);
      for (const Step& step : script.steps()) {
        if (step.delay.count() > 0) {
          timer.expires_after(step.delay);
          co_await timer.async_wait(use_tuple);
        }
        {
          std::lock_guard lock(mu);
          exchanges[slot].step_ns.push_back(mono_ns());
        }
        switch (step.kind) {
          case Step::Kind::kWrite: {
            auto [wec, wn] = co_await asio::async_write(sock, asio::buffer(step.bytes), use_tuple);
            if (wec) {
              std::lock_guard lock(mu);
              exchanges[slot].write_error = wec.message();
              co_return;
            }
            break;
          }
          case Step::Kind::kStall:
            break;
          case Step::Kind::kClose: {
            sock.shutdown(tcp::socket::shutdown_send, ec);
            {
              std::lock_guard lock(mu);
              exchanges[slot].finished = true;
            }
            co_await drain(sock);
            sock.close(ec);
            co_return;
          }
          case Step::Kind::kReset: {
            sock.set_option(asio::socket_base::linger(true, 0), ec);
            sock.close(ec);
            std::lock_guard lock(mu);
            exchanges[slot].finished = true;
            co_return;
          }
          case Step::Kind::kHang: {
            {
              std::lock_guard lock(mu);
              exchanges[slot].finished = true;
            }
            co_await drain(sock);
            sock.close(ec);
            co_return;
          }
        }
      }
      std::lock_guard lock(mu);
      exchanges[slot].finished = true;
    }
  }
};

TranscriptServer::TranscriptServer(Responder responder)
    : impl_(std::make_unique<Impl>(std::move(responder))) {}

TranscriptServer::TranscriptServer(Script script)
    : TranscriptServer(Responder([s = std::move(script)](const RequestInfo&) { return s; })) {}

TranscriptServer::~TranscriptServer() = default;

uint16_t TranscriptServer::port() const {
  return impl_->port;
}

std::string TranscriptServer::url() const {
  return fmt::format("http://127.0.0.1:{}", port());
}

std::vector<Exchange> TranscriptServer::exchanges() const {
  std::lock_guard lock(impl_->mu);
  return impl_->exchanges;
}

int TranscriptServer::connections() const {
  std::lock_guard lock(impl_->mu);
  return impl_->connections;
}

}  // namespace ib::test
