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

#include "tokenizer/tokenizer.h"
#include "workload/agentic_dag.h"

namespace ib::workload::agentic {

/// The token corpus blocks are cut from.
class Corpus {
 public:
  /// The built-in word list (agentic_words.cc): 2,703 distinct lower-case ASCII words.
  static const Corpus& words();
  /// The built-in words that `tok` encodes as exactly one token both alone and after a space,
  /// so a block of N words joined by spaces is exactly N tokens for that tokenizer. Error when
  /// fewer than 256 words qualify.
  static Expected<Corpus> for_tokenizer(const tokenizer::Tokenizer& tok);
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
///
/// The history is a list of segments whose hashed blocks come first and in order (block position
/// p holds the text of hash id turns[k].hash_ids[p]); only the last segment, always a user one,
/// may end in synthesized tokens (the tail: the partial block and any blocks the recording left
/// without ids). Every turn first drops the previous turn's tail, which is not a reset: a
/// consumer keeps the messages and cuts that tail off the last one (or drops that message, when
/// the tail was all of it). A reset is a cut into a block, or a turn that appends nothing.
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
/// history equal turns[k].in exactly, except for in == 0: a request needs a non-empty user
/// message, so such a turn gets one synthesized token.
std::vector<TurnDelta> plan_segments(const ReplayTree& tree, int stream);

/// Builds the request bodies of one stream incrementally: the serialized message array is kept
/// between turns and extended by each turn's new messages; a reset rebuilds it. Text for a block
/// is a pure function of (seed, scope, hash id), and the array of turn k is a pure function of
/// (tree, stream, k, seed, marker), however the object got there. Adjacent segments of one role
/// are one message (their texts joined by a space), so roles alternate as chat templates want.
class StreamPrompts {
 public:
  /// `seed` is the run's --seed; `marker` (may be empty) goes in front of the first user message.
  /// The tree must outlive this object. REQUIRES: 0 <= stream < tree.streams.size().
  /// `marker_tokens` < 0: the marker's whitespace-separated words (serve-sim's count).
  StreamPrompts(const ReplayTree& tree, int stream, uint64_t seed, std::string marker,
                const Corpus& corpus = Corpus::words(), int64_t marker_tokens = -1);

  /// Moves the history to the end of turn `k` (applies the deltas of the turns up to k that were
  /// not applied yet, from the last reset among them). Turns are visited in increasing order;
  /// REQUIRES: turns applied − 1 <= k < number of turns.
  void advance_to(int k);
  /// The JSON array of messages of the turn last advanced to: "[{"role":"system",...},...]".
  const std::string& messages_json() const { return messages_; }
  /// Messages in that array.
  int message_count() const { return static_cast<int>(roles_.size()); }
  /// Tokens of corpus text in that array (== turns[k].in), plus the marker's (its
  /// whitespace-separated words: kMarkerTokens for cache_bust_marker's).
  int64_t content_tokens() const { return content_tokens_; }
  int turn() const { return applied_ - 1; }
  const std::vector<TurnDelta>& plan() const { return plan_; }

 private:
  void apply(int k);
  void drop_tail();
  void append_segment(const TurnDelta::Segment& seg, int64_t first_block_pos, int k);
  void open_message(Role role);
  void close_message();
  void append_words(size_t start, int64_t n);

  const ReplayTree* tree_;
  int stream_;
  std::string marker_json_;  // the marker, JSON-escaped
  int64_t marker_tokens_ = 0;
  const Corpus* corpus_;
  std::string block_key_;  // "<seed>:<scope>:" (the hash id follows)
  size_t block_key_prefix_ = 0;
  std::vector<TurnDelta> plan_;
  int applied_ = 0;
  std::string messages_ = "[]";
  std::vector<Role> roles_;  // of the messages in messages_
  int64_t content_tokens_ = 0;
  int marker_message_ = -1;  // the message that holds the marker; -1: none yet
  // The array's end: `open_` while the last message's content string is not closed (no `"}]`).
  bool open_ = false;
  bool last_has_words_ = false;    // the open content needs a space before its next word
  size_t last_message_begin_ = 0;  // offset of the last message (its leading comma included)
  int64_t history_blocks_ = 0;
  // The last turn's tail: where it starts in messages_ (its leading space included), its tokens,
  // whether words precede it in its message.
  size_t tail_begin_ = 0;
  int64_t tail_tokens_ = 0;
  bool tail_after_words_ = false;
};

/// The text of hash block `hash_id` of `tree` (tokens separated by single spaces, no leading or
/// trailing space), deterministic in (seed, scope, hash id): `block_size` corpus tokens from the
/// first 8 bytes (big-endian) of SHA256("<seed>:<scope>:<hash_id>") mod the corpus size, wrapping;
/// the scope is the trace id, or empty under the global scope. (AgentX seeds a PRNG with those
/// bytes and draws the start; the digest is uniform already, and no corpus is shared with it.)
std::string block_text(const ReplayTree& tree, uint64_t seed, int64_t hash_id,
                       const Corpus& corpus = Corpus::words());

}  // namespace ib::workload::agentic
