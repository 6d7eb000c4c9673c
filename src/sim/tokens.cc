#include "sim/tokens.h"

#include <algorithm>
#include <array>

#include "core/strings.h"

namespace ib::sim {

namespace {

// Lorem ipsum words: plain ASCII, so token texts never need JSON escaping, and counting the words
// of generated text gives back the number of generated tokens.
constexpr std::array<std::string_view, 64> kWords = {
    " lorem",    " ipsum",    " dolor",     " sit",     " amet",      " consectetur", " adipiscing",
    " elit",     " sed",      " do",        " eiusmod", " tempor",    " incididunt",  " ut",
    " labore",   " et",       " dolore",    " magna",   " aliqua",    " enim",        " ad",
    " minim",    " veniam",   " quis",      " nostrud", " ullamco",   " laboris",     " nisi",
    " aliquip",  " ex",       " ea",        " commodo", " consequat", " duis",        " aute",
    " irure",    " in",       " voluptate", " velit",   " esse",      " cillum",      " fugiat",
    " nulla",    " pariatur", " excepteur", " sint",    " occaecat",  " cupidatat",   " non",
    " proident", " sunt",     " culpa",     " qui",     " officia",   " deserunt",    " mollit",
    " anim",     " id",       " est",       " laborum", " vitae",     " nunc",        " porta",
    " arcu"};

}  // namespace

uint64_t fnv1a(std::string_view bytes, uint64_t h) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

int count_words(std::string_view text) {
  int words = 0;
  bool in_word = false;
  for (char c : text) {
    if (is_ascii_space(c)) {
      in_word = false;
    } else if (!in_word) {
      in_word = true;
      ++words;
    }
  }
  return words;
}

int count_text_tokens(std::string_view text) {
  return std::max(1, count_words(text));
}

namespace {

size_t output_word_index(uint64_t stream_seed, int index) {
  uint64_t h = mix64(stream_seed ^ mix64(static_cast<uint64_t>(index)));
  return h % kWords.size();
}

}  // namespace

std::string_view output_token_text(uint64_t stream_seed, int index) {
  return kWords[output_word_index(stream_seed, index)];
}

uint64_t word_key(std::string_view word) {
  return mix64(fnv1a(word));
}

uint64_t token_id_key(int64_t id) {
  return mix64(static_cast<uint64_t>(id) ^ 0x746f6b656e6964ULL);
}

int append_word_keys(std::string_view text, std::vector<uint64_t>& keys) {
  int n = 0;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_ascii_space(text[i])) ++i;
    const size_t start = i;
    while (i < text.size() && !is_ascii_space(text[i])) ++i;
    if (i > start) {
      keys.push_back(word_key(text.substr(start, i - start)));
      ++n;
    }
  }
  return n;
}

uint64_t output_token_key(uint64_t stream_seed, int index) {
  static const std::array<uint64_t, kWords.size()> keys = [] {
    std::array<uint64_t, kWords.size()> k{};
    for (size_t i = 0; i < kWords.size(); ++i) k[i] = word_key(kWords[i].substr(1));
    return k;
  }();
  return keys[output_word_index(stream_seed, index)];
}

std::string_view to_string(FinishReason reason) {
  return reason == FinishReason::kStop ? "stop" : "length";
}

OutputPlan plan_output(uint64_t prompt_hash, uint64_t seed, int max_tokens, int min_tokens,
                       bool ignore_eos) {
  if (ignore_eos) return {max_tokens, FinishReason::kLength};
  uint64_t span = 2 * static_cast<uint64_t>(max_tokens);
  uint64_t natural = 1 + mix64(prompt_hash ^ mix64(seed)) % span;
  // EOS cannot be sampled before min_tokens tokens exist, so it is at best token min_tokens + 1.
  natural = std::max<uint64_t>(natural, static_cast<uint64_t>(min_tokens) + 1);
  if (natural > static_cast<uint64_t>(max_tokens)) return {max_tokens, FinishReason::kLength};
  return {static_cast<int>(natural), FinishReason::kStop};
}

}  // namespace ib::sim
