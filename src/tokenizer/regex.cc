#include "tokenizer/regex.h"

#include <oniguruma.h>

#include <mutex>

#include "tokenizer/unicode.h"

namespace ib::tokenizer {

struct Regex::Compiled {
  regex_t* re = nullptr;
  ~Compiled() {
    if (re != nullptr) onig_free(re);
  }
};

namespace {

void initialize_oniguruma() {
  static std::once_flag once;
  std::call_once(once, [] {
    OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
    onig_initialize(encodings, 1);
  });
}

// One match region per thread, reused by every search (no allocation per match).
struct ThreadRegion {
  OnigRegion* region = onig_region_new();
  ~ThreadRegion() { onig_region_free(region, 1); }
};

std::string onig_message(int code, OnigErrorInfo* info) {
  OnigUChar buf[ONIG_MAX_ERROR_MESSAGE_LEN];
  const int n =
      info != nullptr ? onig_error_code_to_str(buf, code, info) : onig_error_code_to_str(buf, code);
  return std::string(reinterpret_cast<const char*>(buf), size_t(n > 0 ? n : 0));
}

}  // namespace

Expected<Regex> Regex::compile(std::string_view pattern) {
  initialize_oniguruma();
  auto compiled = std::make_shared<Compiled>();
  OnigErrorInfo info;
  const auto* p = reinterpret_cast<const OnigUChar*>(pattern.data());
  const int rc = onig_new(&compiled->re, p, p + pattern.size(), ONIG_OPTION_NONE,
                          ONIG_ENCODING_UTF8, ONIG_SYNTAX_DEFAULT, &info);
  if (rc != ONIG_NORMAL) {
    compiled->re = nullptr;
    return Error{"invalid regular expression: " + onig_message(rc, &info)};
  }
  Regex r;
  r.compiled_ = std::move(compiled);
  return r;
}

std::string Regex::escape(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    const auto u = static_cast<unsigned char>(c);
    const bool plain = u >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
                       (c >= 'A' && c <= 'Z') || c == '_';
    if (plain) {
      out.push_back(c);
    } else if (u < 0x20 || u == 0x7F) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    } else {
      out.push_back('\\');
      out.push_back(c);
    }
  }
  return out;
}

bool Regex::find(std::string_view text, size_t from, size_t& start, size_t& end) const {
  thread_local ThreadRegion region;
  const auto* str = reinterpret_cast<const OnigUChar*>(text.data());
  const auto* str_end = str + text.size();
  onig_region_clear(region.region);
  const int r = onig_search(compiled_->re, str, str_end, str + from, str_end, region.region,
                            ONIG_OPTION_NONE);
  // ONIG_MISMATCH, or an error such as the retry limit: the rest of the text has no match.
  if (r < 0) return false;
  start = size_t(region.region->beg[0]);
  end = size_t(region.region->end[0]);
  return true;
}

size_t Regex::next_char_length(std::string_view text, size_t at) {
  if (at >= text.size()) return 1;
  const int n = utf8_step(text.substr(at));
  return n > 0 ? size_t(n) : 1;
}

}  // namespace ib::tokenizer
