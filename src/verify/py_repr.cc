#include "verify/py_repr.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <string>

#include "core/strings.h"

namespace ib::verify {

namespace json = boost::json;

namespace {

// Deeper nesting than any server prints; the limit keeps garbage such as "[[[[..." from
// exhausting the stack.
constexpr int kMaxDepth = 200;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_ident_char(char c) {
  return is_ident_start(c) || is_digit(c);
}
int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_utf8(std::string& out, uint32_t cp) {
  if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = 0xFFFD;  // not encodable
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Text of a dict key: strings as they are, anything else as its Python text.
std::string key_text(const json::value& v) {
  if (v.is_string()) return std::string(v.get_string());
  if (v.is_null()) return "None";
  if (v.is_bool()) return v.get_bool() ? "True" : "False";
  if (v.is_int64()) return std::to_string(v.get_int64());
  if (v.is_uint64()) return std::to_string(v.get_uint64());
  if (v.is_double()) return fmt::format("{}", v.get_double());
  return json::serialize(v);
}

class ReprParser {
 public:
  explicit ReprParser(std::string_view s) : s_(s) {}

  bool value(json::value* out, int depth) {
    skip_ws();
    if (pos_ >= s_.size()) return fail(pos_, "expected a value, got the end of the text");
    if (depth > kMaxDepth) return fail(pos_, "nested too deeply");
    const char c = s_[pos_];
    if (c == '\'' || c == '"') {
      std::string str;
      if (!string_literal(&str)) return false;
      *out = json::string(str);
      return true;
    }
    if ((c == 'b' || c == 'B') && pos_ + 1 < s_.size() &&
        (s_[pos_ + 1] == '\'' || s_[pos_ + 1] == '"')) {
      // bytes: keep the repr text itself.
      const size_t start = pos_++;
      std::string ignored;
      if (!string_literal(&ignored)) return false;
      *out = json::string(s_.substr(start, pos_ - start));
      return true;
    }
    if (is_digit(c) || c == '-' || c == '+' ||
        (c == '.' && pos_ + 1 < s_.size() && is_digit(s_[pos_ + 1]))) {
      return number(out);
    }
    if (s_.substr(pos_, 3) == "...") {
      pos_ += 3;
      *out = "...";
      return true;
    }
    if (c == '[') {
      ++pos_;
      json::array arr;
      if (!sequence(']', &arr, depth)) return false;
      *out = std::move(arr);
      return true;
    }
    if (c == '(') {
      ++pos_;
      json::array arr;
      if (!sequence(')', &arr, depth)) return false;
      *out = std::move(arr);
      return true;
    }
    if (c == '{') return brace(out, depth);
    if (c == '<') return angle(out);
    if (is_ident_start(c)) return name_or_call(out, depth);
    return fail(pos_, fmt::format("unexpected character '{}'", c));
  }

  void skip_ws() {
    while (pos_ < s_.size() && is_ascii_space(s_[pos_])) ++pos_;
  }
  size_t pos() const { return pos_; }
  bool at_end() const { return pos_ >= s_.size(); }
  bool fail(size_t at, std::string message) {
    if (error_.empty()) {
      error_ = std::move(message);
      error_pos_ = at;
    }
    return false;
  }
  const std::string& error() const { return error_; }
  size_t error_pos() const { return error_pos_; }

 private:
  // At the opening quote; appends the decoded text.
  bool string_literal(std::string* out) {
    const size_t start = pos_;
    const char quote = s_[pos_++];
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == quote) {
        ++pos_;
        return true;
      }
      if (c == '\n') break;  // a repr never holds a raw newline
      if (c != '\\') {
        *out += c;
        ++pos_;
        continue;
      }
      if (pos_ + 1 >= s_.size()) break;
      const char e = s_[pos_ + 1];
      pos_ += 2;
      switch (e) {
        case '\\':
        case '\'':
        case '"':
          *out += e;
          break;
        case 'n':
          *out += '\n';
          break;
        case 'r':
          *out += '\r';
          break;
        case 't':
          *out += '\t';
          break;
        case 'a':
          *out += '\a';
          break;
        case 'b':
          *out += '\b';
          break;
        case 'f':
          *out += '\f';
          break;
        case 'v':
          *out += '\v';
          break;
        case '\n':  // line continuation
          break;
        case 'x':
        case 'u':
        case 'U': {
          const int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (int i = 0; i < digits; ++i) {
            const int d = pos_ < s_.size() ? hex_digit(s_[pos_]) : -1;
            if (d < 0) return fail(pos_, fmt::format("bad \\{} escape in a string", e));
            cp = cp * 16 + static_cast<uint32_t>(d);
            ++pos_;
          }
          append_utf8(*out, cp);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = static_cast<uint32_t>(e - '0');
            for (int i = 0; i < 2 && pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '7'; ++i) {
              cp = cp * 8 + static_cast<uint32_t>(s_[pos_++] - '0');
            }
            append_utf8(*out, cp);
          } else {  // Python keeps unknown escapes as written
            *out += '\\';
            *out += e;
          }
      }
    }
    return fail(start, "unterminated string");
  }

