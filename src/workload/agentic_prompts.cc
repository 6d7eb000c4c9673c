#include "workload/agentic_prompts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <iterator>
#include <limits>

#include "core/sha256.h"
#include "core/strings.h"

namespace ib::workload::agentic {
namespace {

using Segment = TurnDelta::Segment;

// The first 8 digest bytes, big-endian: the AgentX seed of a block or a tail.
uint64_t hash_u64(std::string_view key) {
  const auto digest = sha256_digest(key);
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | digest[static_cast<size_t>(i)];
  return v;
}

int64_t block_size_of(const ReplayTree& tree) {
  return std::max<int64_t>(1, tree.block_size);
}

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// "<seed>:<scope>:": the scope is the trace id, or nothing under the global scope (one namespace
// for the whole corpus; no trace id can be empty, so the two never collide).
std::string block_key_prefix(const ReplayTree& tree, uint64_t seed) {
  return fmt::format("{}:{}:", seed,
                     tree.global_scope ? std::string_view() : std::string_view(tree.trace_id));
}

// Blocks of turn `t` that have text of their own: ids past floor(in / bs) cover nothing, and
// missing ids leave their blocks to the tail.
int64_t covered_blocks(const Turn& t, int64_t bs) {
  return std::min<int64_t>(static_cast<int64_t>(t.hash_ids.size()),
                           std::max<int64_t>(0, t.in) / bs);
}

// Where turn k's tail starts in the corpus (AgentX: the session, the turn, then n tokens read
// from there; wrapping, where n exceeds the corpus).
size_t tail_start(const Stream& stream, int k, int64_t n, const Corpus& corpus) {
  const uint64_t v = hash_u64(fmt::format("{}:turn_{}:partial_tail", stream.session_id, k));
  const auto size = static_cast<int64_t>(corpus.size());
  return static_cast<size_t>(v % static_cast<uint64_t>(std::max<int64_t>(size - n, 1)));
}

// Cuts the history to its first `keep` blocks and drops the tail (with its segment, when that
// segment was only a tail). True when that removed a block: the turn must re-send the whole
// history.
bool truncate(std::vector<Segment>& hist, int64_t keep, int64_t bs) {
  bool cut = false;
  size_t n = 0;
  for (; n < hist.size(); ++n) {
    Segment& s = hist[n];
    const int64_t b = std::min<int64_t>(s.blocks, keep);
    cut |= b < s.blocks;
    if (b == 0) break;
    s.blocks = static_cast<int>(b);
    s.tokens = b * bs;
    keep -= b;
  }
  hist.resize(n);
  return cut;
}

void push(std::vector<Segment>& hist, Role role, int64_t blocks, int64_t tail, int64_t bs) {
  if (blocks + tail <= 0) return;
  hist.push_back({role, blocks * bs + tail, static_cast<int>(blocks)});
}

int64_t count_words(std::string_view s) {
  int64_t n = 0;
  bool in_word = false;
  for (const char c : s) {
    const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
    if (!space && !in_word) ++n;
    in_word = !space;
  }
  return n;
}

}  // namespace

std::string_view to_string(Role role) {
  switch (role) {
    case Role::kSystem:
      return "system";
    case Role::kUser:
      return "user";
    case Role::kAssistant:
      return "assistant";
  }
  return "user";
}

std::string cache_bust_marker(std::string_view benchmark_id, int64_t recycle_pass, int lane,
                              std::string_view base_trace_id) {
  const std::string digest =
      sha256_hex(fmt::format("{}:{}:{}:{}", benchmark_id, recycle_pass, lane, base_trace_id));
  return "[rid:" + digest.substr(0, 12) + "]\n\n";
}

std::string block_text(const ReplayTree& tree, uint64_t seed, int64_t hash_id,
                       const Corpus& corpus) {
  const uint64_t v = hash_u64(fmt::format("{}{}", block_key_prefix(tree, seed), hash_id));
  const size_t start = static_cast<size_t>(v % corpus.size());
  std::string out;
  for (int64_t i = 0; i < block_size_of(tree); ++i) {
    if (i > 0) out.push_back(' ');
    out.append(corpus.token(start + static_cast<size_t>(i)));
  }
  return out;
}

std::vector<TurnDelta> plan_segments(const ReplayTree& tree, int stream) {
  const Stream& st = tree.streams[static_cast<size_t>(stream)];
  const std::vector<Turn>& turns = st.turns;
  const int64_t bs = block_size_of(tree);
  const size_t n = turns.size();

  std::vector<int64_t> covered(n), keep(n, 0);
  for (size_t k = 0; k < n; ++k) covered[k] = covered_blocks(turns[k], bs);
  for (size_t k = 1; k < n; ++k) {
    const int64_t m = std::min(covered[k - 1], covered[k]);
    int64_t i = 0;
    while (i < m && turns[k - 1].hash_ids[static_cast<size_t>(i)] ==
                        turns[k].hash_ids[static_cast<size_t>(i)]) {
      ++i;
    }
    keep[k] = i;
  }
  // compute_asst_block_caps: turn k's assistant blocks start at keep[k]; a later cut strictly
  // inside them would leave half a recorded reply, so it may reach no further than the nearest
  // later cut, among the cuts made while it still stands (until one at or before its start).
  std::vector<int64_t> cap(n, std::numeric_limits<int64_t>::max());
  for (size_t k = 1; k < n; ++k) {
    for (size_t j = k + 1; j < n && keep[j] > keep[k]; ++j) {
      cap[k] = std::min(cap[k], keep[j] - keep[k]);
    }
  }

  std::vector<TurnDelta> plan(n);
  std::vector<Segment> hist;
  for (size_t k = 0; k < n; ++k) {
    const Turn& t = turns[k];
    const int64_t tail = std::max<int64_t>(0, t.in) - covered[k] * bs;
    bool cut = false;
    if (k > 0) cut = truncate(hist, keep[k], bs);
    const size_t first_new = hist.size();
    const int64_t fresh = covered[k] - keep[k];  // new hashed blocks
    if (k == 0) {
      const int64_t declared =
          std::max<int64_t>(0, st.tool_tokens) + std::max<int64_t>(0, st.system_tokens);
      int64_t sys = declared > 0 ? std::min(ceil_div(declared, bs), covered[0]) : 0;
      if (sys == covered[0] && tail == 0 && sys > 0) --sys;  // the turn must end with a user
      push(hist, Role::kSystem, sys, 0, bs);
      push(hist, Role::kUser, covered[0] - sys, tail, bs);
    } else {
      const bool user_left = std::any_of(hist.begin(), hist.end(),
                                         [](const Segment& s) { return s.role == Role::kUser; });
      const int64_t prev_out = turns[k - 1].out;
      int64_t asst = 0;
      if (user_left && prev_out > 0) asst = std::min({ceil_div(prev_out, bs), fresh, cap[k]});
      if (asst == fresh && asst > 0 && tail == 0) --asst;  // hand the last block back to user
      push(hist, Role::kAssistant, asst, 0, bs);
      push(hist, Role::kUser, fresh - asst, tail, bs);
    }
    bool appended = hist.size() > first_new;
    if (hist.empty()) {
      // in == 0: one synthesized token, since a request needs a non-empty user message.
      push(hist, Role::kUser, 0, 1, bs);
      appended = true;
    } else if (hist.back().role != Role::kUser) {
      // Nothing appended after a cut that left a system or assistant segment last: its last
      // block becomes the user message (same text, so the same prefix).
      Segment& last = hist.back();
      --last.blocks;
      last.tokens -= bs;
      if (last.blocks == 0) hist.pop_back();
      push(hist, Role::kUser, 1, 0, bs);
    }
    TurnDelta& d = plan[k];
    d.reset = k > 0 && (cut || !appended);
    d.segments.assign(hist.begin() + static_cast<std::ptrdiff_t>(d.reset ? 0 : first_new),
                      hist.end());
  }
  return plan;
}

StreamPrompts::StreamPrompts(const ReplayTree& tree, int stream, uint64_t seed, std::string marker,
                             const Corpus& corpus, int64_t marker_tokens)
    : tree_(&tree),
      stream_(stream),
      marker_tokens_(marker_tokens >= 0 ? marker_tokens : count_words(marker)),
      corpus_(&corpus),
      block_key_(block_key_prefix(tree, seed)),
      block_key_prefix_(block_key_.size()),
      plan_(plan_segments(tree, stream)) {
  append_json_escaped(marker_json_, marker);
}

void StreamPrompts::advance_to(int k) {
  assert(k >= applied_ - 1 && k < static_cast<int>(plan_.size()));
  if (k < applied_) return;
  // A reset replaces everything before it: start a jump from the last one.
  int from = applied_;
  for (int j = k; j > applied_; --j) {
    if (plan_[static_cast<size_t>(j)].reset) {
      from = j;
      break;
    }
  }
  for (int j = from; j <= k; ++j) apply(j);
  applied_ = k + 1;
}

void StreamPrompts::apply(int k) {
  const TurnDelta& d = plan_[static_cast<size_t>(k)];
  const int64_t in = tree_->streams[static_cast<size_t>(stream_)].turns[static_cast<size_t>(k)].in;
  if (d.reset || k == 0) {
    messages_.clear();
    roles_.clear();
    content_tokens_ = 0;
    marker_message_ = -1;
    open_ = false;
    history_blocks_ = 0;
    tail_tokens_ = 0;
  } else if (tail_tokens_ > 0) {
    drop_tail();
  }
  // ~6.8 bytes a corpus word with its space, plus the message framing: one allocation a turn at
  // most, usually none.
  messages_.reserve(static_cast<size_t>(std::max<int64_t>(in, 1)) * 7 + marker_json_.size() + 256);
  for (const Segment& seg : d.segments) {
    append_segment(seg, history_blocks_, k);
    history_blocks_ += seg.blocks;
  }
  close_message();
}

void StreamPrompts::drop_tail() {
  content_tokens_ -= tail_tokens_;
  tail_tokens_ = 0;
  if (tail_after_words_) {
    // Words before it in its message: cut the text back to them.
    messages_.resize(tail_begin_);
    open_ = true;
    last_has_words_ = true;
    return;
  }
  // The tail was the whole message (the marker aside): the message goes.
  messages_.resize(last_message_begin_);
  if (marker_message_ == static_cast<int>(roles_.size()) - 1) {
    content_tokens_ -= marker_tokens_;
    marker_message_ = -1;
  }
  roles_.pop_back();
  open_ = false;
  if (roles_.empty()) {
    messages_ = "[]";
  } else {
    messages_.push_back(']');
    last_has_words_ = true;  // every message but a tail-only last one has words
  }
}

void StreamPrompts::open_message(Role role) {
  if (!roles_.empty() && roles_.back() == role) {
    if (!open_) {
      messages_.resize(messages_.size() - 3);  // `"}]`
      open_ = true;
    }
    return;
  }
  if (open_) {
    messages_ += "\"}";
  } else if (!roles_.empty()) {
    messages_.pop_back();  // `]`
  } else {
    messages_ = "[";
  }
  last_message_begin_ = messages_.size();
  if (!roles_.empty()) messages_.push_back(',');
  messages_ += R"({"role":")";
  messages_ += to_string(role);
  messages_ += R"(","content":")";
  open_ = true;
  roles_.push_back(role);
  last_has_words_ = false;
  if (role == Role::kUser && marker_message_ < 0 && !marker_json_.empty()) {
    // The marker runs straight into the first word (it ends in "\n\n").
    messages_ += marker_json_;
    content_tokens_ += marker_tokens_;
    marker_message_ = static_cast<int>(roles_.size()) - 1;
  }
}

