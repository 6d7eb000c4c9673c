// HttpConnection's own read and write path against raw loopback servers: a request body far larger
// than the socket buffer, a response that arrives one byte per segment (chunk headers split across
// reads), a keep-alive connection the server closed while it was idle, close() under a request in
// flight, and concurrent exchanges on one io_context.
#include "http/client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace ib::http {
namespace {

namespace asio = boost::asio;
namespace verb_ns = boost::beast::http;

// Accepts connections on loopback and runs `serve(fd)` for each on a thread of its own.
class RawServer {
 public:
  explicit RawServer(std::function<void(int)> serve) : serve_(std::move(serve)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::listen(fd_, 64);
    thread_ = std::thread([this] {
      for (;;) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        ++accepted_;
        conns_.emplace_back([this, c] {
          serve_(c);
          ::close(c);
        });
      }
    });
  }
  ~RawServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
    for (auto& t : conns_) t.join();
  }
  Endpoint endpoint() const { return Endpoint{"127.0.0.1", port_, ""}; }
  int accepted() const { return accepted_.load(); }

 private:
  std::function<void(int)> serve_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<int> accepted_{0};
  std::thread thread_;
  std::vector<std::thread> conns_;
};

// Reads a request head and its Content-Length body; returns the body size (-1 on EOF first).
long read_request(int fd) {
  std::string data;
  char buf[65536];
  size_t head_end = std::string::npos;
  while (head_end == std::string::npos) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return -1;
    data.append(buf, static_cast<size_t>(n));
    head_end = data.find("\r\n\r\n");
  }
  long length = 0;
  if (auto at = data.find("Content-Length: "); at != std::string::npos && at < head_end) {
    length = std::stol(data.substr(at + 16));
  }
  long have = static_cast<long>(data.size() - head_end - 4);
  while (have < length) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return -1;
    have += n;
  }
  return length;
}

void send_all(int fd, std::string_view s) {
  while (!s.empty()) {
    const ssize_t n = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
    if (n <= 0) return;
    s.remove_prefix(static_cast<size_t>(n));
  }
}

class CollectSink : public ResponseSink {
 public:
  void on_headers(int status, int64_t) override { status_ = status; }
  void on_body(std::string_view bytes, int64_t t) override {
    body.append(bytes);
    times.push_back(t);
  }
  int status_ = 0;
  std::string body;
  std::vector<int64_t> times;
};

struct Client {
  Client(const Endpoint& e, ClientTimeouts t = {})
      : endpoint(e),
        addresses(*resolve(endpoint)),
        conn(io.get_executor(), endpoint, addresses, t) {}
  // Runs one request to completion on the io_context.
  HttpOutcome run(std::string_view body, CollectSink& sink) {
    std::optional<HttpOutcome> out;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          out = co_await conn.request(verb_ns::verb::post, "/v1/completions", body, sink);
        },
        asio::detached);
    io.restart();
    io.run_for(std::chrono::seconds(30));
    EXPECT_TRUE(out.has_value()) << "the request did not complete";
    return out.value_or(HttpOutcome{});
  }
  asio::io_context io{1};
  Endpoint endpoint;
  asio::ip::tcp::resolver::results_type addresses;
  HttpConnection conn;
};

TEST(HttpConnection, WritesABodyMuchLargerThanTheSocketBuffer) {
  // The server reads nothing for 200 ms: the client's send buffer fills and the rest of the body
  // goes out as the socket becomes writable again.
  RawServer server([](int fd) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const long got = read_request(fd);
    const std::string body = std::to_string(got);
    send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                     body);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  });
  Client client(server.endpoint());
  const std::string body(8 << 20, 'x');
  CollectSink sink;
  const HttpOutcome out = client.run(body, sink);
  EXPECT_FALSE(out.ec) << out.ec.message();
  EXPECT_TRUE(out.complete);
  EXPECT_EQ(out.status, 200);
  EXPECT_EQ(sink.body, std::to_string(body.size()));
}

