// Headless Chromium for the end-to-end tests of the HTML report: find it (or skip, or fail where
// IB_REQUIRE_CHROMIUM=1), load a page through a proxy trap that catches every fetch, and return
// the DOM after the page's scripts ran.
#pragma once

#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "e2e_util.h"

namespace ib::e2e {

inline std::optional<std::string> find_chromium() {
  if (const char* env = std::getenv("IB_CHROMIUM"); env && *env) {
    if (::access(env, X_OK) == 0) return std::string(env);
    return std::nullopt;  // named but not there: as absent
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    size_t start = 0;
    while (start <= dirs.size()) {
      size_t end = dirs.find(':', start);
      if (end == std::string::npos) end = dirs.size();
      fs::path p = fs::path(dirs.substr(start, end - start)) / name;
      if (::access(p.c_str(), X_OK) == 0) return p.string();
      start = end + 1;
    }
  }
  return std::nullopt;
}

// Skips without Chromium, unless IB_REQUIRE_CHROMIUM=1 (CI), where that is a failure.
#define REQUIRE_CHROMIUM(var)                                                                   \
  const std::optional<std::string> var = find_chromium();                                       \
  if (!var) {                                                                                   \
    const char* req = std::getenv("IB_REQUIRE_CHROMIUM");                                       \
    if (req && std::string(req) == "1") FAIL() << "chromium not found (IB_REQUIRE_CHROMIUM=1)"; \
    GTEST_SKIP() << "chromium not found on PATH (scripts/install-deps.sh installs it)";         \
  }

// A listening socket given to Chromium as its proxy: every request the browser makes, for the
// page or for itself, arrives here, and the first line of each is kept.
class ProxyTrap {
 public:
  ProxyTrap() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(fd_, 16) != 0 || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      ADD_FAILURE() << "proxy trap: cannot listen";
      return;
    }
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { loop(); });
  }
  ~ProxyTrap() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);
  }
  int port() const { return port_; }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  void loop() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      // The request line, read until its end (a busy machine may deliver it in pieces).
      timeval tv{3, 0};
      ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      std::string head;
      char buf[1024];
      while (head.find("\r\n") == std::string::npos && head.size() < 8192) {
        const ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        head.append(buf, static_cast<size_t>(n));
      }
      ::close(c);
      // A connection that sends nothing is the browser warming its socket pool to the proxy
      // (preconnect): no request, nothing fetched.
      if (head.empty()) continue;
      head = head.substr(0, head.find('\r'));
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(head);
    }
  }
  int fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> requests_;
};

// Requests Chromium makes for itself (component updates, sign-in, network time) even headless
// with background networking off; a page's own request names any other host.
inline bool browser_own(const std::string& request_line) {
  static const std::regex own(
      R"(^(CONNECT|GET|POST) (https?://)?(update\.googleapis\.com|accounts\.google\.com|)"
      R"(clients\d*\.google\.com|[a-z0-9.-]*\.gvt1\.com|edgedl\.me\.gvt1\.com|)"
      R"(optimizationguide-pa\.googleapis\.com|content-autofill\.googleapis\.com)[:/ ])");
  return std::regex_search(request_line, own);
}

inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) {
    if (ch == '\'') {
      out.append("'\\''");
    } else {
      out.push_back(ch);
    }
  }
  return out + "'";
}

struct Browser {
  std::string exe;
  fs::path dir;
  int runs = 0;

  // Loads `url` headless through the proxy trap; returns the DOM after the page's scripts ran
  // (--dump-dom), or takes a screenshot when `screenshot` is set. `requests` gets the lines the
  // trap saw that were not the browser's own.
  std::string load(const std::string& url, std::vector<std::string>& requests,
                   const fs::path& screenshot = {}, int width = 1400) {
    ProxyTrap trap;
    const fs::path out = dir / fmt::format("chromium-{}.out", runs);
    const fs::path err = dir / fmt::format("chromium-{}.err", runs);
    std::vector<std::string> args = {
        exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--user-data-dir=" + (dir / fmt::format("profile-{}", runs)).string(),
        fmt::format("--proxy-server=127.0.0.1:{}", trap.port()),
        // No name resolves (a page cannot bypass the proxy by a direct connection) except the
        // trap's own address.
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        "--disable-background-networking", "--disable-component-update",
        "--disable-features=NetworkTimeServiceQuerying", "--hide-scrollbars",
        "--virtual-time-budget=3000"};
    if (screenshot.empty()) {
      args.push_back("--dump-dom");
    } else {
      args.push_back("--screenshot=" + screenshot.string());
    }
    args.push_back(fmt::format("--window-size={},2400", width));
    args.push_back(url);
    ++runs;
    std::string cmd = "exec";
    for (const auto& a : args) cmd.append(" ").append(shell_quote(a));
    cmd.append(" >")
        .append(shell_quote(out.string()))
        .append(" 2>")
        .append(shell_quote(err.string()));
    SpawnOptions so;
    so.argv = {"/bin/sh", "-c", cmd};
    auto child = ChildProcess::spawn(so);
    if (!child) {
      ADD_FAILURE() << child.error().message;
      return "";
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    while (!child->poll() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_TRUE(child->poll().has_value()) << "chromium did not finish: " << file_tail(err);
    auto exit = child->stop(std::chrono::milliseconds(2000));
    EXPECT_EQ(exit.code, 0) << exit.describe() << "\n" << file_tail(err);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // late connections
    for (const auto& r : trap.requests()) {
      if (!browser_own(r)) requests.push_back(r);
    }
    auto text = read_file(out);
    return text ? *text : "";
  }
};

}  // namespace ib::e2e
