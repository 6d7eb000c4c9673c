#include "launch/slurm.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <optional>
#include <thread>

#include "core/clock.h"
#include "core/command.h"
#include "core/files.h"
#include "core/interrupt.h"
#include "core/process.h"
#include "core/redact.h"
#include "launch/slurm_jobs.h"
#include "launch/slurm_topology.h"
#include "telemetry/power.h"

namespace ib::launch {

namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr milliseconds kCommandTimeout{30'000};     // one sbatch / scontrol / scancel call
constexpr milliseconds kAllocationPoll{500};        // scontrol while the job is pending
constexpr milliseconds kAliveCheckInterval{1'000};  // scontrol while waiting for health
constexpr milliseconds kStopPoll{200};
constexpr milliseconds kScancelWait{30'000};  // after each escalation of stop()

bool is_shell_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])) != 0) return false;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '_') return false;
  }
  return true;
}

bool has_control_char(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
  }
  return false;
}

/// An #SBATCH argument: sbatch splits directive lines at whitespace, honours double quotes with
/// \" and \\ escapes inside, and treats an unquoted # as a comment. A line cannot hold a newline.
Expected<std::string> sbatch_word(std::string_view what, std::string_view value) {
  if (has_control_char(value)) {
    return Error{
        fmt::format("slurm: {} contains a control character (newline, tab, ...), which an "
                    "#SBATCH line cannot hold: {:?}",
                    what, value)};
  }
  std::string out = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
  return out;
}

}  // namespace

namespace jobs {

/// Job names are labels in squeue; keep them to characters no tool mangles.
std::string job_name(std::string_view name) {
  std::string out = "ib-";
  for (char c : name) {
    if (out.size() >= 64) break;
    out += std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-'
               ? c
               : '_';
  }
  return out;
}

/// "Key=value" from one line of `scontrol -o show ...` output; the value ends at a space.
std::string field(std::string_view line, std::string_view key) {
  const std::string needle = fmt::format("{}=", key);
  size_t pos = 0;
  while ((pos = line.find(needle, pos)) != std::string_view::npos) {
    if (pos == 0 || line[pos - 1] == ' ') {
      size_t begin = pos + needle.size();
      size_t end = line.find_first_of(" \n", begin);
      return std::string(line.substr(begin, end == std::string_view::npos ? end : end - begin));
    }
    pos += needle.size();
  }
  return {};
}

/// Job states after which the job has left the queue (squeue's "job state codes").
bool is_terminal(std::string_view state) {
  for (std::string_view s : {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL",
                             "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY"}) {
    if (state == s) return true;
  }
  return false;
}

std::string JobInfo::describe(const std::string& id) const {
  if (!known) return fmt::format("slurm job {} no longer known to slurmctld", id);
  std::string s = fmt::format("slurm job {} state {}", id, state);
  if (!exit_code.empty() && exit_code != "0:0") s += fmt::format(", exit code {}", exit_code);
  if (!reason.empty() && reason != "None") s += fmt::format(", reason {}", reason);
  return s;
}

Expected<JobInfo> query_job(const std::string& id) {
  CommandOptions co;
  co.timeout = kCommandTimeout;
  auto r = run_command({"scontrol", "-o", "show", "job", id}, co);
  if (!r) return r.error();
  JobInfo info;
  if (!r->ok()) {
    if (r->err.find("Invalid job id") != std::string::npos) return info;
    return Error{
        fmt::format("scontrol show job {} failed ({}): {}", id, r->exit.describe(), r->err)};
  }
  info.known = true;
  info.state = field(r->out, "JobState");
  info.batch_host = field(r->out, "BatchHost");
  info.node_list = field(r->out, "NodeList");
  info.reason = field(r->out, "Reason");
  info.exit_code = field(r->out, "ExitCode");
  if (info.state.empty()) {
    return Error{fmt::format("scontrol show job {}: no JobState in {:?}", id, r->out)};
  }
  return info;
}

/// The address of a node as Slurm reaches it (NodeAddr), resolved to a numeric address for a
/// URL (IPv6 in brackets).
Expected<std::string> node_address(const std::string& node) {
  CommandOptions co;
  co.timeout = kCommandTimeout;
  std::string addr = node;
  auto r = run_command({"scontrol", "-o", "show", "node", node}, co);
  if (r && r->ok()) {
    std::string a = field(r->out, "NodeAddr");
    if (!a.empty()) addr = a;
  }
  for (int family : {AF_INET, AF_INET6}) {
    addrinfo hints{};
    hints.ai_family = family;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (::getaddrinfo(addr.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) continue;
    char buf[INET6_ADDRSTRLEN] = {};
    const void* src =
        family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr)
            : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(res->ai_addr)->sin6_addr);
    const char* text = ::inet_ntop(family, src, buf, sizeof buf);
    ::freeaddrinfo(res);
    if (text != nullptr) return family == AF_INET ? std::string(text) : fmt::format("[{}]", text);
  }
  return Error{fmt::format("cannot resolve the address {:?} of slurm node {:?}", addr, node)};
}

