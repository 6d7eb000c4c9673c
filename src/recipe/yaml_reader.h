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
  /// What kind of problem, for callers that sort them (the changelog's rules): "yaml-syntax" (the
  /// text does not parse), "yaml-limit" (it crosses a YamlLimits bound), "" (a field's content).
  std::string kind;

  /// "file:line:column: path: message", without the parts that are unknown ("file: message" when
  /// there is no line, no "path: " when there is no path). The path and message are passed
  /// through ib::printable, so a key or value from the file cannot put control characters on a
  /// terminal, and a huge one is cut.
  std::string str() const;
};

/// Bounds on every YAML document read (recipes, runners files, the changelog). A recipe can come
/// from a pull request, and YAML's anchors let a few hundred bytes stand for billions of nodes
/// ("billion laughs"), so each document is checked against these before any node is built. They
/// are far above any real file (InferenceX's nvidia-master.yaml, ~10k lines, is ~320 KB, ~21k
/// nodes, nested 9 deep, with a dozen aliases); docs/recipes.md ("Limits") lists them.
struct YamlLimits {
  size_t max_bytes = size_t{16} << 20;       // the document's size
  size_t max_depth = 100;                    // nesting of mappings and lists, aliases expanded
  uint64_t max_nodes = 1'000'000;            // nodes (keys, values, items) after alias expansion
  uint64_t max_aliases = 10'000;             // `*name` references in the document
  uint64_t max_anchors = 10'000;             // `&name` definitions in the document
  uint64_t max_scalar_bytes = uint64_t{64} << 20;  // scalar text after alias expansion
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
  YamlReader(std::string file, std::vector<Diagnostic>* out, YamlLimits limits = {})
      : file_(std::move(file)), out_(out), limits_(limits) {}

  const std::string& file() const { return file_; }

  void error(const YAML::Mark& mark, const std::string& path, std::string message);
  void error(const YAML::Node& at, const std::string& path, std::string message);

  /// Parses `text` (its first document); on a syntax error, or when the text crosses one of the
  /// limits, reports it (kind "yaml-syntax" / "yaml-limit") and returns nullopt. The limits are
  /// checked first, on the bytes and then on yaml-cpp's event stream, so a hostile document fails
  /// after reading its bytes once, with memory that does not grow with its expansion, and before
  /// yaml-cpp's recursive parser goes deeper than `max_depth`.
  std::optional<YAML::Node> parse(const std::string& text);

  /// Checks that `node` is a mapping whose keys are unique strings from `allowed`; reports unknown
  /// and duplicate keys. Returns nullopt when `node` is not a mapping.
  std::optional<Fields> mapping(const YAML::Node& node, const std::string& path,
                                const std::set<std::string>& allowed);
  /// Like mapping() with any key allowed (duplicates are still errors).
  std::optional<Fields> open_mapping(const YAML::Node& node, const std::string& path);

  /// Reports a missing required field; returns whether it is present.
  bool require(const Fields& fields, const std::string& path, const std::string& name);

  /// An integer scalar in [min, max]. A value outside it, including one too large for int64, is
  /// reported as such ("expected a positive integer at most 4096, got 3000000000").
  std::optional<int64_t> integer(const YAML::Node& node, const std::string& path, int64_t min,
                                 int64_t max = INT64_MAX);
  /// A finite number in [min, max] (YAML's .inf and .nan are not numbers to PyYAML's resolver
  /// here, and a float that overflows a double is rejected).
  std::optional<double> number(const YAML::Node& node, const std::string& path);
  std::optional<double> number(const YAML::Node& node, const std::string& path, double min,
                               double max);
  std::optional<bool> boolean(const YAML::Node& node, const std::string& path);
  /// A string scalar; `non_empty` rejects "".
  std::optional<std::string> string(const YAML::Node& node, const std::string& path,
                                    bool non_empty = true);
  std::optional<std::vector<std::string>> string_list(const YAML::Node& node,
                                                      const std::string& path);
  /// At most `max_items` items, each in [min, max].
  std::optional<std::vector<int64_t>> integer_list(const YAML::Node& node, const std::string& path,
                                                   int64_t min, int64_t max = INT64_MAX,
                                                   size_t max_items = SIZE_MAX);
  /// Checks `node` is a sequence; reports otherwise.
  bool sequence(const YAML::Node& node, const std::string& path);

 private:
  std::string file_;
  std::vector<Diagnostic>* out_;
  YamlLimits limits_;
};

/// How PyYAML would type a scalar.
enum class ScalarKind { kNull, kBool, kInt, kFloat, kString };
ScalarKind scalar_kind(const YAML::Node& node);

/// Describes a node for "got ..." in messages: `"x"`, `4`, `a mapping`, `a list`, `null`. A scalar
/// is passed through ib::printable (control characters escaped, long text cut).
std::string describe(const YAML::Node& node);

/// Converts any YAML node to JSON, typing scalars as PyYAML would.
boost::json::value to_json(const YAML::Node& node);

/// "a.b" or "b" when `base` is empty; index paths: "a[3]".
std::string field_path(const std::string& base, const std::string& name);
std::string index_path(const std::string& base, size_t index);

}  // namespace ib::recipe
