#include "workload/agentic_prompts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <map>
#include <random>
#include <regex>
#include <set>

#include "core/sha256.h"
#include "workload/weka_trace.h"

namespace ib::workload::agentic {
namespace {

using Segment = TurnDelta::Segment;

Turn make_turn(int64_t in, int64_t out, std::vector<int64_t> ids) {
  Turn t;
  t.in = in;
  t.out = out;
  t.hash_ids = std::move(ids);
  return t;
}

// Ids first..last inclusive.
std::vector<int64_t> ids(int64_t first, int64_t last) {
  std::vector<int64_t> v;
  for (int64_t i = first; i <= last; ++i) v.push_back(i);
  return v;
}

std::vector<int64_t> concat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

ReplayTree make_tree(std::vector<Turn> turns, int64_t tool = 0, int64_t system = 0,
                     int64_t block_size = 64) {
  ReplayTree tree;
  tree.trace_id = "t";
  tree.block_size = block_size;
  Stream s;
  s.session_id = "s";
  s.tool_tokens = tool;
  s.system_tokens = system;
  s.turns = std::move(turns);
  tree.streams.push_back(std::move(s));
  return tree;
}

// Whitespace-separated words, as serve-sim counts tokens.
std::vector<std::string_view> split_words(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    size_t j = i;
    while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

struct Message {
  std::string role, content;
};

std::vector<Message> parse_messages(const std::string& json) {
  std::vector<Message> out;
  const boost::json::value v = boost::json::parse(json);  // throws on invalid JSON
  for (const auto& m : v.as_array()) {
    const auto& o = m.as_object();
    EXPECT_EQ(o.size(), 2u);
    out.push_back(
        {std::string(o.at("role").as_string()), std::string(o.at("content").as_string())});
  }
  return out;
}

int64_t history_tokens(const std::vector<Segment>& hist) {
  int64_t n = 0;
  for (const auto& s : hist) n += s.tokens;
  return n;
}

// Applies a plan the way a consumer must: drop the previous tail, append (or replace on reset).
std::vector<std::vector<Segment>> histories(const ReplayTree& tree) {
  const auto plan = plan_segments(tree, 0);
  std::vector<std::vector<Segment>> out;
  std::vector<Segment> hist;
  for (const auto& d : plan) {
    if (d.reset) hist.clear();
    if (!hist.empty()) hist.back().tokens = hist.back().blocks * tree.block_size;
    if (!hist.empty() && hist.back().blocks == 0) hist.pop_back();
    hist.insert(hist.end(), d.segments.begin(), d.segments.end());
    out.push_back(hist);
  }
  return out;
}

void expect_segments(const std::vector<Segment>& got, const std::vector<Segment>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(to_string(got[i].role), to_string(want[i].role)) << "segment " << i;
    EXPECT_EQ(got[i].tokens, want[i].tokens) << "segment " << i;
    EXPECT_EQ(got[i].blocks, want[i].blocks) << "segment " << i;
  }
}

constexpr Role kS = Role::kSystem, kU = Role::kUser, kA = Role::kAssistant;

uint64_t hex_u64(const std::string& hex) {
  return std::stoull(hex.substr(0, 16), nullptr, 16);
}

// The corpus words the tail of turn k of session "s" reads, by the spec's formula.
std::vector<std::string> tail_words(const std::string& session, int k, int64_t n) {
  const Corpus& c = Corpus::words();
  const uint64_t v = hex_u64(sha256_hex(session + ":turn_" + std::to_string(k) + ":partial_tail"));
  const uint64_t mod = std::max<int64_t>(static_cast<int64_t>(c.size()) - n, 1);
  std::vector<std::string> out;
  for (int64_t i = 0; i < n; ++i) out.emplace_back(c.token(v % mod + static_cast<uint64_t>(i)));
  return out;
}

int64_t word_count(const std::vector<Message>& msgs) {
  int64_t n = 0;
  for (const auto& m : msgs) n += static_cast<int64_t>(split_words(m.content).size());
  return n;
}

// Every word of the history but the marker (the first word of the first user message), joined
// by single spaces.
std::string text_without_marker(const std::vector<Message>& msgs) {
  std::string out;
  bool marker_seen = false;
  for (const auto& m : msgs) {
    const auto words = split_words(m.content);
    size_t i = 0;
    if (m.role == "user" && !marker_seen) {
      marker_seen = true;
      EXPECT_EQ(words.at(0).substr(0, 5), "[rid:");
      i = 1;
    }
    for (; i < words.size(); ++i) {
      if (!out.empty()) out.push_back(' ');
      out.append(words[i]);
    }
  }
  return out;
}

// What turn k's text must be: the block texts of its covered ids, then its tail.
std::string expected_text(const ReplayTree& tree, int k, uint64_t seed,
                          std::map<int64_t, std::string>* cache = nullptr) {
  const Stream& st = tree.streams[0];
  const Turn& t = st.turns[static_cast<size_t>(k)];
  const int64_t bs = tree.block_size;
  const int64_t covered = std::min<int64_t>(static_cast<int64_t>(t.hash_ids.size()), t.in / bs);
  std::string out;
  for (int64_t p = 0; p < covered; ++p) {
    if (!out.empty()) out.push_back(' ');
    const int64_t id = t.hash_ids[static_cast<size_t>(p)];
    if (cache == nullptr) {
      out += block_text(tree, seed, id);
      continue;
    }
    auto [it, fresh] = cache->try_emplace(id);
    if (fresh) it->second = block_text(tree, seed, id);
    out += it->second;
  }
  const int64_t tail = t.in == 0 ? 1 : t.in - covered * bs;
  for (const auto& w : tail_words(st.session_id, k, tail)) {
    if (!out.empty()) out.push_back(' ');
    out += w;
  }
  return out;
}

TEST(AgenticCorpus, ThousandsOfDistinctShortLowerCaseWords) {
  const Corpus& c = Corpus::words();
  EXPECT_EQ(c.size(), 2703u);
  std::set<std::string_view> seen;
  for (size_t i = 0; i < c.size(); ++i) {
    const std::string_view w = c.token(i);
    EXPECT_TRUE(w.size() >= 2 && w.size() <= 9 &&
                std::all_of(w.begin(), w.end(), [](char ch) { return ch >= 'a' && ch <= 'z'; }))
        << w;
    EXPECT_TRUE(seen.insert(w).second) << "duplicate " << w;
  }
  EXPECT_EQ(c.token(c.size()), c.token(0));  // wraps
}

TEST(AgenticBlockText, DeterministicPerSeedScopeAndId) {
  ReplayTree a = make_tree({});
  ReplayTree b = make_tree({});
  b.trace_id = "other";
  const std::string text = block_text(a, 42, 7);
  // SHA256("42:t:7")[0:8] big-endian mod 2703 = 1448: "motor mount mountain mouse ...".
  const auto words = split_words(text);
  ASSERT_EQ(words.size(), 64u);
  EXPECT_EQ(text.substr(0, 26), "motor mount mountain mouse");
  EXPECT_EQ(words[0], Corpus::words().token(hex_u64(sha256_hex("42:t:7")) % 2703));
  EXPECT_EQ(text.find("  "), std::string::npos);
  EXPECT_NE(text.front(), ' ');
  EXPECT_NE(text.back(), ' ');
  EXPECT_EQ(block_text(a, 42, 7), text);
  EXPECT_NE(block_text(a, 42, 8), text);
  EXPECT_NE(block_text(a, 43, 7), text);
  EXPECT_NE(block_text(b, 42, 7), text);  // local scope: keyed on the trace id
  a.global_scope = b.global_scope = true;
  EXPECT_EQ(block_text(a, 42, 7), block_text(b, 42, 7));  // global: one namespace
  EXPECT_EQ(block_text(a, 42, 7).substr(0, 24), "source south space spare");  // SHA256("42::7")
  a.block_size = 3;
  EXPECT_EQ(block_text(a, 42, 7), "source south space");
}

TEST(AgenticMarker, TwelveLowerCaseHexDigitsPerPassAndLane) {
  const std::string m = cache_bust_marker("bench", 0, 3, "trace_0014");
  EXPECT_EQ(m, "[rid:3bd57b7d83bc]\n\n");  // hashlib.sha256(b"bench:0:3:trace_0014")
  EXPECT_TRUE(std::regex_match(m, std::regex(R"(\[rid:[0-9a-f]{12}\]\n\n)")));
  EXPECT_EQ(cache_bust_marker("bench", 0, 3, "trace_0014"), m);
  EXPECT_NE(cache_bust_marker("bench", 1, 3, "trace_0014"), m);
  EXPECT_NE(cache_bust_marker("bench", 0, 4, "trace_0014"), m);
  EXPECT_NE(cache_bust_marker("other", 0, 3, "trace_0014"), m);
  EXPECT_NE(cache_bust_marker("bench", 0, 3, "trace_0022"), m);
  EXPECT_EQ(split_words(m).size(), static_cast<size_t>(kMarkerTokens));
}

TEST(AgenticPlan, TurnZeroSystemSegmentFromTheDeclaredPrefix) {
  // 100 + 30 declared tokens: ceil(130 / 64) = 3 system blocks; the rest and the tail are user.
  auto plan = plan_segments(make_tree({make_turn(64 * 10 + 5, 1, ids(1, 10))}, 100, 30), 0);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_FALSE(plan[0].reset);
  expect_segments(plan[0].segments, {{kS, 192, 3}, {kU, 7 * 64 + 5, 7}});
  // 0/0 captures: all user.
  plan = plan_segments(make_tree({make_turn(64 * 10 + 5, 1, ids(1, 10))}), 0);
  expect_segments(plan[0].segments, {{kU, 645, 10}});
  // A prefix longer than the covered blocks is clamped, and the last block goes back to the user.
  plan = plan_segments(make_tree({make_turn(256, 1, ids(1, 4))}, 1000, 0), 0);
  expect_segments(plan[0].segments, {{kS, 192, 3}, {kU, 64, 1}});
  // With a tail the system segment keeps every covered block.
  plan = plan_segments(make_tree({make_turn(260, 1, ids(1, 4))}, 1000, 0), 0);
  expect_segments(plan[0].segments, {{kS, 256, 4}, {kU, 4, 0}});
}

TEST(AgenticPlan, AppendOnlyTurnsAddAnAssistantThenAUserSegment) {
  const ReplayTree tree = make_tree({
      make_turn(3 * 64 + 8, 100, ids(1, 3)),  // user 3 blocks + 8
      make_turn(8 * 64 + 10, 30, ids(1, 8)),  // ceil(100/64) = 2 assistant, 3 user + 10
      make_turn(10 * 64, 1000, ids(1, 10)),   // 1 assistant, 1 user
      make_turn(12 * 64, 5, ids(1, 12)),      // 16 assistant wanted: 1, 1 handed back to user
      make_turn(12 * 64 + 9, 5, ids(1, 12)),  // no new block: the tail alone is the user
  });
  const auto plan = plan_segments(tree, 0);
  ASSERT_EQ(plan.size(), 5u);
  for (const auto& d : plan) EXPECT_FALSE(d.reset);
  expect_segments(plan[0].segments, {{kU, 200, 3}});
  expect_segments(plan[1].segments, {{kA, 128, 2}, {kU, 3 * 64 + 10, 3}});
  expect_segments(plan[2].segments, {{kA, 64, 1}, {kU, 64, 1}});
  expect_segments(plan[3].segments, {{kA, 64, 1}, {kU, 64, 1}});
  expect_segments(plan[4].segments, {{kU, 9, 0}});
  const auto h = histories(tree);
  for (size_t k = 0; k < h.size(); ++k) {
    EXPECT_EQ(history_tokens(h[k]), tree.streams[0].turns[k].in) << k;
  }
}

TEST(AgenticPlan, ACutIntoTheHistoryResetsIt) {
  const ReplayTree tree = make_tree({
      make_turn(3 * 64 + 8, 64, ids(1, 3)),
      make_turn(6 * 64, 64, concat(ids(1, 3), ids(4, 6))),  // append: assistant 1, user 2
      make_turn(5 * 64 + 1, 64, concat(ids(1, 4), {9})),    // cut after block 4: reset
      make_turn(5 * 64, 64, concat(ids(1, 4), {9})),        // drops a tail, appends nothing
      make_turn(2 * 64 + 3, 64, ids(1, 2)),                 // cut inside the first segment
  });
  const auto plan = plan_segments(tree, 0);
  EXPECT_FALSE(plan[1].reset);
  EXPECT_TRUE(plan[2].reset);
  // Kept: user 3, assistant 1 (blocks 1..4); new: ceil(64 / 64) = 1 assistant block, and the
  // tail is the user.
  expect_segments(plan[2].segments, {{kU, 192, 3}, {kA, 64, 1}, {kA, 64, 1}, {kU, 1, 0}});
  // Appending nothing re-sends the history; its last block becomes the closing user message.
  EXPECT_TRUE(plan[3].reset);
  expect_segments(plan[3].segments, {{kU, 192, 3}, {kA, 64, 1}, {kU, 64, 1}});
  EXPECT_TRUE(plan[4].reset);
  expect_segments(plan[4].segments, {{kU, 128, 2}, {kU, 3, 0}});
  const auto h = histories(tree);
  for (size_t k = 0; k < h.size(); ++k) {
    EXPECT_EQ(history_tokens(h[k]), tree.streams[0].turns[k].in) << k;
    EXPECT_EQ(to_string(h[k].back().role), "user") << k;
  }
}

TEST(AgenticPlan, AssistantCapKeepsLaterCutsOutOfAssistantSegments) {
  const ReplayTree tree = make_tree({
      make_turn(4 * 64 + 5, 5 * 64, ids(1, 4)),
      make_turn(10 * 64 + 5, 1, concat(ids(1, 4), ids(10, 15))),  // 5 wanted; turn 2 cuts at 6
      make_turn(8 * 64, 1, concat(ids(1, 4), {10, 11, 20, 21})),
  });
  const auto plan = plan_segments(tree, 0);
  expect_segments(plan[1].segments, {{kA, 128, 2}, {kU, 4 * 64 + 5, 4}});
  EXPECT_TRUE(plan[2].reset);  // cuts the user segment of turn 1, at the assistant's end
  expect_segments(plan[2].segments, {{kU, 256, 4}, {kA, 128, 2}, {kA, 64, 1}, {kU, 64, 1}});

  // No user segment survives a cut inside the system prompt: no assistant.
  const ReplayTree sys = make_tree(
      {make_turn(4 * 64, 500, ids(1, 4)), make_turn(4 * 64, 500, concat({1}, ids(7, 9)))}, 128);
  const auto p = plan_segments(sys, 0);
  expect_segments(p[0].segments, {{kS, 128, 2}, {kU, 128, 2}});
  EXPECT_TRUE(p[1].reset);
  expect_segments(p[1].segments, {{kS, 64, 1}, {kU, 192, 3}});
}

TEST(AgenticPlan, TailsCoverPartialAndUnrecordedBlocks) {
  const ReplayTree tree = make_tree({
      make_turn(5 * 64 + 3, 1, ids(1, 3)),  // 2 blocks without ids: tail 131
      make_turn(100, 1, ids(1, 5)),         // ids past floor(in / 64) cover nothing: 1 + 36
      make_turn(50, 1, {}),                 // shorter than a block
      make_turn(0, 1, {}),                  // nothing recorded: one token
  });
  const auto plan = plan_segments(tree, 0);
  expect_segments(plan[0].segments, {{kU, 3 * 64 + 131, 3}});
  expect_segments(plan[1].segments, {{kU, 64, 1}, {kU, 36, 0}});
  EXPECT_TRUE(plan[1].reset);
  expect_segments(plan[2].segments, {{kU, 50, 0}});
  EXPECT_FALSE(plan[3].reset);  // the tail-only message goes, the new one replaces it
  expect_segments(plan[3].segments, {{kU, 1, 0}});
  StreamPrompts sp(tree, 0, 42, "");
  for (int k = 0; k < 4; ++k) {
    sp.advance_to(k);
    const auto msgs = parse_messages(sp.messages_json());
    ASSERT_EQ(msgs.size(), 1u);
    std::string text;
    for (const auto& w : split_words(msgs[0].content))
      text += (text.empty() ? "" : " ") + std::string(w);
    EXPECT_EQ(text, expected_text(tree, k, 42)) << k;
    EXPECT_EQ(sp.content_tokens(), std::max<int64_t>(tree.streams[0].turns[k].in, 1)) << k;
  }
  EXPECT_EQ(tail_words("s", 1, 10)[0], "start");  // by hand: SHA256("s:turn_1:partial_tail")
}

TEST(AgenticPrompts, BodiesCarryTheWholeHistoryAndTheMarkerOnce) {
  const std::string marker = cache_bust_marker("bench", 0, 0, "t");
  const ReplayTree tree = make_tree(
      {
          make_turn(4 * 64 + 8, 64, ids(1, 4)),    // system 2, user 2 + 8
          make_turn(6 * 64 + 2, 64, ids(1, 6)),    // assistant 1, user 1 + 2
          make_turn(1 * 64 + 7, 64, {1}),          // cut into the system: no user left, a tail
          make_turn(3 * 64 + 7, 64, {1, 30, 31}),  // the tail-only user goes, with the marker
      },
      100);
  StreamPrompts sp(tree, 0, 7, marker);
  sp.advance_to(0);
  auto msgs = parse_messages(sp.messages_json());
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[0].role, "system");
  EXPECT_EQ(msgs[0].content.find("[rid:"), std::string::npos);
  EXPECT_EQ(msgs[1].role, "user");
  EXPECT_EQ(msgs[1].content.rfind(marker, 0), 0u);
  EXPECT_EQ(sp.content_tokens(), 4 * 64 + 8 + kMarkerTokens);
  // The wire text escapes the marker's newlines.
  EXPECT_NE(sp.messages_json().find(R"("content":"[rid:)"), std::string::npos);
  EXPECT_NE(sp.messages_json().find(R"(]\n\n)"), std::string::npos);

  const std::string before = sp.messages_json();
  sp.advance_to(0);  // idempotent
  EXPECT_EQ(sp.messages_json(), before);
  sp.advance_to(1);
  msgs = parse_messages(sp.messages_json());
  ASSERT_EQ(msgs.size(), 4u);
  EXPECT_EQ(msgs[2].role, "assistant");
  EXPECT_EQ(msgs[3].role, "user");
  // Append-only: the old text is kept byte for byte, but for turn 0's tail of 8 words.
  std::string tail;
  for (const auto& w : tail_words("s", 0, 8)) tail += " " + w;
  ASSERT_EQ(before.substr(before.size() - tail.size() - 3), tail + "\"}]");
  EXPECT_EQ(sp.messages_json().rfind(before.substr(0, before.size() - tail.size() - 3), 0), 0u);
  EXPECT_EQ(sp.content_tokens(), 6 * 64 + 2 + kMarkerTokens);
  sp.advance_to(2);  // reset: system 1 block, user 7 tokens
  msgs = parse_messages(sp.messages_json());
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[0].role, "system");
  EXPECT_EQ(split_words(msgs[0].content).size(), 64u);
  EXPECT_EQ(msgs[1].role, "user");
  EXPECT_EQ(msgs[1].content.rfind(marker, 0), 0u);  // placed again after the reset
  EXPECT_EQ(sp.content_tokens(), 64 + 7 + kMarkerTokens);
  sp.advance_to(3);
  EXPECT_FALSE(sp.plan()[3].reset);
  msgs = parse_messages(sp.messages_json());
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[1].content.rfind(marker, 0), 0u);
  size_t markers = 0;
  for (size_t at = 0; (at = sp.messages_json().find("[rid:", at)) != std::string::npos; ++at) {
    ++markers;
  }
  EXPECT_EQ(markers, 1u);
  EXPECT_EQ(sp.content_tokens(), 3 * 64 + 7 + kMarkerTokens);
}

TEST(AgenticPrompts, InZeroIsOneUserToken) {
  const ReplayTree tree = make_tree({make_turn(0, 5, {})});
  StreamPrompts sp(tree, 0, 1, cache_bust_marker("b", 0, 0, "t"));
  sp.advance_to(0);
  const auto msgs = parse_messages(sp.messages_json());
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0].role, "user");
  EXPECT_EQ(split_words(msgs[0].content).size(), 2u);  // the marker and one word
  EXPECT_EQ(sp.content_tokens(), 1 + kMarkerTokens);
}

