#include "verify/expect.h"

#include <fmt/format.h>

#include <boost/regex.hpp>
#include <set>

#include "core/json_text.h"
#include "verify/env_trace.h"

namespace ib::verify {

namespace json = boost::json;

namespace {

constexpr size_t kLineExcerpt = 300;

std::string describe(const json::value& v) {
  switch (v.kind()) {
    case json::kind::object:
      return "a mapping";
    case json::kind::array:
      return "a list";
    case json::kind::null:
      return "null";
    case json::kind::string:
      return json_text(v);
    default:
      return setting_text(v);
  }
}

std::string expect_field(std::string_view base, std::string_view name) {
  return fmt::format("{}.{}", base, name);
}

class ExpectParser {
 public:
  explicit ExpectParser(std::string_view path) : path_(path) {}

  Expected<ExpectSpec> parse(const json::value& v) {
    ExpectSpec spec;
    if (!v.is_object()) {
      error(path_, "expected a mapping, got " + describe(v));
    } else {
      for (const auto& [name, value] : v.get_object()) {
        const std::string p = expect_field(path_, name);
        if (name == "log-contains") {
          spec.log_contains = regex_list(value, p);
        } else if (name == "log-absent") {
          spec.log_absent = regex_list(value, p);
        } else if (name == "settings") {
          settings(value, p, &spec);
        } else if (name == "probes") {
          probes(value, p, &spec);
        } else if (name == "env-read") {
          spec.env_read = name_list(value, p);
        } else if (name == "env-not-read") {
          spec.env_not_read = name_list(value, p);
        } else if (name == "server-metrics") {
          spec.server_metrics = prefix_list(value, p);
        } else if (name == "spec-acceptance") {
          spec.spec_acceptance = spec_acceptance(value, p);
        } else if ((name == "prefill" || name == "decode" || name == "router") && !in_role_) {
          role(std::string(name), value, p, &spec);
        } else {
          error(p, in_role_
                       ? "unknown field in a role's expect (expected log-contains, log-absent, "
                         "settings, probes, env-read or env-not-read)"
                       : "unknown field (expected log-contains, log-absent, settings, probes, "
                         "env-read, env-not-read, server-metrics, spec-acceptance, or a role: "
                         "prefill, decode, router)");
        }
      }
    }
    if (errors_.empty()) return spec;
    std::string message;
    for (const std::string& e : errors_) message += (message.empty() ? "" : "\n") + e;
    return Error{message};
  }

 private:
  // One role's block: the checks that are about a process (a point's metrics are the
  // deployment's: server-metrics and spec-acceptance stay at the top).
  void role(std::string name, const json::value& v, const std::string& p, ExpectSpec* spec) {
    ExpectParser inner(p);
    inner.in_role_ = true;
    auto parsed = inner.parse(v);
    if (!parsed) {
      errors_.push_back(parsed.error().message);
      return;
    }
    if (!parsed->server_metrics.empty() || parsed->spec_acceptance) {
      error(p,
            "server-metrics and spec-acceptance are about the deployment's points: give them "
            "at the top of expect, not in a role");
      return;
    }
    spec->probes.insert(spec->probes.end(), parsed->probes.begin(), parsed->probes.end());
    spec->roles.emplace_back(std::move(name), std::move(*parsed));
  }

  void error(std::string_view p, std::string_view message) {
    errors_.push_back(fmt::format("{}: {}", p, message));
  }

  // Compiles `re`; reports at `p` when it does not. Returns whether it compiled.
  bool check_regex(const std::string& re, const std::string& p, bool needs_group) {
    if (re.empty()) {
      error(p, "empty regex");
      return false;
    }
    try {
      boost::regex compiled(re, boost::regex::perl);
      if (needs_group && compiled.mark_count() < 1) {
        error(p, fmt::format("regex \"{}\" needs a capture group for the value", re));
        return false;
      }
    } catch (const std::exception& e) {
      error(p, fmt::format("invalid regex \"{}\": {}", re, e.what()));
      return false;
    }
    return true;
  }

