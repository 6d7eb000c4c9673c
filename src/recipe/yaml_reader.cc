#include "recipe/yaml_reader.h"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "core/strings.h"

namespace ib::recipe {

std::string Diagnostic::str() const {
  // Messages quote values already cut to ib::printable's default; the larger caps here only stop
  // a path built from huge keys, or a message that quotes raw text, from flooding the terminal.
  std::string out = printable(file, 400);
  if (line > 0) out += fmt::format(":{}:{}", line, column);
  if (!out.empty()) out += ": ";
  if (!path.empty()) out += printable(path, 400) + ": ";
  out += printable(message, 2000);
  return out;
}

std::string join_diagnostics(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const auto& d : diagnostics) {
    if (!out.empty()) out += '\n';
    out += d.str();
  }
  return out;
}

std::string field_path(const std::string& base, const std::string& name) {
  return base.empty() ? name : base + "." + name;
}

std::string index_path(const std::string& base, size_t index) {
  return fmt::format("{}[{}]", base, index);
}

namespace {

bool is_plain(const YAML::Node& node) {
  return node.Tag() != "!";
}

// Scalar typing is matched by hand, not with std::regex: libstdc++'s regex executor recurses per
// character, so a long scalar (a megabyte of digits) would overflow the stack.

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Position after the run of [0-9_] starting at `i`.
size_t skip_digits(const std::string& s, size_t i) {
  while (i < s.size() && (is_digit(s[i]) || s[i] == '_')) ++i;
  return i;
}

// YAML 1.1 integers as PyYAML resolves them (decimal with optional underscores, e.g. 2_063_837):
// [-+]?(0|[1-9][0-9_]*).
bool is_int_text(const std::string& s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  if (i == s.size()) return false;
  if (s[i] == '0') return i + 1 == s.size();
  if (!is_digit(s[i])) return false;
  return skip_digits(s, i + 1) == s.size();
}

// [-+]?([0-9][0-9_]*)?\.[0-9_]*([eE][-+][0-9]+)? with at least one digit.
bool is_float_text(const std::string& s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  if (i < s.size() && is_digit(s[i])) i = skip_digits(s, i + 1);
  if (i == s.size() || s[i] != '.') return false;
  i = skip_digits(s, i + 1);
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    if (i + 2 > s.size() || (s[i + 1] != '-' && s[i + 1] != '+')) return false;
    const size_t digits = i + 2;
    i = digits;
    while (i < s.size() && is_digit(s[i])) ++i;
    if (i == digits) return false;
  }
  return i == s.size() && s.find_first_of("0123456789") != std::string::npos;
}

// The value of an int scalar; nullopt when it is not one or does not fit int64.
std::optional<int64_t> parse_int(const std::string& s) {
  if (!is_int_text(s)) return std::nullopt;
  std::string digits;
  for (char c : s) {
    if (c != '_' && c != '+') digits += c;
  }
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || ptr != digits.data() + digits.size()) return std::nullopt;
  return value;
}

