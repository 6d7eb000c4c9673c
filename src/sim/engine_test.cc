#include "sim/engine.h"
#include "http/awaitable.h"

#include <gtest/gtest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/system/system_error.hpp>
#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace ib::sim {
namespace {

namespace asio = boost::asio;

// Fixed step costs; records the running counts it was asked about.
class RecordingModel final : public TimingModel {
 public:
  RecordingModel(double prefill_s, double step_s) : prefill_s_(prefill_s), step_s_(step_s) {}
  double prefill_seconds(int, int running) const override {
    prefill_running.push_back(running);
    return prefill_s_;
  }
  double decode_step_seconds(int running) const override {
    decode_running.push_back(running);
    return step_s_;
  }
  mutable std::vector<int> prefill_running;
  mutable std::vector<int> decode_running;

 private:
  double prefill_s_;
  double step_s_;
};

struct Fixture {
  Fixture(double prefill_s, double step_s, int max_running)
      : model(std::make_shared<RecordingModel>(prefill_s, step_s)),
        engine(io.get_executor(), model, max_running) {}

  asio::io_context io;
  std::shared_ptr<RecordingModel> model;
  SimpleEngine engine;
};

// Runs one request to completion, logging "admit X", "token X" and "done X".
asio::awaitable<void> run_request(Engine& engine, std::string name, int tokens,
                                  std::vector<std::string>& log, int* max_running = nullptr) {
  auto generation = engine.submit(10, tokens);
  co_await generation->admitted();
  log.push_back("admit " + name);
  while (co_await generation->next_token()) {
    log.push_back("token " + name);
    if (max_running != nullptr && engine.running() > *max_running) *max_running = engine.running();
  }
  log.push_back("done " + name);
}


TEST(SimpleEngine, AdmitsInFifoOrderWithinMaxRunning) {
  // Steps long enough that no step timer expires during the poll() below, even on a loaded
  // machine under a sanitizer (1 ms steps did, once: poll() then runs the expired step too).
  Fixture f(0.1, 0.1, 1);
  std::vector<std::string> log;
  int max_running = 0;
  for (const char* name : {"A", "B", "C"}) {
    asio::co_spawn(f.io, run_request(f.engine, name, 2, log, &max_running), rethrow);
  }
  f.io.poll();  // every request reaches its first wait
  EXPECT_EQ(f.engine.running(), 1);
  EXPECT_EQ(f.engine.waiting(), 2);
  f.io.run();
  EXPECT_EQ(log, (std::vector<std::string>{"admit A", "token A", "token A", "done A", "admit B",
                                           "token B", "token B", "done B", "admit C", "token C",
                                           "token C", "done C"}));
  EXPECT_EQ(max_running, 1);
  EXPECT_EQ(f.engine.running(), 0);
  EXPECT_EQ(f.engine.waiting(), 0);
}

TEST(SimpleEngine, StepCostsSeeTheRunningCount) {
  Fixture f(0.001, 0.001, 8);
  std::vector<std::string> log;
  for (const char* name : {"A", "B", "C"}) {
    asio::co_spawn(f.io, run_request(f.engine, name, 4, log), rethrow);
  }
  f.io.run();
  ASSERT_EQ(f.model->prefill_running.size(), 3u);
  ASSERT_EQ(f.model->decode_running.size(), 9u);  // 3 requests x (4 - 1) steps
  int max_seen = 0;
  for (int r : f.model->decode_running) {
    EXPECT_GE(r, 1);
    EXPECT_LE(r, 3);
    max_seen = std::max(max_seen, r);
  }
  EXPECT_EQ(max_seen, 3);
}

TEST(SimpleEngine, TokensFollowTheAbsoluteSchedule) {
  Fixture f(0.020, 0.005, 4);
  std::vector<Clock::time_point> token_times;
  Clock::time_point start = Clock::now();
  asio::co_spawn(
      f.io,
      [&]() -> asio::awaitable<void> {
        auto generation = f.engine.submit(100, 4);
        while (co_await generation->next_token()) token_times.push_back(Clock::now());
      },
      rethrow);
  f.io.run();
  ASSERT_EQ(token_times.size(), 4u);
  // Timers never fire early: token i exists no sooner than prefill + i decode steps.
  for (int i = 0; i < 4; ++i) {
    auto earliest = start + std::chrono::microseconds(20000 + 5000 * i);
    EXPECT_GE(token_times[i], earliest) << "token " << i;
  }
}

// Speculative decoding (issue 31): after the prefill's token every step yields 1 to K+1 tokens,
// they add up to the request's output, and the engine counts the drafts as vLLM does.
TEST(SimpleEngine, SpeculativeStepsYieldSeveralTokensAndAreCounted) {
  asio::io_context io;
  SpecDecodeConfig spec;
  spec.num_speculative_tokens = 3;
  spec.acceptance = 0.7;
  SimpleEngine engine(io.get_executor(), std::make_shared<RecordingModel>(0.001, 0.0005), 4, 1.0,
                      spec);
  std::vector<int> steps;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        GenerationRequest r;
        r.prompt_tokens = 10;
        r.output_tokens = 40;
        r.output_seed = 7;
        auto generation = engine.submit(std::move(r));
        for (int n = co_await generation->next_tokens(); n > 0;
             n = co_await generation->next_tokens()) {
          steps.push_back(n);
        }
      },
      rethrow);
  io.run();
  ASSERT_FALSE(steps.empty());
  EXPECT_EQ(steps.front(), 1);  // the prefill's token
  int total = 0;
  for (int n : steps) {
    EXPECT_GE(n, 1);
    EXPECT_LE(n, 4);
    total += n;
  }
  EXPECT_EQ(total, 40);
  EXPECT_LT(steps.size(), 40u);  // some steps accepted drafts
  const EngineStats s = engine.stats();
  EXPECT_EQ(s.num_speculative_tokens, 3);
  EXPECT_EQ(s.spec.drafts, static_cast<int64_t>(steps.size()) - 1);
  EXPECT_EQ(s.spec.draft_tokens, 3 * s.spec.drafts);
  EXPECT_EQ(s.spec.accepted, 40 - 1 - s.spec.drafts);  // every decode step's extra tokens
}

