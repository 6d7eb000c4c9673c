// send_with_retry against an in-process server whose keep-alive timeout closes idle connections:
// a request sent on such a stale connection fails before any response byte and is sent once more
// on a fresh connection; never beyond max_retries, never while the run is being cut.
#include "load/retry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "http/server.h"
#include "http/test_server_thread.h"

namespace ib::load {
namespace {

namespace asio = boost::asio;

// A chat stream of one content event, with usage (vLLM's shape, ids shortened).
constexpr std::string_view kStream =
    "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":"
    "{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n\n"
    "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":"
    "{\"prompt_tokens\":3,\"total_tokens\":4,\"completion_tokens\":1}}\n\n"
    "data: [DONE]\n\n";

http::HttpServerOptions closes_idle_connections() {
  http::HttpServerOptions o;
  o.keep_alive_timeout = std::chrono::milliseconds(50);
  return o;
}

// Streams kStream for every request and counts the requests it served.
class StreamServer : public testing::ServerOnThread<http::HttpServer> {
 public:
  explicit StreamServer(std::atomic<int>* served)
      : ServerOnThread(
            [](http::HttpServer& s) { return s.listen("127.0.0.1", 0); },
            [served](const http::HttpRequest&, http::ResponseWriter& w) -> asio::awaitable<void> {
              ++*served;
              if (!co_await w.begin_stream()) co_return;
              (void)co_await w.end_stream(kStream);
            },
            closes_idle_connections()) {}
};

// One keep-alive connection to the server, driven by an io_context of its own.
struct Client {
  explicit Client(uint16_t port)
      : endpoint{"127.0.0.1", port, ""},
        addresses(*http::resolve(endpoint)),
        conn(io.get_executor(), endpoint, addresses, http::ClientTimeouts{}) {}
  // Runs send_with_retry to completion; returns whether it cancelled the request.
  bool send(metrics::RequestRecord& rec, const RetriedRequest& request) {
    std::optional<bool> cancelled;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          cancelled = co_await send_with_retry(conn, response, rec, request);
        },
        asio::detached);
    io.restart();
    io.run_for(std::chrono::seconds(30));
    EXPECT_TRUE(cancelled.has_value()) << "the request did not complete";
    return cancelled.value_or(false);
  }
  asio::io_context io{1};
  http::Endpoint endpoint;
  asio::ip::tcp::resolver::results_type addresses;
  http::HttpConnection conn;
  StreamingResponse response;
};

RetriedRequest chat_request() {
  RetriedRequest r;
  r.path = "/v1/chat/completions";
  r.body = "{}";
  r.request_id = "ib-test-0";
  return r;
}

// Sends a first request, then waits until the server has closed the idle connection (its
// keep-alive timeout), polling its open connections with a generous deadline.
void make_connection_stale(StreamServer& server, Client& client, const RetriedRequest& request) {
  metrics::RequestRecord first;
  EXPECT_FALSE(client.send(first, request));
  ASSERT_TRUE(first.ok()) << first.error;
  EXPECT_EQ(first.retries, 0);
  EXPECT_TRUE(client.conn.reused());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (server.server().open_connections() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(server.server().open_connections(), 0u)
      << "the server never closed the idle connection";
}

TEST(SendWithRetry, AStaleKeepAliveConnectionIsRetriedOnceOnAFreshOne) {
  std::atomic<int> served{0};
  StreamServer server(&served);
  Client client(server.port());
  const RetriedRequest request = chat_request();
  make_connection_stale(server, client, request);
  metrics::RequestRecord rec;
  EXPECT_FALSE(client.send(rec, request));
  ASSERT_TRUE(rec.ok()) << rec.error;
  EXPECT_EQ(rec.retries, 1);
  EXPECT_EQ(rec.completion_tokens, 1);
  ASSERT_EQ(rec.content_ns.size(), 1u);
  EXPECT_GE(rec.content_ns[0], rec.send_ns);
  EXPECT_GE(rec.done_ns, rec.content_ns[0]);
  EXPECT_EQ(served.load(), 2);
}

TEST(SendWithRetry, NoRetryBeyondMaxRetries) {
  std::atomic<int> served{0};
  StreamServer server(&served);
  Client client(server.port());
  RetriedRequest request = chat_request();
  request.max_retries = 0;
  make_connection_stale(server, client, request);
  metrics::RequestRecord rec;
  EXPECT_FALSE(client.send(rec, request));
  EXPECT_FALSE(rec.ok());
  EXPECT_NE(rec.failure, metrics::FailureCause::kCancelled);
  EXPECT_EQ(rec.retries, 0);
  EXPECT_EQ(served.load(), 1);
}

TEST(SendWithRetry, ACutRunCancelsTheRequestInsteadOfRetrying) {
  std::atomic<int> served{0};
  StreamServer server(&served);
  Client client(server.port());
  RetriedRequest request = chat_request();
  make_connection_stale(server, client, request);
  request.cut_reason = [] { return std::string_view("cut at the end of the grace period"); };
  metrics::RequestRecord rec;
  EXPECT_TRUE(client.send(rec, request));
  EXPECT_EQ(rec.failure, metrics::FailureCause::kCancelled);
  EXPECT_EQ(rec.error, "cut at the end of the grace period");
  EXPECT_EQ(rec.retries, 0);
  EXPECT_GT(rec.done_ns, 0);
  EXPECT_EQ(served.load(), 1);
}

}  // namespace
}  // namespace ib::load
