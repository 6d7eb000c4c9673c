// Text helpers of the tokenizer: UTF-8 repair, GPT-2's byte-level alphabet and Unicode
// normalisation (ICU). Internal to src/tokenizer/.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ib::tokenizer {

/// The length of the valid UTF-8 sequence at the start of `s` (1 to 4), or minus the length of
/// its maximal invalid subpart (-1 to -3), the unit that one U+FFFD replaces (Unicode §3.9, as in
/// Rust's String::from_utf8_lossy). REQUIRES: !s.empty().
int utf8_step(std::string_view s);

/// True when `s` is valid UTF-8.
bool is_valid_utf8(std::string_view s);

/// Appends `bytes` to `out` with every maximal invalid UTF-8 subpart replaced by U+FFFD.
void append_utf8_lossy(std::string& out, std::string_view bytes);

/// GPT-2's bytes_to_unicode(): the printable code point that stands for byte `b` in byte-level
/// vocabularies ('!'..'~', '¡'..'¬', '®'..'ÿ' stand for themselves, the other 68 bytes for
/// U+0100.. in byte order, so ' ' is 'Ġ' and '\n' is 'Ċ').
char32_t byte_to_char(uint8_t b);

/// The byte-level text of a vocabulary entry back to bytes. Returns false (and leaves `out`
/// partly written) when a character is not in the byte-level alphabet.
bool byte_level_to_bytes(std::string_view text, std::string& out);

/// `bytes` in the byte-level alphabet (UTF-8), e.g. " a\n" -> "ĠaĊ".
std::string bytes_to_byte_level(std::string_view bytes);

/// Appends code point `cp` to `out` as UTF-8.
void append_utf8(std::string& out, char32_t cp);

enum class NormalForm { kNone, kNfc, kNfd, kNfkc, kNfkd };

/// A Unicode normalisation form (ICU's Normalizer2, Unicode 15 in Debian 12's ICU 72).
class Normalizer {
 public:
  Normalizer() = default;
  explicit Normalizer(NormalForm form);

  NormalForm form() const { return form_; }
  bool active() const { return form_ != NormalForm::kNone; }

  /// Appends `text` (valid UTF-8) in this form to `out` and returns true, or returns false and
  /// leaves `out` alone when `text` is in this form already (ASCII text always is).
  bool normalize(std::string_view text, std::string& out) const;

 private:
  NormalForm form_ = NormalForm::kNone;
  const void* icu_ = nullptr;  // const icu::Normalizer2*, owned by ICU
};

}  // namespace ib::tokenizer
