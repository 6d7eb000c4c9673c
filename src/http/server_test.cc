#include "http/server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "http/test_client.h"
#include "http/test_server_thread.h"

namespace ib::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using namespace std::chrono_literals;

// Generous bound on how long any single client step may take; only reached when the server is
// broken (the step then fails instead of hanging the test).
constexpr auto kStepLimit = 10s;

using testing::TestClient;

// The HTTP server on its own thread, listening on a free loopback port.
class ServerThread : public testing::ServerOnThread<HttpServer> {
 public:
  explicit ServerThread(HttpHandler handler, HttpServerOptions options = {})
      : ServerOnThread([](HttpServer& s) { return s.listen("127.0.0.1", 0); }, std::move(handler),
                       std::move(options)) {}
};

// Polls `flag` until it is set or the step limit passes.
bool eventually(const std::atomic<bool>& flag) {
  auto deadline = std::chrono::steady_clock::now() + kStepLimit;
  while (!flag.load() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  return flag.load();
}

asio::awaitable<void> sleep_for(std::chrono::milliseconds d) {
  asio::steady_timer timer(co_await asio::this_coro::executor, d);
  co_await timer.async_wait(asio::use_awaitable);
}

// Routes shared by most tests.
struct TestRoutes {
  std::atomic<bool> stream_ended{false};
  std::atomic<bool> slow_started{false};
  std::atomic<bool> slow_cancelled{false};
  HttpRouter router;

  TestRoutes() {
    router.add("GET", "/hello", [](const HttpRequest&, ResponseWriter& w) -> asio::awaitable<void> {
      co_await w.send(200, "text/plain", "hello");
    });
    router.add("POST", "/echo",
               [](const HttpRequest& r, ResponseWriter& w) -> asio::awaitable<void> {
                 HttpResponse res;
                 res.content_type = "application/octet-stream";
                 res.body = r.body;
                 res.headers.emplace_back("X-Path", r.path);
                 res.headers.emplace_back("X-Test", std::string(r.header("x-test")));
                 co_await w.send(std::move(res));
               });
    router.add(
        "GET", "/stream", [](const HttpRequest&, ResponseWriter& w) -> asio::awaitable<void> {
          if (!co_await w.begin_stream()) co_return;
          for (std::string_view part : {"data: a\n\n", "data: bb\n\n", "", "data: [DONE]\n\n"}) {
            if (!co_await w.write_chunk(part)) co_return;
          }
          co_await w.end_stream();
        });
    // Streams until the client is gone: a write fails, or the server cancels the handler.
    router.add("GET", "/endless",
               [this](const HttpRequest&, ResponseWriter& w) -> asio::awaitable<void> {
                 struct OnExit {
                   std::atomic<bool>& flag;
                   ~OnExit() { flag = true; }
                 } on_exit{stream_ended};
                 if (!co_await w.begin_stream()) co_return;
                 while (co_await w.write_chunk("data: tick\n\n")) co_await sleep_for(2ms);
                 EXPECT_TRUE(w.client_gone());
               });
    // Waits a long time before answering; records whether it was cancelled.
    router.add("GET", "/slow",
               [this](const HttpRequest&, ResponseWriter& w) -> asio::awaitable<void> {
                 slow_started = true;
                 try {
                   co_await sleep_for(60s);
                 } catch (const boost::system::system_error& e) {
                   slow_cancelled = e.code() == asio::error::operation_aborted;
                   throw;
                 }
                 co_await w.send(200, "text/plain", "late");
               });
    router.add("GET", "/throw", [](const HttpRequest&, ResponseWriter&) -> asio::awaitable<void> {
      throw std::runtime_error("boom");
      co_return;
    });
    router.add("GET", "/cut", [](const HttpRequest&, ResponseWriter& w) -> asio::awaitable<void> {
      if (!co_await w.begin_stream()) co_return;
      co_await w.write_chunk("data: partial\n\n");
      // Returns without end_stream(): the server must cut the connection.
    });
  }
};

class HttpServerTest : public ::testing::Test {
 protected:
  void start(HttpServerOptions options = {}) {
    server_ = std::make_unique<ServerThread>(routes_.router.handler(), std::move(options));
  }
  uint16_t port() const { return server_->port(); }

  TestRoutes routes_;
  std::unique_ptr<ServerThread> server_;
};

TEST_F(HttpServerTest, ListensOnAnEphemeralPortAndAnswers) {
  start();
  EXPECT_NE(port(), 0);
  TestClient client(port());
  auto r = client.request(http::verb::get, "/hello");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello");
  EXPECT_EQ(r.headers[http::field::content_type], "text/plain");
  EXPECT_EQ(r.headers[http::field::content_length], "5");
  EXPECT_EQ(r.headers[http::field::server], "inferbench");
}

TEST_F(HttpServerTest, ListenReportsAPortInUse) {
  start();
  asio::io_context io;
  HttpServer second(io, routes_.router.handler());
  auto bound = second.listen("127.0.0.1", port());
  ASSERT_FALSE(bound.ok());
  EXPECT_NE(bound.error().message.find(std::to_string(port())), std::string::npos)
      << bound.error().message;
}

TEST_F(HttpServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  start();
  TestClient client(port());
  for (int i = 0; i < 3; ++i) {
    auto r = client.request(http::verb::post, "/echo?x=1", "body" + std::to_string(i));
    ASSERT_FALSE(r.ec) << r.ec.message();
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "body" + std::to_string(i));
    EXPECT_EQ(r.headers["X-Path"], "/echo");
  }
}

