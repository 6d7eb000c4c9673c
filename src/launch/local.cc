#include "launch/local.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string_view>

#include "core/process.h"

namespace ib::launch {

namespace {

std::string with_log_tail(std::string message, const std::filesystem::path& log) {
  std::string tail = file_tail(log, 2048);
  if (!tail.empty())
    message += fmt::format("\n--- {} (tail) ---\n{}", log.filename().string(), tail);
  return message;
}

class LocalServer : public Server {
 public:
  LocalServer(ChildProcess child, std::string url, std::filesystem::path log)
      : child_(std::move(child)), url_(std::move(url)), log_(std::move(log)) {}
  ~LocalServer() override { stop(std::chrono::milliseconds(10000)); }

  std::string url() const override { return url_; }
  std::optional<std::string> check_alive() override {
    if (stopped_) return std::string("server stopped");
    if (auto exit = child_.poll()) return fmt::format("server exited ({})", exit->describe());
    return std::nullopt;
  }
  std::string stop(std::chrono::milliseconds grace) override {
    if (!stopped_) {
      stopped_ = true;
      bool was_running = !child_.poll().has_value();
      ExitInfo e = child_.stop(grace);
      how_ = was_running ? fmt::format("stopped ({})", e.describe())
                         : fmt::format("had exited ({})", e.describe());
    }
    return how_;
  }
  std::filesystem::path log_path() const override { return log_; }
  std::vector<int> pids() const override { return {static_cast<int>(child_.pid())}; }

 private:
  ChildProcess child_;
  std::string url_;
  std::filesystem::path log_;
  bool stopped_ = false;
  std::string how_;
};

// A disaggregated deployment: its roles' servers, workers first and the router last. Its URL is
// the router's; it is alive while every role is; it stops the router first, then the workers.
class TopologyServer : public Server {
 public:
  struct Part {
    RoleProcess info;
    std::unique_ptr<Server> server;
  };
  ~TopologyServer() override { stop(std::chrono::milliseconds(10000)); }

  void add(RoleProcess info, std::unique_ptr<Server> server) {
    info.pids = server->pids();
    parts_.push_back(Part{std::move(info), std::move(server)});
  }

  std::string url() const override { return parts_.empty() ? "" : parts_.back().server->url(); }

  // "decode worker exited (decode-0: signal 9 (Killed))": which role, which process, how.
  std::optional<std::string> check_alive() override {
    for (Part& p : parts_) {
      auto gone = p.server->check_alive();
      if (!gone) continue;
      std::string how = *gone;
      for (const char* prefix : {"server exited (", "server "}) {
        if (how.starts_with(prefix)) {
          how = how.substr(std::string_view(prefix).size());
          if (!how.empty() && how.back() == ')' && std::string_view(prefix).ends_with('(')) {
            how.pop_back();
          }
          break;
        }
      }
      const std::string who = p.info.role == "router" ? "router" : p.info.role + " worker";
      return fmt::format("{} exited ({}: {})", who, p.info.label, how);
    }
    return std::nullopt;
  }

  std::string stop(std::chrono::milliseconds grace) override {
    if (stopped_) return how_;
    stopped_ = true;
    std::vector<std::string> parts;
    for (auto it = parts_.rbegin(); it != parts_.rend(); ++it) {
      parts.push_back(fmt::format("{} {}", it->info.label, it->server->stop(grace)));
    }
    how_ = fmt::format("{}", fmt::join(parts, "; "));
    return how_;
  }

  // The log of a role that died (its tail says why), else the router's.
  std::filesystem::path log_path() const override {
    for (Part& p : parts_) {
      if (p.server->check_alive()) return p.server->log_path();
    }
    return parts_.empty() ? std::filesystem::path() : parts_.back().server->log_path();
  }
  std::vector<int> pids() const override {
    std::vector<int> out;
    for (const Part& p : parts_) {
      for (int pid : p.server->pids()) out.push_back(pid);
    }
    return out;
  }
  std::vector<RoleProcess> roles() const override {
    std::vector<RoleProcess> out;
    for (const Part& p : parts_) out.push_back(p.info);
    return out;
  }

