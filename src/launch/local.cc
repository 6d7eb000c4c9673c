#include "launch/local.h"

#include <fmt/format.h>

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

class LocalLauncher : public Launcher {
 public:
  explicit LocalLauncher(std::string host) : host_(std::move(host)) {}
  std::string name() const override { return "local"; }
  LauncherCaps caps() const override { return {true, true, true}; }

  Expected<std::unique_ptr<Server>> start(const ServerSpec& spec) override {
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
