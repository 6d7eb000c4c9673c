#include "sim/scheduler.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "sim/tokens.h"

namespace ib::sim {
namespace {

SchedulerConfig sched_config(int num_blocks, int max_seqs = 256, int budget = 8192) {
  SchedulerConfig c;
  c.num_blocks = num_blocks;
  c.block_size = 16;
  c.max_num_seqs = max_seqs;
  c.max_num_batched_tokens = budget;
  c.prefix_caching = true;
  return c;
}

SequenceSpec spec(int prompt, int output, uint64_t key_seed = 0) {
  SequenceSpec s;
  s.prompt_tokens = prompt;
  s.output_tokens = output;
  for (int i = 0; i < prompt; ++i) s.prompt_keys.push_back(token_id_key(key_seed * 100000 + i));
  s.output_seed = key_seed;
  return s;
}

// Drives a scheduler step by step; counts tokens per owner.
struct Driver {
  explicit Driver(const SchedulerConfig& c) : s(c) {}

  // Runs one step; returns false when idle.
  bool step() {
    if (!s.schedule(plan)) return false;
    ++steps;
    max_tokens_in_step = std::max(max_tokens_in_step, plan.batch.tokens);
    max_running = std::max(max_running, s.running());
    max_waiting = std::max(max_waiting, s.waiting());
    for (const auto& e : plan.entries) {
      if (e.first && !first_step.count(e.owner)) first_step[e.owner] = steps;
    }
    emissions.clear();
    s.complete(plan, emissions);
    for (const auto& e : emissions) {
      if (!tokens.count(e.owner)) first_token_step[e.owner] = steps;
      ++tokens[e.owner];
      if (e.finished) {
        finished.push_back(e.owner);
        cached[e.owner] = e.cached_tokens;
      }
    }
    return true;
  }
  int run(int limit = 100000) {
    int n = 0;
    while (n < limit && step()) ++n;
    return n;
  }
  void* owner(int i) { return reinterpret_cast<void*>(static_cast<intptr_t>(i + 1)); }

