// `inferbench changelog check`: InferenceX's perf-changelog.yaml rules (its
// utils/validate_perf_changelog.py: parse_changelog, compare_entries, validate_raw_change;
// utils/process_changelog.py: key resolution; .github/workflows/run-sweep.yml: sweep labels)
// plus our coverage rule (docs/governance.md "Perf changelog"): the keys `changed` reports
// are covered by exactly one appended entry. Every check reports all its violations, each with a
// stable rule id and the line in the head file, instead of stopping at the first.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ib::govern {

/// One broken rule. `line` is 1-based in the head file (in the base file for "base-invalid"),
/// 0 when the rule is not about a line (labels).
struct ChangelogViolation {
  std::string rule;  // stable id, e.g. "history-modified", "separator", "uncovered-key"
  int line = 0;
  std::string message;
  int entry = -1;  // 0-based index of the entry it is about; -1 for the file as a whole

  /// "FILE:LINE: [rule] message" ("FILE: [rule] message" when line is 0).
  std::string str(const std::string& file) const;
  boost::json::object to_json() const;
};

/// One list item of perf-changelog.yaml, as read (fields may be missing when !valid).
struct ChangelogEntry {
  int index = 0;       // 0-based position in the file
  int line = 0;        // 1-based line of "- config-keys:"
  bool valid = false;  // passes the ChangelogEntry schema
  std::vector<std::string> config_keys;
  std::vector<int> config_key_lines;  // line of each config key
  std::vector<std::string> description;
  std::string pr_link;
  int pr_link_line = 0;
  bool evals_only = false;
  bool all_evals = false;
  bool append_only = false;
  std::optional<int64_t> eval_min_prefill_ep;
  std::vector<std::string> scenario_type;  // empty: both scenario types
  boost::json::value raw;  // the item as PyYAML would load it (compare_entries compares these)

  /// Whether the entry selects `scenario` ("fixed-seq-len" | "agentic-coding").
  bool selects(const std::string& scenario) const;
  boost::json::object to_json() const;
};

struct ParsedChangelog {
  /// False when the file could not be read as a YAML list at all (bytes, syntax, root).
  bool readable = false;
  std::vector<ChangelogEntry> entries;
  std::vector<ChangelogViolation> violations;
  bool ok() const { return readable && violations.empty(); }
};

/// parse_changelog of validate_perf_changelog.py: ends with '\n'; no CR, tab or NUL; valid UTF-8;
/// YAML with duplicate keys rejected; the root a list; as many lines starting "- config-keys:" as
/// entries; every entry valid (required config-keys, description, pr-link; optional evals-only,
/// all-evals, append-only, eval-min-prefill-ep, scenario-type; no other field; append-only not
/// with eval fields). `file` names the file in messages.
ParsedChangelog parse_changelog(const std::string& bytes, const std::string& file);

/// `*` is the only wildcard and matches any run of characters; the whole key must match
/// (process_changelog.py: re.escape, then `\*` → `.*`, fullmatch).
bool changelog_key_matches(const std::string& pattern, const std::string& key);

/// Where the check runs and what it knows about the head revision.
struct ChangelogContext {
  std::string file = "perf-changelog.yaml";
  /// A canonical pull-request link (regex, whole string). Historical pr-link corrections must
  /// produce one; on main, appended entries must carry one.
  std::string canonical_link = R"(https://github\.com/[^/\s]+/[^/\s]+/pull/\d+)";
  /// Placeholders a pull request may append before its number is known (regex, whole string).
  std::string placeholder_link = R"(XXX|https://github\.com/[^/\s]+/[^/\s]+/pull/XXX)";
  /// On main (a push): appended links must be canonical, placeholders are refused.
  bool main = false;
  /// On a pull request with a known URL: appended links must be exactly it or a placeholder.
  /// Neither main nor pr_url: canonical links and placeholders are both accepted.
  std::optional<std::string> pr_url;
  /// Config keys of the head revision for resolving appended entries; nullopt skips resolution.
  std::optional<std::vector<std::string>> config_keys;
  /// Head keys that have an agentic-coding scenario (for the agentx-fast label rule); nullopt:
  /// unknown, the rule is skipped.
  std::optional<std::set<std::string>> agentic_keys;
  /// Keys the change affects (`inferbench changed`, removed keys excluded); nullopt skips the
  /// coverage rule.
  std::optional<std::vector<std::string>> affected_keys;
  /// Pull-request labels (sweep-enabled, all-evals, ...); others are ignored.
  std::vector<std::string> labels;
};

struct ChangelogReport {
  size_t base_entries = 0;
  size_t head_entries = 0;
  std::vector<ChangelogEntry> additions;                // appended entries, in file order
  std::vector<std::vector<std::string>> resolved_keys;  // per addition (when keys were given)
  size_t corrections = 0;                      // historical entries whose pr-link was corrected
  std::vector<ChangelogViolation> violations;  // sorted by line, then rule

  bool ok() const { return violations.empty(); }
  boost::json::object to_json() const;
};

/// Checks the change of perf-changelog.yaml from `base` (nullopt: the file is new) to `head`.
ChangelogReport check_changelog(const std::optional<std::string>& base, const std::string& head,
                                const ChangelogContext& context);

}  // namespace ib::govern