Expected<CommandResult> scancel(const std::string& id, std::vector<std::string> extra) {
  std::vector<std::string> argv = {"scancel"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back(id);
  CommandOptions co;
  co.timeout = kCommandTimeout;
  return run_command(argv, co);
}

Expected<std::vector<std::string>> expand_hostlist(const std::string& list) {
  CommandOptions co;
  co.timeout = kCommandTimeout;
  auto r = run_command({"scontrol", "show", "hostnames", list}, co);
  if (!r) return r.error();
  if (!r->ok()) {
    return Error{fmt::format("scontrol show hostnames {} failed ({}): {}", list, r->exit.describe(),
                             r->err)};
  }
  std::vector<std::string> out;
  size_t start = 0;
  while (start < r->out.size()) {
    size_t end = r->out.find('\n', start);
    if (end == std::string::npos) end = r->out.size();
    std::string name = r->out.substr(start, end - start);
    while (!name.empty() && (name.back() == '\r' || name.back() == ' ')) name.pop_back();
    if (!name.empty()) out.push_back(std::move(name));
    start = end + 1;
  }
  if (out.empty()) return Error{fmt::format("scontrol show hostnames {}: no node", list)};
  return out;
}

}  // namespace jobs

namespace {

using namespace jobs;  // NOLINT(google-build-using-namespace): this file's own helpers

std::string with_job_log_tail(std::string message, const fs::path& log) {
  std::string tail = file_tail(log);
  if (tail.empty())
    return fmt::format("{}\n(server log {} is empty or missing)", message, log.string());
  return fmt::format("{}\n--- last lines of {} ---\n{}", message, log.string(), tail);
}

class SlurmServer final : public Server {
 public:
  SlurmServer(std::string job_id, fs::path log, bool power)
      : job_id_(std::move(job_id)), log_(std::move(log)), power_(power) {}
  ~SlurmServer() override { stop(); }

  void set_url(std::string url) { url_ = std::move(url); }
  const std::string& job_id() const { return job_id_; }

  std::string url() const override { return url_; }
  fs::path log_path() const override { return log_; }
  std::optional<fs::path> power_dir() const override {
    if (!power_) return std::nullopt;
    return log_.parent_path();
  }

  std::optional<std::string> check_alive() override {
    if (stopped_) return fmt::format("server stopped ({})", stop_description_);
    auto info = query_job(job_id_);
    if (!info) return std::nullopt;  // slurmctld busy or unreachable: not evidence of an exit
    if (info->known && info->state == "RUNNING") return std::nullopt;
    // A job that just ended passes through COMPLETING; its final state says more.
    if (info->known && info->state == "COMPLETING") {
      const int64_t until = mono_ns() + std::chrono::nanoseconds(seconds(5)).count();
      while (mono_ns() < until) {
        std::this_thread::sleep_for(kStopPoll);
        auto again = query_job(job_id_);
        if (!again) break;
        info = std::move(again);
        if (!info->active()) break;
      }
    }
    return fmt::format("server exited ({})", info->describe(job_id_));
  }

