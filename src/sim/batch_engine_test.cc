#include "sim/batch_engine.h"

#include <gtest/gtest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <exception>
#include <memory>
#include <vector>

#include "core/clock.h"
#include "sim/tokens.h"
#include "http/awaitable.h"

namespace ib::sim {
namespace {

namespace asio = boost::asio;

// A step costs a fixed time plus a time per token computed: prefill is expensive, decode cheap.
class LinearCost final : public StepCostModel {
 public:
  LinearCost(double base_s, double per_token_s) : base_s_(base_s), per_token_s_(per_token_s) {}
  double step_seconds(const StepBatch& b) const override {
    ++steps;
    max_seqs = std::max(max_seqs, b.seqs);
    return base_s_ + per_token_s_ * b.tokens;
  }
  mutable int steps = 0;
  mutable int max_seqs = 0;

 private:
  double base_s_;
  double per_token_s_;
};

SchedulerConfig config(int num_blocks = 4096, int max_seqs = 256) {
  SchedulerConfig c;
  c.num_blocks = num_blocks;
  c.max_num_seqs = max_seqs;
  c.max_num_batched_tokens = 8192;
  return c;
}

GenerationRequest request(int prompt, int output, uint64_t key_seed) {
  GenerationRequest r;
  r.prompt_tokens = prompt;
  r.output_tokens = output;
  for (int i = 0; i < prompt; ++i) r.prompt_keys.push_back(token_id_key(key_seed * 1000003 + i));
  r.output_seed = key_seed;
  r.record_due_times = true;
  return r;
}

struct Outcome {
  int tokens = 0;
  int64_t submitted_ns = 0;
  std::vector<int64_t> due;
  int cached = 0;
  bool admitted_before_first_token = false;
};

asio::awaitable<void> run(Engine& engine, GenerationRequest r, Outcome& out) {
  out.submitted_ns = mono_ns();
  auto g = engine.submit(std::move(r));
  co_await g->admitted();
  out.admitted_before_first_token = true;
  while (const int n = co_await g->next_tokens()) out.tokens += n;
  out.due.assign(g->due_times().begin(), g->due_times().end());
  out.cached = g->cached_tokens();
}


TEST(BatchEngine, EveryRequestGetsItsTokensInOrder) {
  asio::io_context io;
  auto cost = std::make_shared<LinearCost>(0.0005, 0.0);
  BatchEngine engine(io.get_executor(), cost, config());
  std::vector<Outcome> out(6);
  for (int i = 0; i < 6; ++i)
    asio::co_spawn(io, run(engine, request(32, 5 + i, i), out[i]), rethrow);
  io.run();
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(out[i].tokens, 5 + i);
    ASSERT_EQ(out[i].due.size(), static_cast<size_t>(5 + i));
    for (size_t t = 1; t < out[i].due.size(); ++t) EXPECT_GT(out[i].due[t], out[i].due[t - 1]);
    EXPECT_GE(out[i].due[0], out[i].submitted_ns);
  }
  // Requests arriving together were batched: one step per token, not per request and token.
  EXPECT_EQ(engine.stats().steps, 10);
  EXPECT_EQ(cost->max_seqs, 6);
  EXPECT_EQ(engine.running(), 0);
  EXPECT_EQ(engine.waiting(), 0);
}

TEST(BatchEngine, StepsAreBackToBackOnAbsoluteTimes) {
  asio::io_context io;
  BatchEngine engine(io.get_executor(), std::make_shared<LinearCost>(0.002, 0.0), config());
  Outcome out;
  asio::co_spawn(io, run(engine, request(16, 10, 1), out), rethrow);
  io.run();
  ASSERT_EQ(out.due.size(), 10u);
  // Due times are exactly one step apart: a late event loop does not stretch the schedule.
  for (size_t t = 1; t < out.due.size(); ++t) {
    EXPECT_NEAR(static_cast<double>(out.due[t] - out.due[t - 1]), 2e6, 1e3) << t;
  }
}

TEST(BatchEngine, TimeScaleRunsTheSameScheduleFaster) {
  auto timed = [](double scale, double& busy) {
    asio::io_context io;
    BatchEngine engine(io.get_executor(), std::make_shared<LinearCost>(0.004, 0.0), config(),
                       scale);
    Outcome out;
    asio::co_spawn(io, run(engine, request(16, 10, 1), out), rethrow);
    io.run();
    busy = engine.busy_seconds();
    return out.due.back() - out.due.front();
  };
  double busy1 = 0, busy4 = 0;
  const int64_t span1 = timed(1.0, busy1);
  const int64_t span4 = timed(4.0, busy4);
  EXPECT_DOUBLE_EQ(busy1, busy4);  // the same model time
  EXPECT_NEAR(static_cast<double>(span1) / static_cast<double>(span4), 4.0, 0.01);
}

TEST(BatchEngine, APrefixCacheHitCutsTimeToFirstToken) {
  asio::io_context io;
  // 20 us per token computed: a 2000-token prefill costs 40 ms, a cached one well under 1 ms.
  BatchEngine engine(io.get_executor(), std::make_shared<LinearCost>(0.0002, 20e-6), config());
  Outcome cold, warm;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await run(engine, request(2000, 2, 9), cold);
        co_await run(engine, request(2000, 2, 9), warm);  // the same prompt again
      },
      rethrow);
  io.run();
  const int64_t cold_ttft = cold.due[0] - cold.submitted_ns;
  const int64_t warm_ttft = warm.due[0] - warm.submitted_ns;
  EXPECT_LT(warm_ttft, cold_ttft);
  EXPECT_EQ(cold.cached, 0);
  EXPECT_EQ(warm.cached, 1984);
  EXPECT_EQ(engine.stats().prefix_hits, 1984);
}

