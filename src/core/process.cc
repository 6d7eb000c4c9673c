#include "core/process.h"

#include "core/files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <thread>
#include <vector>

extern char** environ;

namespace ib {

std::string ExitInfo::describe() const {
  if (signaled) return fmt::format("signal {} ({})", signal, ::strsignal(signal));
  return fmt::format("exit code {}", code);
}

static ExitInfo decode_status(int status) {
  ExitInfo info;
  if (WIFSIGNALED(status)) {
    info.signaled = true;
    info.signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    info.code = WEXITSTATUS(status);
  }
  return info;
}

Expected<ChildProcess> ChildProcess::spawn(const SpawnOptions& options) {
  if (options.argv.empty()) return Error{"spawn: empty argv"};

  // Everything the child needs is prepared before fork: only async-signal-safe calls after it.
  std::vector<char*> argv;
  for (const auto& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  std::vector<std::string> env_storage;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    std::string key(kv.substr(0, eq));
    if (options.env_set.count(key) == 0) env_storage.emplace_back(kv);
  }
  for (const auto& [k, v] : options.env_set) env_storage.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_storage) envp.push_back(s.data());
  envp.push_back(nullptr);

  int log_fd = -1;
  if (!options.log_path.empty()) {
    log_fd = ::open(options.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) {
      return Error{fmt::format("{}: cannot open log: {}", options.log_path.string(),
                               std::strerror(errno))};
    }
  }
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    if (log_fd >= 0) ::close(log_fd);
    return Error{fmt::format("spawn: pipe failed: {}", std::strerror(errno))};
  }
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    if (log_fd >= 0) ::close(log_fd);
    ::close(err_pipe[0]);
    ::close(err_pipe[1]);
    return Error{fmt::format("spawn {}: fork failed: {}", options.argv[0], std::strerror(err))};
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    if (options.die_with_parent) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
    }
    // Reset signal dispositions the parent may have changed.
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (log_fd >= 0) {
      ::dup2(log_fd, STDOUT_FILENO);
      ::dup2(log_fd, STDERR_FILENO);
    }
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    ::execvpe(argv[0], argv.data(), envp.data());
    int err = errno;
    [[maybe_unused]] auto n = ::write(err_pipe[1], &err, sizeof err);
    ::_exit(127);
  }
  // Also set the group from the parent side to avoid racing a kill() against the child's setpgid.
  ::setpgid(pid, pid);
  ::close(err_pipe[1]);
  if (log_fd >= 0) ::close(log_fd);
  int child_err = 0;
  ssize_t n;
  do {
    n = ::read(err_pipe[0], &child_err, sizeof child_err);
  } while (n < 0 && errno == EINTR);
  ::close(err_pipe[0]);
  if (n == sizeof child_err) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return Error{fmt::format("cannot execute '{}': {}", options.argv[0], std::strerror(child_err))};
  }
  return ChildProcess(pid);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_), exit_(std::move(other.exit_)) {
  other.pid_ = -1;
}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0) stop();
    pid_ = other.pid_;
    exit_ = std::move(other.exit_);
    other.pid_ = -1;
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) stop();
}

std::optional<ExitInfo> ChildProcess::poll() {
  if (exit_ || pid_ <= 0) return exit_;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exit_ = decode_status(status);
    // The leader is gone; make sure nothing else of its group lingers.
    ::kill(-pid_, SIGKILL);
  }
  return exit_;
}

ExitInfo ChildProcess::stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return exit_.value_or(ExitInfo{});
  if (!poll()) {
    ::kill(-pid_, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + grace;
    while (!poll() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!exit_) {
      ::kill(-pid_, SIGKILL);
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      exit_ = decode_status(status);
    }
  }
  ::kill(-pid_, SIGKILL);  // any grandchildren left in the group
  pid_ = -1;
  return *exit_;
}

std::string file_tail(const std::filesystem::path& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(0, std::ios::end);
  auto size = static_cast<size_t>(in.tellg());
  size_t start = size > max_bytes ? size - max_bytes : 0;
  in.seekg(static_cast<std::streamoff>(start));
  std::string s(size - start, '\0');
  in.read(s.data(), static_cast<std::streamsize>(s.size()));
  if (start > 0) {
    auto nl = s.find('\n');
    if (nl != std::string::npos) s.erase(0, nl + 1);
  }
  return s;
}

