// The loaded form of a tokenizer, shared by the two loaders (hf_json.cc, tiktoken.cc) and the
// encoder/decoder (tokenizer.cc). Internal to src/tokenizer/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/regex.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace ib::tokenizer {

/// One pre-tokenizer step: split each piece with `regex` (behaviour Isolated), after putting a
/// space in front of pieces that do not start with one when `add_prefix_space` (ByteLevel).
struct PreTokenizerStep {
  std::optional<Regex> regex;
  bool add_prefix_space = false;
};

/// What decode() needs of each id.
struct TokenEntry {
  enum Kind : uint8_t { kNone, kModel, kAdded, kSpecial };
  uint32_t offset = 0;  // of its bytes in Tokenizer::Impl::token_bytes
  uint32_t size = 0;
  Kind kind = kNone;
};

struct Tokenizer::Impl {
  std::string source;

  /// Added tokens matched in the raw text (tokenizers: normalized=false), then those matched after
  /// normalisation (normalized=true; their content normalised too).
  AddedTokenMatcher raw_added;
  AddedTokenMatcher normalized_added;
  Normalizer normalizer;
  std::vector<PreTokenizerStep> steps;
  BpeModel model;

  /// What the post-processor puts around a single sequence when add_special_tokens is set.
  std::vector<int32_t> prefix_ids;
  std::vector<int32_t> suffix_ids;

  /// Indexed by id: the token's bytes after the decoder.
  std::vector<TokenEntry> tokens;
  std::string token_bytes;

  /// Records `bytes` as the decoded form of `id` (a later call for the same id replaces it).
  void set_token(int32_t id, std::string_view bytes, TokenEntry::Kind kind);
};

}  // namespace ib::tokenizer
