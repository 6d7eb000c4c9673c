#include "launch/session.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <set>

#include "core/files.h"
#include "core/json_text.h"
#include "core/process.h"
#include "core/redact.h"

namespace ib::launch {

namespace fs = std::filesystem;

namespace {

// The server printed what it was given (vLLM logs its arguments, --api-key included): the log we
// keep has every credential hidden (core/redact.h). Rewritten once the server is gone.
Status scrub_log(const fs::path& log) {
  if (log.empty()) return Status::Ok();
  auto text = read_file(log);
  if (!text) return Status::Ok();  // no log: nothing to hide
  std::string clean = redact_text(*text);
  if (clean == *text) return Status::Ok();
  return write_file_atomic(log, clean);
}

// Folders whose files the tracer counts as the engine's (besides site-packages, dist-packages):
// the serve program's virtual-environment or conda prefix, on the PATH the server will see.
std::vector<std::string> engine_prefixes(const std::vector<std::string>& argv,
                                         const std::map<std::string, std::string>& env) {
  if (argv.empty()) return {};
  const auto it = env.find("PATH");
  const char* inherited = std::getenv("PATH");
  const std::string path = it != env.end() ? it->second : (inherited ? inherited : "");
  std::string prefix = verify::program_install_prefix(argv[0], path);
  if (prefix.empty()) return {};
  return {std::move(prefix)};
}

}  // namespace

boost::json::array ExpectOutcome::to_json() const {
  boost::json::array a;
  for (const auto& r : results) a.push_back(r.to_json());
  for (const auto& u : unobservable) {
    boost::json::object o;
    o["assertion"] = u.substr(0, u.find(": "));
    o["passed"] = nullptr;
    o["evidence"] = u.find(": ") == std::string::npos ? u : u.substr(u.find(": ") + 2);
    o["unobservable"] = true;
    a.push_back(std::move(o));
  }
  return a;
}

Expected<std::unique_ptr<ServerSession>> ServerSession::start(Launcher& launcher, ServerSpec spec,
                                                              SessionOptions o) {
  std::unique_ptr<ServerSession> s(new ServerSession());
  s->launcher_ = launcher.name();
  s->caps_ = launcher.caps();
  s->dir_ = o.dir;
  s->watch_ = o.watch;
  std::error_code ec;
  fs::create_directories(o.dir, ec);
  if (ec) return Error{fmt::format("{}: cannot create: {}", o.dir.string(), ec.message())};
  if (s->caps_.has_log) spec.log_path = o.dir / "server.log";
  spec.startup_timeout = o.startup_timeout;
  // Environment tracing: which of the recipe's variables the server processes read, and what
  // they wrote into the engine's installed files (also with no variable to watch: the merge
  // gate's check 7 reads the writes of every run). Only a process started on this machine can be
  // traced.
  s->trace_dir_ = o.dir / "envtrace";
  if (o.env_trace) {
    // A disaggregated deployment on other nodes: each role traced where it runs.
    const bool by_role = !spec.roles.empty() && s->caps_.can_trace_roles;
    if (!s->caps_.can_trace_env && !by_role) {
      s->tracing_off_ = fmt::format(
          "environment tracing off: the {} launcher cannot trace a server's reads", s->launcher_);
    } else if (auto assets = verify::find_env_trace_assets(); assets) {
      if (by_role) {
        s->remote_roles_ = true;
        for (RoleSpec& r : spec.roles) {
          verify::add_env_trace(*assets, s->trace_dir_ / r.label(), o.watch, &r.env);
        }
      } else {
        verify::add_env_trace(*assets, s->trace_dir_, o.watch, &spec.env,
                              engine_prefixes(spec.argv, spec.env));
        // A disaggregated deployment: every role's processes, each with its own environment.
        for (RoleSpec& r : spec.roles) {
          verify::add_env_trace(*assets, s->trace_dir_, o.watch, &r.env,
                                engine_prefixes(r.argv, r.env));
        }
      }
      s->tracing_ = true;
    } else {
      s->tracing_off_ = fmt::format("environment tracing off: {}", assets.error().message);
    }
    // Said where it matters: a recipe variable's read cannot be judged.
    if (!s->tracing_off_.empty() && !o.watch.empty()) s->notes_.push_back(s->tracing_off_);
  }
  auto server = launcher.start(spec);
  if (!server) {
    (void)scrub_log(spec.log_path);
    // The processes that did start wrote trace records with their command lines.
    if (s->tracing_) (void)verify::scrub_env_trace(s->trace_dir_);
    return Error{redact_text(server.error().message)};
  }
  s->server_ = std::move(*server);
  s->observe(o);
  return s;
}

void ServerSession::observe(const SessionOptions& o) {
  std::vector<verify::RegexProbe> probes = o.probes;
  if (o.expect) probes.insert(probes.end(), o.expect->probes.begin(), o.expect->probes.end());
  // A disaggregated deployment: every role's configuration from its own log; the first decode
  // worker's is the deployment's (it serves the tokens).
  roles_ = server_->roles();
  fs::path log_path = server_->log_path();
  for (const RoleProcess& r : roles_) {
    auto text = read_file(r.log);
    if (!text) continue;
    role_effective_[r.label] = verify::probe_effective_config(*text, probes);
    write_json(dir_ / fmt::format("effective_config.{}.json", r.label),
               role_effective_[r.label].to_json());
  }
  for (const RoleProcess& r : roles_) {
    if (r.role == "decode" && !r.url.empty()) {  // a worker's rank 0 (the one that serves)
      log_path = r.log;
      break;
    }
  }
  std::string log;
  if (!log_path.empty()) {
    if (auto text = read_file(log_path); text) {
      log = std::move(*text);
      log_available_ = true;
    }
  }
  effective_ = verify::probe_effective_config(log, probes);
  write_json(dir_ / "effective_config.json", effective_.to_json());
  if (!o.expect || o.expect->empty()) return;

  const verify::ExpectSpec& e = *o.expect;
  if (log_available_) {
    expect_.results = verify::check_expect(e, log, effective_);
  } else {
    const std::string why = fmt::format("the {} launcher has no server log to check", launcher_);
    for (const auto& r : e.log_contains)
      expect_.unobservable.push_back("log-contains /" + r + "/: " + why);
    for (const auto& r : e.log_absent)
      expect_.unobservable.push_back("log-absent /" + r + "/: " + why);
    for (const auto& [k, v] : e.settings) {
      expect_.unobservable.push_back(fmt::format("settings.{} == {}: {}", k, json_text(v), why));
    }
  }
  if (!e.env_read.empty() || !e.env_not_read.empty()) {
    if (tracing_) {
      auto trace = verify::collect_env_trace(trace_dir_, watch_);
      auto env = verify::check_env_expect(e, &trace);
      expect_.results.insert(expect_.results.end(), env.begin(), env.end());
    } else {
      const std::string why =
          caps_.can_trace_env
              ? std::string("environment tracing is off")
              : fmt::format("the {} launcher cannot trace environment reads", launcher_);
      for (const auto& n : e.env_read) expect_.unobservable.push_back("env-read " + n + ": " + why);
      for (const auto& n : e.env_not_read) {
        expect_.unobservable.push_back("env-not-read " + n + ": " + why);
      }
    }
  }
  for (const auto& [role, spec] : e.roles) check_role_expect(role, spec);
  for (const auto& r : expect_.results) {
    if (!r.passed) {
      expect_.failure = fmt::format("expect failed: {} ({})", r.assertion, r.evidence);
      break;
    }
  }
  write_json(dir_ / "expect.json", expect_.to_json());
}

std::map<int, std::string> ServerSession::role_pids() const {
  std::map<int, std::string> role_of;
  for (const RoleProcess& r : roles_) {
    for (int pid : r.pids) {
      role_of[pid] = r.role;
      for (const auto& p : process_group_members(pid)) role_of[static_cast<int>(p.pid)] = r.role;
    }
  }
  return role_of;
}

// A role's own assertions (expect: {prefill: {...}}), on every process of that role: its log, its
// effective configuration, its environment reads; each result named by the process's label.
void ServerSession::check_role_expect(const std::string& role, const verify::ExpectSpec& spec) {
  bool any = false;
  for (const RoleProcess& r : roles_) {
    if (r.role != role) continue;
    any = true;
    std::vector<verify::AssertionResult> results;
    if (auto log = read_file(r.log)) {
      results = verify::check_expect(spec, *log, role_effective_[r.label]);
    } else {
      expect_.unobservable.push_back(fmt::format(
          "{}: log-contains, log-absent, settings: its log could not be read", r.label));
    }
    if (!spec.env_read.empty() || !spec.env_not_read.empty()) {
      if (tracing_) {
        const auto trace = verify::collect_env_trace(trace_dir_, watch_);
        const auto mine = verify::only_role(
            trace, remote_roles_ ? remote_role_pids(nullptr, nullptr) : role_pids(), role);
        auto env = verify::check_env_expect(spec, &mine);
        results.insert(results.end(), env.begin(), env.end());
      } else {
        expect_.unobservable.push_back(
            fmt::format("{}: env-read, env-not-read: environment tracing is off", r.label));
      }
    }
    for (auto& res : results) {
      res.assertion = r.label + ": " + res.assertion;
      expect_.results.push_back(std::move(res));
    }
  }
  if (!any) {
    expect_.unobservable.push_back(fmt::format(
        "expect.{}: this server has no {} process (not a disaggregated deployment)", role, role));
  }
}

void ServerSession::write_json(const fs::path& file, const boost::json::value& v) {
  if (auto s = write_file_atomic(file, json_text(redacted(v)) + "\n"); !s) {
    write_errors_.push_back(s.error().message);
  }
}

std::string ServerSession::stop(std::chrono::milliseconds grace) {
  if (stopped_) return ended_;
  stopped_ = true;
  // The server's processes as they run, before they are stopped: one that left no trace record
  // (a static or setuid binary, one that lost LD_PRELOAD) is a blind spot of the tracer.
  std::vector<verify::TracedProcess> running;
  std::map<int, std::string> role_of;  // a role's processes as they run: pid -> role
  std::map<std::string, std::vector<std::string>> listing;  // role label -> its node's processes
  if (tracing_ && remote_roles_) {
    // Each role's node, listed there while the deployment runs: a descendant of a traced process
    // that left no record of its own is a blind spot, as a local one is.
    if (auto listed = server_->role_node_processes()) listing = std::move(*listed);
    role_of = remote_role_pids(&listing, &running);
  } else if (tracing_) {
    role_of = role_pids();
    for (int pid : server_->pids()) {
      for (const auto& p : process_group_members(pid)) {
        verify::TracedProcess t;
        t.pid = static_cast<int>(p.pid);
        t.ppid = static_cast<int>(p.ppid);
        t.exe = p.exe;
        t.cmdline = p.cmdline;
        running.push_back(std::move(t));
      }
    }
  }
  ended_ = server_->stop(grace);
  if (auto st = scrub_log(server_->log_path()); !st) write_errors_.push_back(st.error().message);
  for (const RoleProcess& r : roles_) {
    if (auto st = scrub_log(r.log); !st) write_errors_.push_back(st.error().message);
  }
  if (tracing_) {
    env_reads_ = verify::collect_env_trace(trace_dir_, watch_, running);
    write_json(dir_ / "env_reads.json", env_reads_->to_json());
    if (!roles_.empty()) {
      role_reads_ = verify::reads_by_role(*env_reads_, watch_, role_of);
      if (remote_roles_) remote_role_reads(role_of, listing);
      write_json(dir_ / "env_reads_by_role.json", role_reads_->to_json());
    }
  }
  return ended_;
}

std::map<int, std::string> ServerSession::remote_role_pids(
    const std::map<std::string, std::vector<std::string>>* listing,
    std::vector<verify::TracedProcess>* untraced) const {
  std::map<int, std::string> role_of;
  for (const RoleProcess& r : roles_) {
    const auto mine = verify::collect_env_trace(trace_dir_ / r.label, watch_);
    std::set<int> traced;
    for (const auto& [pid, p] : mine.processes) {
      role_of[pid] = r.role;
      traced.insert(pid);
    }
    if (listing == nullptr || untraced == nullptr) continue;
    const auto it = listing->find(r.label);
    if (it == listing->end()) continue;
    // The node's process tree: the descendants of the role's traced processes.
    std::map<int, std::vector<std::pair<int, std::string>>> children;
    for (const std::string& line : it->second) {
      int pid = 0, ppid = 0, used = 0;
      if (std::sscanf(line.c_str(), " %d %d %n", &pid, &ppid, &used) < 2) continue;
      children[ppid].emplace_back(pid, line.substr(static_cast<size_t>(used)));
    }
    std::vector<int> todo(traced.begin(), traced.end());
    std::set<int> seen(traced.begin(), traced.end());
    while (!todo.empty()) {
      const int pid = todo.back();
      todo.pop_back();
      for (const auto& [child, cmdline] : children[pid]) {
        if (!seen.insert(child).second) continue;
        todo.push_back(child);
        if (traced.count(child) != 0) continue;
        verify::TracedProcess t;
        t.pid = child;
        t.ppid = pid;
        t.cmdline = cmdline;
        untraced->push_back(std::move(t));
        role_of[child] = r.role;
      }
    }
  }
  return role_of;
}

void ServerSession::remote_role_reads(
    const std::map<int, std::string>& role_of,
    const std::map<std::string, std::vector<std::string>>& listing) {
  std::map<std::string, bool> traced;  // role -> some process of it left a record
  for (const RoleProcess& r : roles_) traced.emplace(r.role, false);
  for (const auto& [pid, role] : role_of) {
    if (env_reads_ && env_reads_->processes.count(pid) && env_reads_->processes.at(pid).traced) {
      traced[role] = true;
    }
  }
  for (const RoleProcess& r : roles_) {
    auto& reads = role_reads_->read[r.role];
    for (const auto& var : watch_) reads.emplace(var, false);
    auto& blind = role_reads_->blind_spots[r.role];
    if (!traced[r.role]) {
      blind.push_back(fmt::format(
          "no process of {} (on {}) left a trace record: the tracer did not load there (the "
          "inferbench installation must be visible on the node)",
          r.label, r.node.empty() ? std::string("its node") : r.node));
    }
    if (!listing.count(r.label)) {
      blind.push_back(
          fmt::format("the processes of {} (on {}) could not be listed: one that did "
                      "not load the tracer would not be seen",
                      r.label, r.node.empty() ? std::string("its node") : r.node));
    }
  }
}

std::optional<std::map<std::string, bool>> ServerSession::env_read_flags() const {
  if (!env_reads_) return std::nullopt;
  std::map<std::string, bool> read;
  for (const auto& name : watch_) {
    auto it = env_reads_->reads.find(name);
    read[name] = it != env_reads_->reads.end() && !it->second.empty();
  }
  return read;
}

ServerSession::~ServerSession() {
  if (server_ && !stopped_) stop();
}

}  // namespace ib::launch
