#include "launch/local.h"

#include <fmt/format.h>

#include "core/process.h"
#include "launch/topology.h"

namespace ib::launch {

namespace {

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
    auto server = std::make_unique<ChildServer>(std::move(*child), url, spec.log_path);
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
    const std::vector<const RoleSpec*> order = start_order(spec.roles);
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
      } else {
        // One node, this machine: a worker's only rank.
        for (std::string& arg : one.argv) {
          arg = replaced(replaced(replaced(arg, "{node-rank}", "0"), "{nnodes}", "1"),
                         "{leader-host}", host_);
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
