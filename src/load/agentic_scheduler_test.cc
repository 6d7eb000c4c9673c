#include "load/agentic_scheduler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>

namespace ib::load::agentic {
namespace {

using workload::agentic::Branch;
using workload::agentic::Stream;
using workload::agentic::StreamKind;
using workload::agentic::Turn;
using workload::agentic::TurnRef;

Turn turn(double t, double api, int64_t out = 10) {
  Turn x;
  x.t = t;
  x.api_time = api;
  x.in = 100;
  x.out = out;
  return x;
}

// Fills delay_s and the tree's time range from the turns, as the DAG builder does.
void finish(ReplayTree& tree) {
  bool first = true;
  for (auto& s : tree.streams) {
    for (size_t k = 0; k < s.turns.size(); ++k) {
      auto& x = s.turns[k];
      if (k > 0) {
        const auto& p = s.turns[k - 1];
        x.delay_s = std::max(0.0, x.t - (p.t + p.api_time));
      }
      tree.start_t = first ? x.t : std::min(tree.start_t, x.t);
      tree.end_t = first ? x.t : std::max(tree.end_t, x.t);
      first = false;
    }
  }
}

ReplayTree chain(std::string id, std::vector<Turn> turns) {
  ReplayTree tree;
  tree.trace_id = std::move(id);
  Stream root;
  root.session_id = tree.trace_id;
  root.turns = std::move(turns);
  tree.streams.push_back(std::move(root));
  finish(tree);
  return tree;
}

// Zero-length t* window at the recording's start: the replay begins at turn 0, no primers.
ReplayOptions from_start() {
  ReplayOptions o;
  o.t_star_min = o.t_star_max = 0;
  o.warmup_requests_per_lane = 0;
  o.trace_idle_cap_s = 0;
  o.duration_s = 1000;
  o.grace_s = 30;
  return o;
}

struct Sent {
  Dispatch d;
  double done = 0;
};

// A discrete-event run: every request takes `service(d)` seconds (and ends with `outcome(d)`);
// the clock jumps to the next completion or wake-up.
struct Replay {
  ReplayScheduler sched;
  std::function<double(const Dispatch&)> service = [](const Dispatch&) { return 1.0; };
  std::function<Outcome(const Dispatch&)> outcome = [](const Dispatch&) { return Outcome::kOk; };
  std::vector<Sent> sent;
  double now = 0;

  Replay(std::vector<const ReplayTree*> pool, ReplayOptions o) : sched(std::move(pool), o) {}

