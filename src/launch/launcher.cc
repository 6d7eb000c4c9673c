#include "launch/launcher.h"

#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <thread>

#include "core/clock.h"
#include "core/interrupt.h"
#include "http/client.h"

namespace ib::launch {

namespace {

void replace_all(std::string* s, std::string_view from, const std::string& to) {
  for (size_t pos = s->find(from); pos != std::string::npos; pos = s->find(from, pos + to.size())) {
    s->replace(pos, from.size(), to);
  }
}

}  // namespace

std::vector<std::string> substitute_address(const std::vector<std::string>& argv,
                                            const std::string& host, int port) {
  std::vector<std::string> out = argv;
  const std::string port_text = std::to_string(port);
  for (std::string& a : out) {
    replace_all(&a, "{host}", host);
    replace_all(&a, "{port}", port_text);
  }
  return out;
}

namespace {

// Binds `port` on 127.0.0.1 (0: the kernel picks one) and closes it again; the port, or an error.
Expected<int> try_port(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error{fmt::format("socket: {}", std::strerror(errno))};
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::string why = std::strerror(errno);
    ::close(fd);
    return Error{fmt::format("cannot find a free port: {}", why)};
  }
  ::close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

}  // namespace

Expected<int> pick_free_port() {
  // Below Linux's ephemeral range (32768-60999 by default), where neither the kernel's port-0
  // choice nor a client's outgoing connection lands: between this check and the server's own
  // bind, another process taking the port is then as unlikely as two random picks meeting
  // (a port-0 pick can be handed to the next port-0 bind, say another server started at the
  // same moment, whose health answer would then pass for ours).
  static thread_local std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> pick(20000, 32767);
  for (int attempt = 0; attempt < 64; ++attempt) {
    if (auto port = try_port(pick(rng)); port) return port;
  }
  return try_port(0);
}

Status wait_healthy(const std::string& url, const std::string& health_path,
                    std::chrono::seconds timeout,
                    const std::function<std::optional<std::string>()>& alive) {
  auto endpoint = http::parse_endpoint(url);
  if (!endpoint) return endpoint.error();
  const int64_t deadline = mono_ns() + std::chrono::nanoseconds(timeout).count();
  std::string last = "no answer yet";
  while (true) {
    if (interrupt_requested()) return Error{"interrupted while waiting for the server"};
    if (alive) {
      if (auto gone = alive()) {
        // "server exited (exit code 1)" → "server exited during startup (exit code 1)"
        std::string why = *gone;
        if (auto pos = why.find(" ("); pos != std::string::npos) {
          why.insert(pos, " during startup");
        } else {
          why += " during startup";
        }
        return Error{why};
      }
    }
    auto r = http::http_get(*endpoint, health_path, std::chrono::seconds(2));
    if (r && r->status == 200) {
      // An answer while our server has already exited came from another process on the port
      // (ours could not bind it): not ours to measure.
      if (auto gone = alive ? alive() : std::nullopt) {
        return Error{fmt::format("{}{} answered, but {}: another process holds the port", url,
                                 health_path, *gone)};
      }
      return Status::Ok();
    }
    last = r ? fmt::format("HTTP {}", r->status) : r.error().message;
    if (mono_ns() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Error{fmt::format("server not healthy after {} s at {}{} ({})", timeout.count(), url,
                           health_path, last)};
}

}  // namespace ib::launch