  bool number(json::value* out) {
    const size_t start = pos_;
    if (s_[pos_] == '-' || s_[pos_] == '+') ++pos_;
    const bool negative = s_[start] == '-';
    if (pos_ < s_.size() && is_ident_start(s_[pos_])) {
      size_t end = pos_;
      while (end < s_.size() && is_ident_char(s_[end])) ++end;
      const std::string_view word = s_.substr(pos_, end - pos_);
      if (word == "inf" || word == "nan") {
        pos_ = end;
        *out = json::string(word == "nan" ? "nan" : negative ? "-inf" : "inf");
        return true;
      }
      return fail(start, "expected a number");
    }
    bool integral = true;
    size_t digits = 0;
    while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_, ++digits;
    if (pos_ < s_.size() && s_[pos_] == '.') {
      integral = false;
      ++pos_;
      while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_, ++digits;
    }
    if (digits == 0) return fail(start, "expected a number");
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+')) ++pos_;
      size_t exp_digits = 0;
      while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_, ++exp_digits;
      if (exp_digits == 0) return fail(start, "bad exponent in a number");
    }
    if (pos_ < s_.size() && (s_[pos_] == 'j' || s_[pos_] == 'J')) {  // complex: keep the text
      ++pos_;
      *out = json::string(s_.substr(start, pos_ - start));
      return true;
    }
    if (pos_ < s_.size() && (is_ident_char(s_[pos_]) || s_[pos_] == '.')) {
      return fail(pos_, "unexpected character after a number");
    }
    std::string_view text = s_.substr(start, pos_ - start);
    if (!text.empty() && text.front() == '+') text.remove_prefix(1);
    const char* first = text.data();
    const char* last = text.data() + text.size();
    if (integral) {
      int64_t i = 0;
      if (auto r = std::from_chars(first, last, i); r.ec == std::errc() && r.ptr == last) {
        *out = i;
        return true;
      }
      uint64_t u = 0;
      if (auto r = std::from_chars(first, last, u); r.ec == std::errc() && r.ptr == last) {
        *out = u;
        return true;
      }
      *out = json::string(text);  // beyond 64 bits: exact text rather than a rounded double
      return true;
    }
    double d = 0;
    if (auto r = std::from_chars(first, last, d); r.ec == std::errc() && r.ptr == last) {
      *out = d;
      return true;
    }
    *out = json::string(text);  // out of double range
    return true;
  }

  // After the opening bracket: values separated by commas up to `close` (trailing comma allowed).
  bool sequence(char close, json::array* out, int depth) {
    const size_t open = pos_ - 1;
    while (true) {
      skip_ws();
      if (pos_ >= s_.size()) return fail(open, fmt::format("unclosed '{}'", s_[open]));
      if (s_[pos_] == close) {
        ++pos_;
        return true;
      }
      json::value v;
      if (!value(&v, depth + 1)) return false;
      out->push_back(std::move(v));
      skip_ws();
      if (pos_ >= s_.size()) return fail(open, fmt::format("unclosed '{}'", s_[open]));
      if (s_[pos_] == ',') {
        ++pos_;
      } else if (s_[pos_] != close) {
        return fail(pos_, fmt::format("expected ',' or '{}'", close));
      }
    }
  }