  /// Throttled check_alive for wait_healthy(), which polls every 100 ms.
  std::optional<std::string> check_alive_throttled() {
    const int64_t now = mono_ns();
    if (now - last_check_ns_ < std::chrono::nanoseconds(kAliveCheckInterval).count()) {
      return std::nullopt;
    }
    last_check_ns_ = now;
    return check_alive();
  }

  std::string stop(milliseconds grace = milliseconds(10000)) override {
    if (stopped_) return stop_description_;
    stopped_ = true;
    stop_description_ = stop_job(grace);
    return stop_description_;
  }

 private:
  /// Waits until the job is no longer active or `limit` passes; returns the last state seen.
  Expected<JobInfo> wait_gone(milliseconds limit) {
    const int64_t until = mono_ns() + std::chrono::nanoseconds(limit).count();
    while (true) {
      auto info = query_job(job_id_);
      if (info && !info->active()) return info;
      if (mono_ns() >= until) return info;
      std::this_thread::sleep_for(kStopPoll);
    }
  }

  std::string stop_job(milliseconds grace) {
    auto info = query_job(job_id_);
    if (info && !info->active()) return fmt::format("{} (already ended)", info->describe(job_id_));
    // SIGTERM to the server's step only, so the server can shut down cleanly and srun (the
    // batch step) then ends the job with the server's exit status. Signalling srun itself would
    // make it kill the step at once. A pending job has no processes and is simply cancelled.
    const bool running = info && info->state != "PENDING";
    if (running) {
      (void)scancel(job_id_, {"--signal=TERM"});
      auto after = wait_gone(grace);
      if (after && !after->active()) return after->describe(job_id_);
    }
    // Plain scancel: Slurm sends SIGTERM, then SIGKILL after its KillWait.
    auto r = scancel(job_id_, {});
    auto after = wait_gone(kScancelWait);
    if (after && !after->active()) return after->describe(job_id_);
    (void)scancel(job_id_, {"--signal=KILL", "--full"});
    after = wait_gone(kScancelWait);
    if (after && !after->active()) return after->describe(job_id_);
    std::string why =
        !after ? after.error().message : fmt::format("still {}", after->describe(job_id_));
    if (r && !r->ok()) why += fmt::format("; scancel: {}", r->err);
    return fmt::format("slurm job {} did not leave the queue after scancel ({})", job_id_, why);
  }

  std::string job_id_;
  fs::path log_;
  bool power_ = false;
  std::string url_;
  bool stopped_ = false;
  std::string stop_description_;
  int64_t last_check_ns_ = 0;
};

class SlurmLauncher final : public Launcher {
 public:
  explicit SlurmLauncher(SlurmOptions o) : o_(std::move(o)) {}
  std::string name() const override { return "slurm"; }
  // A disaggregated deployment's roles are traced where they run (each in a folder of its own);
  // one server's batch job is not (its shell would be the blind spot).
  LauncherCaps caps() const override { return {true, true, false, true}; }

