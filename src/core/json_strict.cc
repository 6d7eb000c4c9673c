#include "core/json_strict.h"

#include <fmt/format.h>

#include <set>
#include <vector>

namespace ib {

namespace {

// One open object or array while scanning.
struct JsonScanFrame {
  bool object = false;
  bool expect_key = false;     // objects: the next string is a member name
  std::set<std::string> keys;  // objects: the names seen
  std::string current;         // objects: the member being read
  size_t index = 0;            // arrays: the element being read
};

std::string scan_path(const std::vector<JsonScanFrame>& stack) {
  std::string path;
  for (const JsonScanFrame& f : stack) {
    if (f.object) {
      if (!f.current.empty()) path += (path.empty() ? "" : ".") + f.current;
    } else {
      path += fmt::format("[{}]", f.index);
    }
  }
  return path;
}

// The name of a member from its quoted text (escapes decoded; the text is valid JSON).
std::string decode_member_name(std::string_view quoted) {
  if (quoted.find('\\') == std::string_view::npos) {
    return std::string(quoted.substr(1, quoted.size() - 2));
  }
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(quoted, ec);
  return !ec && v.is_string() ? std::string(v.get_string()) : std::string(quoted);
}

}  // namespace

std::optional<DuplicateKey> find_duplicate_key(std::string_view t) {
  std::vector<JsonScanFrame> stack;
  int line = 1;
  for (size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    switch (c) {
      case '\n':
        ++line;
        break;
      case '{':
        stack.emplace_back();
        stack.back().object = true;
        stack.back().expect_key = true;
        break;
      case '[':
        stack.emplace_back();
        break;
      case '}':
      case ']':
        if (!stack.empty()) stack.pop_back();
        break;
      case ',':
        if (!stack.empty()) {
          JsonScanFrame& f = stack.back();
          if (f.object) {
            f.expect_key = true;
            f.current.clear();
          } else {
            ++f.index;
          }
        }
        break;
      case '"': {
        const size_t begin = i;
        for (++i; i < t.size() && t[i] != '"'; ++i) {
          if (t[i] == '\\') ++i;
        }
        if (stack.empty() || !stack.back().object || !stack.back().expect_key) break;
        JsonScanFrame& f = stack.back();
        f.expect_key = false;
        std::string key = decode_member_name(t.substr(begin, i + 1 - begin));
        if (!f.keys.insert(key).second) {
          return DuplicateKey{key, line, scan_path(stack)};
        }
        f.current = std::move(key);
        break;
      }
      default:
        break;
    }
  }
  return std::nullopt;
}

Expected<boost::json::value> parse_json_strict(std::string_view text, const std::string& source,
                                               int line) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(text, ec);
  if (ec) {
    return Error{fmt::format("{}{}: not valid JSON: {}", source,
                             line > 0 ? fmt::format(":{}", line) : "", ec.message())};
  }
  if (auto d = find_duplicate_key(text)) {
    return Error{fmt::format(
        "{}:{}: {}key \"{}\" appears twice in one object (JSON readers keep only one of them; "
        "remove the other)",
        source, (line > 0 ? line - 1 : 0) + d->line, d->path.empty() ? "" : d->path + ": ",
        d->key)};
  }
  return v;
}

}  // namespace ib
