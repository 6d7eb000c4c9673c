// A native byte-level BPE tokenizer: Hugging Face `tokenizer.json` files (Llama-3, Qwen3,
// DeepSeek-V3, gpt-oss and their kin) and tiktoken rank files (`.tiktoken`), with the same ids as
// the reference implementation, npm `tokenizers@0.23.2` (docs/tokenizer.md; golden tests in
// golden_test.cc).
//
// Encoding: added tokens are matched first (longest match over all of them, special or not), then
// the normaliser (none, NFC, NFD, NFKC, NFKD), the pre-tokenizers (Split with behaviour Isolated,
// through Oniguruma with the file's pattern unmodified, and ByteLevel), then BPE on each piece.
// Decoding maps ids back to bytes and repairs invalid UTF-8 with U+FFFD.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/expected.h"

namespace ib::tokenizer {

/// OpenAI's o200k_base split pattern (tiktoken; the same as gpt-oss's tokenizer.json).
inline constexpr std::string_view kO200kPattern =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
/// OpenAI's cl100k_base split pattern (tiktoken, with its possessive quantifiers).
inline constexpr std::string_view kCl100kPattern =
    R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";

/// An added token of a tiktoken encoding: its text and id.
struct SpecialToken {
  std::string content;
  int32_t id = 0;
};

/// The special tokens of gpt-oss (tiktoken's o200k_harmony): <|startoftext|> = 199998 up to
/// <|endofprompt|> = 200018, with <|reserved_N|> = N in the gaps.
std::vector<SpecialToken> o200k_harmony_special_tokens();

struct EncodeOptions {
  /// Add what the tokenizer's post-processor adds to a single sequence (TemplateProcessing, e.g.
  /// Llama-3.1's <|begin_of_text|>); as `add_special_tokens` in tokenizers.
  bool add_special_tokens = false;
};

struct DecodeOptions {
  /// Leave out special added tokens (tokenizers' `skip_special_tokens`).
  bool skip_special_tokens = false;
};

/// An immutable tokenizer. Copies share the loaded data; every method is const and safe to call
/// from several threads at once.
class Tokenizer {
 public:
  /// Loads a Hugging Face tokenizer.json (BPE model with byte-level pre-tokenizer and decoder).
  /// Error names the file and the field: unreadable file, invalid JSON, a missing or mistyped
  /// field, or a model, normaliser, pre-tokenizer, post-processor or decoder this implementation
  /// does not support.
  static Expected<Tokenizer> from_hf_json_file(const std::filesystem::path& path);
  /// The same from the file's text; `source` names it in messages.
  static Expected<Tokenizer> from_hf_json(std::string_view json, std::string_view source);

  /// Loads a tiktoken rank file (one "base64(bytes) rank" per line) with its split `pattern` and
  /// `special_tokens`. Error names the file and line.
  static Expected<Tokenizer> from_tiktoken_file(const std::filesystem::path& path,
                                                std::string_view pattern,
                                                const std::vector<SpecialToken>& special_tokens);
  static Expected<Tokenizer> from_tiktoken(std::string_view ranks, std::string_view source,
                                           std::string_view pattern,
                                           const std::vector<SpecialToken>& special_tokens);

  /// The ids of `text`. Invalid UTF-8 in `text` is first replaced with U+FFFD (maximal subparts),
  /// as a caller converting bytes to a string for the reference would.
  std::vector<int32_t> encode(std::string_view text, EncodeOptions options = {}) const;
  /// Appends the ids of `text` to `out` (reuse `out` to avoid allocations).
  void encode_into(std::string_view text, std::vector<int32_t>& out,
                   EncodeOptions options = {}) const;
  /// The number of ids encode() returns.
  size_t count(std::string_view text, EncodeOptions options = {}) const;

  /// The text of `ids`: the bytes of all tokens joined, then invalid UTF-8 replaced with U+FFFD
  /// (tokenizers' ByteLevel decoder). An added token's text goes through the byte-level alphabet
  /// like any token, or as it is when it has characters outside it. Unknown ids are skipped.
  std::string decode(std::span<const int32_t> ids, DecodeOptions options = {}) const;

  /// The id of an added token's text, or of a vocabulary entry given as raw bytes.
  std::optional<int32_t> token_id(std::string_view text) const;
  /// True for the id of a special added token.
  bool is_special(int32_t id) const;
  /// One more than the largest id.
  int32_t id_limit() const;
  /// The file the tokenizer was loaded from (or the `source` given).
  const std::string& source() const;

  struct Impl;

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace ib::tokenizer
