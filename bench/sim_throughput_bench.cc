// How many streamed tokens per second the simulated server sustains, and what they cost it in
// CPU: a real SimServer (continuous-batching BatchEngine, the default serve-sim path) with its
// engine on its own thread and `threads` I/O threads (1: the engine's thread serves the
// connections too, serve-sim --threads 1), and a minimal epoll client on the benchmark's thread
// holding `streams` concurrent streaming requests over loopback. The engine's step time is fixed,
// so the offered load is streams / step_time tokens/s; the figures say whether the server keeps
// up and how much CPU it needs over all its threads (tokens per server-CPU-second). Target
// (issue 15): >= 250k tokens per server CPU-second.
//
// BM_LoopbackSendFloor is the kernel's share: a bare loop that send()s one ~200-byte message to
// each of `streams` loopback sockets per period (the server's pattern: one write per stream per
// engine step), read by the same epoll client. Its CPU per send is what any server pays for one
// token write on this host; the server's us per token minus it is the server's own cost.
// These print numbers; they never pass or fail.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <utility>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/process.h"
#include "sim/batch_engine.h"
#include "sim/sim_server.h"

namespace {

using ib::sim::StepBatch;
using ib::sim::StepCostModel;

class FixedStep final : public StepCostModel {
 public:
  explicit FixedStep(double seconds) : seconds_(seconds) {}
  double step_seconds(const StepBatch&) const override { return seconds_; }

 private:
  double seconds_;
};

double thread_cpu_seconds(pthread_t thread) {
  clockid_t clock;
  if (pthread_getcpuclockid(thread, &clock) != 0) return 0;
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// User and system CPU seconds of this process's threads whose name starts with `prefix` (the
// server's: "sim-engine", "sim-io-N"), from /proc (clock-tick resolution: 10 ms).
std::pair<double, double> threads_user_sys_s(std::string_view prefix) {
  double user = 0, sys = 0;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name.rfind(prefix, 0) != 0) continue;
    std::ifstream stat(task.path() / "stat");
    std::string line;
    std::getline(stat, line);
    // Fields after the parenthesised name: state is field 3, utime 14, stime 15.
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 13; ++i) rest >> field;
    long utime = 0, stime = 0;
    rest >> utime >> stime;
    user += static_cast<double>(utime) / tick;
    sys += static_cast<double>(stime) / tick;
  }
  return {user, sys};
}

// 10,000 connections need 20,000 descriptors and more (both ends live in this process): raise
// the hard limit too where allowed (root), else the soft limit to the hard one.
void raise_fd_limit() {
  rlimit want{1 << 16, 1 << 16};
  rlimit have{};
  if (getrlimit(RLIMIT_NOFILE, &have) == 0 && have.rlim_max >= want.rlim_max) {
    ib::raise_open_file_limit();
    return;
  }
  if (setrlimit(RLIMIT_NOFILE, &want) != 0) ib::raise_open_file_limit();
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A SimServer with a fixed-step BatchEngine on its own thread, and `threads` I/O threads.
class ServerThread {
 public:
  ServerThread(double step_s, int streams, int max_tokens, int threads) {
    ib::sim::SimArgs args;
    args.port = 0;
    args.threads = threads;
    args.max_model_len = max_tokens + 64;
    ib::sim::SchedulerConfig sc;
    sc.max_num_seqs = streams;
    sc.max_num_batched_tokens = 16 * streams + 64;
    sc.block_size = 16;
    sc.num_blocks = streams * (max_tokens / 16 + 4);
    auto engine = std::make_unique<ib::sim::BatchEngine>(io_.get_executor(),
                                                         std::make_shared<FixedStep>(step_s), sc);
    server_ = std::make_unique<ib::sim::SimServer>(io_, args, std::move(engine));
    auto port = server_->listen();
    if (!port) throw std::runtime_error(port.error().message);
    port_ = *port;
    thread_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "sim-engine");
      io_.run();
    });
  }
  ~ServerThread() {
    server_->stop();
    thread_.join();
  }
  uint16_t port() const { return port_; }
  const ib::sim::SimServer& server() const { return *server_; }
  // CPU time of all the server's threads: the engine's and the I/O threads.
  double cpu_seconds() {
    double total = thread_cpu_seconds(thread_.native_handle());
    for (pthread_t t : server_->io_thread_handles()) total += thread_cpu_seconds(t);
    return total;
  }

 private:
  boost::asio::io_context io_{1};
  std::unique_ptr<ib::sim::SimServer> server_;
  uint16_t port_ = 0;
  std::thread thread_;
};