  void run(int max_steps = 100000) {
    std::multimap<double, size_t> pending;  // completion time -> index into sent
    sched.start(now);
    for (int step = 0; step < max_steps && !sched.finished(); ++step) {
      for (const auto& d : sched.poll(now)) {
        sent.push_back({d, now + service(d)});
        pending.emplace(sent.back().done, sent.size() - 1);
      }
      if (sched.finished()) break;
      double next = sched.next_wake();
      if (!pending.empty()) next = std::min(next, pending.begin()->first);
      if (!std::isfinite(next)) break;
      now = std::max(now, next);
      while (!pending.empty() && pending.begin()->first <= now) {
        const size_t i = pending.begin()->second;
        pending.erase(pending.begin());
        const bool late = now > sched.hard_stop();
        sched.complete(sent[i].d.id, sent[i].done, late ? Outcome::kCancelled : outcome(sent[i].d));
      }
    }
  }
  std::vector<Sent> phase(ReplayPhase p) const {
    std::vector<Sent> out;
    for (const auto& s : sent)
      if (s.d.phase == p) out.push_back(s);
    return out;
  }
};

TEST(AgenticScheduler, TStarIsDeterministicPerSeedAndInTheWindow) {
  ReplayTree tree = chain("trace_a", {turn(0, 1), turn(100, 1)});
  const double a = ReplayScheduler::sample_t_star(tree, 42, 0, 0.25, 0.75);
  EXPECT_EQ(a, ReplayScheduler::sample_t_star(tree, 42, 0, 0.25, 0.75));
  EXPECT_NE(a, ReplayScheduler::sample_t_star(tree, 43, 0, 0.25, 0.75));
  EXPECT_NE(a, ReplayScheduler::sample_t_star(tree, 42, 1, 0.25, 0.75));
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const double t = ReplayScheduler::sample_t_star(tree, seed, 3, 0.25, 0.75);
    EXPECT_GE(t, 25.0);
    EXPECT_LT(t, 75.0);
  }
}

TEST(AgenticScheduler, TurnsFollowEndToStartDelays) {
  // Recorded: turn 1 starts 5 s after turn 0 ended, turn 2 starts 2 s after turn 1 ended.
  ReplayTree tree = chain("t", {turn(0, 3), turn(8, 4), turn(14, 1)});
  Replay r({&tree}, from_start());
  r.run();
  auto p = r.phase(ReplayPhase::kProfiling);
  ASSERT_GE(p.size(), 3u);
  EXPECT_EQ(p[0].d.turn, 0);
  EXPECT_DOUBLE_EQ(p[0].d.at, 0);
  EXPECT_DOUBLE_EQ(p[1].d.at, 1 + 5);  // completion of turn 0 (1 s) + 5 s
  EXPECT_DOUBLE_EQ(p[2].d.at, 7 + 2);  // completion of turn 1 (6 + 1 s) + 2 s
  EXPECT_EQ(p[0].d.max_tokens, 10);    // recorded out
  EXPECT_TRUE(r.phase(ReplayPhase::kPrimer).empty());
}

TEST(AgenticScheduler, TimeScaleDividesDelays) {
  ReplayTree tree = chain("t", {turn(0, 3), turn(8, 4), turn(14, 1)});
  auto o = from_start();
  o.time_scale = 10;
  Replay r({&tree}, o);
  r.run();
  auto p = r.phase(ReplayPhase::kProfiling);
  ASSERT_GE(p.size(), 2u);
  EXPECT_DOUBLE_EQ(p[1].d.at, 1 + 0.5);
}

TEST(AgenticScheduler, SystemIdleCapShortensLongGaps) {
  ReplayTree tree = chain("t", {turn(0, 1), turn(101, 1)});  // 100 s idle
  Replay r({&tree}, from_start());
  r.run();
  auto p = r.phase(ReplayPhase::kProfiling);
  ASSERT_GE(p.size(), 2u);
  EXPECT_DOUBLE_EQ(p[1].d.at, 1 + 10);  // nothing else in flight: capped at 10 s
}

TEST(AgenticScheduler, TreeIdleCapAppliesWhileOtherLanesAreBusy) {
  // Lane 0: a 400 s idle gap. Lane 1: a long request keeps the system busy, so the system cap
  // does not apply; the per-tree cap (300 s) does.
  ReplayTree idle = chain("idle", {turn(0, 1), turn(401, 1)});
  ReplayTree busy = chain("busy", {turn(0, 1000)});
  auto o = from_start();
  o.concurrency = 2;
  o.trace_idle_cap_s = 300;
  Replay r({&idle, &busy}, o);
  r.service = [&](const Dispatch& d) {
    return r.sched.tree_of(d.instance).trace_id == "busy" ? 1000.0 : 1.0;
  };
  r.run();
  std::vector<double> idle_sends;
  for (const auto& s : r.phase(ReplayPhase::kProfiling)) {
    if (r.sched.tree_of(s.d.instance).trace_id == "idle" && r.sched.instance(s.d.instance).id == 0)
      idle_sends.push_back(s.d.at);
  }
  ASSERT_GE(idle_sends.size(), 2u);
  EXPECT_DOUBLE_EQ(idle_sends[1], 1 + 300);
}

TEST(AgenticScheduler, DrainedTreesRecycleFromTurnZeroWithANewPass) {
  ReplayTree tree = chain("t", {turn(0, 1), turn(2, 1)});
  auto o = from_start();
  o.duration_s = 20;
  Replay r({&tree}, o);
  r.run();
  std::map<int64_t, int> turns_by_instance;
  for (const auto& s : r.phase(ReplayPhase::kProfiling)) {
    if (turns_by_instance.count(s.d.instance) == 0) {
      EXPECT_EQ(s.d.turn, 0);
    }
    ++turns_by_instance[s.d.instance];
  }
  ASSERT_GE(turns_by_instance.size(), 3u);
  EXPECT_EQ(r.sched.instance(0).recycle_pass, 0);
  EXPECT_EQ(r.sched.instance(1).recycle_pass, 1);
  EXPECT_EQ(r.sched.instance(2).recycle_pass, 2);
  EXPECT_FALSE(r.sched.instance(1).from_t_star);
}

TEST(AgenticScheduler, SequentialSamplerPlaysEveryTraceBeforeRepeating) {
  ReplayTree a = chain("a", {turn(0, 1)}), b = chain("b", {turn(0, 1)}),
             c = chain("c", {turn(0, 1)});
  auto o = from_start();
  o.duration_s = 6.5;
  Replay r({&a, &b, &c}, o);
  r.run();
  std::string order;
  for (const auto& s : r.phase(ReplayPhase::kProfiling))
    order += r.sched.tree_of(s.d.instance).trace_id;
  EXPECT_EQ(order.substr(0, 6), "abcabc");
}

TEST(AgenticScheduler, PrimersAndPressureAreWarmupAndPrecedeProfiling) {
  // Ten turns 10 s apart; t* in the middle. Primer: the turn before t*, max_tokens 1, then two
  // pressure turns without idle time, then profiling resumes where pressure stopped.
  std::vector<Turn> turns;
  for (int k = 0; k < 10; ++k) turns.push_back(turn(10.0 * k, 1));
  ReplayTree tree = chain("t", turns);
  ReplayOptions o = from_start();
  o.t_star_min = o.t_star_max = 0.5;  // t* = 45 s: next turn 5
  o.warmup_requests_per_lane = 2;
  Replay r({&tree}, o);
  r.run();
  auto primers = r.phase(ReplayPhase::kPrimer);
  ASSERT_EQ(primers.size(), 1u);
  EXPECT_EQ(primers[0].d.turn, 4);
  EXPECT_EQ(primers[0].d.max_tokens, 1);
  auto pressure = r.phase(ReplayPhase::kPressure);
  ASSERT_EQ(pressure.size(), 2u);
  EXPECT_EQ(pressure[0].d.turn, 5);
  EXPECT_EQ(pressure[1].d.turn, 6);
  EXPECT_EQ(pressure[1].d.at, pressure[0].done);  // no idle time in the pressure stage
  EXPECT_EQ(pressure[0].d.max_tokens, 1);
  auto prof = r.phase(ReplayPhase::kProfiling);
  ASSERT_FALSE(prof.empty());
  EXPECT_EQ(prof[0].d.turn, 7);
  EXPECT_GE(prof[0].d.at, pressure[1].done);
  EXPECT_EQ(prof[0].d.max_tokens, 10);
  EXPECT_DOUBLE_EQ(r.sched.profiling_start(), pressure[1].done);
}

TEST(AgenticScheduler, PrimersSpreadSoThatEveryLaneReachesTStarTogether) {
  std::vector<Turn> turns;
  for (int k = 0; k < 10; ++k) turns.push_back(turn(10.0 * k, 1));
  ReplayTree a = chain("a", turns);
  ReplayOptions o = from_start();
  o.concurrency = 2;
  o.t_star_min = 0.25;
  o.t_star_max = 0.75;
  o.burst_phase_starts = false;
  o.trace_idle_cap_s = 300;
  Replay r({&a}, o);
  r.run(50);
  auto primers = r.phase(ReplayPhase::kPrimer);
  ASSERT_EQ(primers.size(), 2u);
  // dispatch = max_lead − lead, lead = t* − t(primer turn): both end their lead together.
  const double t0 = r.sched.instance(0).t_star, t1 = r.sched.instance(1).t_star;
  const double lead0 = t0 - 10.0 * primers[0].d.turn, lead1 = t1 - 10.0 * primers[1].d.turn;
  EXPECT_NEAR(primers[0].d.at + lead0, primers[1].d.at + lead1, 1e-9);
}

ReplayTree with_subagent() {
  // Root: turn 0 spawns a subagent (2 turns); root turn 1 waits for it (join).
  ReplayTree tree;
  tree.trace_id = "s";
  Stream root;
  root.session_id = "s";
  root.turns = {turn(0, 1), turn(20, 1)};
  Stream child;
  child.session_id = "s::sa:x";
  child.kind = StreamKind::kSubagent;
  child.branch = 0;
  child.start_offset = 2;
  child.turns = {turn(3, 5), turn(9, 5)};
  tree.streams = {root, child};
  Branch b;
  b.id = "s:spawn:x";
  b.spawn = TurnRef{0, 0};
  b.join = TurnRef{0, 1};
  b.start = 1;
  b.streams = {1};
  tree.branches = {b};
  tree.streams[0].turns[0].spawns = {0};
  tree.streams[0].turns[1].joins = {0};
  finish(tree);
  return tree;
}

TEST(AgenticScheduler, SpawnStartsChildrenAfterTheSpawningTurnAndJoinWaitsForThem) {
  ReplayTree tree = with_subagent();
  auto o = from_start();
  o.duration_s = 200;
  Replay r({&tree}, o);
  r.service = [](const Dispatch& d) { return d.stream == 1 ? 50.0 : 1.0; };
  r.run();
  auto p = r.phase(ReplayPhase::kProfiling);
  ASSERT_GE(p.size(), 3u);
  EXPECT_EQ(p[1].d.stream, 1);
  EXPECT_DOUBLE_EQ(p[1].d.at, 1 + 2);  // spawn completes at 1 s, child offset 2 s
  // The root's turn 1 is due at 1 + 18 s but waits for both child turns (50 s each).
  const Sent* join = nullptr;
  for (const auto& s : p)
    if (s.d.stream == 0 && s.d.turn == 1 && s.d.instance == 0) join = &s;
  ASSERT_NE(join, nullptr);
  EXPECT_DOUBLE_EQ(join->d.at, 3 + 50 + 1 + 50);  // child turn 1: 1 s after turn 0 ended
}

TEST(AgenticScheduler, ContextOverflowEndsTheSessionAndReleasesTheJoin) {
  ReplayTree tree = with_subagent();
  auto o = from_start();
  o.duration_s = 30;
  Replay r({&tree}, o);
  r.outcome = [](const Dispatch& d) {
    return d.stream == 1 ? Outcome::kContextOverflow : Outcome::kOk;
  };
  r.run();
  int child_turns = 0;
  const Sent* join = nullptr;
  const auto sent = r.phase(ReplayPhase::kProfiling);  // alive as long as `join` points into it
  for (const auto& s : sent) {
    if (s.d.instance != 0) continue;
    if (s.d.stream == 1) ++child_turns;
    if (s.d.stream == 0 && s.d.turn == 1) join = &s;
  }
  EXPECT_EQ(child_turns, 1);  // the overflow ended the subagent after its first turn
  ASSERT_NE(join, nullptr);
  // Released at 4 s; its own timer (19 s) is 15 s away with nothing in flight: the system idle
  // cap brings it to 4 + 10 s.
  EXPECT_DOUBLE_EQ(join->d.at, 4 + 10);
}

TEST(AgenticScheduler, GenericErrorsMoveTheSessionOn) {
  ReplayTree tree = chain("t", {turn(0, 1), turn(2, 1), turn(4, 1)});
  auto o = from_start();
  o.duration_s = 5;
  Replay r({&tree}, o);
  r.outcome = [](const Dispatch&) { return Outcome::kError; };
  r.run();
  auto p = r.phase(ReplayPhase::kProfiling);
  ASSERT_GE(p.size(), 3u);
  EXPECT_EQ(p[1].d.turn, 1);
  EXPECT_EQ(p[2].d.turn, 2);
}

TEST(AgenticScheduler, NothingStartsAfterTheDurationAndLateRequestsAreCut) {
  ReplayTree tree = chain("t", {turn(0, 1), turn(1, 1), turn(2, 1)});
  auto o = from_start();
  o.duration_s = 10;
  o.grace_s = 5;
  Replay r({&tree}, o);
  r.service = [](const Dispatch&) { return 4.0; };
  r.run();
  for (const auto& s : r.phase(ReplayPhase::kProfiling)) EXPECT_LT(s.d.at, 10.0);
  EXPECT_TRUE(r.sched.finished());
  EXPECT_DOUBLE_EQ(r.sched.hard_stop(), 15.0);
}

TEST(AgenticScheduler, InFlightCanExceedLanesAtFanOut) {
  ReplayTree tree = with_subagent();
  tree.streams[1].start_offset = 0;
  auto o = from_start();
  Replay r({&tree}, o);
  r.service = [](const Dispatch&) { return 5.0; };
  int peak = 0;
  r.sched.start(0);
  // Turn 0 of the root, then the child; the root's join waits, so in flight stays 1 here; the
  // lane still holds exactly one tree.
  auto d = r.sched.poll(0);
  ASSERT_EQ(d.size(), 1u);
  r.sched.complete(d[0].id, 5, Outcome::kOk);
  auto d2 = r.sched.poll(5);
  ASSERT_EQ(d2.size(), 1u);
  EXPECT_EQ(d2[0].stream, 1);
  peak = static_cast<int>(r.sched.progress(5).in_flight);
  EXPECT_EQ(peak, 1);
  EXPECT_EQ(r.sched.progress(5).lanes_busy, 1);
}

TEST(AgenticScheduler, RootPrimerFailureAborts) {
  std::vector<Turn> turns;
  for (int k = 0; k < 10; ++k) turns.push_back(turn(10.0 * k, 1));
  ReplayTree tree = chain("t", turns);
  ReplayOptions o = from_start();
  o.t_star_min = o.t_star_max = 0.5;
  Replay r({&tree}, o);
  r.outcome = [](const Dispatch& d) {
    return d.phase == ReplayPhase::kPrimer ? Outcome::kError : Outcome::kOk;
  };
  r.run();
  EXPECT_TRUE(r.sched.aborted());
  EXPECT_NE(r.sched.abort_reason().find("primer"), std::string::npos);
  EXPECT_TRUE(r.phase(ReplayPhase::kProfiling).empty());
}

TEST(AgenticScheduler, IntervalBarrierHoldsATurnUntilItsPredecessorEnds) {
  // Root turn 1 (recorded at 10 s) comes after the flat chain's request (1..9 s).
  ReplayTree tree;
  tree.trace_id = "b";
  Stream root;
  root.session_id = "b";
  root.turns = {turn(0, 1), turn(10, 1)};
  Stream flat;
  flat.session_id = "b::fa:001";
  flat.kind = StreamKind::kFlat;
  flat.branch = 0;
  flat.turns = {turn(1, 8)};
  tree.streams = {root, flat};
  Branch br;
  br.id = "b:flatspawn:1";
  br.flat = true;
  br.spawn = TurnRef{0, 0};
  br.start = 1;
  br.streams = {1};
  tree.branches = {br};  // background: no join, only the barrier orders them
  tree.streams[0].turns[0].spawns = {0};
  tree.streams[0].turns[1].after = {TurnRef{1, 0}};
  finish(tree);
  auto o = from_start();
  o.duration_s = 20;
  Replay r({&tree}, o);
  r.service = [](const Dispatch& d) { return d.stream == 1 ? 30.0 : 1.0; };
  r.run();
  for (const auto& s : r.phase(ReplayPhase::kProfiling)) {
    if (s.d.instance == 0 && s.d.stream == 0 && s.d.turn == 1) {
      EXPECT_DOUBLE_EQ(s.d.at, 1 + 30);  // flat request: sent at 1 s, 30 s long
    }
  }
}

}  // namespace
}  // namespace ib::load::agentic
