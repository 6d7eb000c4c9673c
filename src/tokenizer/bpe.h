// Byte-level BPE over raw bytes: the vocabulary as byte strings, merges as a table of id pairs.
// One model serves both tokenizer.json (merges by rank) and tiktoken rank files (a pair's rank is
// the rank of the joined bytes). Internal to src/tokenizer/.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ib::tokenizer {

/// (left id, right id) -> (rank, merged id), open addressing on one 64-bit key.
class PairTable {
 public:
  struct Merge {
    uint32_t rank;
    int32_t id;
  };
  /// Sets the merge of (left, right), replacing an earlier one (a later duplicate merge line
  /// wins, as in tokenizers' HashMap built from the merges list).
  void insert(int32_t left, int32_t right, Merge merge);
  /// The merge of (left, right), or nullptr.
  const Merge* find(int32_t left, int32_t right) const {
    if (slots_.empty()) return nullptr;
    const uint64_t key = pack(left, right);
    for (size_t i = slot_of(key);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return &s.merge;
      if (s.key == kEmpty) return nullptr;
    }
  }
  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t key;
    Merge merge;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static uint64_t pack(int32_t l, int32_t r) { return uint64_t(uint32_t(l)) << 32 | uint32_t(r); }
  size_t slot_of(uint64_t key) const { return size_t((key * 0x9E3779B97F4A7C15ull) >> shift_); }
  void grow();

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

class BpeModel {
 public:
  /// Byte strings of the vocabulary -> id.
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> vocab;
  /// The id of each single byte, -1 when the vocabulary lacks it.
  std::array<int32_t, 256> byte_ids{};
  PairTable merges;
  /// A piece that is a vocabulary entry is one token, without merging (tokenizers'
  /// `ignore_merges`; tiktoken always does this).
  bool ignore_merges = false;
  /// Used for a byte the vocabulary lacks; -1: such bytes are dropped (tokenizers without
  /// `unk_token`).
  int32_t unk_id = -1;

  /// Appends the ids of one pre-tokenized piece (bytes) to `out`. Merges follow tokenizers'
  /// BPE::merge_word: the lowest rank first, the leftmost on ties, with its priority queue. No
  /// allocation once the per-thread buffers have grown to the longest piece seen.
  void encode_piece(std::string_view piece, std::vector<int32_t>& out) const;
};

}  // namespace ib::tokenizer