// Random streams (appends, edits, compactions, missing ids, short and empty prompts, system
// prefixes): every invariant, every turn, reached step by step and by a jump.
TEST(AgenticPrompts, RandomStreamsAreExactAndJumpsAgreeWithSteps) {
  std::mt19937_64 rng(12345);
  auto pick = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  int resets = 0, turns_seen = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t bs = pick(0, 3) == 0 ? 16 : 64;
    std::vector<Turn> turns;
    std::vector<int64_t> cur;
    int64_t next_id = 1;
    const int n = static_cast<int>(pick(1, 12));
    for (int k = 0; k < n; ++k) {
      const int64_t r = pick(0, 9);
      if (r <= 5) {
        for (int64_t i = pick(0, 6); i > 0; --i) cur.push_back(next_id++);  // append
      } else if (r <= 7 && !cur.empty()) {
        cur.resize(static_cast<size_t>(pick(0, static_cast<int64_t>(cur.size()))));  // cut
        for (int64_t i = pick(0, 3); i > 0; --i) cur.push_back(next_id++);
      } else if (r == 8) {
        cur.clear();  // compaction
        for (int64_t i = pick(0, 4); i > 0; --i) cur.push_back(next_id++);
      }
      int64_t in = static_cast<int64_t>(cur.size()) * bs + pick(0, bs - 1);
      std::vector<int64_t> recorded = cur;
      if (pick(0, 9) == 0 && !recorded.empty()) recorded.pop_back();  // recording lost one
      if (pick(0, 19) == 0) in = 0;
      turns.push_back(make_turn(in, pick(0, 4) == 0 ? 0 : pick(1, 400), recorded));
    }
    ReplayTree tree = make_tree(turns, pick(0, 1) ? pick(1, 300) : 0, 0, bs);
    tree.global_scope = pick(0, 1) == 1;
    const std::string marker = cache_bust_marker("bench", trial, 0, "t");
    StreamPrompts step(tree, 0, 99, marker);
    for (int k = 0; k < n; ++k) {
      SCOPED_TRACE(::testing::Message() << "trial " << trial << " turn " << k);
      step.advance_to(k);
      resets += step.plan()[static_cast<size_t>(k)].reset;
      ++turns_seen;
      const Turn& t = tree.streams[0].turns[static_cast<size_t>(k)];
      const auto msgs = parse_messages(step.messages_json());
      ASSERT_FALSE(msgs.empty());
      EXPECT_EQ(msgs.back().role, "user");
      int64_t words = 0;
      bool seen_user = false;
      for (size_t i = 0; i < msgs.size(); ++i) {
        words += static_cast<int64_t>(split_words(msgs[i].content).size());
        if (i > 0) {
          EXPECT_NE(msgs[i].role, msgs[i - 1].role);  // one message per role run
        }
        if (msgs[i].role == "system") {
          EXPECT_EQ(i, 0u);
        }
        const bool has_marker = msgs[i].content.rfind(marker, 0) == 0;
        EXPECT_EQ(has_marker, msgs[i].role == "user" && !seen_user);
        seen_user |= msgs[i].role == "user";
      }
      EXPECT_EQ(words, std::max<int64_t>(t.in, 1) + kMarkerTokens);
      EXPECT_EQ(step.content_tokens(), words);
      EXPECT_EQ(step.message_count(), static_cast<int>(msgs.size()));
      EXPECT_EQ(text_without_marker(msgs), expected_text(tree, k, 99));
      StreamPrompts jump(tree, 0, 99, marker);
      jump.advance_to(k);
      EXPECT_EQ(jump.messages_json(), step.messages_json());
      EXPECT_EQ(jump.content_tokens(), step.content_tokens());
    }
  }
  EXPECT_GT(resets, 20);  // the generator does exercise resets
  EXPECT_GT(turns_seen - resets, 100);
}