  Scheduler s;
  Scheduler::Plan plan;
  std::vector<Scheduler::Emission> emissions;
  std::map<void*, int> tokens, first_step, first_token_step, cached;
  std::vector<void*> finished;
  int steps = 0, max_tokens_in_step = 0, max_running = 0, max_waiting = 0;
};

TEST(Scheduler, EveryRequestGetsExactlyItsTokens) {
  Driver d(sched_config(1000));
  for (int i = 0; i < 5; ++i) d.s.add(spec(40 + i, 10 + i, i), d.owner(i));
  d.run();
  ASSERT_EQ(d.finished.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(d.tokens[d.owner(i)], 10 + i);
  EXPECT_TRUE(d.s.idle());
  EXPECT_EQ(d.s.pool().num_free(), 1000);
  EXPECT_EQ(d.s.stats().generation_tokens, 10 + 11 + 12 + 13 + 14);
  EXPECT_EQ(d.s.stats().prompt_tokens, 40 + 41 + 42 + 43 + 44);
}

TEST(Scheduler, DecodeProducesOneTokenPerStepForEveryRunningRequest) {
  Driver d(sched_config(1000));
  for (int i = 0; i < 4; ++i) d.s.add(spec(16, 20, i), d.owner(i));
  // Step 1 prefills all four (and samples their first tokens); then 19 decode steps.
  EXPECT_EQ(d.run(), 20);
}

TEST(Scheduler, ChunkedPrefillRespectsTheTokenBudget) {
  Driver d(sched_config(1000, 256, /*budget=*/100));
  d.s.add(spec(450, 3, 1), d.owner(0));
  d.run();
  EXPECT_LE(d.max_tokens_in_step, 100);
  // 450 prompt tokens in chunks of 100: the first token comes with the fifth step.
  EXPECT_EQ(d.first_token_step[d.owner(0)], 5);
  EXPECT_EQ(d.tokens[d.owner(0)], 3);
}

TEST(Scheduler, DecodesShareTheStepWithAChunkedPrefill) {
  Driver d(sched_config(1000, 256, /*budget=*/64));
  d.s.add(spec(16, 50, 1), d.owner(0));
  d.step();  // prefill A
  d.s.add(spec(300, 2, 2), d.owner(1));
  const int before = d.tokens[d.owner(0)];
  for (int i = 0; i < 5; ++i) d.step();
  // A kept decoding while B's prompt was prefilled in chunks of the remaining budget.
  EXPECT_EQ(d.tokens[d.owner(0)], before + 5);
  EXPECT_EQ(d.tokens.count(d.owner(1)), 1u);
  EXPECT_LE(d.max_tokens_in_step, 64);
}

TEST(Scheduler, RunningRequestsNeverExceedMaxNumSeqs) {
  Driver d(sched_config(1000, /*max_seqs=*/3));
  for (int i = 0; i < 10; ++i) d.s.add(spec(16, 5, i), d.owner(i));
  d.step();
  EXPECT_EQ(d.s.running(), 3);
  EXPECT_EQ(d.s.waiting(), 7);
  d.run();
  EXPECT_EQ(d.max_running, 3);
  EXPECT_EQ(d.finished.size(), 10u);
  // First come, first served.
  EXPECT_LT(d.first_step[d.owner(0)], d.first_step[d.owner(9)]);
}

TEST(Scheduler, BeyondKvCapacityRequestsWaitAndRunningOnesArePreempted) {
  // 40 blocks of 16 = 640 tokens. Each request grows to 100 + 200 = 300 tokens (19 blocks), so
  // only two fit at once at the end although five are admitted at the start.
  Driver d(sched_config(40));
  for (int i = 0; i < 5; ++i) d.s.add(spec(100, 200, i), d.owner(i));
  d.run();
  EXPECT_GT(d.max_waiting, 0);
  EXPECT_GT(d.s.stats().preemptions, 0);
  ASSERT_EQ(d.finished.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(d.tokens[d.owner(i)], 200) << i;  // none lost or repeated
  EXPECT_EQ(d.s.pool().num_free(), 40);

  // With room for everyone there is no preemption.
  Driver roomy(sched_config(1000));
  for (int i = 0; i < 5; ++i) roomy.s.add(spec(100, 200, i), roomy.owner(i));
  roomy.run();
  EXPECT_EQ(roomy.s.stats().preemptions, 0);
  EXPECT_LT(roomy.steps, d.steps) << "preemption redoes work";
}

TEST(Scheduler, KvUsageRisesWithContext) {
  Driver d(sched_config(100));
  d.s.add(spec(64, 100, 1), d.owner(0));
  d.step();
  const double early = d.s.pool().usage();
  for (int i = 0; i < 60; ++i) d.step();
  EXPECT_GT(d.s.pool().usage(), early);
}

TEST(Scheduler, APrefixCacheHitSkipsThatPrefill) {
  Driver d(sched_config(1000, 256, /*budget=*/128));
  d.s.add(spec(512, 2, 7), d.owner(0));
  d.run();
  const int cold_steps = d.first_token_step[d.owner(0)];
  EXPECT_EQ(cold_steps, 4);  // 512 tokens in chunks of 128
  const int steps_before = d.steps;
  d.s.add(spec(512, 2, 7), d.owner(1));  // the same prompt
  d.run();
  const int warm_steps = d.first_token_step[d.owner(1)] - steps_before;
  EXPECT_LT(warm_steps, cold_steps);
  EXPECT_EQ(warm_steps, 1);
  // All full blocks but the one holding the last prompt token come from the cache.
  EXPECT_EQ(d.cached[d.owner(1)], 496);
  EXPECT_EQ(d.s.stats().prefix_hits, 496);
  EXPECT_EQ(d.s.stats().prefix_queries, 1024);
}

TEST(Scheduler, APrefillAfterAHitComputesOnlyTheUncachedTokens) {
  // The next turn of a conversation extends a 1000-token prompt by 200 tokens: its prefill
  // computes the 208 tokens after the 62 cached blocks (992 tokens), with those as context.
  Driver d(sched_config(1000));
  d.s.add(spec(1000, 1, 3), d.owner(0));
  d.run();
  SequenceSpec next = spec(1200, 1, 3);  // the same first 1000 keys
  d.s.add(std::move(next), d.owner(1));
  ASSERT_TRUE(d.s.schedule(d.plan));
  ASSERT_EQ(d.plan.entries.size(), 1u);
  EXPECT_EQ(d.plan.entries[0].new_tokens, 208);
  EXPECT_EQ(d.plan.batch.tokens, 208);
  EXPECT_DOUBLE_EQ(d.plan.batch.pairs_full_prefill, 208.0 * 992 + 208.0 * 209 / 2);
  EXPECT_DOUBLE_EQ(d.plan.batch.kv_read_full, 1200);
  EXPECT_EQ(d.s.cached_tokens(d.plan.entries[0].id), 992);
}

TEST(Scheduler, SharedPrefixesHitPartially) {
  Driver d(sched_config(1000));
  SequenceSpec a = spec(200, 1, 1);
  SequenceSpec b = a;
  for (int i = 100; i < 200; ++i) b.prompt_keys[i] = token_id_key(999999 + i);  // diverges at 100
  d.s.add(std::move(a), d.owner(0));
  d.run();
  d.s.add(std::move(b), d.owner(1));
  d.run();
  EXPECT_EQ(d.cached[d.owner(1)], 96);  // the six full blocks before the divergence
}

TEST(Scheduler, PrefixCachingOffNeverHits) {
  SchedulerConfig c = sched_config(1000);
  c.prefix_caching = false;
  Driver d(c);
  d.s.add(spec(512, 1, 7), d.owner(0));
  d.run();
  d.s.add(spec(512, 1, 7), d.owner(1));
  d.run();
  EXPECT_EQ(d.cached[d.owner(1)], 0);
  EXPECT_EQ(d.s.stats().prefix_queries, 0);
}

TEST(Scheduler, GeneratedTokensAreCachedForTheNextTurn) {
  // Turn 1: prompt P, 64 generated tokens. Turn 2 sends P + the reply + more: it hits the blocks
  // holding the generated tokens too.
  Driver d(sched_config(1000));
  SequenceSpec turn1 = spec(64, 64, 3);
  d.s.add(turn1, d.owner(0));
  d.run();
  SequenceSpec turn2;
  turn2.prompt_keys = turn1.prompt_keys;
  for (int i = 0; i < 64; ++i) turn2.prompt_keys.push_back(output_token_key(turn1.output_seed, i));
  for (int i = 0; i < 40; ++i) turn2.prompt_keys.push_back(token_id_key(777 + i));
  turn2.prompt_tokens = static_cast<int>(turn2.prompt_keys.size());
  turn2.output_tokens = 1;
  d.s.add(std::move(turn2), d.owner(1));
  d.run();
  // Turn 1 computed KV for its prompt and every generated token but the last (which ended it):
  // 127 tokens, 7 full blocks of 16, all found by turn 2, prompt and reply alike.
  EXPECT_EQ(d.cached[d.owner(1)], 112);
}

TEST(Scheduler, AbortFreesEverything) {
  Driver d(sched_config(100));
  const auto a = d.s.add(spec(160, 50, 1), d.owner(0));
  const auto b = d.s.add(spec(16, 50, 2), d.owner(1));
  d.step();
  EXPECT_EQ(d.s.running(), 2);
  d.s.abort(a);
  EXPECT_EQ(d.s.running(), 1);
  d.s.abort(b);
  d.s.abort(b);  // twice is harmless
  EXPECT_TRUE(d.s.idle());
  EXPECT_EQ(d.s.pool().num_free(), 100);
  EXPECT_FALSE(d.step());
}

TEST(Scheduler, AbortedWhileWaitingIsSkipped) {
  Driver d(sched_config(1000, /*max_seqs=*/1));
  d.s.add(spec(16, 3, 1), d.owner(0));
  const auto b = d.s.add(spec(16, 3, 2), d.owner(1));
  d.s.add(spec(16, 3, 3), d.owner(2));
  d.step();
  EXPECT_EQ(d.s.waiting(), 2);
  d.s.abort(b);
  EXPECT_EQ(d.s.waiting(), 1);
  d.run();
  EXPECT_EQ(d.finished.size(), 2u);
  EXPECT_EQ(d.tokens.count(d.owner(1)), 0u);
}

TEST(Scheduler, CompleteIgnoresRequestsAbortedDuringTheStep) {
  Driver d(sched_config(1000));
  const auto a = d.s.add(spec(16, 5, 1), d.owner(0));
  d.s.add(spec(16, 5, 2), d.owner(1));
  ASSERT_TRUE(d.s.schedule(d.plan));
  d.s.abort(a);  // the step is "in flight"
  d.emissions.clear();
  d.s.complete(d.plan, d.emissions);
  ASSERT_EQ(d.emissions.size(), 1u);
  EXPECT_EQ(d.emissions[0].owner, d.owner(1));
}

}  // namespace
}  // namespace ib::sim