  Expected<std::unique_ptr<Server>> start(const ServerSpec& spec) override {
    if (spec.log_path.empty())
      return Error{fmt::format("slurm: server {:?} has no log path", spec.name)};
    ServerSpec s = spec;
    s.log_path = fs::absolute(spec.log_path);
    std::error_code ec;
    fs::create_directories(s.log_path.parent_path(), ec);
    if (ec) {
      return Error{fmt::format("slurm: cannot create {}: {}", s.log_path.parent_path().string(),
                               ec.message())};
    }
    const fs::path work_dir =
        o_.work_dir.empty() ? s.log_path.parent_path() : fs::absolute(o_.work_dir);
    fs::create_directories(work_dir, ec);
    if (ec)
      return Error{fmt::format("slurm: cannot create {}: {}", work_dir.string(), ec.message())};

    if (!s.roles.empty()) return start_slurm_topology(s, o_, work_dir);
    // The port is picked here, on the submitting host: a best guess for the compute node.
    auto port = pick_free_port();
    if (!port) return port.error();
    std::map<std::string, std::string> secret_env;
    auto script = slurm_batch_script(s, o_, *port, &secret_env);
    if (!script) return script.error();

    static std::atomic<int> counter{0};
    const fs::path script_path =
        work_dir / fmt::format("{}-{}-{}.sbatch", job_name(s.name), ::getpid(), counter++);
    if (auto w = write_file_atomic(script_path, *script); !w) return w.error();
    fs::permissions(script_path, fs::perms::owner_all, fs::perm_options::replace, ec);
    if (ec) return Error{fmt::format("slurm: chmod {}: {}", script_path.string(), ec.message())};

    CommandOptions co;
    co.cwd = work_dir;
    co.timeout = kCommandTimeout;
    co.env_set = std::move(secret_env);
    auto sub = run_command({"sbatch", "--parsable", script_path.string()}, co);
    if (!sub) return Error{fmt::format("slurm: cannot run sbatch: {}", sub.error().message)};
    if (!sub->ok()) {
      return Error{fmt::format("slurm: sbatch {} failed ({}): {}", script_path.string(),
                               sub->exit.describe(), sub->err)};
    }
    // --parsable prints "jobid" or "jobid;cluster".
    std::string id = sub->out.substr(0, sub->out.find_first_of(";\n"));
    if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos) {
      return Error{fmt::format("slurm: unexpected sbatch output {:?}", sub->out)};
    }
    auto server = std::make_unique<SlurmServer>(id, s.log_path, o_.gpu_power != "off");

    auto node = wait_running(*server);
    if (!node) {
      server->stop(milliseconds(2000));
      return Error{with_job_log_tail(node.error().message, s.log_path)};
    }
    auto host = node_address(*node);
    if (!host) {
      server->stop(milliseconds(2000));
      return Error{with_job_log_tail(host.error().message, s.log_path)};
    }
    server->set_url(fmt::format("http://{}:{}", *host, *port));
    SlurmServer* raw = server.get();
    auto healthy = wait_healthy(server->url(), s.health_path, s.startup_timeout,
                                [raw] { return raw->check_alive_throttled(); });
    if (!healthy) {
      std::string message = healthy.error().message;
      if (message.find("slurm job") == std::string::npos) {
        message += fmt::format(" (slurm job {} on {})", id, *node);
      }
      server->stop(milliseconds(10000));
      return Error{with_job_log_tail(message, s.log_path)};
    }
    return std::unique_ptr<Server>(std::move(server));
  }

 private:
  /// Polls until the job runs; returns its batch host.
  Expected<std::string> wait_running(SlurmServer& server) {
    const std::string& id = server.job_id();
    const int64_t deadline = mono_ns() + std::chrono::nanoseconds(o_.allocation_timeout).count();
    std::string last = "not queried yet";
    while (true) {
      if (interrupt_requested()) {
        return Error{fmt::format("interrupted while waiting for slurm job {} to start", id)};
      }
      auto info = query_job(id);
      if (info) {
        last = info->describe(id);
        if (info->state == "RUNNING" && !info->batch_host.empty()) return info->batch_host;
        if (!info->active() || info->state == "COMPLETING") {
          auto gone = server.check_alive();  // waits out COMPLETING for the final state
          return Error{
              fmt::format("{} during startup", gone.value_or("server exited (" + last + ")"))};
        }
      } else {
        last = info.error().message;
      }
      if (mono_ns() >= deadline) {
        return Error{fmt::format("slurm job {} not running after {} s ({})", id,
                                 o_.allocation_timeout.count(), last)};
      }
      std::this_thread::sleep_for(kAllocationPoll);
    }
  }

  SlurmOptions o_;
};

}  // namespace