// The recorded trace_0014 as one stream of its top-level requests (the DAG builder is not
// needed for the prompt text): exact sizes, valid JSON, equal ids equal text, every turn.
TEST(AgenticPrompts, RecordedTraceTopLevelTurns) {
  auto traces =
      load_weka_traces({std::string(INFERBENCH_TEST_DATA) + "/agentx-traces/trace_0014.json"});
  ASSERT_TRUE(traces.ok()) << traces.error().message;
  const WekaTrace& w = traces->front();
  ReplayTree tree;
  tree.trace_id = w.id;
  tree.block_size = w.block_size;
  tree.global_scope = w.hash_id_scope == "global";
  Stream s;
  s.session_id = w.id;
  s.tool_tokens = w.tool_tokens;
  s.system_tokens = w.system_tokens;
  for (const auto& e : w.entries) {
    if (!e.request) continue;
    Turn t = make_turn(e.request->in, e.request->out, e.request->hash_ids);
    t.t = e.request->t;
    t.api_time = e.request->api_time;
    s.turns.push_back(std::move(t));
  }
  tree.streams.push_back(std::move(s));
  const int n = static_cast<int>(tree.streams[0].turns.size());
  ASSERT_EQ(n, 121);
  const std::string marker = cache_bust_marker("bench", 0, 0, w.id);
  StreamPrompts sp(tree, 0, 42, marker);
  int resets = 0, checked = 0;
  std::map<int64_t, std::string> blocks;
  for (int k = 0; k < n; ++k) {
    SCOPED_TRACE(::testing::Message() << "turn " << k);
    sp.advance_to(k);
    const bool reset = sp.plan()[static_cast<size_t>(k)].reset;
    resets += reset;
    // Every turn is built, and its text checked where the history is cut (a reset), on the turn
    // after (appending to a cut history), on every 8th turn and on the last: a third of the
    // turns, so that the sanitizer pass spends seconds, not a minute, on 158k-token prompts.
    const bool after_reset = k > 0 && sp.plan()[static_cast<size_t>(k - 1)].reset;
    if (!(reset || after_reset || k % 8 == 0 || k + 1 == n)) continue;
    ++checked;
    const Turn& t = tree.streams[0].turns[static_cast<size_t>(k)];
    const auto msgs = parse_messages(sp.messages_json());
    ASSERT_FALSE(msgs.empty());
    EXPECT_EQ(msgs.front().role, "system");
    EXPECT_EQ(msgs.back().role, "user");
    EXPECT_EQ(word_count(msgs), t.in + kMarkerTokens);
    EXPECT_EQ(sp.content_tokens(), t.in + kMarkerTokens);
    // Block p of the history is the text of hash id p, whichever turn it was written at.
    EXPECT_TRUE(text_without_marker(msgs) == expected_text(tree, k, 42, &blocks));
  }
  // The 17 turns that cut into the previous one's blocks (9 by one block, 2 by two, 6 by more);
  // the other 103 append to the text built so far.
  EXPECT_EQ(resets, 17);
  EXPECT_EQ(checked, 39);  // 17 resets, the turns after them, every 8th, the last
}

}  // namespace
}  // namespace ib::workload::agentic