TEST_F(HttpServerTest, HeaderLookupIsCaseInsensitive) {
  start();
  TestClient client(port());
  ASSERT_FALSE(
      client.send_raw("POST /echo HTTP/1.1\r\nHost: x\r\nX-TEST: yes\r\n"
                      "Content-Length: 2\r\n\r\nhi"));
  auto r = client.read();
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.headers["X-Test"], "yes");
  EXPECT_EQ(r.body, "hi");
}

TEST_F(HttpServerTest, UnknownPathIs404AndWrongMethodIs405) {
  start();
  TestClient client(port());
  auto missing = client.request(http::verb::get, "/nope");
  ASSERT_FALSE(missing.ec);
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body, R"({"detail":"Not Found"})");
  EXPECT_EQ(missing.headers[http::field::content_type], "application/json");

  auto wrong = client.request(http::verb::post, "/hello", "{}");
  ASSERT_FALSE(wrong.ec);
  EXPECT_EQ(wrong.status, 405);
  EXPECT_EQ(wrong.headers[http::field::allow], "GET");
  EXPECT_EQ(wrong.body, R"({"detail":"Method Not Allowed"})");
}

TEST_F(HttpServerTest, StreamsOneChunkPerWriteThenServesTheNextRequest) {
  start();
  TestClient client(port());
  auto r = client.request(http::verb::get, "/stream");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers[http::field::content_type], "text/event-stream");
  EXPECT_EQ(r.headers[http::field::cache_control], "no-cache");
  EXPECT_EQ(r.headers[http::field::transfer_encoding], "chunked");
  EXPECT_EQ(r.body, "data: a\n\ndata: bb\n\ndata: [DONE]\n\n");
  // The empty write sent nothing (an empty chunk would have ended the body).
  EXPECT_EQ(r.chunk_sizes, (std::vector<std::size_t>{9, 10, 14}));

  auto next = client.request(http::verb::get, "/hello");
  ASSERT_FALSE(next.ec) << next.ec.message();
  EXPECT_EQ(next.body, "hello");
}

TEST_F(HttpServerTest, StreamsToHttp10ClientsByClosingTheConnection) {
  start();
  TestClient client(port());
  ASSERT_FALSE(client.send_raw("GET /stream HTTP/1.0\r\n\r\n"));
  auto [data, ec] = client.read_to_end();
  EXPECT_EQ(ec, asio::error::eof);
  EXPECT_NE(data.find("HTTP/1.0 200 OK"), std::string::npos) << data;
  EXPECT_EQ(data.find("chunked"), std::string::npos) << data;
  EXPECT_NE(data.find("\r\n\r\ndata: a\n\ndata: bb\n\ndata: [DONE]\n\n"), std::string::npos)
      << data;
}

