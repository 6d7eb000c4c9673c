// Did a recipe change take effect? Per changed field, from what the base and head servers showed:
// their effective configurations and which environment variables they read (issue 7).
#pragma once

#include <boost/json.hpp>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "metrics/identity.h"
#include "verify/effective_config.h"
#include "verify/env_trace.h"

namespace ib::verify {

/// One changed recipe field (govern::FieldChange, without the dependency).
struct ChangedField {
  std::string path;  // "serve.env.X", "image", "scenarios.fixed-seq-len[0]...", ""
  std::string kind;  // added | removed | changed | shared-file | runner
  std::string detail;
};

/// What one server showed while it ran.
struct ServerObservation {
  bool observed = false;  // false: it could not be started or read; `error` says why
  std::string error;
  EffectiveConfig config;
  /// Watched variable -> read by some process; nullopt when reads were not traced.
  std::optional<std::map<std::string, bool>> env_read;
  /// Where the tracer could not see (EnvTraceReport::blind_spots, as text): while any is there,
  /// "no process read it" is not claimed.
  std::vector<std::string> blind_spots;
  /// The command lines of the server's processes (the tracer's and the launcher's view).
  std::vector<std::string> commands;
  /// The engine's installed files its processes wrote at run time (engine_write_text each).
  std::vector<std::string> engine_writes;
  /// The environment the recipe gave the server (serve.env).
  std::map<std::string, std::string> env;
  /// A disaggregated deployment: the reads by role (serve.<role>.env fields are judged on them).
  std::optional<RoleReads> role_reads;
  /// What the server was: model, image, engine, engine version, precision, runner, ...
  metrics::Identity identity;
  std::string log_path;
};

/// Field verdicts:
///   effective   the effective configuration differs between base and head, or (a variable)
///               its head value shows up as an argument of a head process and of no base one
///   no effect   it is identical (and, for a variable, the variable was not read either)
///   other role  (a disaggregated deployment) a variable set in one role's environment that no
///               process of that role read, but another role's did: "set on prefill, read only
///               by decode", a no-op where it is set; every process of the role was traced
///   never read  an environment variable no process read, on either side, and every process was
///               traced without a blind spot (a shell, a copied environment, an untraced
///               binary; a variable the loader or libc consumes): else it is "unverified"
///   read        a variable was read, but the printed configuration shows no difference: its
///               effect cannot be ruled out, so it counts as effective
///   workload    the matrix or workload changed (concurrency, sequence lengths): new points
///   unverified  the servers could not be observed (start failure, runner hardware)
struct FieldVerdict {
  std::string field;
  std::string change;  // the change, in words
  std::string verdict;
  std::string evidence;
};

struct KeyVerdict {
  std::string key;
  std::string status;  // added | removed | modified
  std::vector<FieldVerdict> fields;
  boost::json::object effective_diff;    // setting -> {base, head}
  std::vector<metrics::Confounder> confounders;  // identity fields that differ besides the change
  std::vector<std::string> notes;
  /// "no-op: skip the sweep" | "effective: sweep" | "removed: nothing to sweep"
  std::string verdict;
  bool no_op() const { return verdict.rfind("no-op", 0) == 0; }
  boost::json::object to_json() const;
};

/// Settings that differ on every start and say nothing about a change (ports, seeds chosen at
/// random, pids): ignored when diffing effective configurations.
const std::set<std::string>& volatile_settings();

/// The effective-configuration diff without volatile settings and `ignore`.
boost::json::object stable_diff(const EffectiveConfig& a, const EffectiveConfig& b,
                                const std::set<std::string>& ignore = {});

/// The verdict on a watched variable that no traced process read: "never read" only when every
/// process was traced without a blind spot; else "effective" on positive evidence (its head
/// value became a head process's argument), else "unverified" naming the blind spots.
void judge_unread(const std::string& var, const ServerObservation& base,
                  const ServerObservation& head, FieldVerdict& v);

/// Judges one key. `base`/`head` may be null when no server was needed or possible.
KeyVerdict judge_key(const std::string& key, const std::string& status,
                     const std::vector<ChangedField>& fields, const ServerObservation* base,
                     const ServerObservation* head, const std::set<std::string>& ignore = {});

/// EnvTraceReport::to_json's "processes", "blind_spots" and "engine_writes" into `obs` (stored
/// runs and live ones alike).
void read_trace_processes(const boost::json::object& env_reads, ServerObservation* obs);

/// The identity fields that differ between two servers (metrics::confounders).
std::vector<metrics::Confounder> server_confounders(const ServerObservation& base,
                                                   const ServerObservation& head);

/// A markdown summary for a pull-request comment.
std::string verdicts_markdown(const std::string& title, const std::vector<KeyVerdict>& verdicts);

}  // namespace ib::verify