std::optional<double> parse_float(const std::string& s) {
  if (!is_float_text(s)) return std::nullopt;
  std::string clean;
  for (char c : s) {
    if (c != '_') clean += c;
  }
  try {
    const double v = std::stod(clean);  // out_of_range (1.0e+999) throws
    if (!std::isfinite(v)) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<bool> parse_bool(const std::string& s) {
  static const std::set<std::string> kTrue = {"true", "True", "TRUE", "yes", "Yes",
                                              "YES",  "on",   "On",   "ON"};
  static const std::set<std::string> kFalse = {"false", "False", "FALSE", "no", "No",
                                               "NO",    "off",   "Off",   "OFF"};
  if (kTrue.count(s)) return true;
  if (kFalse.count(s)) return false;
  return std::nullopt;
}

bool is_null_text(const std::string& s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

}  // namespace

ScalarKind scalar_kind(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return ScalarKind::kNull;
  if (!node.IsScalar()) return ScalarKind::kString;  // callers check IsScalar first
  if (!is_plain(node)) return ScalarKind::kString;
  const std::string& s = node.Scalar();
  if (is_null_text(s)) return ScalarKind::kNull;
  if (parse_bool(s)) return ScalarKind::kBool;
  if (parse_int(s)) return ScalarKind::kInt;
  if (parse_float(s)) return ScalarKind::kFloat;
  return ScalarKind::kString;
}

std::string describe(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "null";
  if (node.IsMap()) return "a mapping";
  if (node.IsSequence()) return "a list";
  if (scalar_kind(node) == ScalarKind::kString) {
    return fmt::format("\"{}\"", printable(node.Scalar()));
  }
  return printable(node.Scalar());
}

boost::json::value to_json(const YAML::Node& node) {
  if (node.IsMap()) {
    boost::json::object obj;
    for (auto it = node.begin(); it != node.end(); ++it) {
      const YAML::Node key = it->first;
      const YAML::Node value = it->second;
      obj[key.Scalar()] = to_json(value);
    }
    return obj;
  }
  if (node.IsSequence()) {
    boost::json::array arr;
    for (const auto& item : node) arr.push_back(to_json(item));
    return arr;
  }
  switch (scalar_kind(node)) {
    case ScalarKind::kNull:
      return nullptr;
    case ScalarKind::kBool:
      return *parse_bool(node.Scalar());
    case ScalarKind::kInt:
      return *parse_int(node.Scalar());
    case ScalarKind::kFloat:
      return *parse_float(node.Scalar());
    case ScalarKind::kString:
      break;
  }
  return boost::json::string(node.Scalar());
}

void YamlReader::error(const YAML::Mark& mark, const std::string& path, std::string message) {
  Diagnostic d;
  d.file = file_;
  d.line = mark.line >= 0 ? mark.line + 1 : 0;
  d.column = mark.column >= 0 ? mark.column + 1 : 0;
  d.path = path;
  d.message = std::move(message);
  out_->push_back(std::move(d));
}

void YamlReader::error(const YAML::Node& at, const std::string& path, std::string message) {
  error(at.IsDefined() ? at.Mark() : YAML::Mark::null_mark(), path, std::move(message));
}

namespace {

// YAML 1.1 merge keys ("<<: *defaults" or "<<: [*a, *b]"), which yaml-cpp leaves as plain keys.
// Explicit keys win over merged ones, and earlier maps of a list over later ones (the YAML merge
// key spec). Resolved in place, depth first, so a merged map's own merges apply first.
class MergeResolver {
 public:
  explicit MergeResolver(YamlReader* reader) : reader_(reader) {}

  void resolve(YAML::Node node, const std::string& path) {
    // Seen before (an anchor's node, reached again through an alias)? Nodes are found by their
    // position in the text, then by identity, so this stays fast on a file of many nodes.
    auto& same_place = done_[node.Mark().pos];
    for (const YAML::Node& done : same_place) {
      if (done.is(node)) return;
    }
    same_place.push_back(node);
    if (node.IsSequence()) {
      for (size_t i = 0; i < node.size(); ++i) resolve(node[i], index_path(path, i));
      return;
    }
    if (!node.IsMap()) return;
    std::vector<YAML::Node> sources;
    YAML::Node merge_key;
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (it->first.IsScalar() && it->first.Scalar() == "<<" && it->first.Tag() != "!") {
        merge_key = it->first;
        // A copy (a Node is a handle): `it->` yields a temporary proxy, so a reference to its
        // member would dangle after this statement (ASan: stack-use-after-scope).
        const YAML::Node v = it->second;
        const std::string p = field_path(path, "<<");
        if (v.IsMap()) {
          sources.push_back(v);
        } else if (v.IsSequence() &&
                   std::all_of(v.begin(), v.end(), [](const YAML::Node& n) { return n.IsMap(); })) {
          for (const auto& n : v) sources.push_back(n);
        } else {
          reader_->error(v, p,
                         "a merge key takes a mapping or a list of mappings, got " + describe(v));
        }
      } else {
        resolve(it->second, it->first.IsScalar() ? field_path(path, it->first.Scalar()) : path);
      }
    }
    if (!merge_key) return;
    for (auto& src : sources) resolve(src, field_path(path, "<<"));
    node.remove(merge_key);
    std::set<std::string> present;
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (it->first.IsScalar()) present.insert(it->first.Scalar());
    }
    for (const auto& src : sources) {
      for (auto it = src.begin(); it != src.end(); ++it) {
        if (!it->first.IsScalar() || !present.insert(it->first.Scalar()).second) continue;
        node.force_insert(it->first, it->second);
      }
    }
  }

 private:
  YamlReader* reader_;
  std::unordered_map<int, std::vector<YAML::Node>> done_;  // by Mark().pos
};

}  // namespace

