#include "load/metrics_scraper.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "http/server.h"
#include "http/test_server_thread.h"

namespace ib::load {
namespace {

namespace asio = boost::asio;

class MetricsServer : public testing::ServerOnThread<http::HttpServer> {
 public:
  explicit MetricsServer(std::atomic<int>* hits)
      : ServerOnThread([](http::HttpServer& s) { return s.listen("127.0.0.1", 0); },
                       [hits](const http::HttpRequest& req,
                              http::ResponseWriter& w) -> asio::awaitable<void> {
                         if (req.target != "/metrics") {
                           co_await w.send(404, "text/plain", "no");
                           co_return;
                         }
                         const int n = ++*hits;
                         co_await w.send(200, "text/plain; version=0.0.4",
                                         "# TYPE x_total counter\nx_total " +
                                             std::to_string(n) + "\n");
                       }) {}
};

TEST(MetricsScraper, ScrapesEverySliceOnItsOwnThreadAndOnceMoreAtStop) {
  std::atomic<int> hits{0};
  MetricsServer server(&hits);
  auto target = parse_scrape_target(fmt::format("http://127.0.0.1:{}/metrics", server.port()));
  ASSERT_TRUE(target.ok()) << target.error().message;
  EXPECT_EQ(target->path, "/metrics");
  MetricsScraper scraper({*target}, 0.05);
  scraper.start();
  // At least three rounds, however slow the machine: wait for the server to have seen them.
  for (int i = 0; i < 400 && hits.load() < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  scraper.stop();
  const auto& s = scraper.scrapes();
  ASSERT_GE(s.size(), 4u);  // three or more rounds, plus the final one
  for (size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(s[i].status, 200);
    EXPECT_TRUE(s[i].error.empty());
    EXPECT_NE(s[i].body.find("x_total " + std::to_string(i + 1)), std::string::npos) << s[i].body;
    if (i > 0) {
      EXPECT_GE(s[i].t_mono_ns, s[i - 1].t_mono_ns);
    }
  }
  const ScrapeCost c = scraper.cost();
  EXPECT_EQ(c.scrapes, static_cast<int64_t>(s.size()));
  EXPECT_EQ(c.failures, 0);
  EXPECT_GT(c.bytes, 0);
  scraper.stop();  // idempotent
  EXPECT_EQ(scraper.scrapes().size(), s.size());
}

TEST(MetricsScraper, AnUnreachableTargetIsCountedNotFatal) {
  auto target = parse_scrape_target("http://127.0.0.1:1/metrics");
  ASSERT_TRUE(target.ok());
  MetricsScraper scraper({*target}, 10);
  scraper.start();
  scraper.stop();
  const ScrapeCost c = scraper.cost();
  EXPECT_EQ(c.scrapes, 2);  // the first round and the final one
  EXPECT_EQ(c.failures, 2);
  EXPECT_NE(c.first_error.find("127.0.0.1:1/metrics"), std::string::npos) << c.first_error;
}

TEST(MetricsScraper, TargetPathsDefaultToMetrics) {
  auto a = parse_scrape_target("http://10.0.0.1:9400");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->path, "/metrics");
  EXPECT_EQ(a->url(), "http://10.0.0.1:9400/metrics");
  auto b = parse_scrape_target("http://h:8000/worker1/metrics");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->path, "/worker1/metrics");
  EXPECT_FALSE(parse_scrape_target("ftp://x").ok());
}

}  // namespace
}  // namespace ib::load
