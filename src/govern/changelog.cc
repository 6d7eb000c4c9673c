#include "govern/changelog.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <regex>
#include <string_view>

#include "core/strings.h"
#include "govern/labels.h"
#include "recipe/yaml_reader.h"

namespace ib::govern {

namespace {

using recipe::Diagnostic;
using recipe::YamlReader;

constexpr std::string_view kEntryStart = "- config-keys:";

const std::set<std::string> kEntryFields = {"config-keys",         "description",  "pr-link",
                                            "evals-only",          "all-evals",    "append-only",
                                            "eval-min-prefill-ep", "scenario-type"};
const std::set<std::string> kScenarioTypes = {"fixed-seq-len", "agentic-coding"};
const std::vector<std::string> kModifierLabels = {"all-evals", "evals-only", "agentx-fast"};

/// The file's lines without their '\n' (a final line without '\n' included).
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

/// Line `n` (1-based) of `lines`; nullopt when there is none.
std::optional<std::string_view> line_text(const std::vector<std::string_view>& lines, int n) {
  if (n < 1 || static_cast<size_t>(n) > lines.size()) return std::nullopt;
  return lines[n - 1];
}

/// 1-based line of byte `offset`.
int line_at(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + offset, '\n'));
}

/// The last line's number (1 for an empty file).
int last_line(std::string_view text) {
  if (text.empty()) return 1;
  return line_at(text, text.size() - 1);
}

/// Offset of the first byte that is not valid UTF-8 (overlong forms, surrogates and code points
/// above U+10FFFF are invalid, as for Python's strict decoder); npos when all is valid.
size_t invalid_utf8_at(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n = 0;
    uint32_t cp = 0;
    uint32_t min = 0;
    if ((c & 0xE0) == 0xC0) {
      n = 1, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3, cp = c & 0x07, min = 0x10000;
    } else {
      return i;
    }
    if (i + n >= s.size()) return i;  // truncated sequence
    for (size_t k = 1; k <= n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += n + 1;
  }
  return std::string_view::npos;
}

std::string quoted_list(const std::vector<std::string>& items, size_t max = 8) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < max; ++i) {
    if (!out.empty()) out += ", ";
    out += items[i];
  }
  if (items.size() > max) out += fmt::format(", ... ({} in all)", items.size());
  return out;
}

/// The rule a YamlReader diagnostic belongs to.
std::string rule_of(const Diagnostic& d) {
  if (d.message == "duplicate field") return "duplicate-key";
  if (d.message == "unknown field") return "unknown-key";
  return "entry-schema";
}

using recipe::Fields;

/// The value of a required field; nullptr (reported when missing) when it is missing or null.
const YAML::Node* required_value(const Fields& fields, YamlReader& reader, const char* name) {
  if (!reader.require(fields, "", name) || fields.at(name).IsNull()) return nullptr;
  return &fields.at(name);
}

/// The value of an optional field; nullptr when it is absent or null.
const YAML::Node* optional_value(const Fields& fields, const char* name) {
  if (!fields.has(name) || fields.at(name).IsNull()) return nullptr;
  return &fields.at(name);
}

// The steps of read_entry(): each reads or checks part of `entry` and returns whether that part
// is valid; diagnostics go to `reader`.

bool read_config_keys(const Fields& fields, YamlReader& reader, ChangelogEntry* entry) {
  const YAML::Node* keys = required_value(fields, reader, "config-keys");
  if (keys == nullptr) return false;
  if (!reader.sequence(*keys, "config-keys")) return false;
  if (keys->size() == 0) {
    reader.error(*keys, "config-keys", "must list at least one config key");
    return false;
  }
  bool ok = true;
  for (size_t i = 0; i < keys->size(); ++i) {
    auto s = reader.string((*keys)[i], recipe::index_path("config-keys", i), false);
    if (!s) {
      ok = false;
      continue;
    }
    entry->config_keys.push_back(*s);
    entry->config_key_lines.push_back((*keys)[i].Mark().line + 1);
  }
  return ok;
}

bool read_description(const Fields& fields, YamlReader& reader, ChangelogEntry* entry) {
  const YAML::Node* d = required_value(fields, reader, "description");
  if (d == nullptr) return false;
  if (!reader.sequence(*d, "description")) return false;
  if (d->size() == 0) {
    reader.error(*d, "description", "must have at least one line");
    return false;
  }
  bool ok = true;
  for (size_t i = 0; i < d->size(); ++i) {
    auto s = reader.string((*d)[i], recipe::index_path("description", i), false);
    if (s) {
      entry->description.push_back(*s);
    } else {
      ok = false;
    }
  }
  return ok;
}