TEST(BatchEngine, BeyondKvCapacityRequestsWaitAndArePreempted) {
  asio::io_context io;
  // 60 blocks of 16 tokens; each request grows to 300 tokens (19 blocks).
  BatchEngine engine(io.get_executor(), std::make_shared<LinearCost>(0.0002, 0.0), config(60));
  std::vector<Outcome> out(8);
  int max_waiting = 0;
  double max_usage = 0;
  for (int i = 0; i < 8; ++i)
    asio::co_spawn(io, run(engine, request(100, 200, i), out[i]), rethrow);
  asio::steady_timer probe(io);
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        while (engine.running() + engine.waiting() > 0 || engine.stats().steps == 0) {
          max_waiting = std::max(max_waiting, engine.waiting());
          max_usage = std::max(max_usage, engine.stats().kv_cache_usage);
          probe.expires_after(std::chrono::microseconds(200));
          co_await probe.async_wait(asio::use_awaitable);
        }
      },
      rethrow);
  io.run();
  for (const Outcome& o : out) EXPECT_EQ(o.tokens, 200);
  EXPECT_GT(max_waiting, 0);
  EXPECT_GT(engine.stats().preemptions, 0);
  EXPECT_GT(max_usage, 0.8);
}

TEST(BatchEngine, ChatRoleChunkTimeIsAdmissionBeforeTheFirstToken) {
  asio::io_context io;
  BatchEngine engine(io.get_executor(), std::make_shared<LinearCost>(0.0002, 0.0), config());
  Outcome out;
  asio::co_spawn(io, run(engine, request(16, 3, 1), out), rethrow);
  io.run();
  EXPECT_TRUE(out.admitted_before_first_token);
  EXPECT_EQ(out.tokens, 3);
}

TEST(BatchEngine, ACancelledRequestLeavesTheEngine) {
  asio::io_context io;
  BatchEngine engine(io.get_executor(), std::make_shared<LinearCost>(0.001, 0.0), config());
  Outcome a;
  asio::cancellation_signal cancel;
  std::exception_ptr error;
  asio::co_spawn(
      io, run(engine, request(16, 100, 1), a),
      asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e) { error = e; }));
  asio::steady_timer later(io, std::chrono::milliseconds(10));
  later.async_wait([&](const boost::system::error_code&) {
    EXPECT_EQ(engine.running(), 1);
    cancel.emit(asio::cancellation_type::terminal);
  });
  io.run();  // returns promptly: the engine stops stepping when nobody is left
  EXPECT_TRUE(error);
  EXPECT_LT(a.tokens, 100);
  EXPECT_EQ(engine.running(), 0);
  EXPECT_EQ(engine.scheduler().pool().num_free(), engine.scheduler().pool().num_blocks());
}

TEST(BatchEngine, DroppedGenerationsFreeTheirSlots) {
  asio::io_context io;
  BatchEngine engine(io.get_executor(), std::make_shared<LinearCost>(0.0005, 0.0), config(4096, 1));
  Outcome b;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto g = engine.submit(request(16, 1000, 1));
        co_await g->next_tokens();  // one token, then the client gives up
      },
      rethrow);
  asio::co_spawn(io, run(engine, request(16, 2, 2), b), rethrow);
  io.run();
  EXPECT_EQ(b.tokens, 2);
  { auto unused = engine.submit(request(4, 4, 3)); }  // never awaited
  io.restart();
  io.run();
  EXPECT_EQ(engine.waiting(), 0);
}

TEST(BatchEngine, RandomCancellationsLeaveItConsistent) {
  asio::io_context io;
  // A small cache and a low running cap, so queueing, preemption and cancellation all mix.
  BatchEngine engine(io.get_executor(), std::make_shared<LinearCost>(0.0002, 1e-6),
                     config(/*num_blocks=*/80, /*max_seqs=*/6));
  constexpr int kRequests = 60;
  std::vector<Outcome> out(kRequests);
  std::vector<asio::cancellation_signal> cancel(kRequests);
  std::vector<std::unique_ptr<asio::steady_timer>> timers;
  int completed = 0, cancelled = 0;
  uint64_t rng = 12345;
  auto next = [&rng] {
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return rng >> 33;
  };
  for (int i = 0; i < kRequests; ++i) {
    const int prompt = 16 + static_cast<int>(next() % 300);
    const int output = 1 + static_cast<int>(next() % 200);
    asio::co_spawn(io, run(engine, request(prompt, output, next() % 5), out[i]),
                   asio::bind_cancellation_slot(cancel[i].slot(), [&](std::exception_ptr e) {
                     (e ? cancelled : completed) += 1;
                   }));
    if (next() % 3 == 0) {
      timers.push_back(
          std::make_unique<asio::steady_timer>(io, std::chrono::microseconds(next() % 30000)));
      timers.back()->async_wait([&cancel, i](const boost::system::error_code&) {
        cancel[i].emit(asio::cancellation_type::terminal);
      });
    }
  }
  io.run();
  EXPECT_EQ(completed + cancelled, kRequests);
  EXPECT_GT(completed, 0);
  EXPECT_EQ(engine.running(), 0);
  EXPECT_EQ(engine.waiting(), 0);
  EXPECT_EQ(engine.scheduler().pool().num_free(), engine.scheduler().pool().num_blocks());
  // A request after all that is served normally.
  Outcome last;
  asio::co_spawn(io, run(engine, request(32, 5, 99), last), rethrow);
  io.restart();
  io.run();
  EXPECT_EQ(last.tokens, 5);
}

}  // namespace
}  // namespace ib::sim
