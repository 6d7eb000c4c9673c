#include "recipe/yaml_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <regex>

namespace ib::recipe {

std::string Diagnostic::str() const {
  return fmt::format("{}:{}:{}: {}: {}", file, line, column, path, message);
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

// YAML 1.1 integers as PyYAML resolves them (decimal with optional underscores, e.g. 2_063_837).
std::optional<int64_t> parse_int(const std::string& s) {
  static const std::regex kInt("[-+]?(0|[1-9][0-9_]*)");
  if (!std::regex_match(s, kInt)) return std::nullopt;
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
  static const std::regex kFloat("[-+]?([0-9][0-9_]*)?\\.[0-9_]*([eE][-+][0-9]+)?");
  if (!std::regex_match(s, kFloat) || s.find_first_of("0123456789") == std::string::npos) {
    return std::nullopt;
  }
  std::string clean;
  for (char c : s) {
    if (c != '_') clean += c;
  }
  try {
    return std::stod(clean);
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
  if (scalar_kind(node) == ScalarKind::kString) return fmt::format("\"{}\"", node.Scalar());
  return node.Scalar();
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
    for (const YAML::Node& done : done_) {
      if (done.is(node)) return;
    }
    done_.push_back(node);
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
  std::vector<YAML::Node> done_;
};

}  // namespace

std::optional<YAML::Node> YamlReader::parse(const std::string& text) {
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    error(e.mark, "", "YAML syntax error: " + e.msg);
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
                                           int64_t min) {
  std::optional<int64_t> value;
  if (node.IsScalar() && scalar_kind(node) == ScalarKind::kInt) value = parse_int(node.Scalar());
  if (!value) {
    error(node, path,
          fmt::format("expected {}, got {}",
                      min == 1   ? "a positive integer"
                      : min == 0 ? "a non-negative integer"
                                 : "an integer",
                      describe(node)));
    return std::nullopt;
  }
  if (*value < min) {
    error(node, path,
          fmt::format("expected {}, got {}",
                      min == 1 ? "a positive integer" : fmt::format("an integer >= {}", min),
                      *value));
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
                                                             const std::string& path, int64_t min) {
  if (!sequence(node, path)) return std::nullopt;
  std::vector<int64_t> out;
  bool ok = true;
  for (size_t i = 0; i < node.size(); ++i) {
    auto v = integer(node[i], index_path(path, i), min);
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