bool read_pr_link(const Fields& fields, YamlReader& reader, ChangelogEntry* entry) {
  const YAML::Node* link = required_value(fields, reader, "pr-link");
  if (link == nullptr) return false;
  entry->pr_link_line = fields.key_marks.at("pr-link").line + 1;
  auto s = reader.string(*link, "pr-link", false);
  if (!s) return false;
  entry->pr_link = *s;
  return true;
}

/// evals-only, all-evals, append-only and eval-min-prefill-ep.
bool read_eval_flags(const Fields& fields, YamlReader& reader, ChangelogEntry* entry) {
  bool ok = true;
  const std::pair<const char*, bool ChangelogEntry::*> flags[] = {
      {"evals-only", &ChangelogEntry::evals_only},
      {"all-evals", &ChangelogEntry::all_evals},
      {"append-only", &ChangelogEntry::append_only}};
  for (const auto& [name, member] : flags) {
    const YAML::Node* value = optional_value(fields, name);
    if (value == nullptr) continue;
    auto b = reader.boolean(*value, name);
    if (b) {
      entry->*member = *b;
    } else {
      ok = false;
    }
  }
  if (const YAML::Node* value = optional_value(fields, "eval-min-prefill-ep")) {
    auto v = reader.integer(*value, "eval-min-prefill-ep", 1);
    if (v) {
      entry->eval_min_prefill_ep = *v;
    } else {
      ok = false;
    }
  }
  return ok;
}

bool read_scenario_type(const Fields& fields, YamlReader& reader, ChangelogEntry* entry) {
  const YAML::Node* st = optional_value(fields, "scenario-type");
  if (st == nullptr) return true;
  auto list = reader.string_list(*st, "scenario-type");
  if (!list) return false;
  if (list->empty()) {
    reader.error(*st, "scenario-type", "must list at least one scenario type");
    return false;
  }
  bool ok = true;
  for (size_t i = 0; i < list->size(); ++i) {
    if (!kScenarioTypes.count((*list)[i])) {
      reader.error((*st)[i], recipe::index_path("scenario-type", i),
                   fmt::format("expected fixed-seq-len or agentic-coding, got \"{}\"", (*list)[i]));
      ok = false;
    }
  }
  entry->scenario_type = *list;
  return ok;
}

bool check_append_only(const Fields& fields, YamlReader& reader, ChangelogEntry* entry) {
  if (entry->append_only &&
      (entry->evals_only || entry->all_evals || entry->eval_min_prefill_ep.has_value())) {
    reader.error(fields.key_marks.at("append-only"), "append-only",
                 "append-only cannot be combined with evals-only, all-evals or "
                 "eval-min-prefill-ep");
    return false;
  }
  return true;
}

using EntryStep = bool (*)(const Fields&, YamlReader&, ChangelogEntry*);
constexpr EntryStep kEntrySteps[] = {read_config_keys, read_description,   read_pr_link,
                                     read_eval_flags,  read_scenario_type, check_append_only};

/// Reads one list item into `entry`; diagnostics go to `reader`.
void read_entry(const YAML::Node& item, YamlReader& reader, ChangelogEntry* entry) {
  auto fields = reader.mapping(item, "", kEntryFields);
  if (!fields) return;
  // yaml-cpp marks an empty value at the next token; name the key's own line instead.
  for (const auto& [name, node] : fields->values) {
    if (!node.IsNull() || name == "eval-min-prefill-ep" || name == "scenario-type") continue;
    reader.error(fields->key_marks.at(name), name, "expected a value, got null");
  }
  bool ok = true;
  for (EntryStep step : kEntrySteps) ok = step(*fields, reader, entry) && ok;  // every step runs
  entry->valid = ok;
}

std::optional<std::string> first_differing_field(const boost::json::value& a,
                                                 const boost::json::value& b) {
  if (!a.is_object() || !b.is_object()) return std::nullopt;
  const auto& oa = a.as_object();
  const auto& ob = b.as_object();
  for (const auto& kv : oa) {
    const auto* other = ob.if_contains(kv.key());
    if (other == nullptr || *other != kv.value()) return std::string(kv.key());
  }
  for (const auto& kv : ob) {
    if (!oa.contains(kv.key())) return std::string(kv.key());
  }
  return std::nullopt;
}