namespace {

// The first line of a small /proc file, without its newline; empty when unreadable.
std::string proc_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// Field 22 (starttime) and field 3 (state) of /proc/PID/stat. Field 2, the command name, is in
// parentheses and may hold spaces or parentheses itself: the fields after it are counted from
// its last ')'.
struct StatFields {
  char state = 0;
  int64_t ppid = 0, pgrp = 0;  // fields 4 and 5
  int64_t start_ticks = 0;
};

std::optional<StatFields> read_stat(int64_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  if (!in) return std::nullopt;
  std::string text;
  std::getline(in, text);
  const auto close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::vector<std::string> fields;  // fields[0] is field 3
  size_t i = close + 1;
  while (i < text.size() && fields.size() < 20) {
    while (i < text.size() && text[i] == ' ') ++i;
    size_t j = text.find(' ', i);
    if (j == std::string::npos) j = text.size();
    if (j > i) fields.push_back(text.substr(i, j - i));
    i = j;
  }
  if (fields.size() < 20 || fields[0].empty()) return std::nullopt;
  StatFields f;
  f.state = fields[0][0];
  try {
    f.ppid = std::stoll(fields[1]);
    f.pgrp = std::stoll(fields[2]);
    f.start_ticks = std::stoll(fields[19]);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return f;
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

std::string pid_namespace_of(const std::string& pid) {
  std::error_code ec;
  auto target = std::filesystem::read_symlink("/proc/" + pid + "/ns/pid", ec);
  return ec ? std::string() : target.string();
}

}  // namespace

ProcessIdentity self_identity() {
  ProcessIdentity id;
  id.pid = ::getpid();
  id.host = host_name();
  id.boot_id = proc_line("/proc/sys/kernel/random/boot_id");
  id.pid_namespace = pid_namespace_of("self");
  if (auto stat = read_stat(id.pid)) id.start_ticks = stat->start_ticks;
  return id;
}

ProcessIdentity identity_of(int64_t pid) {
  ProcessIdentity id = self_identity();
  id.pid = pid;
  id.pid_namespace = pid_namespace_of(std::to_string(pid));
  auto stat = read_stat(pid);
  id.start_ticks = stat ? stat->start_ticks : 0;
  return id;
}

ProcessState process_state(const ProcessIdentity& who) {
  if (who.pid <= 0 || who.host.empty()) return ProcessState::kUnknown;
  static const ProcessIdentity self = self_identity();
  if (who.host != self.host) return ProcessState::kUnknown;
  // Same machine, another boot: every process of that boot is gone.
  if (!who.boot_id.empty() && !self.boot_id.empty() && who.boot_id != self.boot_id) {
    return ProcessState::kGone;
  }
  // Another PID namespace on this machine (a container): its pids mean nothing here.
  if (who.pid_namespace.empty() || who.pid_namespace != self.pid_namespace) {
    return ProcessState::kUnknown;
  }
  if (who.pid == self.pid && who.start_ticks == self.start_ticks) return ProcessState::kAlive;
  auto stat = read_stat(who.pid);
  if (!stat) return ProcessState::kGone;  // no such process
  if (stat->state == 'Z' || stat->state == 'X') return ProcessState::kGone;  // exited, unreaped
  return stat->start_ticks == who.start_ticks ? ProcessState::kAlive : ProcessState::kGone;
}

std::vector<RunningProcess> process_group_members(int64_t pgid) {
  std::vector<RunningProcess> out;
  if (pgid <= 0) return out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const int64_t pid = std::stoll(name);
    const auto stat = read_stat(pid);
    if (!stat || stat->pgrp != pgid || stat->state == 'Z' || stat->state == 'X') continue;
    RunningProcess p;
    p.pid = pid;
    p.ppid = stat->ppid;
    std::error_code link_ec;
    p.exe = std::filesystem::read_symlink(it->path() / "exe", link_ec).string();
    auto read = read_file(it->path() / "cmdline");  // empty once the process has ended
    std::string cmdline = read ? std::move(*read) : std::string();
    while (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    p.cmdline = std::move(cmdline);
    out.push_back(std::move(p));
  }
  std::sort(out.begin(), out.end(),
            [](const RunningProcess& a, const RunningProcess& b) { return a.pid < b.pid; });
  return out;
}

int64_t raise_open_file_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  // An unlimited hard limit cannot be the soft one (the kernel caps it at nr_open): 2^20 then.
  const rlim_t target = rl.rlim_max == RLIM_INFINITY ? rlim_t{1} << 20 : rl.rlim_max;
  if (rl.rlim_cur < target) {
    rlimit want = rl;
    want.rlim_cur = target;
    if (setrlimit(RLIMIT_NOFILE, &want) == 0) rl = want;
  }
  return static_cast<int64_t>(rl.rlim_cur);
}

}  // namespace ib
