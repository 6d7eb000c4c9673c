// The server options of every command that starts servers (`sweep`, `verify`, `tune`): one
// declaration, one help text, one set of checks, and the secrets in `--server-arg` registered
// the same way everywhere.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace ib::cli {

struct ServerOptions {
  std::vector<std::string> args;  // --server-arg: appended to every server command
  double startup_timeout_s = 600;
  double point_timeout_s = 1800;  // only where the command measures points
  bool no_env_trace = false;
};

/// What a command declares: every command that starts servers has the first three; the point
/// timeout only where points are measured.
enum class ServerOptionSet { kServers, kServersAndPoints };

/// Declares --server-arg, --startup-timeout, --no-env-trace (and --point-timeout) on `app`; the
/// defaults shown are `o`'s.
void add_server_options(CLI::App* app, ServerOptions& o, ServerOptionSet set);

/// After parsing: the values --server-arg hands every server (--api-key X) are registered as
/// secrets (core/redact.h), hidden in everything the command prints or records.
void register_server_secrets(const ServerOptions& o);

}  // namespace ib::cli