boost::json::value without_link(const boost::json::value& v) {
  if (!v.is_object()) return v;
  boost::json::object o = v.as_object();
  o.erase("pr-link");
  return o;
}

bool same_but_link(const ChangelogEntry& a, const ChangelogEntry& b) {
  return without_link(a.raw) == without_link(b.raw);
}

bool full_match(const std::string& pattern, const std::string& value) {
  // std::regex recurses per character: a long value could overflow the stack, and no link is
  // this long.
  if (value.size() > 2048) return false;
  // Compiled once per pattern (a handful: the context's link patterns), not once per entry: a
  // long changelog compiled the same two patterns for every entry.
  thread_local std::map<std::string, std::optional<std::regex>> compiled;
  auto it = compiled.find(pattern);
  if (it == compiled.end()) {
    std::optional<std::regex> re;
    try {
      re.emplace(pattern);
    } catch (const std::regex_error&) {
    }
    if (compiled.size() > 64) compiled.clear();
    it = compiled.emplace(pattern, std::move(re)).first;
  }
  if (!it->second) return false;
  try {
    return std::regex_match(value, *it->second);
  } catch (const std::regex_error&) {
    return false;
  }
}

bool has_label(const std::vector<std::string>& labels, const std::string& l) {
  return std::find(labels.begin(), labels.end(), l) != labels.end();
}

class Checker {
 public:
  Checker(const std::optional<std::string>& base, const std::string& head,
          const ChangelogContext& ctx)
      : base_(base.value_or("")), base_exists_(base.has_value()), head_(head), ctx_(ctx) {}

  ChangelogReport run();

 private:
  // Messages quote keys and links from the file: escaped and cut (ib::printable), so a huge or
  // hostile value cannot flood the terminal or a PR comment.
  void add(std::string rule, int line, const std::string& message) {
    report_.violations.push_back({std::move(rule), line, printable(message, 2000)});
  }
  void align();
  int changed_line(const ChangelogEntry& b, const ChangelogEntry& h) const;
  void check_links();
  void check_bytes();
  void check_appended_bytes(size_t common);
  void check_first_separator();
  void check_entry_separators(const std::vector<std::string_view>& lines, size_t first);
  void check_trailing_whitespace(const std::vector<std::string_view>& lines);
  void check_correction_bytes(size_t common);
  void resolve_keys();
  void check_labels();
  void check_coverage();

  std::string base_;
  bool base_exists_;
  const std::string& head_;
  const ChangelogContext& ctx_;
  ParsedChangelog base_parsed_, head_parsed_;
  std::vector<size_t> additions_;                     // head indices of new entries
  std::vector<std::pair<size_t, size_t>> corrected_;  // (base, head) pairs differing in pr-link
  bool history_broken_ = false;                       // an entry was changed, deleted or inserted
  ChangelogReport report_;
};

ChangelogReport Checker::run() {
  head_parsed_ = parse_changelog(head_, ctx_.file);
  for (const auto& v : head_parsed_.violations) report_.violations.push_back(v);
  report_.head_entries = head_parsed_.entries.size();
  if (base_exists_) {
    base_parsed_ = parse_changelog(base_, ctx_.file);
    std::set<std::string> head_file_rules;
    for (const auto& v : head_parsed_.violations) {
      if (v.entry < 0) head_file_rules.insert(v.rule);
    }
    for (const auto& v : base_parsed_.violations) {
      if (v.entry >= 0 || head_file_rules.count(v.rule)) continue;
      add("base-invalid", v.line, fmt::format("base revision: [{}] {}", v.rule, v.message));
    }
    report_.base_entries = base_parsed_.entries.size();
  } else {
    base_parsed_.readable = true;
  }
  if (!head_parsed_.readable || !base_parsed_.readable) {
    std::stable_sort(report_.violations.begin(), report_.violations.end(),
                     [](const auto& a, const auto& b) { return a.line < b.line; });
    return std::move(report_);
  }
  align();
  check_links();
  check_bytes();
  for (size_t h : additions_) report_.additions.push_back(head_parsed_.entries[h]);
  report_.corrections = corrected_.size();
  resolve_keys();
  check_labels();
  check_coverage();
  std::stable_sort(report_.violations.begin(), report_.violations.end(),
                   [](const auto& a, const auto& b) { return a.line < b.line; });
  return std::move(report_);
}