namespace {

// A limit the document crosses, thrown out of yaml-cpp's parser by LimitScan.
struct LimitExceeded {
  YAML::Mark mark;
  std::string message;
};

std::string mib(uint64_t bytes) {
  return bytes % (1 << 20) == 0 ? fmt::format("{} MiB", bytes >> 20)
                                : fmt::format("{} bytes", bytes);
}

// Flow collections ('[', '{') nested deeper than `max_depth`, found on the bytes alone. yaml-cpp's
// scanner queues every token while a flow collection's first entry may still turn out to be a
// key, so "[[[[..." is buffered whole, a few hundred bytes per '[', before LimitScan sees its
// first event. This scan is deliberately lenient (it may miss nesting that LimitScan then
// catches, it never reports nesting that is not there): quoted scalars and comments are skipped,
// and in block context a bracket counts only where a value starts.
std::optional<LimitExceeded> flow_depth_scan(const std::string& text, size_t max_depth) {
  size_t depth = 0;
  int line = 0;
  int column = 0;
  bool value_start = true;  // block context: at a position where a node may begin
  // Block scalars ("|", ">"): their lines, indented more than the line that starts them, are text.
  bool block_scalar = false;
  size_t line_indent = 0;
  // The spaces that begin the line starting at `pos`.
  auto indent_at = [&](size_t pos) {
    const size_t first = text.find_first_not_of(' ', pos);
    return (first == std::string::npos ? text.size() : first) - pos;
  };
  for (size_t i = 0; i < text.size(); ++i, ++column) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      column = -1;
      value_start = true;
      if (block_scalar && depth == 0) {
        // Skip the lines that are more indented than the one that began the scalar, and blank
        // ones.
        size_t next = i + 1;
        while (next < text.size()) {
          size_t end = text.find('\n', next);
          if (end == std::string::npos) end = text.size();
          const size_t indent = indent_at(next);
          const bool blank = next + indent >= end;
          if (!blank && indent <= line_indent) break;
          next = end + 1;
          ++line;
        }
        i = next - 1;  // the '\n' before the next structural line
        if (i >= text.size()) break;
        block_scalar = false;
      }
      line_indent = indent_at(i + 1);
      continue;
    }
    if (depth == 0 && value_start && (c == '&' || c == '!')) {
      // An anchor or a tag: the node it belongs to may still begin after it.
      while (i + 1 < text.size() && !is_ascii_space(text[i + 1])) ++i, ++column;
      continue;
    }
    if (depth == 0 && value_start && (c == '|' || c == '>')) {
      block_scalar = true;
      value_start = false;
      continue;
    }
    const bool after_space = i == 0 || is_ascii_space(text[i - 1]);
    if (c == '#' && after_space) {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
      continue;
    }
    const bool token_start = depth > 0 || value_start;
    if ((c == '"' || c == '\'') && token_start) {
      // A quoted scalar: skip to its closing quote ('' and \" are escapes).
      for (++i; i < text.size(); ++i) {
        if (text[i] == '\n') ++line, column = -1;
        ++column;
        if (c == '"' && text[i] == '\\') {
          ++i, ++column;
          if (i < text.size() && text[i] == '\n') ++line, column = -1;  // an escaped line break
        } else if (text[i] == c) {
          if (c == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
            ++i, ++column;
            continue;
          }
          break;
        }
      }
      value_start = false;
      continue;
    }
    if ((c == '[' || c == '{') && token_start) {
      if (++depth > max_depth) {
        YAML::Mark mark;
        mark.pos = static_cast<int>(i);
        mark.line = line;
        mark.column = column;
        return LimitExceeded{
            mark, fmt::format("flow collections ('[' or '{{') nested more than {} levels deep (the "
                              "limit); a recipe needs only a few levels",
                              max_depth)};
      }
      continue;
    }
    if ((c == ']' || c == '}') && depth > 0) {
      --depth;
      continue;
    }
    if (depth > 0) continue;
    // Block context: a node may begin after indentation, "- ", "? " or ": ".
    if (c == ' ' || c == '\t') continue;
    value_start = (c == '-' || c == '?' || c == ':') &&
                  (i + 1 == text.size() || is_ascii_space(text[i + 1]));
  }
  return std::nullopt;
}

