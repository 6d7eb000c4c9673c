#include "tokenizer/unicode.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>

#include <array>
#include <cstring>

namespace ib::tokenizer {
namespace {

struct ByteLevelTables {
  std::array<char32_t, 256> to_char{};
  // Code points below 324 (the largest is U+0143) back to their byte; -1 for the others.
  std::array<int16_t, 324> to_byte{};
};

const ByteLevelTables& byte_level_tables() {
  static const ByteLevelTables tables = [] {
    ByteLevelTables t;
    t.to_byte.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      t.to_char[b] = printable ? char32_t(b) : next++;
      t.to_byte[t.to_char[b]] = int16_t(b);
    }
    return t;
  }();
  return tables;
}

// The code point of the valid sequence of `n` bytes at `p`.
char32_t decode_utf8(const unsigned char* p, int n) {
  switch (n) {
    case 1:
      return p[0];
    case 2:
      return char32_t(p[0] & 0x1F) << 6 | (p[1] & 0x3F);
    case 3:
      return char32_t(p[0] & 0x0F) << 12 | char32_t(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
    default:
      return char32_t(p[0] & 0x07) << 18 | char32_t(p[1] & 0x3F) << 12 |
             char32_t(p[2] & 0x3F) << 6 | (p[3] & 0x3F);
  }
}

bool is_ascii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

}  // namespace

int utf8_step(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const unsigned char c = p[0];
  if (c < 0x80) return 1;
  int need;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    need = 1;
  } else if (c == 0xE0) {
    need = 2, lo = 0xA0;
  } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
    need = 2;
  } else if (c == 0xED) {
    need = 2, hi = 0x9F;  // no surrogates
  } else if (c == 0xF0) {
    need = 3, lo = 0x90;
  } else if (c >= 0xF1 && c <= 0xF3) {
    need = 3;
  } else if (c == 0xF4) {
    need = 3, hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return -1;
  }
  for (int k = 1; k <= need; ++k) {
    if (size_t(k) >= s.size() || p[k] < lo || p[k] > hi) return -k;
    lo = 0x80, hi = 0xBF;
  }
  return need + 1;
}

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    // ASCII runs, eight bytes at a time.
    while (i + 8 <= s.size()) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= s.size()) break;
    const int n = utf8_step(s.substr(i));
    if (n < 0) return false;
    i += size_t(n);
  }
  return true;
}

void append_utf8_lossy(std::string& out, std::string_view bytes) {
  size_t i = 0;
  while (i < bytes.size()) {
    const int n = utf8_step(bytes.substr(i));
    if (n > 0) {
      out.append(bytes.data() + i, size_t(n));
      i += size_t(n);
    } else {
      out.append("\xEF\xBF\xBD");
      i += size_t(-n);
    }
  }
}

char32_t byte_to_char(uint8_t b) {
  return byte_level_tables().to_char[b];
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(char(cp));
  } else if (cp < 0x800) {
    out.push_back(char(0xC0 | (cp >> 6)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(char(0xE0 | (cp >> 12)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(char(0xF0 | (cp >> 18)));
    out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  }
}

bool byte_level_to_bytes(std::string_view text, std::string& out) {
  const auto& t = byte_level_tables();
  size_t i = 0;
  while (i < text.size()) {
    const int n = utf8_step(text.substr(i));
    if (n < 0) return false;
    const char32_t cp = decode_utf8(reinterpret_cast<const unsigned char*>(text.data() + i), n);
    if (cp >= t.to_byte.size() || t.to_byte[cp] < 0) return false;
    out.push_back(char(t.to_byte[cp]));
    i += size_t(n);
  }
  return true;
}

std::string bytes_to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) append_utf8(out, byte_to_char(static_cast<uint8_t>(c)));
  return out;
}

Normalizer::Normalizer(NormalForm form) : form_(form) {
  UErrorCode status = U_ZERO_ERROR;
  switch (form) {
    case NormalForm::kNone:
      break;
    case NormalForm::kNfc:
      icu_ = icu::Normalizer2::getNFCInstance(status);
      break;
    case NormalForm::kNfd:
      icu_ = icu::Normalizer2::getNFDInstance(status);
      break;
    case NormalForm::kNfkc:
      icu_ = icu::Normalizer2::getNFKCInstance(status);
      break;
    case NormalForm::kNfkd:
      icu_ = icu::Normalizer2::getNFKDInstance(status);
      break;
  }
  // ICU's built-in normalisation data is part of libicudata; a failure here means a broken
  // installation, and normalize() then copies text unchanged.
  if (U_FAILURE(status)) icu_ = nullptr;
}

bool Normalizer::normalize(std::string_view text, std::string& out) const {
  if (icu_ == nullptr || is_ascii(text)) return false;
  const auto* n = static_cast<const icu::Normalizer2*>(icu_);
  UErrorCode status = U_ZERO_ERROR;
  const icu::StringPiece piece(text.data(), int32_t(text.size()));
  if (n->isNormalizedUTF8(piece, status) && U_SUCCESS(status)) return false;
  status = U_ZERO_ERROR;
  const size_t before = out.size();
  icu::StringByteSink<std::string> sink(&out);
  n->normalizeUTF8(0, piece, sink, nullptr, status);
  if (U_FAILURE(status)) {
    out.resize(before);
    return false;
  }
  return true;
}

}  // namespace ib::tokenizer