// The first line of `h` whose text differs from the same line of `b` (h.line when none does).
int Checker::changed_line(const ChangelogEntry& b, const ChangelogEntry& h) const {
  const auto base_lines = split_lines(base_);
  const auto head_lines = split_lines(head_);
  const auto& head = head_parsed_.entries;
  const size_t end = static_cast<size_t>(h.index) + 1 < head.size()
                         ? static_cast<size_t>(head[h.index + 1].line - 1)
                         : head_lines.size();
  for (size_t n = static_cast<size_t>(h.line - 1), m = static_cast<size_t>(b.line - 1);
       n < end && n < head_lines.size(); ++n, ++m) {
    if (m >= base_lines.size() || base_lines[m] != head_lines[n]) return static_cast<int>(n + 1);
  }
  return h.line;
}

// compare_entries, generalised so that every problem is named: base entries are matched to head
// entries in order (equal up to pr-link); a head entry matched to nothing is new, and must come
// after every historical entry.
void Checker::align() {
  const auto& base = base_parsed_.entries;
  const auto& head = head_parsed_.entries;
  size_t i = 0;
  size_t j = 0;
  auto find_head = [&](size_t from, const ChangelogEntry& e) -> std::optional<size_t> {
    for (size_t k = from; k < head.size(); ++k) {
      if (same_but_link(e, head[k])) return k;
    }
    return std::nullopt;
  };
  auto find_base = [&](size_t from, const ChangelogEntry& e) -> std::optional<size_t> {
    for (size_t k = from; k < base.size(); ++k) {
      if (same_but_link(base[k], e)) return k;
    }
    return std::nullopt;
  };
  while (i < base.size() && j < head.size()) {
    if (same_but_link(base[i], head[j])) {
      if (base[i].raw != head[j].raw) corrected_.emplace_back(i, j);
      ++i, ++j;
      continue;
    }
    auto k = find_head(j + 1, base[i]);
    auto m = find_base(i + 1, head[j]);
    if (k && (!m || *k - j <= *m - i)) {
      for (size_t n = j; n < *k; ++n) {
        add("not-appended-at-end", head[n].line,
            fmt::format("new entry {} is inserted before historical entry {} (base line {}); "
                        "append new entries at the physical end of the file",
                        n + 1, i + 1, base[i].line));
        additions_.push_back(n);
      }
      history_broken_ = true;
      j = *k;
      continue;
    }
    if (m) {
      for (size_t n = i; n < *m; ++n) {
        add("history-modified", head[j].line,
            fmt::format("historical entry {} (base line {}, config-keys {}) was deleted; "
                        "entries may not be removed",
                        n + 1, base[n].line, quoted_list(base[n].config_keys)));
      }
      history_broken_ = true;
      i = *m;
      continue;
    }
    auto field = first_differing_field(base[i].raw, head[j].raw);
    add("history-modified", changed_line(base[i], head[j]),
        fmt::format("historical entry {} (base line {}) changed{}; existing entries are "
                    "immutable except for pr-link corrections",
                    i + 1, base[i].line, field ? fmt::format(" in '{}'", *field) : ""));
    history_broken_ = true;
    ++i, ++j;
  }
  for (; i < base.size(); ++i) {
    add("history-modified", last_line(head_),
        fmt::format("historical entry {} (base line {}, config-keys {}) was deleted; entries "
                    "may not be removed",
                    i + 1, base[i].line, quoted_list(base[i].config_keys)));
    history_broken_ = true;
  }
  for (; j < head.size(); ++j) additions_.push_back(j);
}