TEST(SimpleEngine, CancellingAQueuedRequestLeavesTheQueue) {
  // A's prefill (0.5 s) outlasts the two polls below by far, even on a loaded machine under a
  // sanitizer: with 5 ms it could finish in between, and C would already run.
  Fixture f(0.5, 0.05, 1);
  std::vector<std::string> log;
  asio::co_spawn(f.io, run_request(f.engine, "A", 3, log), rethrow);
  asio::cancellation_signal cancel_b;
  std::exception_ptr b_error;
  asio::co_spawn(
      f.io, run_request(f.engine, "B", 3, log),
      asio::bind_cancellation_slot(cancel_b.slot(), [&](std::exception_ptr e) { b_error = e; }));
  asio::co_spawn(f.io, run_request(f.engine, "C", 1, log), rethrow);
  f.io.poll();
  EXPECT_EQ(f.engine.waiting(), 2);
  cancel_b.emit(asio::cancellation_type::terminal);
  f.io.poll();
  EXPECT_EQ(f.engine.waiting(), 1);
  f.io.run();
  ASSERT_TRUE(b_error);
  try {
    std::rethrow_exception(b_error);
  } catch (const boost::system::system_error& e) {
    EXPECT_EQ(e.code(), asio::error::operation_aborted);
  }
  EXPECT_EQ(log, (std::vector<std::string>{"admit A", "token A", "token A", "token A", "done A",
                                           "admit C", "token C", "done C"}));
  EXPECT_EQ(f.engine.running(), 0);
}

TEST(SimpleEngine, DroppingAGenerationFreesItsSlot) {
  Fixture f(0.001, 0.001, 1);
  std::vector<std::string> log;
  asio::co_spawn(
      f.io,
      [&]() -> asio::awaitable<void> {
        auto generation = f.engine.submit(10, 100);
        co_await generation->next_token();
        log.push_back("A gave up");
      },
      rethrow);
  asio::co_spawn(f.io, run_request(f.engine, "B", 1, log), rethrow);
  f.io.run();
  EXPECT_EQ(log, (std::vector<std::string>{"A gave up", "admit B", "token B", "done B"}));
  EXPECT_EQ(f.engine.running(), 0);
}

TEST(SimpleEngine, SubmittedButNeverAdmittedIsHarmless) {
  Fixture f(0.001, 0.001, 1);
  { auto unused = f.engine.submit(5, 5); }
  EXPECT_EQ(f.engine.running(), 0);
  EXPECT_EQ(f.engine.waiting(), 0);
}

}  // namespace
}  // namespace ib::sim
