// Prompts of an exact token length for a real model's tokenizer (issue 18, docs/tokenizer.md
// "Exact input lengths"): windows of a natural-text corpus (the built-in GSM8K questions, MIT),
// decoded, re-encoded and fixed up until the request as the server counts it (its chat template
// included, or the BOS a completions prompt gets) has exactly the requested number of tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/expected.h"
#include "tokenizer/serving.h"

namespace ib::workload {

struct ExactPrompt {
  std::string text;      // the prompt (completions) or the user message's content (chat)
  int tokens = 0;        // the request as the server counts it: == the target when `exact`
  int content_tokens = 0;  // the text alone
  bool exact = false;
};

/// Builds exact prompts for one tokenizer and API. Thread-safe; cheap to copy.
class ExactPromptBuilder {
 public:
  /// `chat`: the text is one user message rendered through the tokenizer's chat template (which
  /// it must have). Tokenizes the corpus once (cached per tokenizer identity).
  static Expected<ExactPromptBuilder> create(std::shared_ptr<const tokenizer::ServingTokenizer> tok,
                                             bool chat);

  /// The fewest tokens a request can have (template or specials plus one token of text).
  int min_tokens() const { return min_tokens_; }
  /// Corpus tokens: windows start anywhere in [0, corpus_tokens()).
  size_t corpus_tokens() const { return corpus_->size(); }

  /// A prompt of `tokens` tokens whose text starts at corpus token `start` (mod the corpus size).
  /// The decode → encode → fix-up loop runs up to 24 rounds, moving the window one token on when
  /// it oscillates; a prompt that still misses comes back with exact = false and its true count.
  /// Error when `tokens` < min_tokens() or the template fails to render.
  Expected<ExactPrompt> build(int tokens, uint64_t start) const;

  /// Builds many prompts on all cores (the result is the same as building them one by one).
  Expected<std::vector<ExactPrompt>> build_all(const std::vector<int>& tokens,
                                               const std::vector<uint64_t>& starts) const;

 private:
  ExactPromptBuilder() = default;
  /// The request's tokens as the server counts them; Error when the template fails to render.
  Expected<int> count_request(const std::string& text) const;

  std::shared_ptr<const tokenizer::ServingTokenizer> tok_;
  std::shared_ptr<const std::vector<int32_t>> corpus_;
  bool chat_ = false;
  int overhead_ = 0;  // tokens the request adds to its text
  int min_tokens_ = 1;
};

/// The corpus text: the built-in GSM8K test questions, separated by blank lines.
const std::string& natural_corpus();

}  // namespace ib::workload