void Checker::check_links() {
  const auto& head = head_parsed_.entries;
  for (const auto& [b, h] : corrected_) {
    const auto& e = head[h];
    if (!full_match(ctx_.canonical_link, e.pr_link)) {
      add("pr-link", e.pr_link_line,
          fmt::format("pr-link correction of entry {} is not a canonical pull-request link: "
                      "'{}'",
                      h + 1, e.pr_link));
    }
  }
  if (!corrected_.empty() && !additions_.empty()) {
    add("pr-link", head[corrected_.front().second].pr_link_line,
        "do not mix historical pr-link corrections with new changelog entries");
  }
  for (size_t h : additions_) {
    const auto& e = head[h];
    if (e.pr_link_line == 0) continue;  // missing: reported by the schema
    const bool canonical = full_match(ctx_.canonical_link, e.pr_link);
    const bool placeholder = full_match(ctx_.placeholder_link, e.pr_link);
    if (ctx_.main) {
      if (!canonical) {
        add("pr-link", e.pr_link_line,
            fmt::format("new entry on main needs a canonical pull-request link, found '{}'",
                        e.pr_link));
      }
    } else if (ctx_.pr_url) {
      if (e.pr_link != *ctx_.pr_url && !placeholder) {
        add("pr-link", e.pr_link_line,
            fmt::format("new entry of this pull request must use '{}' or the placeholder XXX, "
                        "found '{}'",
                        *ctx_.pr_url, e.pr_link));
      }
    } else if (!canonical && !placeholder) {
      add("pr-link", e.pr_link_line,
          fmt::format("new entry needs a pull-request link or the placeholder XXX, found '{}'",
                      e.pr_link));
    }
  }
}

// validate_raw_change: the bytes of history are immutable; new entries follow it after exactly
// one empty line, are separated by exactly one empty line, and the file ends with one newline.
void Checker::check_bytes() {
  const size_t common = static_cast<size_t>(
      std::mismatch(base_.begin(), base_.end(), head_.begin(), head_.end()).first - base_.begin());
  if (!additions_.empty()) {
    check_appended_bytes(common);
    return;
  }
  if (history_broken_) return;
  if (!corrected_.empty()) {
    check_correction_bytes(common);
    return;
  }
  if (base_ != head_) {
    add("history-modified", line_at(head_, common),
        "the change neither appends an entry nor corrects a pr-link; historical whitespace and "
        "formatting are immutable");
  }
}

// The bytes of a change that appends entries; `common`: the length of the common prefix of base
// and head.
void Checker::check_appended_bytes(size_t common) {
  const auto lines = split_lines(head_);
  size_t first_checked = 0;
  // With corrections, the mixing is reported by check_links(); the byte prefix cannot hold.
  if (!history_broken_ && corrected_.empty()) {
    if (common != base_.size()) {
      add("history-modified", line_at(head_, common),
          fmt::format("historical bytes differ from the base revision from line {} on; "
                      "restore the base file byte for byte and append at the end",
                      line_at(head_, common)));
    } else if (additions_.front() == base_parsed_.entries.size()) {
      check_first_separator();
      first_checked = 1;
    }
  }
  check_entry_separators(lines, first_checked);
  check_trailing_whitespace(lines);
  if (head_.ends_with("\n\n")) {
    add("trailing-blank-line", last_line(head_),
        "the file ends with an empty line; the last entry must end with exactly one newline");
  }
}

// The text between the history (the whole base, a prefix of head) and the first new entry must
// be exactly one empty line.
void Checker::check_first_separator() {
  const std::string_view suffix = std::string_view(head_).substr(base_.size());
  const bool blank_done = base_.empty() || base_.ends_with("\n\n");
  const std::string expected =
      blank_done ? std::string(kEntryStart) : "\n" + std::string(kEntryStart);
  if (!base_.empty() && !base_.ends_with("\n")) {
    add("separator", line_at(head_, base_.size()),
        "the base file does not end with a newline; the new entry cannot follow it");
  } else if (!suffix.starts_with(expected)) {
    const int at = head_parsed_.entries[additions_.front()].line;
    std::string why;
    if (!blank_done && suffix.starts_with(kEntryStart)) {
      why = "there is no empty line between the history and the new entry";
    } else if (suffix.starts_with("\n\n") || (blank_done && suffix.starts_with("\n"))) {
      why = "there is more than one empty line between the history and the new entry";
    } else {
      why = "text other than one empty line separates the history from the new entry";
    }
    add("separator", at, why + "; separate it from the previous entry by exactly one empty line");
  }
}

// Exactly one empty line before each new entry from additions_[first] on.
void Checker::check_entry_separators(const std::vector<std::string_view>& lines, size_t first) {
  const auto& head = head_parsed_.entries;
  for (size_t a = first; a < additions_.size(); ++a) {
    const auto& e = head[additions_[a]];
    if (e.line <= 1) continue;  // first line of a new file
    auto prev = line_text(lines, e.line - 1);
    auto prev2 = line_text(lines, e.line - 2);
    if (!prev || !prev->empty()) {
      add("separator", e.line,
          "there is no empty line before this new entry; separate entries by exactly one "
          "empty line");
    } else if (prev2 && prev2->empty()) {
      add("separator", e.line,
          "there is more than one empty line before this new entry; separate entries by "
          "exactly one empty line");
    } else if (prev2 &&
               std::all_of(prev2->begin(), prev2->end(), [](char c) { return c == ' '; }) &&
               !prev2->empty()) {
      add("separator", e.line - 2, "a line of spaces before this new entry; remove it");
    }
  }
}

