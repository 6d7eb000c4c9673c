// The engine-to-I/O-thread hand-off (token_relay.h): a BatchEngine on one thread, receivers on
// another (and on the engine's own thread).
#include "sim/token_relay.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <optional>
#include <thread>
#include <vector>

#include "sim/batch_engine.h"

namespace ib::sim {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

// Fixed step time; counts the steps started (on the engine thread).
class CountingStep final : public StepCostModel {
 public:
  explicit CountingStep(double seconds) : seconds_(seconds) {}
  double step_seconds(const StepBatch&) const override {
    steps.fetch_add(1);
    return seconds_;
  }
  mutable std::atomic<int> steps{0};

 private:
  double seconds_;
};

// Records the news of one request (on its I/O thread).
struct Recorder final : NewsReceiver {
  void on_news(const TokenNews& n) override {
    news.push_back(n);
    since_commit += n.tokens;
    tokens += n.tokens;
    if (n.finished) finished = true;
  }
  void commit() override {
    if (since_commit > 0) tokens_per_commit.push_back(since_commit);
    since_commit = 0;
  }
  std::vector<TokenNews> news;
  std::vector<int> tokens_per_commit;  // tokens a delivery brought, per delivery with tokens
  int since_commit = 0;
  int tokens = 0;
  bool finished = false;
};

GenerationRequest relay_request(int output_tokens) {
  GenerationRequest r;
  r.prompt_tokens = 4;
  r.output_tokens = output_tokens;
  return r;
}

// An io_context run by its own thread until stop().
class LoopThread {
 public:
  LoopThread() : thread_([this] { io.run(); }) {}
  ~LoopThread() { stop(); }
  void stop() {
    guard_.reset();
    if (thread_.joinable()) thread_.join();
  }
  // Runs `f` on the loop's thread and waits for it.
  void run(const std::function<void()>& f) {
    std::promise<void> done;
    asio::post(io, [&] {
      f();
      done.set_value();
    });
    done.get_future().wait();
  }
  // Waits until `condition`, evaluated on the loop's thread, holds (false after a generous bound
  // that only a broken relay reaches).
  bool wait_for(const std::function<bool()>& condition) {
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < deadline) {
      bool ok = false;
      run([&] { ok = condition(); });
      if (ok) return true;
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }

  asio::io_context io{1};

 private:
  asio::executor_work_guard<asio::io_context::executor_type> guard_{io.get_executor()};
  std::thread thread_;
};

SchedulerConfig relay_config() {
  SchedulerConfig c;
  c.num_blocks = 4096;
  c.max_num_seqs = 256;
  c.max_num_batched_tokens = 8192;
  return c;
}

// Checks one finished request's news: admitted first, `tokens` tokens, step times in order, the
// last news (and only it) finished.
void expect_complete(const Recorder& r, int tokens) {
  ASSERT_FALSE(r.news.empty());
  EXPECT_TRUE(r.news.front().admitted);
  EXPECT_EQ(r.tokens, tokens);
  EXPECT_TRUE(r.news.back().finished);
  int64_t last_due = 0;
  for (size_t i = 0; i < r.news.size(); ++i) {
    const TokenNews& n = r.news[i];
    if (i + 1 < r.news.size()) {
      EXPECT_FALSE(n.finished) << i;
    }
    if (n.tokens == 0) continue;
    EXPECT_GT(n.due_ns, last_due) << "one token per engine step, each step later";
    last_due = n.due_ns;
  }
}

class TokenRelayTest : public ::testing::Test {
 protected:
  void make(double step_s, bool shared_thread = false) {
    shared_thread_ = shared_thread;
    cost_ = std::make_shared<CountingStep>(step_s);
    engine_ = std::make_unique<BatchEngine>(engine_thread_.io.get_executor(), cost_, relay_config());
    asio::io_context& io = shared_thread ? engine_thread_.io : io_thread_.io;
    relay_ = std::make_unique<TokenRelay>(*engine_, engine_thread_.io.get_executor(),
                                          std::vector<asio::any_io_executor>{io.get_executor()},
                                          std::vector<bool>{shared_thread});
  }
  void TearDown() override {
    // Tickets go on their thread; the engine drops the requests; then the loops stop.
    (shared_thread_ ? engine_thread_ : io_thread_).run([&] { tickets_.clear(); });
    EXPECT_TRUE(engine_thread_.wait_for([&] { return relay_->live_jobs() == 0; }));
    io_thread_.stop();
    engine_thread_.stop();
    relay_.reset();
    engine_.reset();
  }

  LoopThread engine_thread_;
  LoopThread io_thread_;
  std::shared_ptr<CountingStep> cost_;
  std::unique_ptr<BatchEngine> engine_;
  std::unique_ptr<TokenRelay> relay_;
  std::vector<Recorder> recorders_;  // outlive the tickets (cleared in TearDown)
  std::vector<std::optional<TokenRelay::Ticket>> tickets_;
  bool shared_thread_ = false;

