// Small ASCII string helpers shared by every module (one copy instead of one per file). ASCII only
// and locale-independent: the text they see (logs, configuration values, labels, git output) is
// compared byte-wise, and a user's locale must not change what a recipe means.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ib {

/// True for the ASCII whitespace characters: ' ', '\t', '\n', '\v', '\f', '\r' (what
/// std::isspace accepts in the "C" locale).
constexpr bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/// `s` without leading and trailing ASCII whitespace (a view into `s`).
std::string_view trim(std::string_view s);

/// `s` without trailing ASCII whitespace (a view into `s`), e.g. a command's output without its
/// final newline.
std::string_view rtrim(std::string_view s);

/// `s` with ASCII 'A'-'Z' lowered; every other byte (UTF-8 included) unchanged.
std::string lower(std::string_view s);

/// The items with `sep` between them: {"a", "b"} -> "a, b" for ", "; {} -> "".
std::string join(const std::vector<std::string>& items, std::string_view sep);

/// The fields of `s` between occurrences of `sep`, empty fields kept: there is always one more
/// field than separators, so "a,,b" -> {"a", "", "b"}, "a," -> {"a", ""} and "" -> {""}.
/// Callers that want no empty fields skip them.
std::vector<std::string> split(std::string_view s, char sep);

/// The lines of `text` one at a time, each without its '\n' and a '\r' before it, numbered
/// from 1; a last line without '\n' counts, an empty text has none.
class LineReader {
 public:
  explicit LineReader(std::string_view text) : text_(text) {}
  /// The next line into `line`; false at the end.
  bool next(std::string_view& line);
  /// The number of the line next() gave last.
  int number() const { return number_; }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  int number_ = 0;
};

/// Appends `s` to `out` as the inside of a JSON string (quotes, backslashes and control
/// characters escaped; other bytes, UTF-8 included, as they are).
void append_json_escaped(std::string& out, std::string_view s);

/// `s` up to its first newline (all of it when it has none).
std::string first_line(std::string_view s);

/// `s` made safe to echo in a message to a terminal or a log: control characters (ASCII < 0x20
/// and 0x7f) are written as escapes (\n, \t, \r, \xNN), so a key or value from a recipe cannot
/// move the cursor, clear the screen or fake a line of output; and text longer than `cap` bytes
/// is cut there (never inside a UTF-8 sequence) and ends with "... (N bytes in all)". Use it for
/// every value from outside input that a message repeats.
std::string printable(std::string_view s, size_t cap = 120);

/// Text for one cell of a markdown table: '|' escaped as "\|", line breaks as spaces (either
/// would end the cell or the row), and '<', '>', '&' as entities (raw HTML in a key or a value
/// is shown, not rendered).
std::string markdown_cell(std::string_view s);
/// The same inside a code span (`...`), where entities would show as typed: '|' and line breaks
/// as above, '`' as '.
std::string markdown_code(std::string_view s);

/// `s` as one /bin/sh word: unchanged when it only has characters that are never special
/// ([A-Za-z0-9_@%+=:,./-], not empty), otherwise in single quotes with each ' written as '\''.
std::string shell_quote(std::string_view s);

}  // namespace ib