// `git diff --check` in validate_perf_changelog.py: no trailing whitespace on added lines.
void Checker::check_trailing_whitespace(const std::vector<std::string_view>& lines) {
  const auto& head = head_parsed_.entries;
  for (size_t a = 0; a < additions_.size(); ++a) {
    const auto& e = head[additions_[a]];
    const size_t next = static_cast<size_t>(e.index) + 1;
    const int end = next < head.size() ? head[next].line - 1 : static_cast<int>(lines.size());
    for (int n = e.line; n <= end; ++n) {
      auto text = line_text(lines, n);
      if (text && !text->empty() && (text->back() == ' ' || text->back() == '\t')) {
        add("trailing-whitespace", n, "trailing whitespace on a new line; remove it");
      }
    }
  }
}

// The bytes of a change that only corrects pr-links: the same lines, changed only in
// "  pr-link:" lines, one for each correction.
void Checker::check_correction_bytes(size_t common) {
  const auto lines = split_lines(head_);
  const auto base_lines = split_lines(base_);
  if (base_lines.size() != lines.size()) {
    add("history-modified", line_at(head_, common),
        "pr-link corrections may not add or delete lines");
    return;
  }
  size_t changed = 0;
  for (size_t n = 0; n < lines.size(); ++n) {
    if (base_lines[n] == lines[n]) continue;
    ++changed;
    if (!base_lines[n].starts_with("  pr-link:") || !lines[n].starts_with("  pr-link:")) {
      add("history-modified", static_cast<int>(n + 1),
          "historical bytes changed outside a pr-link line; a correction may change only "
          "'  pr-link:' lines");
    }
  }
  if (changed != corrected_.size()) {
    add("history-modified", line_at(head_, common),
        fmt::format("expected {} changed pr-link line(s), found {}", corrected_.size(), changed));
  }
}

void Checker::resolve_keys() {
  report_.resolved_keys.assign(report_.additions.size(), {});
  if (!ctx_.config_keys) return;
  const auto& all = *ctx_.config_keys;
  const std::set<std::string> known(all.begin(), all.end());
  for (size_t a = 0; a < report_.additions.size(); ++a) {
    const auto& e = report_.additions[a];
    auto& resolved = report_.resolved_keys[a];
    std::set<std::string> seen;
    for (size_t k = 0; k < e.config_keys.size(); ++k) {
      const std::string& pattern = e.config_keys[k];
      const int line = k < e.config_key_lines.size() ? e.config_key_lines[k] : e.line;
      if (pattern.find('*') != std::string::npos) {
        size_t matched = 0;
        for (const auto& key : all) {
          if (!changelog_key_matches(pattern, key)) continue;
          ++matched;
          if (seen.insert(key).second) resolved.push_back(key);
        }
        if (matched == 0) {
          add("wildcard-no-match", line,
              fmt::format("config key pattern '{}' matches no config key of the head revision",
                          pattern));
        }
      } else if (!known.count(pattern)) {
        add("unknown-config-key", line,
            fmt::format("config key '{}' does not exist in the head revision's recipes", pattern));
      } else if (seen.insert(pattern).second) {
        resolved.push_back(pattern);
      }
    }
  }
}

