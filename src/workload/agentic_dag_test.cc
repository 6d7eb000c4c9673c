#include "workload/agentic_dag.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

namespace ib::workload::agentic {
namespace {

const std::string kTraces = std::string(INFERBENCH_TEST_DATA) + "/agentx-traces";

// Small traces written inline: a request, a subagent, a trace.
struct Req {
  double t = 0;
  std::vector<int64_t> ids;
  double api = 1;
  int64_t in = 0;  // 0: 64 per id
  int64_t out = 10;
  std::string model = "m";
};

std::string req(const Req& r) {
  return fmt::format(
      R"({{"type":"n","t":{},"model":"{}","in":{},"out":{},"hash_ids":[{}],"api_time":{}}})", r.t,
      r.model, r.in > 0 ? r.in : 64 * static_cast<int64_t>(r.ids.size()), r.out,
      fmt::join(r.ids, ","), r.api);
}

std::string sub(const std::string& id, double t, double duration_ms,
                const std::vector<std::string>& entries) {
  return fmt::format(
      R"({{"type":"subagent","t":{},"agent_id":"{}","duration_ms":{},"requests":[{}]}})", t, id,
      duration_ms, fmt::join(entries, ","));
}

std::string trace(const std::vector<std::string>& entries, int64_t tool = 0, int64_t system = 0) {
  return fmt::format(
      R"({{"id":"x","block_size":64,"tool_tokens":{},"system_tokens":{},"requests":[{}]}})", tool,
      system, fmt::join(entries, ","));
}

Expected<ReplayTree> try_build(const std::string& json, const DagOptions& o = {}) {
  auto t = parse_weka_trace(json, "f.json");
  if (!t) return t.error();
  return build_replay_tree(*t, o);
}

ReplayTree build(const std::string& json, const DagOptions& o = {}) {
  auto tree = try_build(json, o);
  EXPECT_TRUE(tree.ok()) << tree.error().message;
  return tree.ok() ? std::move(*tree) : ReplayTree{};
}

std::vector<std::string> session_ids(const ReplayTree& tree) {
  std::vector<std::string> ids;
  for (const Stream& s : tree.streams) ids.push_back(s.session_id);
  return ids;
}

std::vector<int64_t> hits(const Stream& s) {
  std::vector<int64_t> h;
  for (const Turn& t : s.turns) h.push_back(t.theoretical_hit_blocks);
  return h;
}

// Root turns at t 0, 6, 20 (list indices 1, 5, 7). Z comes before any of them (dropped); A and D
// end by turn 1 (one branch); B ends at 20 exactly (joins turn 2: tiered); C never ends in time
// (background) and spawns N inside itself; E has no request.
std::string spawn_trace() {
  return trace({
      sub("Z", 0, 1000, {req({0.1, {900}, 0.5})}),
      req({0, {1}}),
      sub("A", 1, 4000, {req({1.5, {100}})}),
      sub("D", 1.2, 3000, {req({2.0, {1, 300}})}),
      sub("B", 2, 18000, {req({2.5, {200}}), req({4, {200, 201}})}),
      req({6, {1, 2}}),
      sub("C", 7, 100000,
          {req({8, {400}}), sub("N", 9, 2000, {req({9.5, {500}})}), req({12, {400, 401}})}),
      req({20, {1, 2, 3}}),
      sub("E", 21, 1000, {}),
  });
}

TEST(AgenticDag, SubagentsSpawnFromThePrecedingTurnAndJoinTheFirstTurnAfterTheirEnd) {
  const ReplayTree tree = build(spawn_trace());
  EXPECT_EQ(session_ids(tree), (std::vector<std::string>{"x", "x::sa:A", "x::sa:D", "x::sa:B",
                                                         "x::sa:C", "x::sa:N", "x::sa:E"}));
  const Stream& root = tree.streams[0];
  EXPECT_EQ(root.kind, StreamKind::kRoot);
  ASSERT_EQ(root.turns.size(), 3u);
  EXPECT_EQ(root.turns[0].outer_idx, 1);
  EXPECT_EQ(root.turns[0].inner_idx, -1);
  EXPECT_EQ(root.turns[2].outer_idx, 7);
  EXPECT_EQ(root.turns[0].spawns, (std::vector<int>{0, 1}));  // {A, D}, B
  EXPECT_EQ(root.turns[1].spawns, (std::vector<int>{2}));     // C
  EXPECT_EQ(root.turns[2].spawns, (std::vector<int>{4}));     // E
  EXPECT_EQ(root.turns[1].joins, (std::vector<int>{0}));
  EXPECT_EQ(root.turns[2].joins, (std::vector<int>{1}));  // B's end 20 == t 20: within 1e-6

  ASSERT_EQ(tree.branches.size(), 5u);
  const Branch& ad = tree.branches[0];
  EXPECT_EQ(ad.id, "x:spawn:A");
  EXPECT_FALSE(ad.flat);
  EXPECT_EQ(ad.spawn, (TurnRef{0, 0}));
  EXPECT_EQ(ad.join, (TurnRef{0, 1}));
  EXPECT_DOUBLE_EQ(ad.start, 1);  // min(1, 1.2)
  EXPECT_EQ(ad.streams, (std::vector<int>{1, 2}));
  EXPECT_EQ(tree.branches[1].id, "x:spawn:B");
  EXPECT_EQ(tree.branches[1].join, (TurnRef{0, 2}));
  EXPECT_EQ(tree.branches[2].id, "x:spawn:C");
  EXPECT_TRUE(tree.branches[2].background());
  EXPECT_EQ(tree.branches[2].spawn, (TurnRef{0, 1}));
  // N, inside C: spawned by C's turn 0 (inner index 0 < 1), joined by its turn 1 (t 12 >= 11).
  const Branch& n = tree.branches[3];
  EXPECT_EQ(n.id, "x:spawn:N");
  EXPECT_EQ(n.spawn, (TurnRef{4, 0}));
  EXPECT_EQ(n.join, (TurnRef{4, 1}));
  EXPECT_EQ(n.streams, (std::vector<int>{5}));
  EXPECT_EQ(tree.streams[4].turns[0].spawns, (std::vector<int>{3}));
  EXPECT_EQ(tree.streams[4].turns[1].joins, (std::vector<int>{3}));
  EXPECT_EQ(tree.streams[5].turns[0].outer_idx, 6);
  EXPECT_EQ(tree.streams[5].turns[0].inner_idx, 0);
  // E: one stream without turns (it ends as soon as it starts), in a background branch.
  EXPECT_EQ(tree.branches[4].id, "x:spawn:E");
  EXPECT_TRUE(tree.branches[4].background());
  EXPECT_EQ(tree.branches[4].streams, (std::vector<int>{6}));
  EXPECT_TRUE(tree.streams[6].turns.empty());

  // Child start offsets from the branch start; delays end to start within a stream.
  EXPECT_DOUBLE_EQ(tree.streams[1].start_offset, 0.5);
  EXPECT_DOUBLE_EQ(tree.streams[2].start_offset, 1.0);
  EXPECT_DOUBLE_EQ(tree.streams[3].start_offset, 0.5);
  EXPECT_DOUBLE_EQ(tree.streams[4].start_offset, 1.0);
  EXPECT_DOUBLE_EQ(tree.streams[5].start_offset, 0.5);
  EXPECT_DOUBLE_EQ(tree.streams[6].start_offset, 0);
  EXPECT_DOUBLE_EQ(root.turns[0].delay_s, 0);
  EXPECT_DOUBLE_EQ(root.turns[1].delay_s, 5);               // 6 - (0 + 1)
  EXPECT_DOUBLE_EQ(root.turns[2].delay_s, 13);              // 20 - (6 + 1)
  EXPECT_DOUBLE_EQ(tree.streams[3].turns[1].delay_s, 0.5);  // 4 - (2.5 + 1)
  std::vector<int> branch_of;
  for (const Stream& s : tree.streams) branch_of.push_back(s.branch);
  EXPECT_EQ(branch_of, (std::vector<int>{-1, 0, 0, 1, 2, 3, 4}));

  // Z is dropped, with a note; every other request is a turn.
  EXPECT_EQ(tree.requests(), 10);
  EXPECT_EQ(tree.summary.dropped_subagents, 1);
  ASSERT_EQ(tree.notes.size(), 1u);
  EXPECT_EQ(tree.notes[0], "subagent Z (requests[0]) dropped: no turn of x before it");
  EXPECT_EQ(tree.summary.root, 1);
  EXPECT_EQ(tree.summary.subagent, 6);
  EXPECT_EQ(tree.summary.sessions(), 7);
  EXPECT_EQ(tree.summary.branches, 5);
  EXPECT_EQ(tree.summary.background_branches, 2);
  EXPECT_EQ(tree.summary.flat_branches, 0);
  EXPECT_EQ(tree.summary.barriers, 0);  // every scope holds a single stream
  EXPECT_DOUBLE_EQ(tree.start_t, 0);
  EXPECT_DOUBLE_EQ(tree.end_t, 20);

  // One seen-set in (t, outer, stream, k) order: D's [1, 300] hits the root's 1; B's second
  // turn its first; the root's later turns their own history.
  EXPECT_EQ(hits(root), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(hits(tree.streams[2]), (std::vector<int64_t>{1}));
  EXPECT_EQ(hits(tree.streams[3]), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(hits(tree.streams[4]), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(hits(tree.streams[5]), (std::vector<int64_t>{0}));
}

// A main chain (list indices 0 1 8 13, then the compaction 14 15), three overlapping forks of
// turn 1's context (a worker group), a small disjoint call (aux), a call on another model (aux,
// although it would be a reduction), a large-in short-out call (reduction) and a solo fork.
std::string flattened_trace() {
  return trace(
      {
          req({0, {1, 2, 3, 4}, 1, 20000, 500}),                        // 0  main
          req({10, {1, 2, 3, 4, 5, 6}, 1, 30000, 500}),                 // 1  main
          req({12, {1, 2, 3, 10, 11}, 2, 30000, 800}),                  // 2  W1
          req({13, {1, 2, 3, 20, 21}, 2, 30000, 800}),                  // 3  W2
          req({14, {1, 2, 3, 30, 31}, 2, 30000, 800}),                  // 4  W3
          req({20, {1, 2, 3, 10, 11, 12}, 2, 31000, 800}),              // 5  W1
          req({21, {1, 2, 3, 20, 21, 22}, 2, 31000, 800}),              // 6  W2
          req({22, {1, 2, 3, 30, 31, 32}, 2, 31000, 800}),              // 7  W3
          req({30, {1, 2, 3, 4, 5, 6, 7, 8}, 1, 40000, 500}),           // 8  main
          req({35, {900, 901}, 1, 5000, 100}),                          // 9  aux (small, fresh)
          req({36, {1, 2, 3, 4, 5, 6, 7, 8, 50}, 1, 40000, 300, "h"}),  // 10 aux (other model)
          req({40, {1, 2, 3, 4, 5, 6, 7, 70}, 1, 40000, 500}),          // 11 reduction
          req({45, {1, 2, 3, 4, 5, 80}, 2, 35000, 5000}),               // 12 solo
          req({60, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 2, 50000, 500}),    // 13 main
          req({70, {1, 2, 3, 4, 500, 501}, 1, 20000, 500}),             // 14 compaction: a seam
          req({80, {1, 2, 3, 4, 500, 501, 502}, 1, 21000, 500}),        // 15 main
      },
      64, 64);
}

TEST(AgenticDag, FlattenedAgentsAreSplitOffAndClassified) {
  const ReplayTree tree = build(flattened_trace());
  EXPECT_EQ(session_ids(tree),
            (std::vector<std::string>{"x", "x::wg:000_000", "x::wg:000_001", "x::wg:000_002",
                                      "x::aux:003", "x::aux:004", "x::aux:red:005", "x::fa:006"}));
  std::vector<int> root_idx;
  for (const Turn& t : tree.streams[0].turns) root_idx.push_back(t.outer_idx);
  EXPECT_EQ(root_idx, (std::vector<int>{0, 1, 8, 13, 14, 15}));  // the compaction rides on
  const std::vector<StreamKind> kinds = {StreamKind::kRoot,         StreamKind::kWorkerGroup,
                                         StreamKind::kWorkerGroup,  StreamKind::kWorkerGroup,
                                         StreamKind::kAux,          StreamKind::kAux,
                                         StreamKind::kAuxReduction, StreamKind::kFlat};
  for (size_t s = 0; s < kinds.size(); ++s) EXPECT_EQ(tree.streams[s].kind, kinds[s]) << s;
  EXPECT_EQ(tree.streams[1].turns.size(), 2u);
  EXPECT_EQ(tree.streams[1].turns[1].outer_idx, 5);
  // The declared prefix (2 blocks: 1 2) goes with chains that start with it.
  EXPECT_EQ(tree.streams[1].tool_tokens, 64);
  EXPECT_EQ(tree.streams[1].system_tokens, 64);
  EXPECT_EQ(tree.streams[4].tool_tokens, 0);  // 900 901
  EXPECT_EQ(tree.streams[4].system_tokens, 0);
  EXPECT_EQ(tree.models, (std::vector<std::string>{"m", "h"}));
  EXPECT_EQ(tree.streams[5].turns[0].model, 1);

  // Chains started by turn 1 end before turn 2; those started by turn 2 before turn 3.
  ASSERT_EQ(tree.branches.size(), 2u);
  EXPECT_EQ(tree.branches[0].id, "x:flatspawn:0");
  EXPECT_TRUE(tree.branches[0].flat);
  EXPECT_EQ(tree.branches[0].spawn, (TurnRef{0, 1}));
  EXPECT_EQ(tree.branches[0].join, (TurnRef{0, 2}));
  EXPECT_EQ(tree.branches[0].streams, (std::vector<int>{1, 2, 3}));
  EXPECT_DOUBLE_EQ(tree.branches[0].start, 12);
  EXPECT_EQ(tree.branches[1].id, "x:flatspawn:3");
  EXPECT_EQ(tree.branches[1].spawn, (TurnRef{0, 2}));
  EXPECT_EQ(tree.branches[1].join, (TurnRef{0, 3}));
  EXPECT_EQ(tree.branches[1].streams, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_DOUBLE_EQ(tree.streams[3].start_offset, 2);   // 14 - 12
  EXPECT_DOUBLE_EQ(tree.streams[7].start_offset, 10);  // 45 - 35
  EXPECT_EQ(tree.summary.worker_group, 3);
  EXPECT_EQ(tree.summary.worker_groups, 1);
  EXPECT_EQ(tree.summary.aux, 2);
  EXPECT_EQ(tree.summary.aux_reduction, 1);
  EXPECT_EQ(tree.summary.flat, 1);
  EXPECT_EQ(tree.summary.flat_branches, 2);
  EXPECT_EQ(tree.requests(), 16);

  // Model rewrite: the main model to the first served one, the others after it, wrapping.
  EXPECT_EQ(rewrite_models(tree, {"s"}), (std::vector<std::string>{"s", "s"}));
  EXPECT_EQ(rewrite_models(tree, {"a", "b"}), (std::vector<std::string>{"a", "b"}));

  // Without detection every top-level request is a turn of the root, in list order.
  DagOptions off;
  off.split_flattened_agents = false;
  const ReplayTree flat = build(flattened_trace(), off);
  ASSERT_EQ(flat.streams.size(), 1u);
  EXPECT_EQ(flat.streams[0].turns.size(), 16u);
  EXPECT_EQ(flat.streams[0].turns[2].outer_idx, 2);
  EXPECT_TRUE(flat.branches.empty());
}

TEST(AgenticDag, AFarLowOverlapContinuationIsNotASeam) {
  // The same shrink as a compaction, but 2 h after the tail ended and sharing 1 of its 3 blocks:
  // a distinct session on the same base prefix.
  const std::string far =
      trace({req({0, {1, 2}}), req({10, {1, 2, 3}}), req({7300, {1, 9}, 1, 40000, 5000})});
  const ReplayTree tree = build(far);
  EXPECT_EQ(session_ids(tree), (std::vector<std::string>{"x", "x::fa:000"}));
  EXPECT_TRUE(tree.branches[0].background());
  DagOptions wide;
  wide.seam_max_gap_s = 8000;
  EXPECT_EQ(build(far, wide).streams.size(), 1u);  // spliced on: one conversation
}

TEST(AgenticDag, APrefixDisjointPreambleStaysOnTheRoot) {
  // The title-generation call comes first and shares nothing; left in, it would found the main
  // chain and make the conversation a worker.
  const ReplayTree tree = build(trace({req({0, {77, 78}, 1, 128, 20}), req({1, {1, 2}}),
                                       req({5, {1, 2, 3}}), req({5.5, {1, 9}, 1, 40000, 5000})}));
  EXPECT_EQ(session_ids(tree), (std::vector<std::string>{"x", "x::fa:000"}));
  std::vector<int> root_idx;
  for (const Turn& t : tree.streams[0].turns) root_idx.push_back(t.outer_idx);
  EXPECT_EQ(root_idx, (std::vector<int>{0, 1, 2}));
}

TEST(AgenticDag, SubagentsSplitTheirOwnFlattenedAgents) {
  // A subagent whose inner list holds its own thread and a fork of it.
  const ReplayTree tree =
      build(trace({req({0, {1}}),
                   sub("A", 1, 20000,
                       {req({1, {10, 11}}), req({3, {10, 11, 12}}),
                        req({4, {10, 13}, 2, 40000, 5000}), req({8, {10, 11, 12, 14}})}),
                   req({30, {1, 2}})},
                  0, 0));
  EXPECT_EQ(session_ids(tree), (std::vector<std::string>{"x", "x::sa:A", "x::sa:A:fa:000"}));
  ASSERT_EQ(tree.branches.size(), 1u);
  EXPECT_EQ(tree.branches[0].streams, (std::vector<int>{1, 2}));  // share the SPAWN and JOIN
  EXPECT_EQ(tree.branches[0].join, (TurnRef{0, 1}));
  EXPECT_DOUBLE_EQ(tree.streams[2].start_offset, 3);
  EXPECT_EQ(tree.streams[2].turns[0].inner_idx, 2);
  EXPECT_EQ(tree.streams[2].turns[0].outer_idx, 1);
  // Barriers within the subagent's scope: its turn at 8 waits for the fork (ended at 6).
  EXPECT_EQ(tree.streams[1].turns[2].after, (std::vector<TurnRef>{{2, 0}}));
  EXPECT_EQ(tree.summary.barriers, 2);  // and the fork waits for the turn at 3 (ended at 4)
  EXPECT_EQ(tree.streams[2].turns[0].after, (std::vector<TurnRef>{{1, 1}}));
}

TEST(AgenticDag, IntervalBarriersOrderTouchingTurnsButNotOverlappingOnes) {
  // Root: [0,2) [2,6) [10,11). F: [2,5) [5,6) [8,9). G: [7,7.5).
  const ReplayTree tree = build(trace({
      req({0, {1, 2}, 2, 20000}),
      req({2, {1, 2, 3}, 4, 20000}),
      req({2, {1, 2, 50}, 3, 40000, 5000}),
      req({5, {1, 2, 50, 51}, 1, 40000, 5000}),
      req({7, {1, 2, 70}, 0.5, 40000, 5000}),
      req({8, {1, 2, 50, 51, 52}, 1, 40000, 5000}),
      req({10, {1, 2, 3, 4}, 1, 20000}),
  }));
  ASSERT_EQ(session_ids(tree), (std::vector<std::string>{"x", "x::fa:000", "x::fa:001"}));
  const auto& root = tree.streams[0].turns;
  const auto& f = tree.streams[1].turns;
  const auto& g = tree.streams[2].turns;
  using Refs = std::vector<TurnRef>;
  EXPECT_EQ(root[0].after, Refs{});
  EXPECT_EQ(root[1].after, Refs{});       // F's first turn starts with it: unordered
  EXPECT_EQ(f[0].after, (Refs{{0, 0}}));  // root turn 0 ends exactly when it starts
  EXPECT_EQ(f[1].after, Refs{});          // overlaps root turn 1; root turn 0 is implied by f[0]
  EXPECT_EQ(g[0].after, (Refs{{0, 1}, {1, 1}}));
  EXPECT_EQ(f[2].after, (Refs{{2, 0}}));     // root turn 1 is implied by G's turn
  EXPECT_EQ(root[2].after, (Refs{{1, 2}}));  // G's turn is implied by F's last
  EXPECT_EQ(tree.summary.barriers, 5);
  EXPECT_EQ(tree.branches.size(), 1u);
  EXPECT_EQ(tree.branches[0].streams, (std::vector<int>{1, 2}));
}

TEST(AgenticDag, ModelsInOrderOfFirstAppearanceWithTheMainModelFirst) {
  DagOptions off;  // (the sonnet call would be an aux chain: another model)
  off.split_flattened_agents = false;
  const ReplayTree tree = build(
      trace({req({0, {1}, 1, 0, 10, "opus"}), sub("A", 1, 1000, {req({1, {5}, 1, 0, 10, "haiku"})}),
             req({3, {1, 2}, 1, 0, 10, "sonnet"})}),
      off);
  EXPECT_EQ(tree.models, (std::vector<std::string>{"opus", "haiku", "sonnet"}));
  EXPECT_EQ(tree.streams[0].turns[1].model, 2);
  EXPECT_EQ(tree.streams[1].turns[0].model, 1);
  EXPECT_EQ(rewrite_models(tree, {"a", "b"}), (std::vector<std::string>{"a", "b", "a"}));
  EXPECT_EQ(rewrite_models(tree, {"a"}), (std::vector<std::string>{"a", "a", "a"}));
  EXPECT_EQ(to_string(StreamKind::kAuxReduction), "aux_reduction");
  EXPECT_EQ(to_string(StreamKind::kWorkerGroup), "worker_group");
}

TEST(AgenticDag, TracesTheReplayCannotUseAreErrors) {
  auto none = try_build(R"({"id":"x","requests":[]})");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message, "f.json: trace x has no request");
  // 200 declared tokens are 4 blocks; the root's first prompt has 2.
  auto shortp = try_build(trace({req({0, {1, 2}})}, 150, 50));
  ASSERT_FALSE(shortp.ok());
  EXPECT_EQ(shortp.error().message,
            "f.json: session x: the declared prefix (tool 150 + system 50 tokens) is 4 blocks, "
            "but turn 0 has 2 hash ids");
  auto orphans = try_build(trace({sub("A", 0, 1000, {req({0, {1}})})}));
  ASSERT_FALSE(orphans.ok());
  EXPECT_NE(orphans.error().message.find("no request to replay"), std::string::npos);
}

TEST(AgenticDag, RecordedTracesKeepEveryRequest) {
  auto traces = load_weka_traces({kTraces});
  ASSERT_TRUE(traces.ok()) << traces.error().message;
  ASSERT_EQ(traces->size(), 6u);
  for (const WekaTrace& t : *traces) {
    auto tree = build_replay_tree(t);
    ASSERT_TRUE(tree.ok()) << tree.error().message;
    const TraceStats stats = trace_stats(t);
    EXPECT_EQ(tree->requests(), stats.requests) << t.id;
    EXPECT_TRUE(tree->notes.empty()) << t.id;
    EXPECT_EQ(tree->summary.root, 1);
    EXPECT_EQ(tree->summary.subagent, stats.subagents) << t.id;
    // Same definition as `trace stats`; no two requests of these traces start together.
    int64_t hit = 0;
    for (const Stream& s : tree->streams) {
      for (const Turn& turn : s.turns) hit += turn.theoretical_hit_blocks;
    }
    EXPECT_EQ(hit, stats.hit_blocks) << t.id;
  }
  // The traces with subagents: 0274 (3) and 0277 (4).
  for (const auto& [id, subagents] : {std::pair{"trace_0274", 3}, std::pair{"trace_0277", 4}}) {
    auto it = std::find_if(traces->begin(), traces->end(),
                           [&](const WekaTrace& t) { return t.id == id; });
    ASSERT_NE(it, traces->end());
    auto tree = build_replay_tree(*it);
    ASSERT_TRUE(tree.ok());
    int64_t subagent_streams = 0;
    for (const Stream& s : tree->streams) {
      subagent_streams += s.kind == StreamKind::kSubagent;
      if (s.kind == StreamKind::kSubagent) {
        ASSERT_GE(s.branch, 0);
        EXPECT_NE(std::find(tree->branches[s.branch].streams.begin(),
                            tree->branches[s.branch].streams.end(), &s - tree->streams.data()),
                  tree->branches[s.branch].streams.end());
      }
    }
    EXPECT_EQ(subagent_streams, subagents) << id;
  }
}

}  // namespace
}  // namespace ib::workload::agentic