// Walks the document's events once, before any node is built, counting what the walkers (to_json,
// the merge-key resolver, the recipe parser) would visit with every alias expanded: nodes, scalar
// bytes and nesting. An anchor's totals are kept, so an alias costs one lookup however large its
// expansion, and the scan throws LimitExceeded at the first event that crosses a limit: a
// billion-laughs document stops within its first few hundred events, and deep nesting stops
// yaml-cpp's recursive descent at `max_depth` levels (its own guard is at 500, with the message
// "bad file").
class LimitScan : public YAML::EventHandler {
 public:
  explicit LimitScan(const YamlLimits& limits) : limits_(limits) {}

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnAnchor(const YAML::Mark&, const std::string& name) override { anchor_name_ = name; }

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { leaf(mark, anchor, 0); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string& value) override {
    leaf(mark, anchor, value.size());
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (++aliases_ > limits_.max_aliases) {
      throw LimitExceeded{mark, fmt::format("more than {} aliases (the limit)", limits_.max_aliases)};
    }
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) return;  // yaml-cpp rejects unknown anchors itself
    const Anchor& a = it->second;
    if (a.open) {
      throw LimitExceeded{mark, fmt::format("alias *{} refers to a node that contains it; an "
                                            "alias may only repeat a node that is complete",
                                            printable(a.name))};
    }
    if (stack_.size() + a.size.height > limits_.max_depth) {
      throw LimitExceeded{mark, fmt::format("nesting deeper than {} levels after alias expansion "
                                            "(the limit) at alias *{}",
                                            limits_.max_depth, printable(a.name))};
    }
    add(mark, a.size);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(mark, anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(mark, anchor);
  }
  void OnMapEnd() override { close(); }

 private:
  // A subtree's totals with its aliases expanded. height: 0 for a scalar, 1 + the deepest child
  // for a collection.
  struct Size {
    uint64_t nodes = 0;
    uint64_t scalar_bytes = 0;
    size_t height = 0;
  };
  struct Anchor {
    std::string name;
    Size size;
    bool open = false;  // its collection has not ended yet
  };
  struct Frame {
    YAML::anchor_t anchor;
    Size size;  // so far
  };

  void leaf(const YAML::Mark& mark, YAML::anchor_t anchor, uint64_t bytes) {
    const Size size{1, bytes, 0};
    if (anchor != YAML::NullAnchor) define(mark, anchor, size, false);
    add(mark, size);
  }

  void define(const YAML::Mark& mark, YAML::anchor_t anchor, const Size& size, bool open) {
    if (anchors_.size() >= limits_.max_anchors) {
      throw LimitExceeded{mark,
                          fmt::format("more than {} anchors (the limit)", limits_.max_anchors)};
    }
    anchors_[anchor] = {take_anchor_name(), size, open};
  }

  void open(const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (stack_.size() + 1 > limits_.max_depth) {
      throw LimitExceeded{mark, fmt::format("mappings and lists nested more than {} levels deep "
                                            "(the limit); a recipe needs only a few levels",
                                            limits_.max_depth)};
    }
    count(mark, Size{1, 0, 0});
    if (anchor != YAML::NullAnchor) define(mark, anchor, {}, true);
    stack_.push_back({anchor, Size{1, 0, 0}});
  }

  void close() {
    Frame done = stack_.back();
    stack_.pop_back();
    done.size.height += 1;
    if (done.anchor != YAML::NullAnchor) {
      Anchor& a = anchors_[done.anchor];
      a.size = done.size;
      a.open = false;
    }
    if (!stack_.empty()) include(done.size);
  }

  // A node (a leaf, or an alias's expansion) inside the open collection.
  void add(const YAML::Mark& mark, const Size& size) {
    count(mark, size);
    if (!stack_.empty()) include(size);
  }

  void include(const Size& size) {
    Size& parent = stack_.back().size;
    parent.nodes += size.nodes;
    parent.scalar_bytes += size.scalar_bytes;
    parent.height = std::max(parent.height, size.height);
  }

