// Strict, error-collecting reading of YAML documents: every problem becomes a Diagnostic naming
// file:line:column and the field path, and reading continues so that all errors of a file are
// reported at once. Scalars are typed the way PyYAML (YAML 1.1) types them, so that a value
// InferenceX's Pydantic models reject (a quoted "4" where an int is expected) is rejected here too.
#pragma once

#include <yaml-cpp/yaml.h>

#include <boost/json.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace ib::recipe {

/// One validation problem. Line and column are 1-based (0 when unknown).
struct Diagnostic {
  std::string file;
  int line = 0;
  int column = 0;
  std::string path;  // e.g. "dsr1-fp8-mi355x-sglang.scenarios.fixed-seq-len[0].search-space[2].tp"
  std::string message;

  /// "file:line:column: path: message".
  std::string str() const;
};

/// All diagnostics, one per line.
std::string join_diagnostics(const std::vector<Diagnostic>& diagnostics);

/// A mapping's fields by name, with the mark of each key (for errors about a missing or
/// misplaced field).
struct Fields {
  std::map<std::string, YAML::Node> values;
  std::map<std::string, YAML::Mark> key_marks;
  YAML::Mark mark;  // of the mapping itself

  bool has(const std::string& name) const { return values.count(name) != 0; }
  /// REQUIRES: has(name).
  const YAML::Node& at(const std::string& name) const { return values.at(name); }
};

/// Reads typed values out of YAML nodes, collecting diagnostics for one file.
class YamlReader {
 public:
  YamlReader(std::string file, std::vector<Diagnostic>* out) : file_(std::move(file)), out_(out) {}

  const std::string& file() const { return file_; }

  void error(const YAML::Mark& mark, const std::string& path, std::string message);
  void error(const YAML::Node& at, const std::string& path, std::string message);

  /// Parses `text`; on a syntax error reports it and returns nullopt.
  std::optional<YAML::Node> parse(const std::string& text);

  /// Checks that `node` is a mapping whose keys are unique strings from `allowed`; reports unknown
  /// and duplicate keys. Returns nullopt when `node` is not a mapping.
  std::optional<Fields> mapping(const YAML::Node& node, const std::string& path,
                                const std::set<std::string>& allowed);
  /// Like mapping() with any key allowed (duplicates are still errors).
  std::optional<Fields> open_mapping(const YAML::Node& node, const std::string& path);

  /// Reports a missing required field; returns whether it is present.
  bool require(const Fields& fields, const std::string& path, const std::string& name);

  std::optional<int64_t> integer(const YAML::Node& node, const std::string& path, int64_t min);
  std::optional<double> number(const YAML::Node& node, const std::string& path);
  std::optional<bool> boolean(const YAML::Node& node, const std::string& path);
  /// A string scalar; `non_empty` rejects "".
  std::optional<std::string> string(const YAML::Node& node, const std::string& path,
                                    bool non_empty = true);
  std::optional<std::vector<std::string>> string_list(const YAML::Node& node,
                                                      const std::string& path);
  std::optional<std::vector<int64_t>> integer_list(const YAML::Node& node, const std::string& path,
                                                   int64_t min);
  /// Checks `node` is a sequence; reports otherwise.
  bool sequence(const YAML::Node& node, const std::string& path);

 private:
  std::string file_;
  std::vector<Diagnostic>* out_;
};

/// How PyYAML would type a scalar.
enum class ScalarKind { kNull, kBool, kInt, kFloat, kString };
ScalarKind scalar_kind(const YAML::Node& node);

/// Describes a node for "got ..." in messages: `"x"`, `4`, `a mapping`, `a list`, `null`.
std::string describe(const YAML::Node& node);

/// Converts any YAML node to JSON, typing scalars as PyYAML would.
boost::json::value to_json(const YAML::Node& node);

/// "a.b" or "b" when `base` is empty; index paths: "a[3]".
std::string field_path(const std::string& base, const std::string& name);
std::string index_path(const std::string& base, size_t index);

}  // namespace ib::recipe
