// Child processes: started with fork/exec (never through a shell), in their own process group,
// stdout and stderr to a log file, and stopped with SIGTERM then SIGKILL so no orphan survives.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
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

/// Who a process is, precisely enough that a reader can tell later whether it is still running:
/// a pid alone is recycled, so the process's start time (field 22 of /proc/PID/stat, clock ticks
/// since boot) and the boot (/proc/sys/kernel/random/boot_id) are kept with it. Host names are
/// taken to identify machines; the PID namespace tells containers on one machine apart.
struct ProcessIdentity {
  int64_t pid = 0;  // 0: unknown
  std::string host;
  std::string boot_id;
  std::string pid_namespace;  // "pid:[4026531836]"
  int64_t start_ticks = 0;
};

/// This process.
ProcessIdentity self_identity();
/// Process `pid` of this machine, as self_identity() would record it (start_ticks 0 when it does
/// not exist).
ProcessIdentity identity_of(int64_t pid);

/// Is the process `who` still running?
enum class ProcessState {
  kAlive,    // same host, boot and PID namespace, and its pid has the same start time
  kGone,     // it exited (its pid is free, a zombie, or another process's), or the host rebooted
  kUnknown,  // cannot be checked from here: another host or PID namespace, or nothing recorded
};
ProcessState process_state(const ProcessIdentity& who);

/// A live process as /proc shows it.
struct RunningProcess {
  int64_t pid = 0, ppid = 0;
  std::string exe;      // /proc/PID/exe ("" when it cannot be read)
  std::string cmdline;  // arguments joined by spaces
};
/// The live processes of process group `pgid` (zombies left out), by pid.
std::vector<RunningProcess> process_group_members(int64_t pgid);

/// Raises this process's soft open-file limit to the hard limit (a client or a server with 10k+
/// connections needs more than the usual 1024); returns the new soft limit, 0 when unknown.
int64_t raise_open_file_limit();

/// The last `max_bytes` of a file, cut at a line start; empty when unreadable.
std::string file_tail(const std::filesystem::path& path, size_t max_bytes = 4096);

}  // namespace ib
