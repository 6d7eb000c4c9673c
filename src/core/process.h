// Child processes: started with fork/exec (never through a shell), in their own process group,
// stdout and stderr to a log file, and stopped with SIGTERM then SIGKILL so no orphan survives.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/expected.h"

namespace ib {

struct SpawnOptions {
  std::vector<std::string> argv;                // argv[0] is the program (PATH is searched)
  std::map<std::string, std::string> env_set;   // added to (or replacing in) the inherited environment
  std::filesystem::path log_path;               // stdout+stderr go here (appended); empty: inherit
  bool die_with_parent = true;                  // PR_SET_PDEATHSIG(SIGKILL) in the child
};

/// How a child ended.
struct ExitInfo {
  int code = 0;    // exit status when !signaled
  int signal = 0;  // terminating signal when signaled
  bool signaled = false;
  /// "exit code 3" or "signal 9 (Killed)".
  std::string describe() const;
};

class ChildProcess {
 public:
  /// Starts the process. Error names the program and the OS reason (including exec failure,
  /// reported back through a close-on-exec pipe).
  static Expected<ChildProcess> spawn(const SpawnOptions& options);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  /// Stops the process group if still running (see stop()).
  ~ChildProcess();

  pid_t pid() const { return pid_; }

  /// Non-blocking check. Returns the exit info once the child has ended.
  std::optional<ExitInfo> poll();

  /// SIGTERM to the process group, wait up to `grace`, then SIGKILL; reaps the child.
  /// Idempotent. Returns how the child ended.
  ExitInfo stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5000));

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;
  std::optional<ExitInfo> exit_;
};

/// Raises this process's soft open-file limit to the hard limit (a client or a server with 10k+
/// connections needs more than the usual 1024); returns the new soft limit, 0 when unknown.
int64_t raise_open_file_limit();

/// The last `max_bytes` of a file, cut at a line start; empty when unreadable.
std::string file_tail(const std::filesystem::path& path, size_t max_bytes = 4096);

}  // namespace ib