  // The document's running totals; each addend is at most the totals so far (an anchor's subtree
  // was counted once already), so they cannot overflow before a limit trips.
  void count(const YAML::Mark& mark, const Size& size) {
    nodes_ += size.nodes;
    scalar_bytes_ += size.scalar_bytes;
    if (nodes_ > limits_.max_nodes) {
      throw LimitExceeded{mark, fmt::format("too many nodes after alias expansion (limit {}){}",
                                            limits_.max_nodes,
                                            aliases_ > 0 ? ": each alias counts every node of what "
                                                           "it repeats"
                                                         : "")};
    }
    if (scalar_bytes_ > limits_.max_scalar_bytes) {
      throw LimitExceeded{mark, fmt::format("more than {} of scalar text after alias expansion "
                                            "(the limit): each alias counts the text it repeats",
                                            mib(limits_.max_scalar_bytes))};
    }
  }

  std::string take_anchor_name() { return std::exchange(anchor_name_, {}); }

  const YamlLimits& limits_;
  std::vector<Frame> stack_;
  std::unordered_map<YAML::anchor_t, Anchor> anchors_;
  std::string anchor_name_;  // from OnAnchor, for the node that follows
  uint64_t nodes_ = 0;
  uint64_t scalar_bytes_ = 0;
  uint64_t aliases_ = 0;
};

}  // namespace

std::optional<YAML::Node> YamlReader::parse(const std::string& text) {
  auto limit = [&](const YAML::Mark& mark, std::string message) {
    error(mark, "", std::move(message));
    out_->back().kind = "yaml-limit";
    return std::nullopt;
  };
  if (text.size() > limits_.max_bytes) {
    return limit(YAML::Mark::null_mark(),
                 fmt::format("{} bytes is more than the limit for a YAML document ({})",
                             text.size(), mib(limits_.max_bytes)));
  }
  if (auto deep = flow_depth_scan(text, limits_.max_depth)) {
    return limit(deep->mark, std::move(deep->message));
  }
  YAML::Node doc;
  try {
    {
      std::istringstream in(text);
      YAML::Parser parser(in);
      LimitScan scan(limits_);
      parser.HandleNextDocument(scan);
    }
    doc = YAML::Load(text);
  } catch (const LimitExceeded& e) {
    return limit(e.mark, e.message);
  } catch (const YAML::Exception& e) {
    error(e.mark, "", "YAML syntax error: " + e.msg);
    out_->back().kind = "yaml-syntax";
    return std::nullopt;
  }
  if (text.find("<<") != std::string::npos) MergeResolver(this).resolve(doc, "");
  return doc;
}

std::optional<Fields> YamlReader::open_mapping(const YAML::Node& node, const std::string& path) {
  if (!node.IsMap()) {
    error(node, path, "expected a mapping, got " + describe(node));
    return std::nullopt;
  }
  Fields fields;
  fields.mark = node.Mark();
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar()) {
      error(key, path, "mapping keys must be strings, got " + describe(key));
      continue;
    }
    const std::string& name = key.Scalar();
    if (fields.values.count(name)) {
      error(key, field_path(path, name), "duplicate field");
      continue;
    }
    fields.values.emplace(name, value);
    fields.key_marks.emplace(name, key.Mark());
  }
  return fields;
}

std::optional<Fields> YamlReader::mapping(const YAML::Node& node, const std::string& path,
                                          const std::set<std::string>& allowed) {
  auto fields = open_mapping(node, path);
  if (!fields) return std::nullopt;
  for (auto it = fields->values.begin(); it != fields->values.end();) {
    if (allowed.count(it->first)) {
      ++it;
      continue;
    }
    error(fields->key_marks.at(it->first), field_path(path, it->first), "unknown field");
    fields->key_marks.erase(it->first);
    it = fields->values.erase(it);
  }
  return fields;
}

bool YamlReader::require(const Fields& fields, const std::string& path, const std::string& name) {
  if (fields.has(name)) return true;
  error(fields.mark, field_path(path, name), "required field is missing");
  return false;
}

