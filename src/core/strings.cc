#include "core/strings.h"

#include <fmt/format.h>

#include <cctype>
#include <iterator>

namespace ib {

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_ascii_space(s.front())) s.remove_prefix(1);
  return rtrim(s);
}

std::string_view rtrim(std::string_view s) {
  while (!s.empty() && is_ascii_space(s.back())) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += sep;
    out += items[i];
  }
  return out;
}

bool LineReader::next(std::string_view& line) {
  if (pos_ >= text_.size()) return false;
  size_t end = text_.find('\n', pos_);
  if (end == std::string_view::npos) end = text_.size();
  line = text_.substr(pos_, end - pos_);
  pos_ = end + 1;
  ++number_;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return true;
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    const size_t end = s.find(sep, start);
    if (end == std::string_view::npos) {
      fields.emplace_back(s.substr(start));
      return fields;
    }
    fields.emplace_back(s.substr(start, end - start));
    start = end + 1;
  }
}

void append_json_escaped(std::string& out, std::string_view s) {
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned char>(c));
        } else {
          out.push_back(c);
        }
    }
  }
}

std::string markdown_cell(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    if (ch == '|') out.push_back('\\');
    // Raw HTML from a config key or a value is shown, never rendered (a PR comment renders it).
    if (ch == '<') {
      out += "&lt;";
    } else if (ch == '>') {
      out += "&gt;";
    } else if (ch == '&') {
      out += "&amp;";
    } else {
      out.push_back(ch == '\n' || ch == '\r' ? ' ' : ch);
    }
  }
  return out;
}

std::string markdown_code(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    if (ch == '|') out.push_back('\\');
    out.push_back(ch == '\n' || ch == '\r' ? ' ' : ch == '`' ? '\'' : ch);
  }
  return out;
}

std::string first_line(std::string_view s) {
  return std::string(s.substr(0, s.find('\n')));
}

std::string printable(std::string_view s, size_t cap) {
  std::string out;
  size_t end = s.size();
  if (end > cap) {
    end = cap;
    // Back up to the start of a UTF-8 sequence, so the cut never leaves half a character.
    while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  }
  out.reserve(end + 16);
  for (size_t i = 0; i < end; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      fmt::format_to(std::back_inserter(out), "\\x{:02x}", c);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  if (end < s.size()) fmt::format_to(std::back_inserter(out), "... ({} bytes in all)", s.size());
  return out;
}

std::string shell_quote(std::string_view s) {
  bool safe = !s.empty();
  for (char c : s) {
    safe = safe && (std::isalnum(static_cast<unsigned char>(c)) != 0 ||
                    std::string_view("_@%+=:,./-").find(c) != std::string_view::npos);
  }
  if (safe) return std::string(s);
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

}  // namespace ib
