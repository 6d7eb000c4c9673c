// What the local and Slurm launchers share to run a disaggregated deployment (launcher.h,
// RoleSpec): a server that is one child process, the deployment as a set of them (workers, then
// the router) that is alive while every role is and stops the router first, and the names and
// addresses the roles hand each other.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/process.h"
#include "launch/launcher.h"

namespace ib::launch {

/// A server that is one child process of ours (a local server, or the srun of a Slurm job step):
/// alive while the process runs; stop() is SIGTERM to its process group, then SIGKILL.
class ChildServer : public Server {
 public:
  ChildServer(ChildProcess child, std::string url, std::filesystem::path log)
      : child_(std::move(child)), url_(std::move(url)), log_(std::move(log)) {}
  ~ChildServer() override { stop(std::chrono::milliseconds(10000)); }

  std::string url() const override { return url_; }
  std::optional<std::string> check_alive() override;
  std::string stop(std::chrono::milliseconds grace) override;
  std::filesystem::path log_path() const override { return log_; }
  std::vector<int> pids() const override { return {static_cast<int>(child_.pid())}; }

 private:
  ChildProcess child_;
  std::string url_;
  std::filesystem::path log_;
  bool stopped_ = false;
  std::string how_;
};

/// A disaggregated deployment: its roles' servers, workers first and the router last. Its URL is
/// the router's; it is alive while every role is ("decode worker exited (decode-0: signal 9
/// (Killed))"); it stops the router first, then the workers, then runs `after_stop` (the Slurm
/// launcher cancels the job's allocation there) and adds what that says.
class TopologyServer : public Server {
 public:
  ~TopologyServer() override { stop(std::chrono::milliseconds(10000)); }

  void add(RoleProcess info, std::unique_ptr<Server> server);
  void set_after_stop(std::function<std::string()> f) { after_stop_ = std::move(f); }
  /// Extra words for check_alive's message of a role that died ("on node2").
  void set_where(std::function<std::string(const RoleProcess&)> f) { where_ = std::move(f); }

  std::string url() const override { return parts_.empty() ? "" : parts_.back().server->url(); }
  std::optional<std::string> check_alive() override;
  std::string stop(std::chrono::milliseconds grace) override;
  /// The log of a role that died (its tail says why), else the router's.
  std::filesystem::path log_path() const override;
  std::vector<int> pids() const override;
  std::vector<RoleProcess> roles() const override;
  /// Whether some role's process still runs.
  bool any_alive() const;

 private:
  struct Part {
    RoleProcess info;
    std::unique_ptr<Server> server;
  };
  mutable std::vector<Part> parts_;  // mutable: asking whether a role lives reaps its exit
  std::function<std::string()> after_stop_;
  std::function<std::string(const RoleProcess&)> where_;
  bool stopped_ = false;
  std::string how_;
};

/// `text` with every `from` replaced by `to`.
std::string replaced(std::string text, std::string_view from, std::string_view to);

/// server.log -> server.prefill-0.log
std::filesystem::path role_log(const std::filesystem::path& log, const std::string& label);

/// The URLs of the started roles of `role`, comma-separated ({prefill-urls}, {decode-urls}).
std::string joined_urls(const std::vector<RoleProcess>& roles, const std::string& role);

/// The roles in start order: the workers (as listed), then the router.
std::vector<const RoleSpec*> start_order(const std::vector<RoleSpec>& roles);

/// `message` with the tail of `log` after it.
std::string with_log_tail(std::string message, const std::filesystem::path& log);

}  // namespace ib::launch