  // An environment variable name or a list of them.
  std::vector<std::string> name_list(const json::value& v, const std::string& p) {
    std::vector<std::string> out;
    auto one = [&](const json::value& x, const std::string& at) {
      static const boost::regex kName("[A-Za-z_][A-Za-z0-9_]*");
      if (!x.is_string()) return error(at, "expected a variable name, got " + describe(x));
      std::string n(x.get_string());
      if (!boost::regex_match(n, kName))
        return error(at, fmt::format("'{}' is not a variable name", n));
      out.push_back(std::move(n));
    };
    if (v.is_array()) {
      const json::array& arr = v.get_array();
      for (size_t i = 0; i < arr.size(); ++i) one(arr[i], fmt::format("{}[{}]", p, i));
    } else {
      one(v, p);
    }
    return out;
  }

  // Metric-name prefixes ("vllm:", "sglang:"): a string or a list of non-empty strings.
  std::vector<std::string> prefix_list(const json::value& v, const std::string& p) {
    std::vector<std::string> out;
    auto one = [&](const json::value& x, const std::string& at) {
      if (!x.is_string() || x.get_string().empty()) {
        return error(at, "expected a metric-name prefix such as \"vllm:\", got " + describe(x));
      }
      out.emplace_back(x.get_string());
    };
    if (v.is_array()) {
      const json::array& arr = v.get_array();
      for (size_t i = 0; i < arr.size(); ++i) one(arr[i], fmt::format("{}[{}]", p, i));
    } else {
      one(v, p);
    }
    return out;
  }

  // A number in [lo, hi]; reports at `p` otherwise.
  std::optional<double> number_in(const json::value& v, const std::string& p, double lo,
                                  double hi) {
    if (!v.is_number()) {
      error(p, "expected a number, got " + describe(v));
      return std::nullopt;
    }
    const double x = v.to_number<double>();
    if (!(x >= lo && x <= hi)) {
      error(p, fmt::format("expected a number in [{}, {}], got {}", lo, hi, setting_text(v)));
      return std::nullopt;
    }
    return x;
  }

  // {al: 2.5} or {golden: FILE, model, thinking, draft-tokens}, with an optional tolerance.
  std::optional<SpecAcceptanceExpect> spec_acceptance(const json::value& v, const std::string& p) {
    if (!v.is_object()) {
      error(p, "expected a mapping {al or golden, model, thinking, draft-tokens, tolerance}, got " +
                   describe(v));
      return std::nullopt;
    }
    SpecAcceptanceExpect out;
    const size_t errors = errors_.size();
    for (const auto& [name, value] : v.get_object()) {
      const std::string fp = expect_field(p, name);
      if (name == "al") {
        out.al = number_in(value, fp, 1, 65);
      } else if (name == "tolerance") {
        out.tolerance = number_in(value, fp, 0, 64).value_or(out.tolerance);
      } else if (name == "draft-tokens") {
        if (!value.is_int64() || value.get_int64() < 1 || value.get_int64() > 64) {
          error(fp, "expected a draft length from 1 to 64, got " + describe(value));
        } else {
          out.draft_tokens = static_cast<int>(value.get_int64());
        }
      } else if (name == "golden" || name == "model") {
        if (!value.is_string() || value.get_string().empty()) {
          error(fp, "expected a non-empty string, got " + describe(value));
        } else {
          (name == "golden" ? out.golden : out.model) = value.get_string();
        }
      } else if (name == "thinking") {
        // YAML 1.1 reads a bare on/off as a boolean.
        const std::string t = value.is_bool()     ? (value.get_bool() ? "on" : "off")
                              : value.is_string() ? std::string(value.get_string())
                                                  : "";
        if (t == "on" || t == "off" || t == "thinking_on" || t == "thinking_off") {
          out.thinking = t.ends_with("on") ? "on" : "off";
        } else {
          error(fp, "expected on or off, got " + describe(value));
        }
      } else {
        error(fp,
              "unknown field (expected al, golden, model, thinking, draft-tokens or "
              "tolerance)");
      }
    }
    if (out.al.has_value() == !out.golden.empty()) {
      error(p, out.al ? "give al or golden, not both"
                      : "missing: al (the golden acceptance length) or golden (a file)");
    } else if (out.al && (!out.model.empty() || !out.thinking.empty())) {
      error(p, "model and thinking select a value in a golden file; with al they mean nothing");
    }
    if (errors_.size() != errors) return std::nullopt;
    return out;
  }

