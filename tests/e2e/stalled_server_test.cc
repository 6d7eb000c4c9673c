// Servers that stall: an event stream of only keep-alive comments must end in an idle timeout
// (progress is content, not bytes), and the /v1/models probe honours the connect and first-byte
// limits instead of a fixed one.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "e2e_util.h"

namespace ib::e2e {
namespace {

// A loopback server that answers every connection with `respond` on a thread of its own.
class RawServer {
 public:
  enum class Mode { kPingForever, kSilent };
  explicit RawServer(Mode mode) : mode_(mode) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::listen(fd_, 16);
    thread_ = std::thread([this] { serve(); });
  }
  ~RawServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
    for (auto& t : conns_) t.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  void serve() {
    while (!stop_) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      conns_.emplace_back([this, c] { answer(c); });
    }
  }
  void answer(int c) {
    char buf[4096];
    (void)::recv(c, buf, sizeof buf, 0);  // the request (small)
    if (mode_ == Mode::kPingForever) {
      const std::string head =
          "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
      (void)::send(c, head.data(), head.size(), MSG_NOSIGNAL);
      // At most 20 s of pings: the test's bound, far above the idle limit it sets.
      for (int i = 0; i < 400 && !stop_; ++i) {
        if (::send(c, ": ping\n\n", 8, MSG_NOSIGNAL) < 0) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    } else {
      for (int i = 0; i < 400 && !stop_; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    ::close(c);
  }

  Mode mode_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<std::thread> conns_;
};

TEST(StalledServer, PingOnlyStreamEndsInAnIdleTimeout) {
  TempDir dir;
  RawServer server(RawServer::Mode::kPingForever);
  const fs::path out = dir.path() / "r.json";
  auto r = run_inferbench({"bench", "--endpoint", server.url(), "--model", "m", "--isl", "8",
                           "--osl", "4", "--num-prompts", "1", "--concurrency", "1",
                           "--idle-timeout", "1", "--max-retries", "0", "--no-server-metrics",
                           "--gpu-power", "off", "--output", out.string()},
                          dir.path() / "bench.log", std::chrono::seconds(60));
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_NE(r.exit.code, 0) << r.output;
  // The request ended on the idle limit, not on the server closing after 20 s of pings (that
  // would be a stream without [DONE], another cause).
  auto j = read_json(out);
  const auto& failures = j.at("failures").as_object();
  ASSERT_TRUE(failures.contains("idle_timeout")) << boost::json::serialize(failures);
  EXPECT_EQ(failures.at("idle_timeout").to_number<int64_t>(), 1);
  EXPECT_EQ(failures.size(), 1u) << boost::json::serialize(failures);
}

TEST(StalledServer, ModelsProbeHonoursTheFirstByteTimeout) {
  TempDir dir;
  RawServer server(RawServer::Mode::kSilent);
  auto r = run_inferbench({"bench", "--endpoint", server.url(), "--isl", "8", "--osl", "4",
                           "--num-prompts", "1", "--first-byte-timeout", "1",
                           "--no-server-metrics", "--gpu-power", "off"},
                          dir.path() / "bench.log", std::chrono::seconds(60));
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_NE(r.exit.code, 0) << r.output;
  EXPECT_NE(r.output.find("/v1/models: no first byte within 1 s (--first-byte-timeout)"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace ib::e2e
