// The kernel's floor for one streamed event over loopback TCP on this machine: a sender thread
// writes one ~200-byte SSE-sized message per stream per period (TCP_NODELAY, as servers do), and a
// minimal receiver (level-triggered epoll, one recvmsg with SO_TIMESTAMPNS per readable socket, no
// parsing) reads them. Both threads' CPU per message is almost all kernel: the receiver's recvmsg
// sends an ACK whose loopback delivery runs in the receiver's context, the sender's send runs the
// peer's receive path. No client can read an event per syscall for less than the receiver's
// figure; inferbench's own cost per event (bench/client_cost.sh) is printed beside it.
// These print numbers; they never pass or fail.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/process.h"

namespace {

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double now_s() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

struct Figures {
  long messages = 0;
  long reads = 0;
  long sent = 0;
  double receiver_cpu_s = 0;
  double sender_cpu_s = 0;
  double window_s = 0;
};

Figures run_once(int streams, int period_us, double window_s) {
  const int ls = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (ls < 0 || bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(ls, 65535) != 0) {
    throw std::runtime_error(std::string("listen: ") + std::strerror(errno));
  }
  socklen_t len = sizeof addr;
  getsockname(ls, reinterpret_cast<sockaddr*>(&addr), &len);
  std::vector<int> client(static_cast<size_t>(streams)), server(static_cast<size_t>(streams));
  const int on = 1;
  for (size_t i = 0; i < client.size(); ++i) {
    client[i] = socket(AF_INET, SOCK_STREAM, 0);
    if (client[i] < 0 || connect(client[i], reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      throw std::runtime_error(std::string("connect: ") + std::strerror(errno));
    }
    server[i] = accept(ls, nullptr, nullptr);
    if (server[i] < 0) throw std::runtime_error(std::string("accept: ") + std::strerror(errno));
    setsockopt(server[i], IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    setsockopt(client[i], SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
    fcntl(client[i], F_SETFL, fcntl(client[i], F_GETFL) | O_NONBLOCK);
  }
  Figures f;
  std::atomic<bool> stop{false};
  std::thread sender([&] {
    std::string msg = "data: {\"id\":\"cmpl-0\",\"object\":\"text_completion\",\"choices\":[{";
    msg.resize(198, 'x');
    msg += "\n\n";
    const double cpu0 = thread_cpu_s();
    double next = now_s();
    while (!stop.load(std::memory_order_relaxed)) {
      for (int fd : server) {
        if (send(fd, msg.data(), msg.size(), MSG_NOSIGNAL) > 0) ++f.sent;
      }
      next += period_us * 1e-6;
      const double wait = next - now_s();
      if (wait > 0) usleep(static_cast<useconds_t>(wait * 1e6));
    }
    f.sender_cpu_s = thread_cpu_s() - cpu0;
  });
  const int ep = epoll_create1(0);
  for (size_t i = 0; i < client.size(); ++i) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(i);
    epoll_ctl(ep, EPOLL_CTL_ADD, client[i], &ev);
  }
  std::vector<epoll_event> ready(256);
  char buf[4096];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
  long bytes = 0;
  const double t0 = now_s();
  const double cpu0 = thread_cpu_s();
  while (now_s() - t0 < window_s) {
    const int n = epoll_wait(ep, ready.data(), static_cast<int>(ready.size()), 100);
    for (int k = 0; k < n; ++k) {
      iovec iov{buf, sizeof buf};
      msghdr m{};
      m.msg_iov = &iov;
      m.msg_iovlen = 1;
      m.msg_control = control;
      m.msg_controllen = sizeof control;
      const ssize_t got = recvmsg(client[ready[static_cast<size_t>(k)].data.u32], &m, MSG_DONTWAIT);
      if (got > 0) {
        bytes += got;
        ++f.reads;
      }
    }
  }
  f.receiver_cpu_s = thread_cpu_s() - cpu0;
  f.window_s = now_s() - t0;
  f.messages = bytes / 200;
  stop = true;
  sender.join();
  for (int fd : client) close(fd);
  for (int fd : server) close(fd);
  close(ep);
  close(ls);
  return f;
}

// range(0): streams; range(1): period per stream in microseconds (the ITL).
void BM_LoopbackEventFloor(benchmark::State& state) {
  ib::raise_open_file_limit();
  const int streams = static_cast<int>(state.range(0));
  const int period_us = static_cast<int>(state.range(1));
  for (auto _ : state) {
    const Figures f = run_once(streams, period_us, 3.0);
    state.SetIterationTime(f.window_s);
    const double messages = static_cast<double>(std::max(1L, f.messages));
    state.counters["offered_msg_s"] = streams * 1e6 / period_us;
    state.counters["msg_s"] = messages / f.window_s;
    state.counters["msgs_per_read"] = messages / static_cast<double>(std::max(1L, f.reads));
    state.counters["receiver_us_per_msg"] = f.receiver_cpu_s * 1e6 / messages;
    state.counters["sender_us_per_send"] =
        f.sender_cpu_s * 1e6 / static_cast<double>(std::max(1L, f.sent));
  }
}

BENCHMARK(BM_LoopbackEventFloor)
    ->Args({100, 10000})   // 10k msg/s
    ->Args({1000, 10000})  // 100k msg/s: the issue-15 scenario's event rate
    ->Args({8000, 50000})  // 160k msg/s over 8,000 streams (both ends in this process: 16k fds)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