void Checker::check_labels() {
  const auto& labels = ctx_.labels;
  const auto& adds = report_.additions;
  std::vector<std::string> primaries;
  for (const auto& p : primary_labels()) {
    if (has_label(labels, p)) primaries.push_back(p);
  }
  std::vector<std::string> modifiers;
  for (const auto& m : kModifierLabels) {
    if (has_label(labels, m)) modifiers.push_back(m);
  }
  if (primaries.size() > 1) {
    add("labels", 0,
        fmt::format("conflicting sweep labels {}: pick exactly one", quoted_list(primaries)));
  }
  if (primaries.empty() && !modifiers.empty()) {
    add("labels", 0,
        fmt::format("modifier label(s) {} need exactly one primary sweep label ({})",
                    quoted_list(modifiers), quoted_list(primary_labels())));
  }
  if (has_label(labels, "evals-only") && has_label(labels, "agentx-fast")) {
    add("labels", 0,
        "evals-only (no throughput) conflicts with agentx-fast (AgentX throughput only)");
  }
  if (!primaries.empty() && adds.empty()) {
    add("labels", 0,
        fmt::format("sweep label {} is set but no entry is appended: the sweep has nothing to run",
                    quoted_list(primaries)));
  }
  // Append-only sweeps (process_changelog.py): all new entries or none, and no eval modifiers.
  const auto append_only = std::count_if(adds.begin(), adds.end(),
                                         [](const ChangelogEntry& e) { return e.append_only; });
  if (append_only > 0 && static_cast<size_t>(append_only) != adds.size()) {
    for (const auto& e : adds) {
      if (e.append_only) continue;
      add("append-only", e.line,
          "append-only entries cannot share a sweep with regular entries; this entry is not "
          "append-only");
    }
  }
  if (append_only > 0 && (has_label(labels, "all-evals") || has_label(labels, "evals-only"))) {
    add("labels", 0, "append-only sweeps cannot use the all-evals or evals-only labels");
  }
  if (has_label(labels, "agentx-fast") && ctx_.agentic_keys && !adds.empty() && ctx_.config_keys) {
    bool agentic = false;
    for (size_t a = 0; a < adds.size(); ++a) {
      if (!adds[a].selects("agentic-coding")) continue;
      for (const auto& k : report_.resolved_keys[a]) agentic |= ctx_.agentic_keys->count(k) > 0;
    }
    if (!agentic) {
      add("labels", 0,
          "agentx-fast runs AgentX throughput only, but no new entry selects an agentic-coding "
          "scenario");
    }
  }
}

void Checker::check_coverage() {
  if (!ctx_.affected_keys) return;
  const auto& affected = *ctx_.affected_keys;
  const auto& adds = report_.additions;
  if (affected.empty()) {
    for (const auto& e : adds) {
      add("extra-entry", e.line,
          "no config key is affected by this change (`inferbench changed` lists none), so no "
          "entry may be appended");
    }
    return;
  }
  if (adds.empty()) {
    add("missing-entry", last_line(head_),
        fmt::format("the change affects {} config key(s) ({}) but appends no entry; append one "
                    "entry whose config-keys cover them",
                    affected.size(), quoted_list(affected)));
    return;
  }
  if (adds.size() > 1) {
    add("multiple-entries", adds[1].line,
        fmt::format("exactly one entry may be appended for a change; found {}", adds.size()));
  }
  for (const auto& key : affected) {
    bool covered = false;
    for (const auto& e : adds) {
      for (const auto& p : e.config_keys) covered |= changelog_key_matches(p, key);
    }
    if (!covered) {
      add("uncovered-key", adds.front().line,
          fmt::format("config key '{}' is affected by the change but not covered by the new "
                      "entry's config-keys",
                      key));
    }
  }
}

}  // namespace

std::string ChangelogViolation::str(const std::string& file) const {
  if (line <= 0) return fmt::format("{}: [{}] {}", file, rule, message);
  return fmt::format("{}:{}: [{}] {}", file, line, rule, message);
}

boost::json::object ChangelogViolation::to_json() const {
  return {{"rule", rule}, {"line", line}, {"message", message}};
}

bool ChangelogEntry::selects(const std::string& scenario) const {
  return scenario_type.empty() ||
         std::find(scenario_type.begin(), scenario_type.end(), scenario) != scenario_type.end();
}

boost::json::object ChangelogEntry::to_json() const {
  boost::json::object o;
  o["index"] = index;
  o["line"] = line;
  o["valid"] = valid;
  o["entry"] = raw;
  return o;
}

boost::json::object ChangelogReport::to_json() const {
  boost::json::object o;
  o["ok"] = ok();
  o["base-entries"] = base_entries;
  o["head-entries"] = head_entries;
  boost::json::array adds;
  for (size_t a = 0; a < additions.size(); ++a) {
    auto e = additions[a].to_json();
    if (a < resolved_keys.size()) {
      boost::json::array keys;
      for (const auto& k : resolved_keys[a]) keys.emplace_back(k);
      e["resolved-keys"] = std::move(keys);
    }
    adds.push_back(std::move(e));
  }
  o["additions"] = std::move(adds);
  o["corrections"] = corrections;
  boost::json::array vs;
  for (const auto& v : violations) vs.push_back(v.to_json());
  o["violations"] = std::move(vs);
  return o;
}