  // A regex or a list of them.
  std::vector<std::string> regex_list(const json::value& v, const std::string& p) {
    std::vector<std::string> out;
    if (v.is_string()) {
      if (check_regex(std::string(v.get_string()), p, false)) out.emplace_back(v.get_string());
      return out;
    }
    if (!v.is_array()) {
      error(p, "expected a regex or a list of regexes, got " + describe(v));
      return out;
    }
    const json::array& arr = v.get_array();
    for (size_t i = 0; i < arr.size(); ++i) {
      const std::string item = fmt::format("{}[{}]", p, i);
      if (!arr[i].is_string()) {
        error(item, "expected a regex string, got " + describe(arr[i]));
      } else if (check_regex(std::string(arr[i].get_string()), item, false)) {
        out.emplace_back(arr[i].get_string());
      }
    }
    return out;
  }

  void settings(const json::value& v, const std::string& p, ExpectSpec* spec) {
    if (!v.is_object()) return error(p, "expected a mapping of setting: value, got " + describe(v));
    for (const auto& [key, value] : v.get_object()) {
      if (value.is_object() || value.is_array()) {
        error(expect_field(p, key), "expected a scalar, got " + describe(value));
        continue;
      }
      spec->settings.emplace_back(std::string(key), value);
    }
  }

  void probes(const json::value& v, const std::string& p, ExpectSpec* spec) {
    if (!v.is_array()) return error(p, "expected a list of {key, regex}, got " + describe(v));
    std::set<std::string> keys;
    const json::array& arr = v.get_array();
    for (size_t i = 0; i < arr.size(); ++i) {
      const std::string item = fmt::format("{}[{}]", p, i);
      if (!arr[i].is_object()) {
        error(item, "expected a mapping {key, regex}, got " + describe(arr[i]));
        continue;
      }
      RegexProbe probe;
      bool ok = true;
      for (const auto& [name, value] : arr[i].get_object()) {
        const std::string fp = expect_field(item, name);
        if (name != "key" && name != "regex") {
          error(fp, "unknown field (expected key and regex)");
          ok = false;
        } else if (!value.is_string() || value.get_string().empty()) {
          error(fp, "expected a non-empty string, got " + describe(value));
          ok = false;
        } else if (name == "key") {
          probe.key = value.get_string();
        } else {
          probe.regex = value.get_string();
          ok = check_regex(probe.regex, fp, true) && ok;
        }
      }
      for (const char* required : {"key", "regex"}) {
        if (!arr[i].get_object().contains(required)) {
          error(expect_field(item, required), "missing");
          ok = false;
        }
      }
      if (ok && !keys.insert(probe.key).second) {
        error(expect_field(item, "key"), fmt::format("duplicate probe key \"{}\"", probe.key));
        ok = false;
      }
      if (ok) spec->probes.push_back(std::move(probe));
    }
  }

  std::string path_;
  bool in_role_ = false;  // parsing a role's block: no nested roles
  std::vector<std::string> errors_;
};

// A log line for evidence: whole when short, else the part around the match.
std::string line_excerpt(std::string_view line, size_t match_at) {
  if (line.size() <= kLineExcerpt) return std::string(line);
  const size_t from = match_at > 100 ? match_at - 100 : 0;
  std::string out = from > 0 ? "..." : "";
  out += line.substr(from, kLineExcerpt);
  if (from + kLineExcerpt < line.size()) out += "...";
  return out;
}

struct LineMatch {
  int line = 0;  // 0: none
  std::string text;
  std::string failure;  // the regex engine gave up
};

LineMatch first_match(std::string_view log, const std::string& pattern) {
  LineMatch out;
  const boost::regex re(pattern, boost::regex::perl);  // validated by parse_expect
  int number = 0;
  size_t start = 0;
  while (start <= log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string_view::npos) end = log.size();
    std::string_view line = log.substr(start, end - start);
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    boost::cmatch m;
    try {
      if (boost::regex_search(line.data(), line.data() + line.size(), m, re)) {
        out.line = number;
        out.text = line_excerpt(line, static_cast<size_t>(m[0].first - line.data()));
        return out;
      }
    } catch (const std::exception& e) {
      if (out.failure.empty()) out.failure = fmt::format("line {}: {}", number, e.what());
    }
    if (end == log.size()) break;
    start = end + 1;
  }
  return out;
}

std::string found_text(const EffectiveConfig& config, const std::string& key,
                       const json::value& v) {
  auto hit = config.evidence.find(key);
  if (hit == config.evidence.end()) return setting_text(v);
  return fmt::format("{} ({}, line {})", setting_text(v), hit->second.probe, hit->second.line);
}

}  // namespace

