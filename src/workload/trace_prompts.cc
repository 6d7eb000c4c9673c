#include "workload/trace_prompts.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "core/numeric.h"
#include "workload/agentic_prompts.h"

namespace ib::workload {

const char* trace_prompt_mode_name(TracePromptMode m) {
  switch (m) {
    case TracePromptMode::kTokenIds:
      return "token-ids";
    case TracePromptMode::kTokenizerText:
      return "tokenizer-text";
    case TracePromptMode::kWords:
      return "words";
  }
  return "token-ids";
}

TracePromptMode trace_prompt_mode(const TracePromptOptions& o) {
  if (o.tokenizer) return TracePromptMode::kTokenizerText;
  return o.chat ? TracePromptMode::kWords : TracePromptMode::kTokenIds;
}

namespace {

// The block keys of request `index`: its hash ids, or (no prefix data) keys of its own that no
// other request shares, one per `block` tokens.
std::vector<uint64_t> block_keys(const TimedRequest& r, size_t index, int64_t block) {
  if (!r.hash_ids.empty()) return r.hash_ids;
  const int64_t b = block > 0 ? block : 512;
  std::vector<uint64_t> keys(static_cast<size_t>((r.input_len + b - 1) / b));
  for (size_t k = 0; k < keys.size(); ++k) {
    keys[k] = mix64(0x7261772d72657175ULL ^ (static_cast<uint64_t>(index) << 20) ^ k);
  }
  return keys;
}

// The i-th value of a block's stream (i < block): a pure function of (seed, key, i).
uint64_t block_value(uint64_t seed, uint64_t key, int64_t i) {
  return mix64(mix64(seed ^ mix64(key)) + static_cast<uint64_t>(i));
}

// The first `n` units of the concatenated blocks of `keys`, each unit handed to `emit`.
// REQUIRES: n <= keys.size() × block (parse_timed_trace checks each request's id count).
template <typename Emit>
void walk_blocks(const std::vector<uint64_t>& keys, int64_t block, int64_t n, uint64_t seed,
                 Emit&& emit) {
  int64_t done = 0;
  for (uint64_t key : keys) {
    for (int64_t i = 0; i < block && done < n; ++i, ++done) emit(block_value(seed, key, i));
  }
}

std::string words_text(const std::vector<uint64_t>& keys, int64_t block, int64_t n, uint64_t seed,
                       const agentic::Corpus& corpus) {
  std::string text;
  text.reserve(static_cast<size_t>(n) * 7);
  walk_blocks(keys, block, n, seed, [&](uint64_t v) {
    if (!text.empty()) text += ' ';
    text += corpus.token(static_cast<size_t>(v % corpus.size()));
  });
  return text;
}

// Text whose request is exactly r.input_len tokens: the blocks' words, the tail trimmed by what
// the template (or BOS) adds, then counted and corrected.
Expected<PromptSpec> tokenizer_prompt(const TimedRequest& r, const std::vector<uint64_t>& keys,
                                      int64_t block, const TracePromptOptions& o,
                                      const agentic::Corpus& corpus, int64_t overhead) {
  PromptSpec p;
  p.input_len = static_cast<int>(r.input_len);
  p.output_len = static_cast<int>(r.output_len);
  int64_t words = r.input_len - overhead;
  if (words < 1) {
    return Error{fmt::format(
        "line {}: input_length {} is not possible: the {} adds {} tokens and the text needs at "
        "least 1",
        r.line, r.input_len, o.chat ? "chat template" : "tokenizer", overhead)};
  }
  for (int round = 0; round < 4; ++round) {
    p.text = words_text(keys, block, words, o.seed, corpus);
    auto n = o.tokenizer->count_request(p.text, o.chat);
    if (!n) return n.error();
    if (*n == r.input_len) {
      p.exact_len = true;
      return p;
    }
    words += r.input_len - *n;
    if (words < 1) break;
  }
  return p;  // not exact: said by exact_len
}

}  // namespace

Expected<std::vector<PromptSpec>> make_trace_prompts(const TimedTrace& trace,
                                                     const TracePromptOptions& o) {
  const int64_t block = trace.block_size > 0 ? trace.block_size : 512;
  const TracePromptMode mode = trace_prompt_mode(o);
  std::vector<PromptSpec> out;
  out.reserve(trace.requests.size());
  std::optional<agentic::Corpus> corpus;
  int64_t overhead = 0;
  if (mode == TracePromptMode::kTokenizerText) {
    auto c = agentic::Corpus::for_tokenizer(o.tokenizer->tokenizer());
    if (!c) return c.error();
    corpus = std::move(*c);
    if (o.chat && !o.tokenizer->has_chat_template()) {
      return Error{"the chat API needs the tokenizer's chat template (none found beside it)"};
    }
    // What the request adds to its text: a one-word request's count minus one.
    auto n = o.tokenizer->count_request(corpus->token(0), o.chat);
    if (!n) return n.error();
    overhead = *n - 1;
  }
  for (size_t i = 0; i < trace.requests.size(); ++i) {
    const TimedRequest& r = trace.requests[i];
    const std::vector<uint64_t> keys = block_keys(r, i, trace.block_size);
    if (mode == TracePromptMode::kTokenizerText) {
      auto p = tokenizer_prompt(r, keys, block, o, *corpus, overhead);
      if (!p) return Error{fmt::format("{}: {}", trace.source, p.error().message)};
      out.push_back(std::move(*p));
      continue;
    }
    PromptSpec p;
    p.input_len = static_cast<int>(r.input_len);
    p.output_len = static_cast<int>(r.output_len);
    if (mode == TracePromptMode::kTokenIds) {
      p.token_ids.reserve(static_cast<size_t>(r.input_len));
      const uint64_t span = static_cast<uint64_t>(std::max(o.vocab_size - 100, 1));
      walk_blocks(keys, block, r.input_len, o.seed,
                  [&](uint64_t v) { p.token_ids.push_back(static_cast<int32_t>(100 + v % span)); });
      p.exact_len = true;
    } else {
      p.text = words_text(keys, block, r.input_len, o.seed, agentic::Corpus::words());
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace ib::workload
