// Test-only: a server object running its io_context on its own thread for one test, stopped and
// joined at destruction. Used by the http and sim tests (any server with stop() and a listen step).
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <future>
#include <stdexcept>
#include <thread>
#include <utility>

namespace ib::testing {

template <class Server>
class ServerOnThread {
 public:
  /// Constructs Server(io, args...), calls listen(server) (returning Expected<uint16_t>), then
  /// runs the io_context on a thread. Throws when listening fails.
  template <class Listen, class... Args>
  explicit ServerOnThread(Listen listen, Args&&... args)
      : server_(io_, std::forward<Args>(args)...) {
    auto port = listen(server_);
    if (!port) throw std::runtime_error(port.error().message);
    port_ = *port;
    thread_ = std::thread([this] {
      io_.run();
      done_.set_value();
    });
  }
  ~ServerOnThread() { shut_down(); }
  ServerOnThread(const ServerOnThread&) = delete;
  ServerOnThread& operator=(const ServerOnThread&) = delete;

  /// Stops the server and waits for io_context::run() to return. False when it did not return
  /// within `limit` (it is then forced, so the test can report instead of hanging).
  bool shut_down(std::chrono::seconds limit = std::chrono::seconds(10)) {
    if (!thread_.joinable()) return true;
    server_.stop();
    bool returned = done_future_.wait_for(limit) == std::future_status::ready;
    if (!returned) io_.stop();
    thread_.join();
    return returned;
  }

  uint16_t port() const { return port_; }
  boost::asio::io_context& io() { return io_; }
  Server& server() { return server_; }
  const Server& server() const { return server_; }

 private:
  boost::asio::io_context io_;
  Server server_;
  uint16_t port_ = 0;
  std::promise<void> done_;
  std::future<void> done_future_ = done_.get_future();
  std::thread thread_;
};

}  // namespace ib::testing