// One streaming connection: counts SSE events ("\n\n" terminators) as they arrive.
struct Stream {
  int fd = -1;
  int64_t events = 0;
  bool last_newline = false;
};

struct Figures {
  double window_s = 0;
  int64_t tokens = 0;
  double server_cpu_s = 0;
  double client_cpu_s = 0;
  double server_user_s = 0;  // of server_cpu_s, in user space (/proc, 10 ms resolution)
  double server_sys_s = 0;   // in the kernel
  double tokens_per_write = 1;  // > 1: the server fell behind and wrote tokens together
};

// A minimal epoll client: reads every connection, counts SSE events ("\n\n") and, once every
// connection has seen one, measures `window_s` seconds of tokens and of `server_cpu()`.
template <class ServerCpu, class ServerWrites>
Figures read_streams(std::vector<Stream>& conns, int ep, double window_s, ServerCpu server_cpu,
                     ServerWrites server_writes) {
  const int streams = static_cast<int>(conns.size());
  std::vector<char> buf(1 << 16);
  std::vector<epoll_event> ready(1024);
  int64_t total = 0;
  int started = 0;
  double t0 = 0, cpu0 = 0, client0 = 0;
  std::pair<double, double> split0;
  std::pair<int64_t, int64_t> writes0;
  int64_t total0 = 0;
  const double deadline_start = now_s() + 60;
  bool measuring = false;
  while (true) {
    const int n = epoll_wait(ep, ready.data(), static_cast<int>(ready.size()), 100);
    for (int k = 0; k < n; ++k) {
      Stream& c = conns[ready[static_cast<size_t>(k)].data.u32];
      while (true) {
        const ssize_t got = recv(c.fd, buf.data(), buf.size(), 0);
        if (got <= 0) break;
        const bool had_none = c.events == 0;
        for (ssize_t j = 0; j < got; ++j) {
          const bool nl = buf[static_cast<size_t>(j)] == '\n';
          if (nl && c.last_newline) {
            ++c.events;
            ++total;
          }
          c.last_newline = nl;
        }
        if (had_none && c.events > 0) ++started;
        if (got < static_cast<ssize_t>(buf.size())) break;
      }
    }
    if (!measuring && started == streams) {
      // Every stream is producing: measure from here.
      measuring = true;
      t0 = now_s();
      cpu0 = server_cpu();
      client0 = thread_cpu_seconds(pthread_self());
      split0 = threads_user_sys_s("sim-");
      writes0 = server_writes();
      total0 = total;
    }
    if (!measuring && now_s() > deadline_start) throw std::runtime_error("streams did not start");
    if (measuring && now_s() - t0 >= window_s) break;
  }
  Figures f;
  f.window_s = now_s() - t0;
  f.server_cpu_s = server_cpu() - cpu0;
  f.client_cpu_s = thread_cpu_seconds(pthread_self()) - client0;
  const auto split = threads_user_sys_s("sim-");
  f.server_user_s = split.first - split0.first;
  f.server_sys_s = split.second - split0.second;
  const auto writes = server_writes();
  if (writes.second > writes0.second) {
    f.tokens_per_write = static_cast<double>(writes.first - writes0.first) /
                         static_cast<double>(writes.second - writes0.second);
  }
  f.tokens = total - total0;
  return f;
}

void watch(int ep, std::vector<Stream>& conns, int i) {
  Stream& c = conns[static_cast<size_t>(i)];
  fcntl(c.fd, F_SETFL, fcntl(c.fd, F_GETFL) | O_NONBLOCK);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u32 = static_cast<uint32_t>(i);
  epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
}