namespace {

// What the script cannot be written for: an empty argv, no log path, a backslash in it.
Status check_script_inputs(const ServerSpec& spec, const std::string& log) {
  if (spec.argv.empty())
    return Error{fmt::format("slurm: server {:?} has an empty argv", spec.name)};
  if (log.empty()) return Error{fmt::format("slurm: server {:?} has no log path", spec.name)};
  if (log.find('\\') != std::string::npos) {
    return Error{
        fmt::format("slurm: the log path {:?} contains a backslash, which sbatch --output "
                    "does not take literally",
                    log)};
  }
  return Status::Ok();
}

// One "#SBATCH <option><value>" line, the value as one sbatch word.
Status append_directive(std::string& out, std::string_view what, std::string_view option,
                        std::string_view value) {
  auto word = sbatch_word(what, value);
  if (!word) return word.error();
  out += fmt::format("#SBATCH {}{}\n", option, *word);
  return Status::Ok();
}

// The #SBATCH lines: job name, output, one node and task, GPUs, then the optional time limit,
// partition and account and the extra arguments.
Status append_sbatch_directives(std::string& out, const ServerSpec& spec, const SlurmOptions& o,
                                const std::string& log) {
  // sbatch expands %j, %N, ... in --output; %% is a literal %.
  std::string escaped_log;
  for (char c : log) escaped_log += c == '%' ? std::string("%%") : std::string(1, c);

  out += fmt::format("#SBATCH --job-name={}\n", job_name(spec.name));
  if (auto st = append_directive(out, "the log path", "--output=", escaped_log); !st) return st;
  out += "#SBATCH --nodes=1\n#SBATCH --ntasks=1\n";
  if (spec.gpus > 0) out += fmt::format("#SBATCH --gpus={}\n", spec.gpus);
  struct OptionalDirective {
    std::string_view what, option;
    const std::string& value;  // empty: no line
  };
  const OptionalDirective optional[] = {{"the time limit", "--time=", o.time_limit},
                                        {"the partition", "--partition=", o.partition},
                                        {"the account", "--account=", o.account}};
  for (const OptionalDirective& d : optional) {
    if (d.value.empty()) continue;
    if (auto st = append_directive(out, d.what, d.option, d.value); !st) return st;
  }
  for (const std::string& a : o.extra_sbatch_args) {
    if (auto st = append_directive(out, "an extra sbatch argument", "", a); !st) return st;
  }
  return Status::Ok();
}

// An `export` line per spec.env entry; a secret is only named, its value goes to secret_env.
Status append_env_exports(std::string& out, const ServerSpec& spec,
                          std::map<std::string, std::string>& secret_env) {
  for (const auto& [key, value] : spec.env) {
    if (!is_shell_identifier(key)) {
      return Error{
          fmt::format("slurm: environment variable name {:?} of server {:?} is not a "
                      "shell identifier ([A-Za-z_][A-Za-z0-9_]*)",
                      key, spec.name)};
    }
    if (value.find('\0') != std::string::npos) {
      return Error{fmt::format("slurm: environment variable {} of server {:?} contains a NUL byte",
                               key, spec.name)};
    }
    if (redact_value(key, value) != value) {
      // Inherited from sbatch's environment: the script only names it.
      secret_env[key] = value;
      out += fmt::format("export {}  # secret: from sbatch's environment\n", key);
      continue;
    }
    out += fmt::format("export {}={}\n", key, shell_quote(value));
  }
  return Status::Ok();
}

// GPU power beside the server, on the node that has its GPUs: the sampler runs in the batch
// step until the server's step ends, writing into the log's folder on the shared filesystem;
// the client cuts each point's window out of it. The script stops the sampler itself (an EXIT
// trap) rather than trusting Slurm to: with proctrack/linuxproc or pgid a background process
// of the batch script can outlive the job. Nothing when o.gpu_power is "off".
void append_power_sampler(std::string& out, const ServerSpec& spec, const SlurmOptions& o) {
  if (o.gpu_power == "off") return;
  const fs::path dir = spec.log_path.parent_path();
  const int ms = std::max(100, static_cast<int>(std::lround(o.power_interval_s * 1000)));
  const int secs = std::max(1, static_cast<int>(std::lround(o.power_interval_s)));
  const std::string nvidia = fmt::format(
      "nvidia-smi --query-gpu={} --format=csv,nounits --loop-ms={} > {} 2>/dev/null &\n"
      "ib_sampler=$!\n",
      telemetry::kNvidiaSmiQuery, ms, shell_quote((dir / telemetry::kPowerFileNvidiaSmi).string()));
  const std::string amd = fmt::format(
      "PYTHONUNBUFFERED=1 amd-smi metric -p -u -E -w {} --csv > {} 2>/dev/null &\n"
      "ib_sampler=$!\n",
      secs, shell_quote((dir / telemetry::kPowerFileAmdSmi).string()));
  out += "# GPU power beside the server (inferbench reads it after each point).\n";
  out +=
      fmt::format("date +%z > {}\n", shell_quote((dir / telemetry::kPowerFileUtcOffset).string()));
  if (o.gpu_power == "nvidia-smi") {
    out += nvidia;
  } else if (o.gpu_power == "amd-smi") {
    out += amd;
  } else {
    out += "if command -v nvidia-smi >/dev/null 2>&1; then\n  " + nvidia +
           "elif command -v amd-smi >/dev/null 2>&1; then\n  " + amd + "fi\n";
  }
}

// "srun ... -- argv" with {host} and {port} substituted and each argument quoted. A secret
// argument is not written into the script: it reaches srun from sbatch's environment, as
// IB_SECRET_ARG_<i> in secret_env.
Expected<std::string> srun_command(const ServerSpec& spec, int port,
                                   std::map<std::string, std::string>& secret_env) {
  std::string srun = "srun --ntasks=1 --kill-on-bad-exit=1 --";
  const std::vector<std::string> argv = substitute_address(spec.argv, "0.0.0.0", port);
  const std::vector<std::string> shown = redact_argv(argv);
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.find('\0') != std::string::npos) {
      return Error{fmt::format("slurm: an argument of server {:?} contains a NUL byte", spec.name)};
    }
    srun += ' ';
    if (shown[i] != a) {
      const std::string var = fmt::format("IB_SECRET_ARG_{}", i);
      secret_env[var] = a;
      srun += fmt::format("\"${}\"", var);
      continue;
    }
    srun += shell_quote(a);
  }
  return srun;
}