Expected<ExpectSpec> parse_expect(const json::value& expect, std::string_view path) {
  return ExpectParser(path).parse(expect);
}

json::object AssertionResult::to_json() const {
  json::object out{{"assertion", assertion}, {"passed", passed}, {"evidence", evidence}};
  if (line > 0) out["line"] = line;
  return out;
}

std::vector<AssertionResult> check_expect(const ExpectSpec& spec, std::string_view log,
                                          const EffectiveConfig& config) {
  std::vector<AssertionResult> out;
  for (const std::string& re : spec.log_contains) {
    AssertionResult r;
    r.assertion = fmt::format("log-contains /{}/", re);
    const LineMatch m = first_match(log, re);
    r.passed = m.line > 0;
    r.line = m.line;
    r.evidence = r.passed            ? fmt::format("line {}: {}", m.line, m.text)
                 : m.failure.empty() ? "no line matches"
                                     : "no line matches (the regex gave up on " + m.failure + ")";
    out.push_back(std::move(r));
  }
  for (const std::string& re : spec.log_absent) {
    AssertionResult r;
    r.assertion = fmt::format("log-absent /{}/", re);
    const LineMatch m = first_match(log, re);
    r.passed = m.line == 0;
    r.line = m.line;
    r.evidence = !r.passed           ? fmt::format("line {}: {}", m.line, m.text)
                 : m.failure.empty() ? "no line matches"
                                     : "no line matches (the regex gave up on " + m.failure + ")";
    out.push_back(std::move(r));
  }
  for (const auto& [key, expected] : spec.settings) {
    AssertionResult r;
    r.assertion = expected.is_null()
                      ? fmt::format("settings.{} is unset or none", key)
                      : fmt::format("settings.{} == {}", key, setting_text(expected));
    const json::value* found = config.settings.if_contains(key);
    if (found == nullptr) {
      r.passed = expected.is_null();
      r.evidence = "not set";
    } else {
      r.passed = same_setting(*found, expected);
      r.evidence = found_text(config, key, *found);
      if (auto hit = config.evidence.find(key); hit != config.evidence.end()) {
        r.line = hit->second.line;
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<AssertionResult> check_expect(const ExpectSpec& spec, std::string_view log) {
  return check_expect(spec, log, probe_effective_config(log, spec.probes));
}

bool all_passed(const std::vector<AssertionResult>& results) {
  for (const AssertionResult& r : results) {
    if (!r.passed) return false;
  }
  return true;
}

std::vector<AssertionResult> check_env_expect(const ExpectSpec& spec, const EnvTraceReport* trace) {
  std::vector<AssertionResult> out;
  auto readers = [&](const std::string& name) -> std::string {
    auto it = trace->reads.find(name);
    if (it == trace->reads.end() || it->second.empty()) return "";
    std::string who;
    for (const auto& r : it->second) {
      if (!who.empty()) who += ", ";
      who += fmt::format("pid {} {} via {}", r.pid, r.exe, r.function);
    }
    return who;
  };
  for (const auto& [names, must] :
       {std::pair{&spec.env_read, true}, std::pair{&spec.env_not_read, false}}) {
    for (const std::string& name : *names) {
      AssertionResult r;
      r.assertion = fmt::format("{} {}", must ? "env-read" : "env-not-read", name);
      if (trace == nullptr) {
        r.passed = false;
        r.evidence = "no environment trace (tracing off, or not a local server)";
      } else {
        std::string who = readers(name);
        r.passed = must ? !who.empty() : who.empty();
        r.evidence = who.empty() ? "no process read it" : "read by " + who;
      }
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace ib::verify