bool changelog_key_matches(const std::string& pattern, const std::string& key) {
  // Iterative glob with '*' only: backtrack to the last star on a mismatch.
  size_t p = 0, k = 0, star = std::string::npos, mark = 0;
  while (k < key.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = k;
    } else if (p < pattern.size() && pattern[p] == key[k]) {
      ++p, ++k;
    } else if (star != std::string::npos) {
      p = star + 1;
      k = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

ParsedChangelog parse_changelog(const std::string& bytes, const std::string& file) {
  ParsedChangelog out;
  auto add = [&](std::string rule, int line, const std::string& message, int entry = -1) {
    out.violations.push_back({std::move(rule), line, printable(message, 2000), entry});
  };
  if (bytes.empty() || bytes.back() != '\n') {
    add("final-newline", last_line(bytes), fmt::format("{} does not end with a newline", file));
  }
  const std::pair<char, const char*> forbidden[] = {
      {'\r', "a CR character (\\r)"}, {'\t', "a tab"}, {'\0', "a NUL byte"}};
  for (const auto& [c, what] : forbidden) {
    size_t at = bytes.find(c);
    if (at != std::string::npos) {
      add("forbidden-character", line_at(bytes, at),
          fmt::format("{} contains {} (line {}); only LF line ends and spaces are allowed", file,
                      what, line_at(bytes, at)));
    }
  }
  if (size_t bad = invalid_utf8_at(bytes); bad != std::string::npos) {
    add("invalid-utf8", line_at(bytes, bad),
        fmt::format("{} is not valid UTF-8 (byte 0x{:02x})", file,
                    static_cast<unsigned char>(bytes[bad])));
    return out;
  }
  if (bytes.find('\0') != std::string::npos) return out;

  std::vector<Diagnostic> diags;
  YamlReader reader(file, &diags);
  auto doc = reader.parse(bytes);
  if (!doc) {
    // Does not parse, or crosses a YAML limit (size, nesting, alias expansion).
    for (const auto& d : diags) add(d.kind.empty() ? "yaml-syntax" : d.kind, d.line, d.message);
    return out;
  }
  for (const auto& d : diags) add("entry-schema", d.line, d.message);  // merge-key problems
  diags.clear();
  if (!doc->IsSequence()) {
    add("root-not-list", 1,
        fmt::format("{} must be a YAML list of entries, got {}", file, recipe::describe(*doc)));
    return out;
  }
  out.readable = true;
  for (size_t i = 0; i < doc->size(); ++i) {
    const YAML::Node item = (*doc)[i];
    ChangelogEntry e;
    e.index = static_cast<int>(i);
    e.line = item.Mark().line + 1;
    e.raw = recipe::to_json(item);
    read_entry(item, reader, &e);
    for (const auto& d : diags) {
      std::string where = d.path.empty() ? "" : d.path + ": ";
      add(rule_of(d), d.line > 0 ? d.line : e.line,
          fmt::format("entry {}: {}{}", i + 1, where, d.message), static_cast<int>(i));
    }
    if (!diags.empty()) e.valid = false;
    diags.clear();
    out.entries.push_back(std::move(e));
  }

  // Each entry starts with a line "- config-keys:" (the convention the byte rules rely on).
  std::set<int> starts;
  const auto lines = split_lines(bytes);
  for (size_t n = 0; n < lines.size(); ++n) {
    if (lines[n].starts_with(kEntryStart)) starts.insert(static_cast<int>(n + 1));
  }
  std::set<int> entry_lines;
  for (const auto& e : out.entries) entry_lines.insert(e.line);
  if (starts.size() != out.entries.size() || starts != entry_lines) {
    std::vector<int> diff;
    std::set_symmetric_difference(starts.begin(), starts.end(), entry_lines.begin(),
                                  entry_lines.end(), std::back_inserter(diff));
    const int at = diff.empty() ? 1 : diff.front();
    add("entry-count", at,
        fmt::format("{} lines start with '- config-keys:' but the YAML list has {} entries; "
                    "every entry must begin with a line '- config-keys:'",
                    starts.size(), out.entries.size()));
  }
  return out;
}

ChangelogReport check_changelog(const std::optional<std::string>& base, const std::string& head,
                                const ChangelogContext& context) {
  return Checker(base, head, context).run();
}

}  // namespace ib::govern
