// Prompt synthesis for agentic replay (docs/agentic.md, "Prompts"; the AgentX replay spec §3):
// text whose block structure is the trace's. Every hash id gives one block of `block_size`
// corpus tokens, the same text wherever the same id appears in the same scope, so a server's
// prefix cache sees the prefixes the recorded session had. Turn 0 gets a system segment from the
// declared tool/system tokens; later turns keep the longest common block prefix with the previous
// turn, give the first ceil(prev out / block) new blocks to an assistant message (the recorded
// reply, pre-canned) and the rest to a user message; a cut into what was sent before resets the
// history. Every request carries the whole message history.
//
// The corpus is a fixed list of common English words, one token each for serve-sim (which counts
// words) and one token each, give or take the joins, for BPE tokenizers. The cache-bust marker
// `[rid:<12 hex>]\n\n` is one more token for serve-sim.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "workload/agentic_dag.h"

namespace ib::workload::agentic {

/// The token corpus blocks are cut from.
class Corpus {
 public:
  /// The built-in word list.
  static const Corpus& words();
  size_t size() const { return words_.size(); }
  std::string_view token(size_t i) const { return words_[i % words_.size()]; }

 private:
  explicit Corpus(std::vector<std::string_view> words) : words_(std::move(words)) {}
  std::vector<std::string_view> words_;
};

/// The cache-bust marker text of one tree: "[rid:" + the first 12 hex digits of
/// SHA256("<benchmark_id>:<recycle_pass>:<lane>:<base_trace_id>") + "]\n\n".
std::string cache_bust_marker(std::string_view benchmark_id, int64_t recycle_pass, int lane,
                              std::string_view base_trace_id);
/// Tokens the marker adds for serve-sim (a word counter): 1.
inline constexpr int kMarkerTokens = 1;

enum class Role { kSystem, kUser, kAssistant };
std::string_view to_string(Role role);

/// What one turn adds to the history (or, with `reset`, the whole history it replaces).
struct TurnDelta {
  struct Segment {
    Role role = Role::kUser;
    int64_t tokens = 0;  // corpus tokens
    int blocks = 0;      // hashed blocks (the rest: the synthesized tail)
  };
  bool reset = false;
  std::vector<Segment> segments;
};

/// The segment plan of every turn of a stream (pure; cheap: no text). Total tokens of turn k's
/// history equal turns[k].in exactly.
std::vector<TurnDelta> plan_segments(const ReplayTree& tree, int stream);

/// Builds the request bodies of one stream incrementally: the serialized message array is kept
/// between turns and extended by each turn's new messages; a reset rebuilds it. Text for a block
/// is a pure function of (seed, scope, hash id).
class StreamPrompts {
 public:
  /// `seed` is the run's --seed; `marker` (may be empty) goes in front of the first user message.
  /// The tree must outlive this object.
  StreamPrompts(const ReplayTree& tree, int stream, uint64_t seed, std::string marker,
                const Corpus& corpus = Corpus::words());

  /// Moves the history to the end of turn `k` (applies the deltas of the turns up to k that were
  /// not applied yet). Turns are visited in increasing order; REQUIRES: k >= turns applied − 1.
  void advance_to(int k);
  /// The JSON array of messages of the turn last advanced to: "[{"role":"system",...},...]".
  const std::string& messages_json() const { return messages_; }
  /// Messages in that array.
  int message_count() const { return message_count_; }
  /// Tokens of corpus text in that array (== turns[k].in), plus the marker's.
  int64_t content_tokens() const { return content_tokens_; }
  int turn() const { return applied_ - 1; }

 private:
  void append_segment(const TurnDelta::Segment& seg, size_t first_block_pos, int k);
  const ReplayTree* tree_;
  int stream_;
  uint64_t seed_;
  std::string marker_;
  const Corpus* corpus_;
  std::vector<TurnDelta> plan_;
  int applied_ = 0;
  std::string messages_;
  int message_count_ = 0;
  int64_t content_tokens_ = 0;
  bool marker_placed_ = false;
  // Segments of the current history: role, first block position, tokens (to rebuild on reset).
  std::vector<TurnDelta::Segment> history_;
};

/// The text of hash block `hash_id` of `tree` (tokens separated by single spaces, no leading or
/// trailing space), deterministic in (seed, scope, hash id).
std::string block_text(const ReplayTree& tree, uint64_t seed, int64_t hash_id,
                       const Corpus& corpus = Corpus::words());

}  // namespace ib::workload::agentic