  // A dict or a set.
  bool brace(json::value* out, int depth) {
    const size_t open = pos_++;
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      *out = json::object();
      return true;
    }
    json::value first;
    if (!value(&first, depth + 1)) return false;
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] != ':') {  // a set
      json::array arr;
      arr.push_back(std::move(first));
      if (s_[pos_] == ',') {
        ++pos_;
        if (!sequence('}', &arr, depth)) return false;
      } else if (s_[pos_] == '}') {
        ++pos_;
      } else {
        return fail(pos_, "expected ',', ':' or '}'");
      }
      *out = std::move(arr);
      return true;
    }
    json::object obj;
    json::value key = std::move(first);
    while (true) {
      skip_ws();
      if (pos_ >= s_.size()) return fail(open, "unclosed '{'");
      if (s_[pos_] != ':') return fail(pos_, "expected ':' after a dict key");
      ++pos_;
      json::value v;
      if (!value(&v, depth + 1)) return false;
      obj[key_text(key)] = std::move(v);
      skip_ws();
      if (pos_ >= s_.size()) return fail(open, "unclosed '{'");
      if (s_[pos_] == '}') {
        ++pos_;
        break;
      }
      if (s_[pos_] != ',') return fail(pos_, "expected ',' or '}'");
      ++pos_;
      skip_ws();
      if (pos_ < s_.size() && s_[pos_] == '}') {
        ++pos_;
        break;
      }
      if (!value(&key, depth + 1)) return false;
    }
    *out = std::move(obj);
    return true;
  }

  // `<Enum.X: 'x'>`, `<function f at 0x7f..>`: the raw text up to the matching '>'.
  bool angle(json::value* out) {
    const size_t start = pos_;
    int depth = 0;
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == '\'' || c == '"') {
        std::string ignored;
        if (!string_literal(&ignored)) return false;
        continue;
      }
      ++pos_;
      if (c == '<') ++depth;
      if (c == '>' && --depth == 0) {
        *out = json::string(s_.substr(start, pos_ - start));
        return true;
      }
      if (c == '\n') break;
    }
    return fail(start, "unclosed '<'");
  }

  bool name_or_call(json::value* out, int depth) {
    const size_t start = pos_;
    size_t last_part = pos_;
    while (true) {
      while (pos_ < s_.size() && is_ident_char(s_[pos_])) ++pos_;
      if (pos_ + 1 < s_.size() && s_[pos_] == '.' && is_ident_start(s_[pos_ + 1])) {
        last_part = ++pos_;
        continue;
      }
      break;
    }
    const std::string_view name = s_.substr(start, pos_ - start);
    if (pos_ >= s_.size() || s_[pos_] != '(') {
      if (name == "None") {
        *out = nullptr;
      } else if (name == "True") {
        *out = true;
      } else if (name == "False") {
        *out = false;
      } else if (name == "inf" || name == "nan") {
        *out = json::string(name);
      } else {
        *out = json::string(name);  // torch.bfloat16, LoadFormat.AUTO, auto
      }
      return true;
    }
    const size_t open = pos_++;
    json::object kwargs;
    bool positional = false;
    while (true) {
      skip_ws();
      if (pos_ >= s_.size()) return fail(open, "unclosed '('");
      if (s_[pos_] == ')') {
        ++pos_;
        break;
      }
      std::string key;
      if (is_ident_start(s_[pos_])) {
        size_t end = pos_;
        while (end < s_.size() && is_ident_char(s_[end])) ++end;
        size_t eq = end;
        while (eq < s_.size() && s_[eq] == ' ') ++eq;
        if (eq < s_.size() && s_[eq] == '=' && (eq + 1 >= s_.size() || s_[eq + 1] != '=')) {
          key = std::string(s_.substr(pos_, end - pos_));
          pos_ = eq + 1;
        }
      }
      json::value v;
      if (!value(&v, depth + 1)) return false;
      if (key.empty()) {
        positional = true;
      } else {
        kwargs[key] = std::move(v);
      }
      skip_ws();
      if (pos_ >= s_.size()) return fail(open, "unclosed '('");
      if (s_[pos_] == ',') {
        ++pos_;
      } else if (s_[pos_] != ')') {
        return fail(pos_, "expected ',' or ')'");
      }
    }
    const bool record = s_[last_part] >= 'A' && s_[last_part] <= 'Z';
    if (record && !positional) {
      *out = std::move(kwargs);
    } else {
      *out = json::string(s_.substr(start, pos_ - start));
    }
    return true;
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::string error_;
  size_t error_pos_ = 0;
};

Error parse_error(std::string_view text, const ReprParser& p, size_t* error_offset) {
  if (error_offset != nullptr) *error_offset = p.error_pos();
  std::string near(text.substr(p.error_pos(), 24));
  for (char& c : near) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return Error{fmt::format("offset {}: {} (near \"{}\")", p.error_pos(), p.error(), near)};
}

// `name=` (not `==`) at `i`; returns the position after '=' or npos.
size_t keyword_at(std::string_view s, size_t i) {
  if (i >= s.size() || !is_ident_start(s[i])) return std::string_view::npos;
  while (i < s.size() && is_ident_char(s[i])) ++i;
  if (i < s.size() && s[i] == '=' && (i + 1 >= s.size() || s[i + 1] != '=')) return i + 1;
  return std::string_view::npos;
}

