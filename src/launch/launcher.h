// Launchers start one inference server per server configuration and hand back a running,
// healthy server: `local` (fork/exec on this machine), `slurm` (one sbatch job per server
// configuration) and `endpoint` (an already-running server at a URL).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/expected.h"

namespace ib::launch {

/// One process of a disaggregated deployment: a prefill or decode worker, or the router.
struct RoleSpec {
  std::string role;  // "prefill" | "decode" | "router"
  int index = 0;     // the worker's number within its role (0 for the router)
  /// As ServerSpec::argv; the router's may also hold {prefill-urls} and {decode-urls}, which the
  /// launcher replaces with the workers' URLs, comma-separated, once they are healthy.
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::string health_path = "/health";
  int gpus = 0;
  /// The router's node on a multi-node launcher: "first-decode" (the first decode worker's node,
  /// AMD's convention; the default), "first-prefill", or "own" (a node of its own).
  std::string node = "first-decode";
  /// "prefill-0", "decode-1", "router".
  std::string label() const { return role == "router" ? role : role + "-" + std::to_string(index); }
};

/// What to start. `argv` may still contain the placeholders `{host}` and `{port}`: the launcher
/// substitutes them with the address it chose (every other recipe placeholder is substituted
/// before, by the sweep). Nothing here ever goes through a shell.
struct ServerSpec {
  std::string name;                        // short label for logs and job names
  std::vector<std::string> argv;           // argv[0] is the program
  std::map<std::string, std::string> env;  // set in the server's environment
  std::string health_path = "/health";
  std::filesystem::path log_path;  // server stdout+stderr (the launcher creates it)
  std::chrono::seconds startup_timeout{600};
  int gpus = 0;  // GPUs the server needs (Slurm --gpus), 0: none
  /// A disaggregated deployment (argv unused): its workers, started first, then its router,
  /// whose URL is the deployment's. Each role's log is log_path with the role's label before the
  /// extension (server.prefill-0.log).
  std::vector<RoleSpec> roles;
};

/// A running role of a disaggregated deployment, as the launcher started it.
struct RoleProcess {
  std::string label;  // "prefill-0"
  std::string role;   // "prefill"
  std::string url;    // its own HTTP address (its /metrics)
  std::filesystem::path log;
  std::vector<int> pids;
  int gpus = 0;
  std::string node;  // the node it runs on (Slurm); "" on this machine
};

/// A started server. Destruction stops it (as stop()).
class Server {
 public:
  virtual ~Server() = default;
  /// Base URL, e.g. "http://127.0.0.1:8000".
  virtual std::string url() const = 0;
  /// nullopt while the server runs; otherwise why it is gone, e.g.
  /// "server exited (exit code 3)" or "server exited (signal 9 (Killed))".
  virtual std::optional<std::string> check_alive() = 0;
  /// Stops the server and everything it started (SIGTERM, then SIGKILL after `grace`; scancel
  /// for Slurm). Idempotent. Returns a description of how it ended.
  virtual std::string stop(std::chrono::milliseconds grace = std::chrono::milliseconds(10000)) = 0;
  /// Where the server's output is, if the launcher captured it.
  virtual std::filesystem::path log_path() const = 0;
  /// Where a GPU power sampler started beside the server writes (telemetry::kPowerFile* names;
  /// the Slurm job script's); nullopt when the launcher starts none.
  virtual std::optional<std::filesystem::path> power_dir() const { return std::nullopt; }
  /// Process ids of the server's top process (local launcher only; empty elsewhere).
  virtual std::vector<int> pids() const { return {}; }
  /// A disaggregated deployment's roles, in start order; empty for one server.
  virtual std::vector<RoleProcess> roles() const { return {}; }
  /// Every process on the node of each role (label -> "pid ppid command line" lines), listed on
  /// the node while the deployment runs; nullopt where the launcher cannot list them.
  virtual std::optional<std::map<std::string, std::vector<std::string>>> role_node_processes() {
    return std::nullopt;
  }
};

/// What a launcher can observe of the servers it starts, asked instead of its name: what it
/// cannot observe is reported as unobservable (never as passed or as a no-op).
struct LauncherCaps {
  bool starts_server = true;   // runs the recipe's server command (false: attaches to a URL)
  bool has_log = true;         // captures the server's output in a log file
  bool can_trace_env = false;  // can trace which environment variables the server reads
  /// Can trace a disaggregated deployment's roles where they run (other nodes): each role's
  /// processes write to a trace folder of their own (RoleSpec::env's IB_ENVTRACE_DIR), and the
  /// launcher lists the processes of each role's node at stop (Server::role_node_processes).
  bool can_trace_roles = false;
};

class Launcher {
 public:
  virtual ~Launcher() = default;
  virtual std::string name() const = 0;  // "local" | "slurm" | "endpoint"
  /// What this launcher observes (the default: a job elsewhere, whose log it reads back).
  virtual LauncherCaps caps() const { return {}; }
  /// Starts the server and returns once GET health_path answers 200. On failure the error says
  /// why ("server exited during startup (exit code 1)", "not healthy after 600 s (HTTP 503)",
  /// "interrupted") followed by the tail of the server log.
  virtual Expected<std::unique_ptr<Server>> start(const ServerSpec& spec) = 0;
};

/// Replaces "{host}" and "{port}" in every argument.
std::vector<std::string> substitute_address(const std::vector<std::string>& argv,
                                            const std::string& host, int port);

/// A TCP port on 127.0.0.1 that was free a moment ago: a random one below the ephemeral range
/// (bound and closed again), so that neither a port-0 bind nor an outgoing connection of another
/// process takes it before the server binds it; port 0's choice when none is free.
Expected<int> pick_free_port();

/// Polls GET `url` + `health_path` every 100 ms until 200, the deadline, an interrupt request, or
/// `alive` reporting the server gone (its message is returned as the error). A 200 while `alive`
/// reports the server gone is an error too: another process answered on the port.
Status wait_healthy(const std::string& url, const std::string& health_path,
                    std::chrono::seconds timeout,
                    const std::function<std::optional<std::string>()>& alive);

}  // namespace ib::launch