// srun makes the server a job step: signals from scancel reach it, and the step gets the
// job's resources (GPUs) bound as Slurm configures them. Without a sampler the script becomes
// srun (exec). With one, the script stays to stop it: srun runs in the background so that a
// signal to the script (scancel, a time limit) is forwarded to it at once instead of after it
// exits, the script waits for srun to end, and the EXIT trap then stops the sampler.
void append_server_step(std::string& out, const std::string& srun, const SlurmOptions& o) {
  if (o.gpu_power == "off") {
    out += "exec " + srun + '\n';
    return;
  }
  out += "trap 'if [ -n \"${ib_sampler:-}\" ]; then kill \"$ib_sampler\" 2>/dev/null; fi' EXIT\n";
  out += "trap 'kill -TERM \"$ib_srun\" 2>/dev/null' TERM INT HUP\n";
  out += srun + " &\n";
  out += "ib_srun=$!\n";
  out += "wait \"$ib_srun\"\nib_rc=$?\n";
  // A trapped signal ends `wait` early: wait again until srun has really ended.
  out += "while kill -0 \"$ib_srun\" 2>/dev/null; do wait \"$ib_srun\"; ib_rc=$?; done\n";
  out += "exit \"$ib_rc\"\n";
}

}  // namespace

Expected<std::string> slurm_batch_script(const ServerSpec& spec, const SlurmOptions& o, int port,
                                         std::map<std::string, std::string>* secret_env) {
  std::map<std::string, std::string> unused;
  if (secret_env == nullptr) secret_env = &unused;
  const std::string log = spec.log_path.string();
  if (auto st = check_script_inputs(spec, log); !st) return st.error();
  std::string out = "#!/bin/sh\n";
  out += "# Generated by inferbench (slurm launcher). Every value below is quoted; do not edit.\n";
  if (auto st = append_sbatch_directives(out, spec, o, log); !st) return st.error();
  if (auto st = append_env_exports(out, spec, *secret_env); !st) return st.error();
  append_power_sampler(out, spec, o);
  auto srun = srun_command(spec, port, *secret_env);
  if (!srun) return srun.error();
  append_server_step(out, *srun, o);
  return out;
}

std::unique_ptr<Launcher> make_slurm_launcher(SlurmOptions o) {
  return std::make_unique<SlurmLauncher>(std::move(o));
}

}  // namespace ib::launch
