// The effective configuration of a running server, read back from its startup log: what the
// server says it runs with, as opposed to what the recipe asked for: a change is real only when
// the server shows it. docs/effective-config.md lists every probe.
#pragma once

#include <boost/json.hpp>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ib::verify {

/// Where one setting was read: the probe, the 1-based log line and an excerpt of that line
/// (whole when short; long lines keep their start and the part that holds the key).
struct ProbeHit {
  std::string probe;
  int line = 0;
  std::string text;
};

struct EffectiveConfig {
  /// "sglang" | "vllm" | "trtllm" | "llamacpp" | "serve-sim" | "custom" (only recipe probes
  /// matched) | "" (nothing recognised).
  std::string engine;
  /// Flat key -> value; nested dicts are flattened with '.' (speculative_config.method).
  /// "engine-version" holds the server's version when the log prints it.
  boost::json::object settings;
  std::map<std::string, ProbeHit> evidence;  // key -> where its value came from
  std::vector<std::string> warnings;         // conflicting probes, unreadable lines, ...

  /// {"engine", "settings", "evidence": {key: {probe, line, text}}, "warnings"}.
  boost::json::object to_json() const;
};

/// A recipe-supplied probe: every log line matching `regex` (Perl syntax, searched anywhere in
/// the line) sets `key` to the first capture group, typed like a Python literal when it is one.
struct RegexProbe {
  std::string key;
  std::string regex;
};

/// Scans a whole server log with every built-in probe and the custom ones. Line prefixes
/// (timestamps, `(APIServer pid=1)`, `[2026-01-01 10:00:00 TP0]`) and CRLF endings are tolerated.
/// Within one probe a later line overrides an earlier one; across probes the more authoritative
/// one wins (resolved engine state over parsed arguments, recipe probes over built-ins) and a
/// disagreement is recorded in `warnings`. Never fails: unreadable lines become warnings.
EffectiveConfig probe_effective_config(std::string_view log_text,
                                       const std::vector<RegexProbe>& custom = {});

/// Keys whose values differ between two configurations, sorted:
/// {key: {"base": value-in-a, "head": value-in-b}}, a missing key reading as null. Values that
/// normalise equal (4 and 4.0, True and "true") are not differences.
boost::json::object diff_effective(const EffectiveConfig& a, const EffectiveConfig& b);

/// A setting as text for comparisons: strings as they are, booleans "true"/"false", null
/// "none", numbers in shortest form, arrays and objects as compact JSON.
std::string setting_text(const boost::json::value& v);

/// Whether two setting values mean the same: equal numbers (8 and "8" and 8.0), equal booleans
/// ("True" and true), nulls ("None" and null), else equal setting_text.
bool same_setting(const boost::json::value& a, const boost::json::value& b);

}  // namespace ib::verify