TEST_F(HttpServerTest, MalformedRequestGets400AndTheConnectionCloses) {
  start();
  {
    TestClient client(port());
    ASSERT_FALSE(client.send_raw("THIS IS NOT HTTP\r\n\r\n"));
    auto [data, ec] = client.read_to_end();
    EXPECT_EQ(data.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << data;
    EXPECT_TRUE(ec == asio::error::eof || ec == asio::error::connection_reset) << ec.message();
  }
  TestClient again(port());
  auto r = again.request(http::verb::get, "/hello");
  ASSERT_FALSE(r.ec);
  EXPECT_EQ(r.status, 200);
}

TEST_F(HttpServerTest, BodyOverTheLimitGets413) {
  HttpServerOptions options;
  options.max_body_bytes = 1024;
  start(options);
  TestClient client(port());
  auto r = client.request(http::verb::post, "/echo", std::string(4096, 'x'));
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.status, 413);
}

TEST_F(HttpServerTest, HandlerExceptionGets500AndServingContinues) {
  start();
  TestClient client(port());
  auto r = client.request(http::verb::get, "/throw");
  ASSERT_FALSE(r.ec);
  EXPECT_EQ(r.status, 500);
  TestClient again(port());
  EXPECT_EQ(again.request(http::verb::get, "/hello").status, 200);
}

TEST_F(HttpServerTest, UnterminatedStreamIsCut) {
  start();
  TestClient client(port());
  ASSERT_FALSE(client.send(http::verb::get, "/cut"));
  auto [data, ec] = client.read_to_end();
  EXPECT_NE(data.find("data: partial\n\n"), std::string::npos) << data;
  EXPECT_EQ(data.find("\r\n0\r\n\r\n"), std::string::npos) << "must not send the last-chunk";
}

TEST_F(HttpServerTest, StreamingHandlerSeesTheClientDisconnect) {
  start();
  {
    TestClient client(port());
    ASSERT_FALSE(client.send(http::verb::get, "/endless"));
    EXPECT_NE(client.read_some(), "");  // the stream is under way
    client.close();
  }
  EXPECT_TRUE(eventually(routes_.stream_ended));
  TestClient again(port());
  EXPECT_EQ(again.request(http::verb::get, "/hello").status, 200);
}

TEST_F(HttpServerTest, DisconnectCancelsAWaitingHandler) {
  start();
  {
    TestClient client(port());
    ASSERT_FALSE(client.send(http::verb::get, "/slow"));
    ASSERT_TRUE(eventually(routes_.slow_started));
    client.close();
  }
  EXPECT_TRUE(eventually(routes_.slow_cancelled));
}

TEST_F(HttpServerTest, StopCancelsInFlightRequestsAndRunReturns) {
  start();
  TestClient client(port());
  ASSERT_FALSE(client.send(http::verb::get, "/slow"));
  ASSERT_TRUE(eventually(routes_.slow_started));
  EXPECT_TRUE(server_->shut_down()) << "io_context::run() did not return after stop()";
  EXPECT_TRUE(routes_.slow_cancelled);
  auto [data, ec] = client.read_to_end();
  EXPECT_TRUE(data.empty()) << data;
}

TEST_F(HttpServerTest, IdleKeepAliveConnectionIsClosed) {
  HttpServerOptions options;
  options.keep_alive_timeout = 20ms;
  start(options);
  TestClient client(port());
  auto r = client.request(http::verb::get, "/hello");
  ASSERT_FALSE(r.ec);
  auto [data, ec] = client.read_to_end();  // returns when the server closes the idle connection
  EXPECT_TRUE(data.empty()) << data;
  EXPECT_EQ(ec, asio::error::eof) << ec.message();
}

TEST_F(HttpServerTest, ExpectContinueIsAnswered) {
  start();
  TestClient client(port());
  ASSERT_FALSE(
      client.send_raw("POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                      "Content-Length: 3\r\n\r\n"));
  ASSERT_FALSE(client.send_raw("abc"));
  auto r = client.read();  // the 100 Continue
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.status, 100);
  auto final_response = client.read();
  ASSERT_FALSE(final_response.ec) << final_response.ec.message();
  EXPECT_EQ(final_response.status, 200);
  EXPECT_EQ(final_response.body, "abc");
}

TEST(HttpReason, KnownAndUnknownCodes) {
  EXPECT_EQ(http_reason(404), "Not Found");
  EXPECT_EQ(http_reason(413), "Payload Too Large");
  EXPECT_EQ(http_reason(799), "Unknown");
}

}  // namespace
}  // namespace ib::http
