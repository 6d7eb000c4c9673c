#include "core/command.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/clock.h"

extern char** environ;

namespace ib {

namespace {

struct Pipe {
  int fd[2] = {-1, -1};
  ~Pipe() { close_all(); }
  void close_all() {
    for (int& f : fd) {
      if (f >= 0) ::close(f);
      f = -1;
    }
  }
  void close_end(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
};

}  // namespace

std::string describe_argv(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    if (a.empty() || a.find_first_of(" \t\n'\"\\$`") != std::string::npos) {
      out += '\'';
      for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
      out += '\'';
    } else {
      out += a;
    }
  }
  return out;
}

Expected<CommandResult> run_command(const std::vector<std::string>& argv,
                                    const CommandOptions& options) {
  if (argv.empty()) return Error{"run_command: empty argv"};
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_storage;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view kv(*e);
    if (options.env_set.count(std::string(kv.substr(0, kv.find('=')))) == 0) {
      env_storage.emplace_back(kv);
    }
  }
  for (const auto& [k, v] : options.env_set) env_storage.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_storage) envp.push_back(s.data());
  envp.push_back(nullptr);
  const std::string cwd = options.cwd.string();

  Pipe in, out, err, status;
  if (::pipe2(in.fd, O_CLOEXEC) != 0 || ::pipe2(out.fd, O_CLOEXEC) != 0 ||
      ::pipe2(err.fd, O_CLOEXEC) != 0 || ::pipe2(status.fd, O_CLOEXEC) != 0) {
    return Error{fmt::format("{}: pipe failed: {}", argv[0], std::strerror(errno))};
  }
  pid_t pid = ::fork();
  if (pid < 0) return Error{fmt::format("{}: fork failed: {}", argv[0], std::strerror(errno))};
  if (pid == 0) {
    ::setpgid(0, 0);
    ::signal(SIGPIPE, SIG_DFL);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(in.fd[0], STDIN_FILENO);
    ::dup2(out.fd[1], STDOUT_FILENO);
    ::dup2(err.fd[1], STDERR_FILENO);
    int e = 0;
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) {
      e = errno;
    } else {
      ::execvpe(args[0], args.data(), envp.data());
      e = errno;
    }
    [[maybe_unused]] auto n = ::write(status.fd[1], &e, sizeof e);
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  in.close_end(0);
  out.close_end(1);
  err.close_end(1);
  status.close_end(1);
  int child_err = 0;
  ssize_t n;
  do {
    n = ::read(status.fd[0], &child_err, sizeof child_err);
  } while (n < 0 && errno == EINTR);
  if (n == sizeof child_err) {
    int st = 0;
    ::waitpid(pid, &st, 0);
    if (!cwd.empty() && child_err == ENOENT && ::access(cwd.c_str(), F_OK) != 0) {
      return Error{fmt::format("{}: cannot enter {}: {}", argv[0], cwd, std::strerror(child_err))};
    }
    return Error{fmt::format("cannot execute '{}': {}", argv[0], std::strerror(child_err))};
  }

  CommandResult result;
  size_t written = 0;
  if (options.stdin_data.empty()) in.close_end(1);
  ::fcntl(in.fd[1], F_SETFL, O_NONBLOCK);
  const int64_t deadline = mono_ns() + std::chrono::nanoseconds(options.timeout).count();
  std::string failure;
  char buf[65536];
  while (out.fd[0] >= 0 || err.fd[0] >= 0) {
    pollfd fds[3];
    int nfds = 0;
    int idx_out = -1, idx_err = -1, idx_in = -1;
    if (out.fd[0] >= 0) fds[idx_out = nfds++] = {out.fd[0], POLLIN, 0};
    if (err.fd[0] >= 0) fds[idx_err = nfds++] = {err.fd[0], POLLIN, 0};
    if (in.fd[1] >= 0) fds[idx_in = nfds++] = {in.fd[1], POLLOUT, 0};
    int64_t left_ms = (deadline - mono_ns()) / 1'000'000;
    if (left_ms <= 0) {
      failure = fmt::format("timed out after {} ms", options.timeout.count());
      break;
    }
    int r = ::poll(fds, nfds, static_cast<int>(std::min<int64_t>(left_ms, 1000)));
    if (r < 0 && errno != EINTR) {
      failure = fmt::format("poll failed: {}", std::strerror(errno));
      break;
    }
    auto drain = [&](int idx, Pipe& p, std::string& sink) {
      if (idx < 0 || !(fds[idx].revents & (POLLIN | POLLHUP | POLLERR))) return;
      ssize_t got = ::read(p.fd[0], buf, sizeof buf);
      if (got > 0) {
        sink.append(buf, static_cast<size_t>(got));
        if (sink.size() > options.max_output) failure = "output too large";
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        p.close_end(0);
      }
    };
    drain(idx_out, out, result.out);
    drain(idx_err, err, result.err);
    if (!failure.empty()) break;
    if (idx_in >= 0 && (fds[idx_in].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t w = ::write(in.fd[1], options.stdin_data.data() + written,
                          options.stdin_data.size() - written);
      if (w > 0) written += static_cast<size_t>(w);
      if (w < 0 && errno != EAGAIN && errno != EINTR) written = options.stdin_data.size();
      if (written >= options.stdin_data.size()) in.close_end(1);
    }
  }
  in.close_all();
  if (!failure.empty()) ::kill(-pid, SIGKILL);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (!failure.empty()) return Error{fmt::format("{}: {}", describe_argv(argv), failure)};
  if (WIFSIGNALED(st)) {
    result.exit.signaled = true;
    result.exit.signal = WTERMSIG(st);
  } else {
    result.exit.code = WEXITSTATUS(st);
  }
  return result;
}

}  // namespace ib