std::optional<int64_t> YamlReader::integer(const YAML::Node& node, const std::string& path,
                                           int64_t min, int64_t max) {
  const std::string kind = min == 1   ? "a positive integer"
                           : min == 0 ? "a non-negative integer"
                                      : fmt::format("an integer >= {}", min);
  const std::string below = min == 1 ? kind : fmt::format("an integer >= {}", min);
  const std::string wanted = max == INT64_MAX ? kind : fmt::format("{} at most {}", kind, max);
  if (node.IsScalar() && is_plain(node) && is_int_text(node.Scalar()) &&
      !parse_int(node.Scalar())) {
    // An integer to YAML, but past int64 (PyYAML's ints are unbounded): out of range, not a string.
    error(node, path, fmt::format("expected {}, got {}", wanted, printable(node.Scalar())));
    return std::nullopt;
  }
  std::optional<int64_t> value;
  if (node.IsScalar() && scalar_kind(node) == ScalarKind::kInt) value = parse_int(node.Scalar());
  if (!value) {
    error(node, path, fmt::format("expected {}, got {}", kind, describe(node)));
    return std::nullopt;
  }
  if (*value < min) {
    error(node, path, fmt::format("expected {}, got {}", below, *value));
    return std::nullopt;
  }
  if (*value > max) {
    error(node, path, fmt::format("expected {}, got {}", wanted, *value));
    return std::nullopt;
  }
  return value;
}

std::optional<double> YamlReader::number(const YAML::Node& node, const std::string& path) {
  if (node.IsScalar()) {
    auto kind = scalar_kind(node);
    if (kind == ScalarKind::kInt) return static_cast<double>(*parse_int(node.Scalar()));
    if (kind == ScalarKind::kFloat) return parse_float(node.Scalar());
  }
  error(node, path, "expected a number, got " + describe(node));
  return std::nullopt;
}

std::optional<double> YamlReader::number(const YAML::Node& node, const std::string& path,
                                         double min, double max) {
  auto v = number(node, path);
  if (!v) return std::nullopt;
  if (!(*v >= min && *v <= max)) {
    error(node, path, fmt::format("expected a number from {} to {}, got {}", min, max, *v));
    return std::nullopt;
  }
  return v;
}

std::optional<bool> YamlReader::boolean(const YAML::Node& node, const std::string& path) {
  if (node.IsScalar() && scalar_kind(node) == ScalarKind::kBool) return parse_bool(node.Scalar());
  error(node, path, "expected true or false, got " + describe(node));
  return std::nullopt;
}

std::optional<std::string> YamlReader::string(const YAML::Node& node, const std::string& path,
                                              bool non_empty) {
  if (!node.IsScalar() || scalar_kind(node) != ScalarKind::kString) {
    if (!(node.IsScalar() && !non_empty && node.Scalar().empty())) {
      error(node, path, "expected a string, got " + describe(node));
      return std::nullopt;
    }
  }
  if (non_empty && node.Scalar().empty()) {
    error(node, path, "expected a non-empty string");
    return std::nullopt;
  }
  return node.Scalar();
}

bool YamlReader::sequence(const YAML::Node& node, const std::string& path) {
  if (node.IsSequence()) return true;
  error(node, path, "expected a list, got " + describe(node));
  return false;
}

std::optional<std::vector<std::string>> YamlReader::string_list(const YAML::Node& node,
                                                                const std::string& path) {
  if (!sequence(node, path)) return std::nullopt;
  std::vector<std::string> out;
  bool ok = true;
  for (size_t i = 0; i < node.size(); ++i) {
    auto s = string(node[i], index_path(path, i));
    if (s) {
      out.push_back(*s);
    } else {
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return out;
}

std::optional<std::vector<int64_t>> YamlReader::integer_list(const YAML::Node& node,
                                                             const std::string& path, int64_t min,
                                                             int64_t max, size_t max_items) {
  if (!sequence(node, path)) return std::nullopt;
  if (node.size() > max_items) {
    error(node, path,
          fmt::format("a list of {} values; the limit is {}", node.size(), max_items));
    return std::nullopt;
  }
  std::vector<int64_t> out;
  bool ok = true;
  for (size_t i = 0; i < node.size(); ++i) {
    auto v = integer(node[i], index_path(path, i), min, max);
    if (v) {
      out.push_back(*v);
    } else {
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return out;
}

}  // namespace ib::recipe
