// A recipe's `expect` block: assertions about a server's startup log and its effective
// configuration, checked after the server is up (docs/effective-config.md, "expect").
//
//   expect:
//     log-contains: ["Using AiterCustomAllreduce", ...]  # each regex must match some log line
//     log-absent: ["quick all-reduce INT4"]              # no line may match any of these
//     settings: {tp_size: 8, disable_custom_all_reduce: false}  # effective values must equal
//     probes: [{key: ar_impl, regex: "Using (\\w+Allreduce)"}]  # extra values for `settings`
//     server-metrics: ["vllm:"]  # during each point, the server's /metrics has such series
//     spec-acceptance: {golden: golden/dsv4_mtp.yaml, tolerance: 0.1}  # realised AL per point
#pragma once

#include <boost/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/expected.h"
#include "verify/effective_config.h"

namespace ib::verify {

struct EnvTraceReport;  // env_trace.h

/// `expect: spec-acceptance`: the acceptance length a speculating server must realise over each
/// point (docs/metrics.md, "Acceptance length"). The golden value is `al`, or read from `golden`,
/// a file in InferenceX's golden_al_distribution shape (model -> thinking_on|thinking_off ->
/// num_speculative_tokens -> AL), at `model`, `thinking` and `draft_tokens` (each may be left
/// out when the file, or the serve command, has only one).
struct SpecAcceptanceExpect {
  std::optional<double> al;
  std::string golden;               // the path as written (relative to the recipe's folder)
  std::string model;                // "": the file's only model
  std::string thinking;             // "on" | "off" | "": the model's only mode
  std::optional<int> draft_tokens;  // none: from the serve command
  double tolerance = 0.1;           // |realised - golden| <= tolerance, in AL
};

struct ExpectSpec {
  std::vector<std::string> log_contains;  // Perl-syntax regexes, searched in every line
  std::vector<std::string> log_absent;
  /// key -> expected scalar, in the order written. A null expects the key unset or None.
  std::vector<std::pair<std::string, boost::json::value>> settings;
  std::vector<RegexProbe> probes;  // pass to probe_effective_config
  /// Environment variables some server process must read / must not read (env_trace.h).
  std::vector<std::string> env_read;
  std::vector<std::string> env_not_read;
  /// Metric-name prefixes the server's metrics must show during each point (InferenceX's
  /// required prefix); checked after the point, on its scrapes (docs/telemetry.md).
  std::vector<std::string> server_metrics;
  std::optional<SpecAcceptanceExpect> spec_acceptance;  // checked after each point, on /metrics
  /// A disaggregated deployment's assertions by role (`expect: {prefill: {...}, decode: {...},
  /// router: {...}}`): log-contains, log-absent, settings, probes, env-read and env-not-read,
  /// checked on every process of that role (its log, its effective configuration, its reads).
  std::vector<std::pair<std::string, ExpectSpec>> roles;
  bool empty() const {
    return log_contains.empty() && log_absent.empty() && settings.empty() && probes.empty() &&
           env_read.empty() && env_not_read.empty() && server_metrics.empty() && !spec_acceptance &&
           roles.empty();
  }
};

/// Validates an `expect` value (as the recipe loader keeps it). Unknown fields, wrong types,
/// invalid regexes and probes without a capture group are errors naming the field path, e.g.
/// `expect.settings.tp_size: expected a scalar, got a mapping`. `path` prefixes every message
/// (the recipe key may be prepended: `dsr1-fp8.expect`).
Expected<ExpectSpec> parse_expect(const boost::json::value& expect,
                                  std::string_view path = "expect");

struct AssertionResult {
  std::string assertion;  // `log-contains /regex/`, `settings.tp_size == 8`
  bool passed = false;
  /// The matching log line ("line 12: ..."), the effective value found
  /// ("8 (sglang-server-args, line 3)"), "not set", or why nothing matched.
  std::string evidence;
  int line = 0;  // 1-based log line of the evidence; 0 when none
  boost::json::object to_json() const;
};

/// Checks every assertion of `spec`, in order: log-contains, log-absent, settings.
/// REQUIRES: `config` is probe_effective_config(log, spec.probes), so recipe probes can be
/// asserted on through `settings`.
std::vector<AssertionResult> check_expect(const ExpectSpec& spec, std::string_view log,
                                          const EffectiveConfig& config);

/// Probes `log` (with the spec's probes) and checks the spec: the one-call form.
std::vector<AssertionResult> check_expect(const ExpectSpec& spec, std::string_view log);

/// Checks env-read / env-not-read against a trace of the server's environment reads. Without a
/// trace (tracing off or impossible) each such assertion fails with evidence saying so.
std::vector<AssertionResult> check_env_expect(const ExpectSpec& spec, const EnvTraceReport* trace);

/// True when every result passed (and vacuously for none).
bool all_passed(const std::vector<AssertionResult>& results);

}  // namespace ib::verify