void StreamPrompts::close_message() {
  if (roles_.empty()) {
    messages_ = "[]";
  } else if (open_) {
    messages_ += "\"}]";
  }
  open_ = false;
}

void StreamPrompts::append_words(size_t start, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (last_has_words_) messages_.push_back(' ');
    messages_.append(corpus_->token(start + static_cast<size_t>(i)));
    last_has_words_ = true;
  }
  content_tokens_ += n;
}

void StreamPrompts::append_segment(const TurnDelta::Segment& seg, int64_t first_block_pos, int k) {
  const Stream& st = tree_->streams[static_cast<size_t>(stream_)];
  const Turn& t = st.turns[static_cast<size_t>(k)];
  const int64_t bs = block_size_of(*tree_);
  open_message(seg.role);
  for (int b = 0; b < seg.blocks; ++b) {
    const int64_t id = t.hash_ids[static_cast<size_t>(first_block_pos + b)];
    block_key_.resize(block_key_prefix_);
    fmt::format_to(std::back_inserter(block_key_), "{}", id);
    append_words(static_cast<size_t>(hash_u64(block_key_) % corpus_->size()), bs);
  }
  const int64_t tail = seg.tokens - static_cast<int64_t>(seg.blocks) * bs;
  if (tail > 0) {
    tail_begin_ = messages_.size();
    tail_after_words_ = last_has_words_;
    tail_tokens_ = tail;
    append_words(tail_start(st, k, tail, *corpus_), tail);
  }
}

}  // namespace ib::workload::agentic
