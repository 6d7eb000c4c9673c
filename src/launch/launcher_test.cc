// The launchers' shared start-up pieces (launch/launcher.h): port picking and the health wait.
#include "launch/launcher.h"

#include <gtest/gtest.h>

#include "http/server.h"
#include "http/test_server_thread.h"

namespace ib::launch {
namespace {

TEST(PickFreePort, IsBelowTheEphemeralRangeAndBindable) {
  for (int i = 0; i < 20; ++i) {
    auto port = pick_free_port();
    ASSERT_TRUE(port.ok()) << port.error().message;
    EXPECT_GE(*port, 20000);
    EXPECT_LE(*port, 32767);
  }
}

class HealthServer : public testing::ServerOnThread<http::HttpServer> {
 public:
  HealthServer()
      : ServerOnThread([](http::HttpServer& s) { return s.listen("127.0.0.1", 0); },
                       [](const http::HttpRequest&,
                          http::ResponseWriter& w) -> boost::asio::awaitable<void> {
                         co_await w.send(200, "text/plain", "ok");
                       }) {}
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port()); }
};

TEST(WaitHealthy, AnAnswerFromTheServerWhileItRunsIsHealthy) {
  HealthServer s;
  auto st = wait_healthy(s.url(), "/health", std::chrono::seconds(5),
                         []() -> std::optional<std::string> { return std::nullopt; });
  EXPECT_TRUE(st.ok()) << st.error().message;
}

// Another process answers on the port while ours has exited (it could not bind): not healthy.
TEST(WaitHealthy, AnAnswerAfterOurServerExitedIsAnotherProcessOnThePort) {
  HealthServer s;
  int calls = 0;
  auto st = wait_healthy(s.url(), "/health", std::chrono::seconds(5),
                         [&]() -> std::optional<std::string> {
                           // Alive before the request, gone by the time the answer is in.
                           if (calls++ == 0) return std::nullopt;
                           return std::string("server exited (exit code 1)");
                         });
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("answered, but server exited (exit code 1)"),
            std::string::npos)
      << st.error().message;
  EXPECT_NE(st.error().message.find("another process holds the port"), std::string::npos);
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace ib::launch