  std::vector<Recorder>& recorders(size_t n) {
    recorders_.resize(n);
    return recorders_;
  }

  // Submits `n` requests of `tokens` tokens for rec[0..n) on `loop`'s thread.
  void submit(LoopThread& loop, std::vector<Recorder>& rec, int tokens) {
    tickets_.resize(rec.size());
    loop.run([&] {
      for (size_t i = 0; i < rec.size(); ++i) {
        tickets_[i].emplace(relay_->submit(0, rec[i], relay_request(tokens)));
      }
    });
  }
};

TEST_F(TokenRelayTest, EveryTokenArrivesInOrderWithAtMostOnePostPerEngineStep) {
  make(0.002);
  constexpr int kRequests = 16;
  constexpr int kTokens = 12;
  std::vector<Recorder>& rec = recorders(kRequests);
  submit(io_thread_, rec, kTokens);
  ASSERT_TRUE(io_thread_.wait_for([&] {
    return std::all_of(rec.begin(), rec.end(), [](const Recorder& r) { return r.finished; });
  }));
  io_thread_.run([&] {
    for (const Recorder& r : rec) expect_complete(r, kTokens);
  });
  // News of one engine turn for one I/O thread travels in one post: never one post per token.
  // A turn is a step's end with the next step's start (its admissions); the last step's end is
  // a turn of its own.
  EXPECT_GE(relay_->news_posts(), 1u);
  EXPECT_LE(relay_->news_posts(), static_cast<uint64_t>(cost_->steps.load()) + 1);
  EXPECT_LT(relay_->news_posts(), static_cast<uint64_t>(kRequests * kTokens));
}

TEST_F(TokenRelayTest, ALaggingIoThreadCatchesUpWithOneDeliveryForSeveralSteps) {
  make(0.001);
  constexpr int kRequests = 4;
  constexpr int kTokens = 40;
  std::vector<Recorder>& rec = recorders(kRequests);
  submit(io_thread_, rec, kTokens);
  ASSERT_TRUE(io_thread_.wait_for([&] { return rec[0].tokens > 0; }));
  // The I/O thread is busy while the engine runs several steps on.
  std::promise<void> released;
  asio::post(io_thread_.io, [&] {
    const int from = cost_->steps.load();
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (cost_->steps.load() < from + 6 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
    }
    released.set_value();
  });
  released.get_future().wait();
  ASSERT_TRUE(io_thread_.wait_for([&] {
    return std::all_of(rec.begin(), rec.end(), [](const Recorder& r) { return r.finished; });
  }));
  io_thread_.run([&] {
    for (const Recorder& r : rec) {
      expect_complete(r, kTokens);
      // The steps it missed came in one delivery, so a stream writes them with one write.
      EXPECT_GE(*std::max_element(r.tokens_per_commit.begin(), r.tokens_per_commit.end()), 2);
    }
  });
  EXPECT_LT(relay_->news_posts(), static_cast<uint64_t>(cost_->steps.load()));
}

TEST_F(TokenRelayTest, ADroppedTicketStopsItsNewsAndTheEngineDropsTheRequest) {
  make(0.001);
  std::vector<Recorder>& rec = recorders(2);
  submit(io_thread_, rec, 30000);  // long, and both fit the KV cache at once (Scheduler::add REQUIRES it)
  ASSERT_TRUE(io_thread_.wait_for([&] { return rec[0].tokens >= 2 && rec[1].tokens >= 2; }));
  size_t dropped_news = 0;
  io_thread_.run([&] {
    tickets_[0].reset();
    dropped_news = rec[0].news.size();
  });
  EXPECT_TRUE(engine_thread_.wait_for([&] { return relay_->live_jobs() == 1; }));
  int running = -1;
  engine_thread_.run([&] { running = engine_->running(); });
  EXPECT_EQ(running, 1);
  int later = 0;
  io_thread_.run([&] { later = rec[1].tokens; });
  ASSERT_TRUE(io_thread_.wait_for([&] { return rec[1].tokens >= later + 3; }));
  io_thread_.run([&] { EXPECT_EQ(rec[0].news.size(), dropped_news); });
}

TEST_F(TokenRelayTest, OnTheEnginesOwnThreadNewsNeedsNoPost) {
  make(0.001, /*shared_thread=*/true);
  std::vector<Recorder>& rec = recorders(3);
  submit(engine_thread_, rec, 5);
  ASSERT_TRUE(engine_thread_.wait_for([&] {
    return std::all_of(rec.begin(), rec.end(), [](const Recorder& r) { return r.finished; });
  }));
  engine_thread_.run([&] {
    for (const Recorder& r : rec) expect_complete(r, 5);
  });
  EXPECT_EQ(relay_->news_posts(), 0u);
}

}  // namespace
}  // namespace ib::sim
