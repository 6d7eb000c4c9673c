#include "workload/exact_prompts.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "workload/gsm8k.h"

namespace ib::workload {

const std::string& natural_corpus() {
  static const std::string text = [] {
    std::string out;
    for (const auto& p : gsm8k::builtin().test) {
      if (!out.empty()) out += "\n\n";
      out += p.question;
    }
    return out;
  }();
  return text;
}

namespace {

// The corpus's ids per tokenizer identity: tokenizing it once takes ~0.1 s.
std::shared_ptr<const std::vector<int32_t>> corpus_ids(const tokenizer::ServingTokenizer& tok) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const std::vector<int32_t>>> cache;
  std::lock_guard lock(mu);
  auto& slot = cache[tok.identity()];
  if (!slot) {
    // Joined with a space at the wrap, as windows that cross it are.
    slot = std::make_shared<const std::vector<int32_t>>(tok.tokenizer().encode(natural_corpus()));
  }
  return slot;
}

std::string_view trim(std::string_view s) {
  const auto ws = [](char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; };
  while (!s.empty() && ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && ws(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

Expected<ExactPromptBuilder> ExactPromptBuilder::create(
    std::shared_ptr<const tokenizer::ServingTokenizer> tok, bool chat) {
  ExactPromptBuilder b;
  b.chat_ = chat;
  if (chat) {
    if (!tok->has_chat_template()) {
      return Error{fmt::format(
          "{} has no chat template, so the chat API's prompt length cannot be made exact (give "
          "the server's template with --chat-template FILE, or use the completions API)",
          tok->path())};
    }
    b.overhead_ = *tok->chat_overhead();
  } else {
    b.overhead_ = tok->prompt_specials();
  }
  b.min_tokens_ = b.overhead_ + 1;
  b.corpus_ = corpus_ids(*tok);
  b.tok_ = std::move(tok);
  if (b.corpus_->empty()) return Error{"the prompt corpus is empty"};
  return b;
}

Expected<int> ExactPromptBuilder::count_request(const std::string& text) const {
  auto n = tok_->count_request(text, chat_);
  if (!n) return n.error();
  return static_cast<int>(*n);
}

Expected<ExactPrompt> ExactPromptBuilder::build(int tokens, uint64_t start) const {
  if (tokens < min_tokens_) {
    return Error{fmt::format("a prompt of {} tokens is not possible: the {} adds {} tokens and "
                             "the text needs at least 1",
                             tokens, chat_ ? "chat template" : "tokenizer", overhead_)};
  }
  const std::vector<int32_t>& corpus = *corpus_;
  const size_t size = corpus.size();
  size_t s = start % size;
  int n = tokens - overhead_;
  std::vector<int> seen;
  std::vector<int32_t> window;
  ExactPrompt best;
  int best_miss = -1;
  for (int round = 0; round < 24; ++round) {
    window.resize(static_cast<size_t>(n));
    for (size_t i = 0; i < window.size(); ++i) window[i] = corpus[(s + i) % size];
    std::string text(trim(tok_->tokenizer().decode(window)));
    if (text.empty()) text.push_back('a');
    auto counted = count_request(text);
    if (!counted) return counted.error();
    const int c = *counted;
    const int miss = std::abs(c - tokens);
    if (best_miss < 0 || miss < best_miss) {
      best_miss = miss;
      best.text = text;
      best.tokens = c;
      best.content_tokens = static_cast<int>(tok_->tokenizer().count(text));
      best.exact = miss == 0;
    }
    if (miss == 0) return best;
    if (std::find(seen.begin(), seen.end(), n) != seen.end()) {
      // Oscillating between lengths (a join that merges or splits): another window.
      s = (s + 1) % size;
      seen.clear();
      n = tokens - overhead_;
      continue;
    }
    seen.push_back(n);
    n = std::max(1, n + (tokens - c));
  }
  return best;
}

Expected<std::vector<ExactPrompt>> ExactPromptBuilder::build_all(
    const std::vector<int>& tokens, const std::vector<uint64_t>& starts) const {
  const size_t count = tokens.size();
  std::vector<ExactPrompt> out(count);
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::optional<Error> failure;
  auto work = [&] {
    for (size_t i = next++; i < count; i = next++) {
      auto p = build(tokens[i], starts[i]);
      if (!p) {
        std::lock_guard lock(mu);
        if (!failure) failure = p.error();
        next = count;
        return;
      }
      out[i] = std::move(*p);
    }
  };
  const size_t threads =
      std::min<size_t>(count / 4 + 1, std::max(1u, std::min(8u, std::thread::hardware_concurrency())));
  {
    std::vector<std::jthread> pool;
    for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
  }
  if (failure) return *failure;
  return out;
}

}  // namespace ib::workload