TEST(HttpConnection, AssemblesAResponseThatArrivesOneByteAtATime) {
  const std::string events = "data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: [DONE]\n\n";
  std::string chunked;
  for (size_t i = 0; i < events.size(); i += 16) {
    const std::string part = events.substr(i, 16);
    char size[16];
    std::snprintf(size, sizeof size, "%zx\r\n", part.size());
    chunked += size + part + "\r\n";
  }
  chunked += "0\r\n\r\n";
  const std::string response =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
      chunked;
  RawServer server([&](int fd) {
    read_request(fd);
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    for (char c : response) {
      send_all(fd, std::string_view(&c, 1));
      std::this_thread::sleep_for(std::chrono::microseconds(300));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  });
  Client client(server.endpoint());
  CollectSink sink;
  const HttpOutcome out = client.run("{}", sink);
  EXPECT_FALSE(out.ec) << out.ec.message();
  EXPECT_TRUE(out.complete);
  EXPECT_EQ(sink.body, events);
  // Bytes arrived in many reads, each timed, in order.
  EXPECT_GT(client.conn.reads(), 20u);
  for (size_t i = 1; i < sink.times.size(); ++i) EXPECT_LE(sink.times[i - 1], sink.times[i]);
}

TEST(HttpConnection, KeepAliveConnectionClosedByTheServerFailsBeforeAnyResponseByte) {
  // Answers one request, then closes the connection while it is idle.
  RawServer server([](int fd) {
    read_request(fd);
    send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  });
  Client client(server.endpoint());
  CollectSink first;
  EXPECT_TRUE(client.run("{}", first).complete);
  EXPECT_TRUE(client.conn.reused());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the server has closed by now
  CollectSink second;
  const HttpOutcome out = client.run("{}", second);
  // What the runner retries on a fresh connection: an error before any response byte.
  EXPECT_TRUE(out.ec);
  EXPECT_FALSE(out.response_started);
  EXPECT_FALSE(out.connect_failed);
  EXPECT_TRUE(out.reset()) << out.ec.message();
  EXPECT_FALSE(client.conn.is_open());
  // A fresh connection serves the next request.
  CollectSink third;
  const HttpOutcome again = client.run("{}", third);
  EXPECT_TRUE(again.complete);
  EXPECT_EQ(third.body, "ok");
  EXPECT_EQ(server.accepted(), 2);
}

TEST(HttpConnection, CloseEndsARequestInFlight) {
  RawServer server([](int fd) {
    read_request(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // never answers in time
  });
  Client client(server.endpoint());
  asio::steady_timer timer(client.io, std::chrono::milliseconds(100));
  timer.async_wait([&](boost::system::error_code) { client.conn.close(); });
  CollectSink sink;
  const HttpOutcome out = client.run("{}", sink);
  EXPECT_EQ(out.ec, asio::error::operation_aborted);
  EXPECT_FALSE(out.complete);
  EXPECT_FALSE(out.timed_out());
  EXPECT_FALSE(client.conn.is_open());
}

TEST(HttpConnection, ManyExchangesShareOneIoContext) {
  // Each connection gets an event stream of 20 events, 2 ms apart.
  RawServer server([](int fd) {
    read_request(fd);
    send_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n");
    for (int i = 0; i < 20; ++i) {
      send_all(fd, "data: {\"i\":" + std::to_string(i) + "}\n\n");
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  const Endpoint endpoint = server.endpoint();
  auto addresses = *resolve(endpoint);
  asio::io_context io{1};
  constexpr int kConns = 50;
  std::vector<std::unique_ptr<HttpConnection>> conns;
  std::vector<CollectSink> sinks(kConns);
  std::vector<std::optional<HttpOutcome>> outs(kConns);
  for (int i = 0; i < kConns; ++i) {
    conns.push_back(std::make_unique<HttpConnection>(io.get_executor(), endpoint, addresses));
    asio::co_spawn(
        io,
        [&, i]() -> asio::awaitable<void> {
          outs[i] = co_await conns[i]->request(verb_ns::verb::post, "/", "{}", sinks[i]);
        },
        asio::detached);
  }
  io.run_for(std::chrono::seconds(30));
  for (int i = 0; i < kConns; ++i) {
    ASSERT_TRUE(outs[i].has_value()) << i;
    EXPECT_TRUE(outs[i]->complete) << i << ": " << outs[i]->ec.message();
    std::string expected;
    for (int k = 0; k < 20; ++k) expected += "data: {\"i\":" + std::to_string(k) + "}\n\n";
    EXPECT_EQ(sinks[i].body, expected) << i;
    EXPECT_FALSE(conns[i]->is_open()) << "Connection: close";
  }
  EXPECT_TRUE(io.stopped()) << "nothing may keep the io_context alive after the exchanges";
}

}  // namespace
}  // namespace ib::http
