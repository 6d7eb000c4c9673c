#include "workload/random_prompts.h"

#include "workload/exact_prompts.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <random>
#include <string_view>

namespace ib::workload {
namespace {

// Common English words: with most tokenizers each is one token when preceded by a space.
constexpr std::array<std::string_view, 64> kPromptWords = {
    "the",   "of",    "and",  "to",    "in",   "is",    "that", "for",   "it",   "as",    "was",
    "with",  "be",    "by",   "on",    "not",  "he",    "this", "are",   "or",   "his",   "from",
    "at",    "which", "but",  "have",  "an",   "had",   "they", "you",   "were", "their", "one",
    "all",   "we",    "can",  "her",   "has",  "there", "been", "if",    "more", "when",  "will",
    "would", "who",   "so",   "no",    "time", "up",    "out",  "many",  "then", "them",  "these",
    "may",   "she",   "some", "other", "into", "could", "two",  "first", "new"};

// Draws an integer uniformly from [lo, hi] with an explicit algorithm, so the sequence is the
// same across standard libraries (std::uniform_int_distribution is implementation-defined).
int64_t draw(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  const auto span = static_cast<uint64_t>(hi - lo) + 1;
  // Rejection sampling removes modulo bias.
  const uint64_t limit = UINT64_MAX - (UINT64_MAX % span);
  uint64_t x;
  do {
    x = rng();
  } while (x >= limit);
  return lo + static_cast<int64_t>(x % span);
}

}  // namespace

Status check_point_size(int64_t requests, int64_t warmups, int64_t isl, const std::string& what) {
  if (requests > kMaxPointRequests || warmups > kMaxPointRequests) {
    return Error{fmt::format("{}: {} measured and {} warmup requests in one point; at most {} "
                             "each (lower the request counts)",
                             what, requests, warmups, kMaxPointRequests)};
  }
  // Both at most 1e7 and isl at most int range: the product fits int64.
  const int64_t tokens = (requests + warmups) * isl;
  if (tokens > kMaxPointPromptTokens) {
    return Error{fmt::format("{}: {} prompts of up to {} tokens are {} prompt tokens in one point, "
                             "more than the limit of {} (held in memory); lower the request "
                             "counts or the input length",
                             what, requests + warmups, isl, tokens, kMaxPointPromptTokens)};
  }
  return Status::Ok();
}

Status validate(const RandomWorkload& w) {
  if (w.isl < 1) return Error{fmt::format("--isl must be at least 1 (got {})", w.isl)};
  if (w.osl < 1) return Error{fmt::format("--osl must be at least 1 (got {})", w.osl)};
  if (!(w.range_ratio > 0.0 && w.range_ratio <= 1.0)) {
    return Error{fmt::format("--range-ratio must be in (0, 1] (got {})", w.range_ratio)};
  }
  if (w.num_prompts < 1) {
    return Error{fmt::format("--num-prompts must be at least 1 (got {})", w.num_prompts)};
  }
  if (w.vocab_size <= 100) {
    return Error{fmt::format("vocabulary size must exceed 100 (got {})", w.vocab_size)};
  }
  if (w.tokenizer) {
    auto builder = ExactPromptBuilder::create(w.tokenizer, w.as_text);
    if (!builder) return builder.error();
    const auto shortest =
        std::max<int64_t>(1, static_cast<int64_t>(std::floor(w.range_ratio * w.isl)));
    if (shortest < builder->min_tokens()) {
      return Error{fmt::format(
          "--isl {} with --range-ratio {}: the shortest prompt would have {} tokens, but with {} "
          "a request has at least {} (raise --isl)",
          w.isl, w.range_ratio, shortest,
          w.as_text ? "this chat template" : "this tokenizer's special tokens",
          builder->min_tokens())};
    }
  }
  return check_point_size(w.num_prompts, 0, w.isl, "--num-prompts and --isl");
}

Expected<std::vector<PromptSpec>> make_random_prompts(const RandomWorkload& w) {
  std::mt19937_64 rng(w.seed);
  auto low = [&](int len) {
    return std::max<int64_t>(1, static_cast<int64_t>(std::floor(w.range_ratio * len)));
  };
  std::vector<PromptSpec> prompts(static_cast<size_t>(w.num_prompts));
  for (auto& p : prompts) {
    p.input_len = static_cast<int>(draw(rng, low(w.isl), w.isl));
    p.output_len = static_cast<int>(draw(rng, low(w.osl), w.osl));
  }
  if (w.tokenizer) {
    auto builder = ExactPromptBuilder::create(w.tokenizer, w.as_text);
    if (!builder) return builder.error();
    // Distinct window starts (while the corpus has that many), so no two prompts share a prefix.
    const auto size = static_cast<int64_t>(builder->corpus_tokens());
    std::vector<int> lens;
    std::vector<uint64_t> starts;
    std::vector<bool> used(static_cast<size_t>(size), false);
    for (size_t i = 0; i < prompts.size(); ++i) {
      auto s = draw(rng, 0, size - 1);
      for (int tries = 0; used[static_cast<size_t>(s)] && tries < 64; ++tries) {
        s = draw(rng, 0, size - 1);
      }
      used[static_cast<size_t>(s)] = true;
      starts.push_back(static_cast<uint64_t>(s));
      lens.push_back(prompts[i].input_len);
    }
    auto built = builder->build_all(lens, starts);
    if (!built) return built.error();
    for (size_t i = 0; i < prompts.size(); ++i) {
      ExactPrompt& e = (*built)[i];
      prompts[i].text = std::move(e.text);
      prompts[i].input_len = e.tokens;
      prompts[i].exact_len = e.exact;
    }
    return prompts;
  }
  for (auto& p : prompts) {
    p.exact_len = !w.as_text;
    if (w.as_text) {
      p.text.reserve(static_cast<size_t>(p.input_len) * 6);
      for (int i = 0; i < p.input_len; ++i) {
        if (i > 0) p.text.push_back(' ');
        p.text.append(kPromptWords[static_cast<size_t>(draw(rng, 0, kPromptWords.size() - 1))]);
      }
    } else {
      p.token_ids.resize(static_cast<size_t>(p.input_len));
      for (auto& id : p.token_ids) id = static_cast<int32_t>(draw(rng, 100, w.vocab_size - 1));
    }
  }
  return prompts;
}

}  // namespace ib::workload