Figures run_once(int streams, double step_s, double window_s, int threads) {
  const int max_tokens = static_cast<int>((window_s + 20.0) / step_s);
  ServerThread server(step_s, streams, max_tokens, threads);
  const std::string body =
      R"({"prompt":"the quick brown fox jumps over the lazy dog","max_tokens":)" +
      std::to_string(max_tokens) + R"(,"ignore_eos":true,"stream":true})";
  const std::string request =
      "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Content-Type: application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  std::vector<Stream> conns(static_cast<size_t>(streams));
  const int ep = epoll_create1(0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(server.port());
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < streams; ++i) {
    Stream& c = conns[static_cast<size_t>(i)];
    c.fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c.fd < 0 || connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      throw std::runtime_error(std::string("connect: ") + std::strerror(errno));
    }
    if (send(c.fd, request.data(), request.size(), 0) != static_cast<ssize_t>(request.size())) {
      throw std::runtime_error("send");
    }
    watch(ep, conns, i);
  }
  const Figures f = read_streams(
      conns, ep, window_s, [&] { return server.cpu_seconds(); },
      [&] {
        const ib::sim::ServerMetrics m = server.server().metrics();
        return std::pair<int64_t, int64_t>(m.generation_tokens, m.token_writes);
      });
  for (Stream& c : conns) close(c.fd);
  close(ep);
  return f;
}

void report(benchmark::State& state, const Figures& f, int streams, double step_s) {
  state.SetIterationTime(f.window_s);
  const double tok_s = static_cast<double>(f.tokens) / f.window_s;
  state.counters["offered_tok_s"] = streams / step_s;
  state.counters["tok_s"] = tok_s;
  state.counters["server_cpu_util"] = f.server_cpu_s / f.window_s;
  state.counters["tok_per_server_cpu_s"] = static_cast<double>(f.tokens) / f.server_cpu_s;
  state.counters["server_us_per_tok"] = f.server_cpu_s * 1e6 / static_cast<double>(f.tokens);
  state.counters["server_user_us_per_tok"] = f.server_user_s * 1e6 / static_cast<double>(f.tokens);
  state.counters["server_sys_us_per_tok"] = f.server_sys_s * 1e6 / static_cast<double>(f.tokens);
  state.counters["client_cpu_util"] = f.client_cpu_s / f.window_s;
  state.counters["tok_per_write"] = f.tokens_per_write;
}

// range(0): concurrent streams; range(1): engine step in microseconds; range(2): I/O threads
// (serve-sim --threads).
void BM_SimServerStreaming(benchmark::State& state) {
  raise_fd_limit();
  const int streams = static_cast<int>(state.range(0));
  const double step_s = static_cast<double>(state.range(1)) * 1e-6;
  const int threads = static_cast<int>(state.range(2));
  for (auto _ : state) report(state, run_once(streams, step_s, 3.0, threads), streams, step_s);
}

