// Pre-tokenizer regular expressions, run by Oniguruma exactly as Hugging Face tokenizers runs them
// (the `onig` crate: Oniguruma's default Ruby syntax, UTF-8, no options), so the patterns of
// tokenizer.json files are used unmodified. Internal to src/tokenizer/.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "core/expected.h"

namespace ib::tokenizer {

class Regex {
 public:
  /// Compiles `pattern`. Error: Oniguruma's message.
  static Expected<Regex> compile(std::string_view pattern);

  /// A pattern that matches `literal` exactly (Split's {"String": ...} form).
  static std::string escape(std::string_view literal);

  /// The first match in text[from..] as byte offsets into `text`; false when there is none.
  /// `text` must be valid UTF-8. Safe to call from several threads at once.
  bool find(std::string_view text, size_t from, size_t& start, size_t& end) const;

  /// Calls `piece(begin, end)` for every piece of `text` that a Split with behaviour Isolated
  /// makes: each match and each gap between matches, in order, empty pieces left out. Matches are
  /// found as the onig crate's find_iter finds them (an empty match right after a match is
  /// skipped), which is what tokenizers' SysRegex uses.
  template <class F>
  void split_isolated(std::string_view text, F&& piece) const {
    if (text.empty()) return;
    size_t prev = 0, last_end = 0, start = 0, end = 0;
    bool skip_next_empty = false;
    while (last_end <= text.size() && find(text, last_end, start, end)) {
      last_end = end;
      if (start == end) {
        last_end += next_char_length(text, last_end);
        if (skip_next_empty) {
          skip_next_empty = false;
          continue;
        }
      } else {
        skip_next_empty = true;
      }
      if (prev != start) piece(prev, start);
      if (start != end) piece(start, end);
      prev = end;
    }
    if (prev != text.size()) piece(prev, text.size());
  }

 private:
  struct Compiled;
  static size_t next_char_length(std::string_view text, size_t at);

  std::shared_ptr<const Compiled> compiled_;
};

}  // namespace ib::tokenizer