 private:
  mutable std::vector<Part> parts_;  // mutable: asking whether a role lives reaps its exit
  bool stopped_ = false;
  std::string how_;
};

// `text` with every `from` replaced by `to`.
std::string replaced(std::string text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// server.log -> server.prefill-0.log
std::filesystem::path role_log(const std::filesystem::path& log, const std::string& label) {
  if (log.empty()) return log;
  return log.parent_path() / (log.stem().string() + "." + label + log.extension().string());
}

std::string joined_urls(const std::vector<RoleProcess>& roles, const std::string& role) {
  std::vector<std::string> urls;
  for (const auto& r : roles) {
    if (r.role == role) urls.push_back(r.url);
  }
  return fmt::format("{}", fmt::join(urls, ","));
}

class LocalLauncher : public Launcher {
 public:
  explicit LocalLauncher(std::string host) : host_(std::move(host)) {}
  std::string name() const override { return "local"; }
  LauncherCaps caps() const override { return {true, true, true}; }

  Expected<std::unique_ptr<Server>> start(const ServerSpec& spec) override {
    if (!spec.roles.empty()) return start_topology(spec);
    if (spec.argv.empty()) return Error{"local launcher: the server command is empty"};
    auto port = pick_free_port();
    if (!port) return port.error();
    SpawnOptions so;
    so.argv = substitute_address(spec.argv, host_, *port);
    so.env_set = spec.env;
    so.log_path = spec.log_path;
    so.die_with_parent = true;
    if (!spec.log_path.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(spec.log_path.parent_path(), ec);
    }
    auto child = ChildProcess::spawn(so);
    if (!child) return child.error();
    const std::string url = fmt::format("http://{}:{}", host_, *port);
    auto server = std::make_unique<LocalServer>(std::move(*child), url, spec.log_path);
    Status healthy = wait_healthy(url, spec.health_path, spec.startup_timeout,
                                  [&]() { return server->check_alive(); });
    if (!healthy.ok()) {
      server->stop(std::chrono::milliseconds(3000));
      return Error{with_log_tail(healthy.error().message, spec.log_path)};
    }
    return std::unique_ptr<Server>(std::move(server));
  }

 private:
  // Every worker, each healthy before the next starts; then the router, given their URLs. A role
  // that fails stops the ones started before it, and the error names it.
  Expected<std::unique_ptr<Server>> start_topology(const ServerSpec& spec) {
    auto topology = std::make_unique<TopologyServer>();
    std::vector<const RoleSpec*> order;
    for (const RoleSpec& r : spec.roles) {
      if (r.role != "router") order.push_back(&r);
    }
    for (const RoleSpec& r : spec.roles) {
      if (r.role == "router") order.push_back(&r);
    }
    for (const RoleSpec* r : order) {
      ServerSpec one;
      one.name = spec.name + "/" + r->label();
      one.argv = r->argv;
      if (r->role == "router") {
        const auto started = topology->roles();
        const std::string prefill = joined_urls(started, "prefill");
        const std::string decode = joined_urls(started, "decode");
        for (std::string& arg : one.argv) {
          arg = replaced(replaced(arg, "{prefill-urls}", prefill), "{decode-urls}", decode);
        }
      }
      one.env = r->env;
      one.health_path = r->health_path;
      one.log_path = role_log(spec.log_path, r->label());
      one.startup_timeout = spec.startup_timeout;
      one.gpus = r->gpus;
      auto server = start(one);
      if (!server) {
        topology->stop(std::chrono::milliseconds(3000));
        return Error{fmt::format("{} did not start: {}", r->label(), server.error().message)};
      }
      RoleProcess info;
      info.label = r->label();
      info.role = r->role;
      info.url = (*server)->url();
      info.log = one.log_path;
      info.gpus = r->gpus;
      topology->add(std::move(info), std::move(*server));
    }
    return std::unique_ptr<Server>(std::move(topology));
  }

  std::string host_;
};

class EndpointServer : public Server {
 public:
  explicit EndpointServer(std::string url) : url_(std::move(url)) {}
  std::string url() const override { return url_; }
  std::optional<std::string> check_alive() override { return std::nullopt; }
  std::string stop(std::chrono::milliseconds) override { return "left running (endpoint)"; }
  std::filesystem::path log_path() const override { return {}; }

 private:
  std::string url_;
};

class EndpointLauncher : public Launcher {
 public:
  explicit EndpointLauncher(std::string url) : url_(std::move(url)) {
    while (!url_.empty() && url_.back() == '/') url_.pop_back();
  }
  std::string name() const override { return "endpoint"; }
  LauncherCaps caps() const override { return {false, false, false}; }
  Expected<std::unique_ptr<Server>> start(const ServerSpec& spec) override {
    Status healthy = wait_healthy(url_, spec.health_path, spec.startup_timeout, nullptr);
    if (!healthy.ok()) return healthy.error();
    return std::unique_ptr<Server>(std::make_unique<EndpointServer>(url_));
  }

 private:
  std::string url_;
};

}  // namespace

std::unique_ptr<Launcher> make_local_launcher(std::string host) {
  return std::make_unique<LocalLauncher>(std::move(host));
}

std::unique_ptr<Launcher> make_endpoint_launcher(std::string url) {
  return std::make_unique<EndpointLauncher>(std::move(url));
}

}  // namespace ib::launch