BENCHMARK(BM_SimServerStreaming)
    ->ArgNames({"streams", "step_us", "threads"})
    ->Args({1000, 10000, 1})   // 100k tokens/s offered: a server that is not saturated
    ->Args({1000, 5000, 1})    // 200k
    ->Args({1000, 5000, 2})    //   the same over two I/O threads (and the engine's)
    ->Args({1000, 2500, 1})    // 400k
    ->Args({1000, 2500, 2})    //
    ->Args({1000, 1000, 1})    // 1M: past what the host can do, shows the ceiling
    ->Args({1000, 1000, 2})    //
    ->Args({100, 500, 1})      // 200k with fewer, faster streams
    ->Args({10000, 50000, 1})  // 10k connections (needs an open-files limit above 20k)
    ->Args({10000, 50000, 2})  //
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// The kernel floor: `streams` loopback TCP connections (TCP_NODELAY), `sender_threads` threads
// that send() one 200-byte message ending in "\n\n" to each of their connections every `step`,
// round-robin, sleeping until the next period between rounds, and the same epoll client reading
// them. The senders' CPU per send is what one token write costs on this host with no server
// around it.
Figures run_send_floor(int streams, double step_s, double window_s, int sender_threads) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listener, 65535) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw std::runtime_error(std::string("listen: ") + std::strerror(errno));
  }
  std::vector<Stream> conns(static_cast<size_t>(streams));
  std::vector<int> senders;
  const int ep = epoll_create1(0);
  for (int i = 0; i < streams; ++i) {
    Stream& c = conns[static_cast<size_t>(i)];
    c.fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c.fd < 0 || connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      throw std::runtime_error(std::string("connect: ") + std::strerror(errno));
    }
    const int s = accept(listener, nullptr, nullptr);
    if (s < 0) throw std::runtime_error(std::string("accept: ") + std::strerror(errno));
    const int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK);
    senders.push_back(s);
    watch(ep, conns, i);
  }
  close(listener);
  std::string message(198, 'x');
  message.replace(0, 6, "data: ");
  message += "\n\n";
  std::atomic<bool> stop{false};
  // Sender t owns connections t, t + threads, ...: the server's I/O threads' round-robin.
  std::vector<std::thread> threads;
  for (int t = 0; t < sender_threads; ++t) {
    threads.emplace_back([&, t] {
      pthread_setname_np(pthread_self(), ("sim-sender-" + std::to_string(t)).c_str());
      std::vector<int> mine;
      const auto stride = static_cast<size_t>(sender_threads);
      for (size_t i = static_cast<size_t>(t); i < senders.size(); i += stride) {
        mine.push_back(senders[i]);
      }
      timespec next{};
      clock_gettime(CLOCK_MONOTONIC, &next);
      const long step_ns = static_cast<long>(step_s * 1e9);
      while (!stop.load(std::memory_order_relaxed)) {
        for (int s : mine) (void)send(s, message.data(), message.size(), MSG_NOSIGNAL);
        next.tv_nsec += step_ns;
        while (next.tv_nsec >= 1000000000L) {
          next.tv_nsec -= 1000000000L;
          ++next.tv_sec;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr);
      }
    });
  }
  std::vector<pthread_t> handles;
  for (std::thread& t : threads) handles.push_back(t.native_handle());
  auto sender_cpu = [&] {
    double total = 0;
    for (pthread_t h : handles) total += thread_cpu_seconds(h);
    return total;
  };
  auto join = [&] {
    stop = true;
    for (std::thread& t : threads) t.join();
  };
  Figures f;
  try {
    f = read_streams(conns, ep, window_s, sender_cpu,
                     [] { return std::pair<int64_t, int64_t>(0, 0); });
  } catch (...) {
    join();
    throw;
  }
  join();
  for (int s : senders) close(s);
  for (Stream& c : conns) close(c.fd);
  close(ep);
  return f;
}

// range(0): connections; range(1): period in microseconds (one send per connection per period);
// range(2): sender threads.
void BM_LoopbackSendFloor(benchmark::State& state) {
  raise_fd_limit();
  const int streams = static_cast<int>(state.range(0));
  const double step_s = static_cast<double>(state.range(1)) * 1e-6;
  const int sender_threads = static_cast<int>(state.range(2));
  for (auto _ : state) {
    const Figures f = run_send_floor(streams, step_s, 3.0, sender_threads);
    report(state, f, streams, step_s);
    state.counters["us_per_send"] = f.server_cpu_s * 1e6 / static_cast<double>(f.tokens);
  }
}

BENCHMARK(BM_LoopbackSendFloor)
    ->ArgNames({"streams", "step_us", "threads"})
    ->Args({1000, 5000, 1})
    ->Args({1000, 5000, 2})
    ->Args({1000, 10000, 1})  // 100k sends/s: a sender that is not saturated
    ->Args({1000, 1000, 1})
    ->Args({100, 500, 1})
    // 9,000, not 10,000: both ends of every connection are this process's, and 20,000
    // descriptors is a common hard limit.
    ->Args({9000, 45000, 1})
    ->Args({9000, 45000, 2})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
