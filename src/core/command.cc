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

namespace {

// The child's argv, environment and working directory as execvpe and chdir take them. Built
// before fork: after it, the child may only make async-signal-safe calls.
struct ExecImage {
  std::vector<char*> args;
  std::vector<std::string> env_storage;
  std::vector<char*> envp;  // points into env_storage
  std::string cwd;
};

// argv, and the inherited environment with options.env_set added (replacing same-named variables).
ExecImage make_exec_image(const std::vector<std::string>& argv, const CommandOptions& options) {
  ExecImage image;
  for (const auto& a : argv) image.args.push_back(const_cast<char*>(a.c_str()));
  image.args.push_back(nullptr);
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view kv(*e);
    if (options.env_set.count(std::string(kv.substr(0, kv.find('=')))) == 0) {
      image.env_storage.emplace_back(kv);
    }
  }
  for (const auto& [k, v] : options.env_set) image.env_storage.push_back(k + "=" + v);
  for (auto& s : image.env_storage) image.envp.push_back(s.data());
  image.envp.push_back(nullptr);
  image.cwd = options.cwd.string();
  return image;
}

// The child's stdin, stdout and stderr, and the close-on-exec pipe on which a failed exec (or
// chdir) reports its errno.
struct ChildPipes {
  Pipe in, out, err, status;
};

// Opens all four pipes; false (errno set) when one cannot be opened.
bool open_child_pipes(ChildPipes& p) {
  return ::pipe2(p.in.fd, O_CLOEXEC) == 0 && ::pipe2(p.out.fd, O_CLOEXEC) == 0 &&
         ::pipe2(p.err.fd, O_CLOEXEC) == 0 && ::pipe2(p.status.fd, O_CLOEXEC) == 0;
}

// In the forked child: its own process group, default signal handling, the pipes as stdio, then
// chdir and exec; a failure's errno goes to the status pipe. Only async-signal-safe calls.
[[noreturn]] void exec_child(const ExecImage& image, const ChildPipes& pipes) {
  ::setpgid(0, 0);
  ::signal(SIGPIPE, SIG_DFL);
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::dup2(pipes.in.fd[0], STDIN_FILENO);
  ::dup2(pipes.out.fd[1], STDOUT_FILENO);
  ::dup2(pipes.err.fd[1], STDERR_FILENO);
  int e = 0;
  if (!image.cwd.empty() && ::chdir(image.cwd.c_str()) != 0) {
    e = errno;
  } else {
    ::execvpe(image.args[0], image.args.data(), image.envp.data());
    e = errno;
  }
  [[maybe_unused]] auto n = ::write(pipes.status.fd[1], &e, sizeof e);
  ::_exit(127);
}

// In the parent: closes the child's ends of the pipes.
void close_child_ends(ChildPipes& p) {
  p.in.close_end(0);
  p.out.close_end(1);
  p.err.close_end(1);
  p.status.close_end(1);
}

// Waits until the child has exec'd (the status pipe closes on exec) or reports why it could not;
// in that case reaps it and returns the error.
Status await_exec(pid_t pid, const std::string& argv0, const std::string& cwd, Pipe& status) {
  int child_err = 0;
  ssize_t n;
  do {
    n = ::read(status.fd[0], &child_err, sizeof child_err);
  } while (n < 0 && errno == EINTR);
  if (n != sizeof child_err) return Status::Ok();
  int st = 0;
  ::waitpid(pid, &st, 0);
  if (!cwd.empty() && child_err == ENOENT && ::access(cwd.c_str(), F_OK) != 0) {
    return Error{fmt::format("{}: cannot enter {}: {}", argv0, cwd, std::strerror(child_err))};
  }
  return Error{fmt::format("cannot execute '{}': {}", argv0, std::strerror(child_err))};
}

