// One measured (or not measured) benchmark point, typed from end to end (docs/architecture.md, "The
// point pipeline"): what it is (identity), what it measured (headline metrics and the full result),
// whether it ran (PointStatus) and whether its numbers may be used (Validity).
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/keys.h"

namespace ib::metrics {

/// What happened to a point.
enum class PointStatus {
  kOk,       // measured, valid
  kInvalid,  // measured or refused, but its numbers may not be used (see Validity)
  kFailed,   // could not be measured (server failure, too many failed requests, timeout ...)
  kSkipped,  // not attempted (fail-fast, canary, interrupt)
  kReused,   // taken from an earlier run (--reuse)
  kResumed,  // measured earlier in this run (--resume)
};

std::string_view status_name(PointStatus s);
std::optional<PointStatus> parse_status(std::string_view name);
/// ok, reused and resumed: the point has usable numbers.
bool is_success(PointStatus s);

/// Why a point's numbers may not be used (LoadGen's VALID/INVALID).
enum class InvalidKind {
  kExpectFailed,        // the server does not show what the recipe's `expect` asserts
  kExpectUnobservable,  // `expect` cannot be checked with this launcher (no log, no trace)
  kFailureRate,         // more than kMaxFailureRate of the requests failed, or none completed
  kClientHealth,        // the client itself may have distorted the numbers
  kInterrupted,         // cut by Ctrl-C (partial result kept)
  kTimedOut,            // cut by the point timeout (partial result kept)
  kServerExited,        // the server died during the point
  kWorkload,            // a workload's own rule
  kPower,               // --require-power: GPU power missing or not valid (docs/telemetry.md)
  kEvalGate,            // an accuracy eval below its threshold (docs/evals.md)
  kNotSubmission,       // measured as the user asked, but not as a submission is run (AgentX's
                        // time-scaled replay, a replay shorter than the duration floor)
};

/// A reason the user chose (kNotSubmission): the point was measured as asked and fails no run;
/// its numbers are only kept out of submissions.
inline bool chosen(InvalidKind k) {
  return k == InvalidKind::kNotSubmission;
}

std::string_view invalid_kind_name(InvalidKind k);
std::optional<InvalidKind> parse_invalid_kind(std::string_view name);

struct InvalidReason {
  InvalidKind kind;
  std::string message;  // what was seen
  std::string advice;   // what to do about it; may be empty
  std::string rule;     // the workload rule that gave it (AgentX's "time_scaled"); may be empty
  boost::json::object to_json() const;
};

struct Validity {
  std::vector<InvalidReason> reasons;
  bool valid() const { return reasons.empty(); }
  void add(InvalidKind kind, std::string message, std::string advice = "");
  bool has(InvalidKind kind) const;
  /// Not valid, and only for reasons the user chose (chosen(kind)).
  bool only_chosen() const;
  /// "expect failed: settings.tp == 4 (not set); ..." (empty when valid).
  std::string text() const;
  boost::json::array to_json() const;
  static Validity from_json(const boost::json::value& v);  // tolerant: unknown kinds dropped
};

/// Which point this is: the keys `--resume` and `--reuse` match on, and how to show it.
struct PointIdentity {
  std::string config_key;
  std::string fingerprint;  // of the server configuration
  int64_t concurrency = 0;
  std::string workload_key;    // canonical workload JSON (workload/workload.h)
  std::string workload_label;  // short, for tables: "isl 512 / osl 64"
  std::string tool_version;
};

/// One telemetry timeslice of a point as it is stored (store's `timeslices` table): the columns a
/// query or the report reads, and the whole slice as JSON. Made from the typed slices by
/// telemetry::timeslice_rows (telemetry/timeslices.h).
struct TimesliceRow {
  std::string source;  // server | client
  int64_t slice = 0;
  double start_s = 0, end_s = 0;  // from the point's first scrape (server) or origin (client)
  // server
  std::optional<double> running, waiting, kv_usage, prefix_hit_rate, preemptions, prompt_tps,
      generation_tps, spec_acceptance;
  // client
  std::optional<int64_t> started, finished, output_tokens;
  std::optional<double> mean_ttft_ms, mean_intvty;
  boost::json::object data;  // the whole slice
};

struct PointResult {
  PointIdentity id;
  PointStatus status = PointStatus::kOk;
  Validity validity;
  /// Failed or skipped: why, first line first ("4 × http_status: HTTP 404: ..."; "server exited
  /// (signal 9 (Killed))").
  std::string error;
  Headline headline;           // NaN where not measured
  boost::json::object result;  // the full result JSON (empty when nothing was measured)
  std::optional<int64_t> reused_from_run;
  std::string artifacts_dir;  // where conc_N.json and its siblings are
  /// Telemetry timeslices (server, then client), stored beside the point.
  std::vector<TimesliceRow> timeslices;

  bool measured() const { return !result.empty(); }
  /// Whether this point fails the run it is part of: any status but ok, reused and resumed,
  /// except an invalid point whose only reasons the user chose (a time-scaled replay).
  bool fails_run() const;
  /// The status with its reason, for a table cell: "ok", "failed: 4 × http_status: ...",
  /// "invalid: expect failed: ...", "reused (run 3)".
  std::string status_text() const;
};

}  // namespace ib::metrics
