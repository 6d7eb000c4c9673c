#include "tokenizer/added_tokens.h"

namespace ib::tokenizer {

int32_t AddedTokenMatcher::child(int32_t node, uint8_t byte) const {
  for (const auto& [b, index] : nodes_[size_t(node)].children) {
    if (b == byte) return index;
  }
  return -1;
}

void AddedTokenMatcher::add(std::string_view content, int32_t id) {
  if (content.empty()) return;
  int32_t node = 0;
  for (char c : content) {
    const auto byte = static_cast<uint8_t>(c);
    int32_t next = child(node, byte);
    if (next < 0) {
      next = int32_t(nodes_.size());
      nodes_[size_t(node)].children.emplace_back(byte, next);
      nodes_.emplace_back();
    }
    node = next;
  }
  nodes_[size_t(node)].id = id;
  first_[static_cast<uint8_t>(content[0])] = true;
}

int32_t AddedTokenMatcher::longest_at(std::string_view text, size_t at, size_t& length) const {
  int32_t node = 0, found = -1;
  for (size_t i = at; i < text.size(); ++i) {
    node = child(node, static_cast<uint8_t>(text[i]));
    if (node < 0) break;
    if (nodes_[size_t(node)].id >= 0) {
      found = nodes_[size_t(node)].id;
      length = i + 1 - at;
    }
  }
  return found;
}

}  // namespace ib::tokenizer
