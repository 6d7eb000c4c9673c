// ServerSession (docs/architecture.md, "The point pipeline"): start one server configuration with a
// launcher and observe it: environment-read tracing, the log, the effective configuration (built-in
// probes and the recipe's own), the recipe's `expect` checks; then stop it and collect which
// variables its processes read. `sweep` and `verify` both go through here, so the sequence exists
// once.
#pragma once

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/expected.h"
#include "launch/launcher.h"
#include "verify/effective_config.h"
#include "verify/env_trace.h"
#include "verify/expect.h"

namespace ib::launch {

struct SessionOptions {
  /// Artifacts: server.log, envtrace/, effective_config.json, expect.json, env_reads.json.
  std::filesystem::path dir;
  /// Environment variables whose reads are traced (the recipe's serve.env names).
  std::vector<std::string> watch;
  bool env_trace = true;  // tracing is used when the launcher supports it and `watch` is set
  /// The recipe's `expect`, already parsed; its probes extend the effective configuration.
  std::optional<verify::ExpectSpec> expect;
  /// Extra probes (used when there is no expect block, or besides its own).
  std::vector<verify::RegexProbe> probes;
  std::chrono::seconds startup_timeout{600};
};

/// The recipe's `expect`, as far as it could be checked on this server.
struct ExpectOutcome {
  std::vector<verify::AssertionResult> results;  // the assertions that could be checked
  /// Assertions that cannot be checked with this launcher, and why ("settings.tp == 4: the
  /// endpoint launcher has no server log").
  std::vector<std::string> unobservable;
  /// The first failed assertion: "expect failed: settings.tp == 4 (2 (vllm-args, line 3))".
  std::optional<std::string> failure;
  bool checked() const { return !results.empty() || !unobservable.empty(); }
  boost::json::array to_json() const;
};

class ServerSession {
 public:
  /// Starts the server and observes it. Error when it could not be started or never became
  /// healthy (the message says why and carries the log tail).
  static Expected<std::unique_ptr<ServerSession>> start(Launcher& launcher, ServerSpec spec,
                                                        SessionOptions options);
  ~ServerSession();
  ServerSession(const ServerSession&) = delete;
  ServerSession& operator=(const ServerSession&) = delete;

  Server& server() { return *server_; }
  std::string url() const { return server_->url(); }
  const std::string& launcher() const { return launcher_; }
  /// What the launcher observes (launch::LauncherCaps).
  const LauncherCaps& caps() const { return caps_; }
  /// Whether the server's log could be read (not with the endpoint launcher).
  bool log_available() const { return log_available_; }
  bool tracing() const { return tracing_; }
  /// Why environment tracing is off although it was asked for ("environment tracing off: the
  /// slurm launcher cannot trace a server's reads"); empty when it is on or was not asked for.
  const std::string& tracing_off() const { return tracing_off_; }
  const verify::EffectiveConfig& effective() const { return effective_; }
  const ExpectOutcome& expect() const { return expect_; }
  /// Things worth telling the user once ("environment tracing off: ...").
  const std::vector<std::string>& notes() const { return notes_; }
  /// nullopt while the server runs; otherwise why it is gone.
  std::optional<std::string> check_alive() { return server_->check_alive(); }
  std::filesystem::path log_path() const { return server_->log_path(); }

  /// Stops the server (idempotent) and collects its environment reads; returns how it ended.
  std::string stop(std::chrono::milliseconds grace = std::chrono::milliseconds(10000));
  /// A disaggregated deployment's roles (launch::RoleProcess), and each one's effective
  /// configuration from its own log (label -> it); empty for one server. effective() and the
  /// expect checks are then the first decode worker's (the one that serves the tokens).
  const std::vector<RoleProcess>& roles() const { return roles_; }
  const std::map<std::string, verify::EffectiveConfig>& role_effective() const {
    return role_effective_;
  }

  /// After stop(): which watched variables the processes read (nullopt when not traced).
  const std::optional<verify::EnvTraceReport>& env_reads() const { return env_reads_; }
  /// Watched variable -> read by some process (after stop(); nullopt when not traced).
  std::optional<std::map<std::string, bool>> env_read_flags() const;
  /// A disaggregated deployment's reads by role (after stop(); nullopt when not traced or one
  /// server): which role's processes read each watched variable, and where each role's tracer
  /// was blind.
  const std::optional<verify::RoleReads>& role_reads() const { return role_reads_; }

  /// Errors writing the artifacts (effective_config.json, expect.json, env_reads.json).
  const std::vector<std::string>& write_errors() const { return write_errors_; }

 private:
  ServerSession() = default;
  void observe(const SessionOptions& o);
  void write_json(const std::filesystem::path& file, const boost::json::value& v);
  /// A disaggregated deployment's processes as they run (each role's process group): pid -> role.
  std::map<int, std::string> role_pids() const;
  /// A deployment traced where it runs (LauncherCaps::can_trace_roles): pid -> role of the
  /// processes that wrote to each role's trace folder, and (with `listing`, each role's node's
  /// processes) their untraced descendants, which go into `untraced`.
  std::map<int, std::string> remote_role_pids(
      const std::map<std::string, std::vector<std::string>>* listing,
      std::vector<verify::TracedProcess>* untraced) const;
  /// The role reads of a deployment traced where it runs, with a role that left no trace record
  /// (or whose node could not be listed: absent from `listing`) blind.
  void remote_role_reads(const std::map<int, std::string>& role_of,
                         const std::map<std::string, std::vector<std::string>>& listing);
  void check_role_expect(const std::string& role, const verify::ExpectSpec& spec);

  std::unique_ptr<Server> server_;
  std::string launcher_;
  LauncherCaps caps_;
  std::filesystem::path dir_;
  std::filesystem::path trace_dir_;
  std::vector<std::string> watch_;
  bool log_available_ = false;
  bool tracing_ = false;
  bool remote_roles_ = false;  // each role traced where it runs, in a folder of its own
  std::string tracing_off_;
  bool stopped_ = false;
  std::string ended_;
  verify::EffectiveConfig effective_;
  std::vector<RoleProcess> roles_;
  std::map<std::string, verify::EffectiveConfig> role_effective_;
  ExpectOutcome expect_;
  std::vector<std::string> notes_;
  std::optional<verify::EnvTraceReport> env_reads_;
  std::optional<verify::RoleReads> role_reads_;
  std::vector<std::string> write_errors_;
};

}  // namespace ib::launch