// Reads what a ready output pipe has into sink ("output too large" into failure beyond
// max_output); closes the pipe at end of file or on a read error.
void drain_output(const pollfd* fds, int idx, Pipe& p, std::string& sink, size_t max_output,
                  std::string& failure) {
  if (idx < 0 || !(fds[idx].revents & (POLLIN | POLLHUP | POLLERR))) return;
  char buf[65536];
  ssize_t got = ::read(p.fd[0], buf, sizeof buf);
  if (got > 0) {
    sink.append(buf, static_cast<size_t>(got));
    if (sink.size() > max_output) failure = "output too large";
  } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
    p.close_end(0);
  }
}

// Writes the next chunk of data to the child's stdin; closes it once everything is written or
// the child stopped reading.
void feed_stdin(Pipe& in, const std::string& data, size_t& written) {
  ssize_t w = ::write(in.fd[1], data.data() + written, data.size() - written);
  if (w > 0) written += static_cast<size_t>(w);
  if (w < 0 && errno != EAGAIN && errno != EINTR) written = data.size();
  if (written >= data.size()) in.close_end(1);
}

// Feeds stdin_data and collects stdout and stderr into result until both close. Returns why it
// stopped early (timeout, poll failure, output too large), or "" when it did not.
std::string exchange_io(ChildPipes& pipes, const CommandOptions& options, CommandResult& result) {
  Pipe& in = pipes.in;
  size_t written = 0;
  if (options.stdin_data.empty()) in.close_end(1);
  ::fcntl(in.fd[1], F_SETFL, O_NONBLOCK);
  const int64_t deadline = mono_ns() + std::chrono::nanoseconds(options.timeout).count();
  std::string failure;
  while (pipes.out.fd[0] >= 0 || pipes.err.fd[0] >= 0) {
    pollfd fds[3];
    int nfds = 0;
    int idx_out = -1, idx_err = -1, idx_in = -1;
    if (pipes.out.fd[0] >= 0) fds[idx_out = nfds++] = {pipes.out.fd[0], POLLIN, 0};
    if (pipes.err.fd[0] >= 0) fds[idx_err = nfds++] = {pipes.err.fd[0], POLLIN, 0};
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
    drain_output(fds, idx_out, pipes.out, result.out, options.max_output, failure);
    drain_output(fds, idx_err, pipes.err, result.err, options.max_output, failure);
    if (!failure.empty()) break;
    if (idx_in >= 0 && (fds[idx_in].revents & (POLLOUT | POLLERR | POLLHUP))) {
      feed_stdin(in, options.stdin_data, written);
    }
  }
  return failure;
}

// Waits for the child to end (retrying on EINTR) and says how it ended.
ExitInfo reap_command(pid_t pid) {
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  ExitInfo ended;
  if (WIFSIGNALED(st)) {
    ended.signaled = true;
    ended.signal = WTERMSIG(st);
  } else {
    ended.code = WEXITSTATUS(st);
  }
  return ended;
}

}  // namespace

Expected<CommandResult> run_command(const std::vector<std::string>& argv,
                                    const CommandOptions& options) {
  if (argv.empty()) return Error{"run_command: empty argv"};
  const ExecImage image = make_exec_image(argv, options);
  ChildPipes pipes;
  if (!open_child_pipes(pipes)) {
    return Error{fmt::format("{}: pipe failed: {}", argv[0], std::strerror(errno))};
  }
  pid_t pid = ::fork();
  if (pid < 0) return Error{fmt::format("{}: fork failed: {}", argv[0], std::strerror(errno))};
  if (pid == 0) exec_child(image, pipes);
  ::setpgid(pid, pid);
  close_child_ends(pipes);
  if (Status exec = await_exec(pid, argv[0], image.cwd, pipes.status); !exec) return exec.error();

  CommandResult result;
  const std::string failure = exchange_io(pipes, options, result);
  pipes.in.close_all();
  if (!failure.empty()) ::kill(-pid, SIGKILL);
  const ExitInfo ended = reap_command(pid);
  if (!failure.empty()) return Error{fmt::format("{}: {}", describe_argv(argv), failure)};
  result.exit = ended;
  return result;
}

}  // namespace ib
