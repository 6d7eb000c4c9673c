// Added (special and non-special) tokens, found in text before anything else: leftmost, and the
// longest at that position (tokenizers' AddedVocabulary, Aho-Corasick LeftmostLongest).
// Internal to src/tokenizer/.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace ib::tokenizer {

class AddedTokenMatcher {
 public:
  /// Adds `content` (non-empty) as token `id`; a later add of the same content replaces it.
  void add(std::string_view content, int32_t id);
  bool empty() const { return nodes_.size() <= 1; }

  /// Splits `text` into runs of plain text and added tokens: calls text(begin, end) for each
  /// non-empty run between tokens and token(id) for each token, in order.
  template <class OnText, class OnToken>
  void split(std::string_view text, OnText&& on_text, OnToken&& on_token) const {
    size_t plain = 0, i = 0;
    if (empty()) {
      if (!text.empty()) on_text(size_t{0}, text.size());
      return;
    }
    while (i < text.size()) {
      if (!first_[static_cast<uint8_t>(text[i])]) {
        ++i;
        continue;
      }
      size_t length = 0;
      const int32_t id = longest_at(text, i, length);
      if (id < 0) {
        ++i;
        continue;
      }
      if (plain != i) on_text(plain, i);
      on_token(id);
      i += length;
      plain = i;
    }
    if (plain != text.size()) on_text(plain, text.size());
  }

 private:
  struct Node {
    int32_t id = -1;
    // Children as (byte, node index); a handful per node, searched linearly.
    std::vector<std::pair<uint8_t, int32_t>> children;
  };
  int32_t child(int32_t node, uint8_t byte) const;
  // The id of the longest token that starts at text[at], or -1; its byte length in `length`.
  int32_t longest_at(std::string_view text, size_t at, size_t& length) const;

  std::vector<Node> nodes_{Node{}};
  std::array<bool, 256> first_{};  // bytes that start some token
};

}  // namespace ib::tokenizer
