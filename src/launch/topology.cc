#include "launch/topology.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ib::launch {

std::optional<std::string> ChildServer::check_alive() {
  if (stopped_) return std::string("server stopped");
  if (auto exit = child_.poll()) return fmt::format("server exited ({})", exit->describe());
  return std::nullopt;
}

std::string ChildServer::stop(std::chrono::milliseconds grace) {
  if (!stopped_) {
    stopped_ = true;
    bool was_running = !child_.poll().has_value();
    ExitInfo e = child_.stop(grace);
    how_ = was_running ? fmt::format("stopped ({})", e.describe())
                       : fmt::format("had exited ({})", e.describe());
  }
  return how_;
}

void TopologyServer::add(RoleProcess info, std::unique_ptr<Server> server) {
  info.pids = server->pids();
  parts_.push_back(Part{std::move(info), std::move(server)});
}

std::optional<std::string> TopologyServer::check_alive() {
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
    const std::string where = where_ ? where_(p.info) : std::string();
    return fmt::format("{} exited ({}{}: {})", who, p.info.label, where, how);
  }
  return std::nullopt;
}

std::string TopologyServer::stop(std::chrono::milliseconds grace) {
  if (stopped_) return how_;
  stopped_ = true;
  std::vector<std::string> parts;
  for (auto it = parts_.rbegin(); it != parts_.rend(); ++it) {
    parts.push_back(fmt::format("{} {}", it->info.label, it->server->stop(grace)));
  }
  if (after_stop_) parts.push_back(after_stop_());
  how_ = fmt::format("{}", fmt::join(parts, "; "));
  return how_;
}

std::filesystem::path TopologyServer::log_path() const {
  for (Part& p : parts_) {
    if (p.server->check_alive()) return p.server->log_path();
  }
  return parts_.empty() ? std::filesystem::path() : parts_.back().server->log_path();
}

std::vector<int> TopologyServer::pids() const {
  std::vector<int> out;
  for (const Part& p : parts_) {
    for (int pid : p.server->pids()) out.push_back(pid);
  }
  return out;
}

bool TopologyServer::any_alive() const {
  for (Part& p : parts_) {
    if (!p.server->check_alive()) return true;
  }
  return false;
}

std::vector<RoleProcess> TopologyServer::roles() const {
  std::vector<RoleProcess> out;
  for (const Part& p : parts_) out.push_back(p.info);
  return out;
}

std::string replaced(std::string text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

std::filesystem::path role_log(const std::filesystem::path& log, const std::string& label) {
  if (log.empty()) return log;
  return log.parent_path() / (log.stem().string() + "." + label + log.extension().string());
}

std::string joined_urls(const std::vector<RoleProcess>& roles, const std::string& role) {
  std::vector<std::string> urls;
  for (const auto& r : roles) {
    if (r.role == role && !r.url.empty()) urls.push_back(r.url);
  }
  return fmt::format("{}", fmt::join(urls, ","));
}

std::vector<const RoleSpec*> start_order(const std::vector<RoleSpec>& roles) {
  std::vector<const RoleSpec*> order;
  for (const RoleSpec& r : roles) {
    if (r.role != "router") order.push_back(&r);
  }
  for (const RoleSpec& r : roles) {
    if (r.role == "router") order.push_back(&r);
  }
  return order;
}

std::string with_log_tail(std::string message, const std::filesystem::path& log) {
  std::string tail = file_tail(log, 2048);
  if (!tail.empty())
    message += fmt::format("\n--- {} (tail) ---\n{}", log.filename().string(), tail);
  return message;
}

}  // namespace ib::launch
