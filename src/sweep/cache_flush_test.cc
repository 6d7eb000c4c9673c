#include "sweep/cache_flush.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>

#include "http/server.h"
#include "http/test_server_thread.h"

namespace ib::sweep {
namespace {

namespace asio = boost::asio;

// A worker whose /flush_cache refuses (400, as SGLang while requests run) `busy` times, then
// flushes; any other path is unknown (404).
class FlushServer : public testing::ServerOnThread<http::HttpServer> {
 public:
  FlushServer(std::atomic<int>* tries, int busy)
      : ServerOnThread([](http::HttpServer& s) { return s.listen("127.0.0.1", 0); },
                       [tries, busy](const http::HttpRequest& req,
                                     http::ResponseWriter& w) -> asio::awaitable<void> {
                         if (req.target != "/flush_cache" || req.method != "POST") {
                           co_await w.send(404, "text/plain", "Not Found");
                           co_return;
                         }
                         if (++*tries <= busy) {
                           co_await w.send(400, "text/plain", "Cache not flushed.");
                           co_return;
                         }
                         co_await w.send(200, "text/plain", "Cache flushed.");
                       }) {}
  std::string url() const { return fmt::format("http://127.0.0.1:{}", port()); }
};

TEST(CacheFlush, RetriesWhileRequestsDrainThenSaysSo) {
  std::atomic<int> tries{0};
  FlushServer worker(&tries, 2);
  FlushOptions o;
  o.retry_s = 0.01;
  const FlushOutcome out = flush_caches({{"decode-0", worker.url()}}, o);
  EXPECT_TRUE(out.all_flushed);
  EXPECT_TRUE(out.warnings.empty());
  const auto& w = out.json.at("workers").as_array().at(0).as_object();
  EXPECT_EQ(w.at("worker").as_string(), "decode-0");
  EXPECT_EQ(w.at("tries").as_int64(), 3);
  EXPECT_EQ(w.at("status").as_int64(), 200);
  EXPECT_EQ(w.at("answer").as_string(), "Cache flushed.");
}

TEST(CacheFlush, AWorkerThatNeverFlushesOrHasNoSuchEndpointIsAWarningNotASilentWarmStart) {
  std::atomic<int> tries{0};
  FlushServer busy(&tries, 1000);
  FlushOptions o;
  o.retry_s = 0.01;
  o.timeout_s = 0.5;  // several tries even on a loaded machine
  FlushOutcome out = flush_caches({{"prefill-0", busy.url()}}, o);
  EXPECT_FALSE(out.all_flushed);
  EXPECT_FALSE(out.json.at("all_flushed").as_bool());
  ASSERT_EQ(out.warnings.size(), 1u);
  EXPECT_NE(out.warnings[0].find("prefill-0 was not confirmed empty"), std::string::npos)
      << out.warnings[0];
  EXPECT_NE(out.warnings[0].find("HTTP 400 Cache not flushed."), std::string::npos);
  EXPECT_GT(tries.load(), 1);

  // No such endpoint: one try (retrying will not make one).
  std::atomic<int> none{0};
  FlushServer other(&none, 0);
  o.path = "/reset_prefix_cache";
  o.timeout_s = 10;
  out = flush_caches({{"server", other.url()}}, o);
  EXPECT_FALSE(out.all_flushed);
  EXPECT_EQ(out.json.at("workers").as_array().at(0).at("tries").as_int64(), 1);
  // Nobody listening: the connection error is the answer.
  o.timeout_s = 0.05;
  out = flush_caches({{"gone", "http://127.0.0.1:1"}}, o);
  EXPECT_FALSE(out.all_flushed);
  EXPECT_EQ(out.json.at("workers").as_array().at(0).at("status").as_int64(), 0);
}

}  // namespace
}  // namespace ib::sweep
