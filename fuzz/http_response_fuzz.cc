// HTTP responses as the load generator's client reads them: a real HttpConnection sends a request to
// a loopback server that answers with the fuzz input and closes, and the response goes through the
// same sink a benchmark uses (SSE framing, chunk decoding, failure classification). Status lines,
// headers, chunked encoding, content lengths, truncation: whatever the bytes are, the exchange must
// end (complete or failed) with no crash, no sanitizer report and bounded memory.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "fuzz_util.h"
#include "http/client.h"
#include "load/stream_request.h"
#include "metrics/record.h"

namespace {

namespace asio = boost::asio;

// One listening socket; each accepted connection gets the current response, then EOF.
class Server {
 public:
  Server() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) std::abort();
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::listen(fd_, 16);
    thread_ = std::thread([this] { serve(); });
    thread_.detach();  // lives as long as the fuzzing process
  }
  void set_response(std::string_view r) {
    std::lock_guard lock(mu_);
    response_.assign(r);
  }
  uint16_t port() const { return port_; }

 private:
  void serve() {
    for (;;) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      // Read the request head (the client sends it in one write; its body is small).
      std::string head;
      char buf[4096];
      while (head.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        head.append(buf, static_cast<size_t>(n));
      }
      std::string r;
      {
        std::lock_guard lock(mu_);
        r = response_;
      }
      std::string_view s = r;
      while (!s.empty()) {
        const ssize_t n = ::send(c, s.data(), s.size(), MSG_NOSIGNAL);
        if (n <= 0) break;
        s.remove_prefix(static_cast<size_t>(n));
      }
      ::shutdown(c, SHUT_WR);
      ::close(c);
    }
  }
  int fd_ = -1;
  uint16_t port_ = 0;
  std::mutex mu_;
  std::string response_;
  std::thread thread_;
};

// Outside the extern "C" entry point: g++ 12 gives a coroutine lambda inside an extern "C"
// function the same assembler name twice.
void run_one(std::string_view response) {
  static Server server;
  static asio::io_context io{1};
  static const ib::http::Endpoint endpoint{"127.0.0.1", server.port(), ""};
  static const auto addresses = *ib::http::resolve(endpoint);
  server.set_response(response);

  ib::http::ClientTimeouts timeouts;
  timeouts.connect = std::chrono::milliseconds(2000);
  timeouts.first_byte = std::chrono::milliseconds(2000);
  timeouts.idle = std::chrono::milliseconds(2000);
  timeouts.total = std::chrono::milliseconds(5000);
  ib::http::HttpConnection conn(io.get_executor(), endpoint, addresses, timeouts);
  ib::metrics::RequestRecord record;
  ib::load::StreamingResponse sink;
  sink.reset(&record);
  std::optional<ib::http::HttpOutcome> out;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        out = co_await conn.request(boost::beast::http::verb::post, "/v1/completions",
                                    R"({"prompt":"x","stream":true})", sink);
      },
      asio::detached);
  io.restart();
  io.run();
  if (!out) std::abort();  // the exchange never ended
  sink.finish(*out);
  // A success has a 200 status and at least one content event (docs/metrics.md), whatever the bytes.
  if (record.failure == ib::metrics::FailureCause::kNone &&
      (out->status != 200 || record.content_ns.empty())) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  run_one(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
