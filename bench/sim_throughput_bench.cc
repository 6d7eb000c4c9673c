// How many streamed tokens per second the simulated server sustains, and what they cost it in
// CPU: a real SimServer (continuous-batching BatchEngine, the default serve-sim path) on its own
// thread, and a minimal epoll client on another thread holding `streams` concurrent streaming
// requests over loopback. The engine's step time is fixed, so the offered load is
// streams / step_time tokens/s; the figures say whether the server keeps up and how much of one
// core it needs (tokens per server-CPU-second is the one-core capacity). Target (issue 4):
// >= 200k tokens/s at 1,000 streams. These print numbers; they never pass or fail.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstring>
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

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A SimServer with a fixed-step BatchEngine on its own thread.
class ServerThread {
 public:
  ServerThread(double step_s, int streams, int max_tokens) {
    ib::sim::SimArgs args;
    args.port = 0;
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
    thread_ = std::thread([this] { io_.run(); });
  }
  ~ServerThread() {
    server_->stop();
    thread_.join();
  }
  uint16_t port() const { return port_; }
  double cpu_seconds() { return thread_cpu_seconds(thread_.native_handle()); }

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
};

Figures run_once(int streams, double step_s, double window_s) {
  const int max_tokens = static_cast<int>((window_s + 20.0) / step_s);
  ServerThread server(step_s, streams, max_tokens);
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
    fcntl(c.fd, F_SETFL, fcntl(c.fd, F_GETFL) | O_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(i);
    epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
  }
  std::vector<char> buf(1 << 16);
  std::vector<epoll_event> ready(1024);
  int64_t total = 0;
  int started = 0;
  double t0 = 0, cpu0 = 0, client0 = 0;
  int64_t total0 = 0;
  const double deadline_start = now_s() + 30;
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
      cpu0 = server.cpu_seconds();
      client0 = thread_cpu_seconds(pthread_self());
      total0 = total;
    }
    if (!measuring && now_s() > deadline_start) throw std::runtime_error("streams did not start");
    if (measuring && now_s() - t0 >= window_s) break;
  }
  Figures f;
  f.window_s = now_s() - t0;
  f.server_cpu_s = server.cpu_seconds() - cpu0;
  f.client_cpu_s = thread_cpu_seconds(pthread_self()) - client0;
  f.tokens = total - total0;
  for (Stream& c : conns) close(c.fd);
  close(ep);
  return f;
}

// range(0): concurrent streams; range(1): engine step in microseconds.
void BM_SimServerStreaming(benchmark::State& state) {
  ib::raise_open_file_limit();
  const int streams = static_cast<int>(state.range(0));
  const double step_s = static_cast<double>(state.range(1)) * 1e-6;
  for (auto _ : state) {
    const Figures f = run_once(streams, step_s, 3.0);
    state.SetIterationTime(f.window_s);
    const double tok_s = static_cast<double>(f.tokens) / f.window_s;
    state.counters["offered_tok_s"] = streams / step_s;
    state.counters["tok_s"] = tok_s;
    state.counters["server_cpu_util"] = f.server_cpu_s / f.window_s;
    state.counters["tok_per_server_cpu_s"] = static_cast<double>(f.tokens) / f.server_cpu_s;
    state.counters["server_us_per_tok"] = f.server_cpu_s * 1e6 / static_cast<double>(f.tokens);
    state.counters["client_cpu_util"] = f.client_cpu_s / f.window_s;
  }
}

BENCHMARK(BM_SimServerStreaming)
    ->Args({1000, 5000})    // 200k tokens/s offered
    ->Args({1000, 2500})    // 400k
    ->Args({1000, 1000})    // 1M: past what one core can do, shows the ceiling
    ->Args({100, 500})      // 200k with fewer, faster streams
    ->Args({10000, 50000})  // 10k connections (needs an open-files limit above 20k)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