// From `i`, the end of a raw (non-repr) value: the next `, name=` (or, in space-separated lists,
// ` name=`) outside brackets and quotes, else the end of the text. When brackets never close,
// the first `, name=` at any depth ends the value, so one broken value does not swallow the rest.
size_t raw_value_end(std::string_view s, size_t i, bool space_separated) {
  int depth = 0;
  size_t first_split = std::string_view::npos;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\'' || c == '"') {
      // Skip a quoted run when it closes; a lone quote is just a character.
      size_t j = i + 1;
      while (j < s.size() && s[j] != c && s[j] != '\n') j += s[j] == '\\' ? 2 : 1;
      if (j < s.size() && s[j] == c) {
        i = j + 1;
        continue;
      }
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == ')' || c == ']' || c == '}') {
      if (depth > 0) --depth;
    } else if (c == ',' || (space_separated && is_ascii_space(c))) {
      size_t j = i + 1;
      while (j < s.size() && s[j] == ' ') ++j;
      if (keyword_at(s, j) != std::string_view::npos) {
        if (depth == 0) return i;
        if (first_split == std::string_view::npos) first_split = i;
      }
    }
    ++i;
  }
  return first_split != std::string_view::npos ? first_split : s.size();
}

}  // namespace

Expected<json::value> parse_py_repr_prefix(std::string_view text, size_t* consumed,
                                           size_t* error_offset) {
  ReprParser p(text);
  json::value v;
  if (!p.value(&v, 0)) return parse_error(text, p, error_offset);
  if (consumed != nullptr) *consumed = p.pos();
  return v;
}

Expected<json::value> parse_py_repr(std::string_view text, size_t* error_offset) {
  ReprParser p(text);
  json::value v;
  if (!p.value(&v, 0)) return parse_error(text, p, error_offset);
  p.skip_ws();
  if (!p.at_end()) {
    p.fail(p.pos(), "unexpected text after the value");
    return parse_error(text, p, error_offset);
  }
  return v;
}

Expected<json::object> parse_py_kwargs(std::string_view text, size_t* error_offset) {
  json::object out;
  size_t i = 0;
  bool space_separated = false;
  bool first = true;
  while (true) {
    while (i < text.size() && (is_ascii_space(text[i]) || text[i] == ',')) ++i;
    if (i >= text.size()) break;
    const size_t value_start = keyword_at(text, i);
    if (value_start == std::string_view::npos) {
      if (error_offset != nullptr) *error_offset = i;
      return Error{fmt::format("offset {}: expected name=value", i)};
    }
    const std::string key(text.substr(i, value_start - 1 - i));
    // A Python literal counts only when a separator and the next name= (or the end) follow it.
    size_t value_end = std::string_view::npos;
    json::value value;
    // JSON first for bracketed values: vLLM prints compilation_config as JSON, whose true, false
    // and null would otherwise read as bare names.
    if (value_start < text.size() && (text[value_start] == '{' || text[value_start] == '[')) {
      const size_t end = raw_value_end(text, value_start, space_separated);
      boost::system::error_code ec;
      json::value parsed = json::parse(trim(text.substr(value_start, end - value_start)), ec);
      if (!ec) {
        value = std::move(parsed);
        value_end = end;
        if (first) {
          size_t j = end;
          while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
          space_separated = j < text.size() && text[j] != ',';
        }
      }
    }
    if (value_end == std::string_view::npos) {
      ReprParser p(text.substr(value_start));
      if (p.value(&value, 0)) {
        size_t j = value_start + p.pos();
        const size_t after_value = j;
        bool comma = false;
        while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
        if (j < text.size() && text[j] == ',') {
          comma = true;
          ++j;
          while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
        }
        const bool at_end = trim(text.substr(j)).empty();
        const bool separated = comma || j > after_value;
        if (at_end || (separated && keyword_at(text, j) != std::string_view::npos)) {
          value_end = j;
          if (first && !at_end) space_separated = !comma;
        }
      }
    }
    if (value_end == std::string_view::npos) {
      const size_t end = raw_value_end(text, value_start, space_separated);
      const std::string_view raw = trim(text.substr(value_start, end - value_start));
      value = json::string(raw);
      if (!raw.empty() && (raw.front() == '{' || raw.front() == '[')) {
        boost::system::error_code ec;
        json::value parsed = json::parse(raw, ec);
        if (!ec) value = std::move(parsed);
      }
      value_end = end;
    }
    out[key] = std::move(value);
    first = false;
    i = value_end;
  }
  if (out.empty()) {
    if (error_offset != nullptr) *error_offset = 0;
    return Error{"offset 0: expected name=value"};
  }
  return out;
}

}  // namespace ib::verify
