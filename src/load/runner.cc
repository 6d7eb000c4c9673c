#include "load/runner.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cmath>
#include <cstdio>
#include <deque>
#include <memory>
#include <thread>

#include "core/clock.h"
#include "core/interrupt.h"
#include "core/process.h"
#include "load/retry.h"
#include "load/stream_request.h"
#include "metrics/stats.h"

namespace ib::load {

namespace asio = boost::asio;
using steady_time = std::chrono::steady_clock::time_point;

Status validate(const RunnerConfig& config) {
  const LoadShape& s = config.shape;
  if (s.mode == LoadMode::kClosedLoop && s.concurrency < 1) {
    return Error{fmt::format("--concurrency must be at least 1 (got {})", s.concurrency)};
  }
  if (s.concurrency < 0) {
    return Error{fmt::format("--concurrency must not be negative (got {})", s.concurrency)};
  }
  if (s.mode == LoadMode::kOpenLoop && s.schedule_ns.empty()) {
    if (auto st = validate(s.arrivals); !st) return st;
  }
  if (!s.schedule_ns.empty() &&
      (s.mode != LoadMode::kOpenLoop || s.duration_s > 0 || s.schedule_ns.front() < 0 ||
       !std::is_sorted(s.schedule_ns.begin(), s.schedule_ns.end()))) {
    return Error{"a request schedule needs the open loop, no --duration, and non-decreasing times"};
  }
  if (s.duration_s < 0 || !std::isfinite(s.duration_s)) {
    return Error{
        fmt::format("--duration must be a positive number of seconds (got {})", s.duration_s)};
  }
  if (config.threads < 0) return Error{"--threads must not be negative"};
  if (config.max_retries < 0) return Error{"--max-retries must not be negative"};
  if (config.timeouts.connect.count() <= 0) return Error{"--connect-timeout must be positive"};
  return Status::Ok();
}

namespace {

int64_t current_rss_kib() {
  // /proc/self/statm: size resident shared ... in pages.
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  long size = 0, resident = 0;
  const int got = std::fscanf(f, "%ld %ld", &size, &resident);
  std::fclose(f);
  return got == 2 ? resident * (sysconf(_SC_PAGESIZE) / 1024) : 0;
}

int64_t peak_rss_kib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

double process_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto tv = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return tv(ru.ru_utime) + tv(ru.ru_stime);
}

steady_time to_steady(int64_t mono) {
  return steady_time(std::chrono::nanoseconds(mono));
}

void atomic_max(std::atomic<int64_t>& a, int64_t v) {
  int64_t cur = a.load(std::memory_order_relaxed);
  while (v > cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

// FIFO counting semaphore for coroutines on one event loop.
class AsyncSlots {
 public:
  AsyncSlots(asio::io_context& io, int slots) : io_(io), free_(slots) {}
  asio::awaitable<void> acquire() {
    if (free_ > 0 && waiters_.empty()) {
      --free_;
      co_return;
    }
    asio::steady_timer t(io_, steady_time::max());
    waiters_.push_back(&t);
    boost::system::error_code ec;
    co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    // The releaser handed its slot over directly (free_ unchanged), or the run is ending.
  }
  void release() {
    if (!waiters_.empty()) {
      waiters_.front()->cancel();
      waiters_.pop_front();
    } else {
      ++free_;
    }
  }
  void wake_all() {
    for (auto* t : waiters_) t->cancel();
    waiters_.clear();
  }

 private:
  asio::io_context& io_;
  int free_;
  std::deque<asio::steady_timer*> waiters_;
};

// What every lane (thread) shares.
struct Shared {
  const RunnerConfig* config = nullptr;
  asio::ip::tcp::resolver::results_type addresses;
  int source_addresses = 1;
  std::atomic<int64_t> next_index{0};
  std::atomic<int64_t> in_flight{0};
  std::atomic<int64_t> peak_in_flight{0};
  std::atomic<int64_t> completed{0};
  std::atomic<int64_t> connections{0};
  std::atomic<int64_t> pool_reopened{0};
  std::atomic<bool> interrupted{false};
  std::atomic<bool> deadline_hit{false};
};

// The current phase: which requests, under which shape.
struct Phase {
  const std::vector<PreparedRequest>* requests = nullptr;
  int preconnect = 0;  // > 0: this phase only opens that many connections (over all lanes)
  LoadShape shape;
  std::vector<int64_t> offsets;  // open loop: send offsets from origin, all requests
  int64_t origin_ns = 0;
  int64_t end_ns = 0;  // time-bounded: no request is sent after this; 0: count-bounded
  bool measured = false;
  bool exact_schedule = false;  // a recorded schedule (a timed trace): woken early, then the clock
};

// A lane woken early for an exact schedule waits this long at most on the clock.
constexpr int64_t kSpinNs = 1'000'000;

// One event loop on one thread with its own connections and records.
class Lane {
 public:
  Lane(Shared& shared, int id, int lanes) : shared_(shared), id_(id), lanes_(lanes) {}

  void run_phase(const Phase& phase) {
    phase_ = &phase;
    finished_ = false;
    io_.restart();
    asio::co_spawn(io_, phase_main(), asio::detached);
    asio::co_spawn(io_, ticker(), asio::detached);
    io_.run();
  }

  std::deque<metrics::RequestRecord>& records(bool measured) {
    return measured ? measured_ : warmup_;
  }
  std::pair<uint64_t, uint64_t> read_counts() const {
    uint64_t reads = 0, stamped = 0;
    for (const auto& c : conns_) {
      reads += c->http.reads();
      stamped += c->http.stamped_reads();
    }
    return {reads, stamped};
  }
  std::vector<double>& loop_lag_ms() { return loop_lag_ms_; }
  std::vector<double>& schedule_lag_ms() { return schedule_lag_ms_; }
  std::function<void()> on_tick;  // lane 0: progress display

 private:
  struct Conn {
    Conn(Lane& lane, std::optional<asio::ip::address> source)
        : http(lane.io_.get_executor(), lane.shared_.config->endpoint, lane.shared_.addresses,
               lane.shared_.config->timeouts, std::move(source)),
          response(lane.decoder_) {
      if (const auto& count = lane.shared_.config->count_text_tokens) {
        lane.decoder_.keep_text(true);
        response.count_text_tokens(&count);
      }
    }
    http::HttpConnection http;
    StreamingResponse response;
  };

  Conn& new_conn() {
    std::optional<asio::ip::address> source;
    const int64_t n = shared_.connections.fetch_add(1, std::memory_order_relaxed);
    if (shared_.source_addresses > 1) {
      asio::ip::address_v4::bytes_type b{127, 0, 0,
                                         static_cast<uint8_t>(1 + n % shared_.source_addresses)};
      source = asio::ip::address_v4(b);
    }
    conns_.push_back(std::make_unique<Conn>(*this, source));
    return *conns_.back();
  }

  // The most recently used open connection of the pool, else one to reconnect, else a new one.
  Conn& acquire_conn() {
    for (size_t k = idle_.size(); k-- > 0;) {
      if (!idle_[k]->http.is_open()) continue;
      Conn* c = idle_[k];
      idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(k));
      return *c;
    }
    if (!idle_.empty()) {
      Conn* c = idle_.back();
      idle_.pop_back();
      return *c;
    }
    return new_conn();
  }

  // Opens this lane's share of phase_->preconnect connections at once; they wait in the pool of
  // the phases that follow.
  asio::awaitable<void> preconnect() {
    const int n = phase_->preconnect / lanes_ + (id_ < phase_->preconnect % lanes_ ? 1 : 0);
    int pending = n;
    asio::steady_timer all_done(io_, steady_time::max());
    for (int k = 0; k < n; ++k) {
      Conn& c = new_conn();
      worker_conns_.push_back(&c);
      asio::co_spawn(
          io_,
          [&c, &pending, &all_done]() -> asio::awaitable<void> {
            (void)co_await c.http.open();
            if (--pending == 0) all_done.cancel();
          },
          asio::detached);
    }
    if (pending > 0) {
      boost::system::error_code ec;
      co_await all_done.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
  }

  // An exact schedule keeps this lane's share of config.preconnect connections open and idle, so
  // that a burst never waits for a connect: a connect's completion goes through the event loop,
  // behind every stream event already read, and with hundreds of streams in flight that is
  // milliseconds. Servers close idle connections (vLLM's and serve-sim's keep-alive: 5 s), so the
  // ticker reopens those too. Called after a burst has been sent, never inside one.
  void top_up_pool() {
    if (mono_ns() < pool_retry_ns_) return;  // a connect failed: not again for a second
    const int cfg = shared_.config->preconnect;
    const int reserve = cfg / lanes_ + (id_ < cfg % lanes_ ? 1 : 0);
    int open = opening_;
    for (const Conn* c : idle_) open += c->http.is_open() ? 1 : 0;
    std::vector<Conn*> reopen;
    for (auto it = idle_.begin(); open < reserve && it != idle_.end();) {
      if ((*it)->http.is_open()) {
        ++it;
        continue;
      }
      reopen.push_back(*it);
      it = idle_.erase(it);
      shared_.pool_reopened.fetch_add(1, std::memory_order_relaxed);
      ++open;
    }
    while (open < reserve) {
      reopen.push_back(&new_conn());
      ++open;
    }
    for (Conn* c : reopen) {
      ++opening_;
      asio::co_spawn(
          io_,
          [this, c]() -> asio::awaitable<void> {
            const auto ec = co_await c->http.open();
            --opening_;
            if (ec) pool_retry_ns_ = mono_ns() + 1'000'000'000;
            idle_.push_back(c);  // open, or to be reconnected by its next request
          },
          asio::detached);
    }
  }

  void top_up_after_burst() {
    if (top_up_posted_) return;
    top_up_posted_ = true;
    asio::post(io_, [this] {
      top_up_posted_ = false;
      if (!closing_) top_up_pool();
    });
  }

  asio::awaitable<void> phase_main() {
    if (phase_->preconnect > 0) {
      co_await preconnect();
    } else if (phase_->shape.mode == LoadMode::kOpenLoop && phase_->measured) {
      co_await open_loop();
    } else {
      co_await closed_loop();
    }
    finished_ = true;
    ticker_.cancel();
  }

  // Closed loop: this lane's share of the workers; each takes the next index until the phase's
  // bound is reached.
  asio::awaitable<void> closed_loop() {
    const int total = std::max(1, phase_->shape.concurrency);
    const int mine = total / lanes_ + (id_ < total % lanes_ ? 1 : 0);
    int active = mine;
    asio::steady_timer all_done(io_, steady_time::max());
    // Workers keep their connections across phases (warm keep-alive, like a client session).
    while (static_cast<int>(worker_conns_.size()) < mine) worker_conns_.push_back(&new_conn());
    for (int w = 0; w < mine; ++w) {
      asio::co_spawn(
          io_,
          [this, &active, &all_done, conn = worker_conns_[w]]() -> asio::awaitable<void> {
            co_await closed_worker(*conn);
            if (--active == 0) all_done.cancel();
          },
          asio::detached);
    }
    // co_spawn dispatches: workers with nothing to do have already finished here.
    if (active > 0) {
      boost::system::error_code ec;
      co_await all_done.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
  }

  asio::awaitable<void> closed_worker(Conn& conn) {
    const auto n = static_cast<int64_t>(phase_->requests->size());
    for (;;) {
      if (shared_.interrupted.load(std::memory_order_relaxed)) break;
      const int64_t now = mono_ns();
      if (phase_->end_ns > 0 && now >= phase_->end_ns) break;
      const int64_t index = shared_.next_index.fetch_add(1, std::memory_order_relaxed);
      if (phase_->end_ns == 0 && index >= n) break;
      if (n == 0) break;
      // Closed loop: the request is due the moment a worker is free.
      co_await one_request(conn, index, now);
    }
  }

  // Open loop: this lane sends requests id, id+lanes, ... at their scheduled times.
  asio::awaitable<void> open_loop() {
    // Warm connections of the warmup workers join the pool.
    idle_.insert(idle_.end(), worker_conns_.begin(), worker_conns_.end());
    worker_conns_.clear();
    const int cap = phase_->shape.concurrency;
    const int lane_cap = cap > 0 ? std::max(1, cap / lanes_ + (id_ < cap % lanes_ ? 1 : 0)) : 0;
    AsyncSlots slots(io_, lane_cap);
    slots_ = cap > 0 ? &slots : nullptr;
    int outstanding = 0;
    bool dispatching = true;
    asio::steady_timer all_done(io_, steady_time::max());
    asio::steady_timer next(io_);
    dispatch_timer_ = &next;
    for (size_t i = static_cast<size_t>(id_); i < phase_->offsets.size();
         i += static_cast<size_t>(lanes_)) {
      const int64_t sched = phase_->origin_ns + phase_->offsets[i];
      // Due already (a burst of simultaneous arrivals, or a late loop): sent at once, without a
      // round trip through the event loop's queue behind every response being read.
      if (sched > mono_ns()) {
        // A schedule's times are kept to the microsecond: the timer wakes the lane a little early
        // (a thread woken from an idle CPU, on a virtual machine above all, runs 0.1-0.5 ms after
        // its timer) and the lane then waits on the clock, at most kSpinNs of CPU per wake.
        next.expires_at(to_steady(phase_->exact_schedule ? sched - kSpinNs : sched));
        boost::system::error_code ec;
        co_await next.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (phase_->exact_schedule && !ec) {
          while (mono_ns() < sched && !shared_.interrupted.load(std::memory_order_relaxed)) {
          }
        }
      }
      if (shared_.interrupted.load(std::memory_order_relaxed)) break;
      // Lateness of the dispatcher itself: the client's own delay, not the cap's queueing.
      schedule_lag_ms_.push_back(ns_to_ms(mono_ns() - sched));
      ++outstanding;
      asio::co_spawn(
          io_,
          [this, i, sched, &outstanding, &dispatching, &all_done]() -> asio::awaitable<void> {
            // A request that finds the cap reached queues (FIFO); its queue time is send − sched.
            AsyncSlots* limiter = slots_;
            if (limiter != nullptr) co_await limiter->acquire();
            if (!shared_.interrupted.load(std::memory_order_relaxed)) {
              Conn& conn = acquire_conn();
              if (phase_->exact_schedule) top_up_after_burst();
              co_await one_request(conn, static_cast<int64_t>(i), sched);
              idle_.push_back(&conn);
            }
            if (limiter != nullptr) limiter->release();
            if (--outstanding == 0 && !dispatching) all_done.cancel();
          },
          asio::detached);
    }
    dispatching = false;
    dispatch_timer_ = nullptr;
    if (outstanding > 0) {
      boost::system::error_code ec;
      co_await all_done.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    slots_ = nullptr;
  }

  asio::awaitable<void> one_request(Conn& conn, int64_t index, int64_t sched_ns) {
    const auto& list = *phase_->requests;
    const PreparedRequest& req = list[static_cast<size_t>(index) % list.size()];
    metrics::RequestRecord& rec = records(phase_->measured).emplace_back();
    rec.index = index;
    rec.input_len = req.input_len;
    rec.input_exact = req.input_exact;
    rec.output_len = req.output_len;
    rec.sched_ns = sched_ns;
    rec.content_ns.reserve(static_cast<size_t>(req.output_len) + 2);
    atomic_max(shared_.peak_in_flight,
               shared_.in_flight.fetch_add(1, std::memory_order_relaxed) + 1);
    const RunnerConfig& cfg = *shared_.config;
    std::string request_id;
    if (!cfg.request_id_prefix.empty()) {
      request_id = fmt::format("{}{}{}", cfg.request_id_prefix, phase_->measured ? "" : "w", index);
    }
    RetriedRequest send;
    send.path = cfg.path;
    send.body = req.body;
    send.request_id = request_id;
    send.max_retries = cfg.max_retries;
    send.cut_reason = [this]() -> std::string_view {
      return shared_.interrupted.load(std::memory_order_relaxed) ? "run interrupted" : "";
    };
    co_await send_with_retry(conn.http, conn.response, rec, send);
    shared_.in_flight.fetch_sub(1, std::memory_order_relaxed);
    if (phase_->measured) shared_.completed.fetch_add(1, std::memory_order_relaxed);
  }

  // Every 10 ms on an absolute schedule: measures this loop's lag, watches for an interrupt and
  // drives the progress display.
  asio::awaitable<void> ticker() {
    constexpr int64_t kPeriod = 10'000'000;
    int64_t next = mono_ns() + kPeriod;
    int ticks = 0;
    while (!finished_) {
      ticker_.expires_at(to_steady(next));
      boost::system::error_code ec;
      co_await ticker_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (finished_) break;
      const int64_t now = mono_ns();
      if (!ec) loop_lag_ms_.push_back(ns_to_ms(now - next));
      next += kPeriod;
      if (next < now) next = now + kPeriod;  // a long stall: resume the grid from now
      if (interrupt_requested()) shared_.interrupted.store(true);
      if (shared_.config->deadline_ns > 0 && now >= shared_.config->deadline_ns) {
        shared_.deadline_hit.store(true);
        shared_.interrupted.store(true);
      }
      if (shared_.interrupted.load(std::memory_order_relaxed) && !closing_) {
        closing_ = true;
        for (auto& c : conns_) c->http.close();  // in-flight requests end now
        if (dispatch_timer_ != nullptr) dispatch_timer_->cancel();
        if (slots_ != nullptr) slots_->wake_all();
      }
      if (dispatch_timer_ != nullptr && phase_->exact_schedule && !closing_) top_up_pool();
      if (on_tick && ++ticks % 10 == 0) on_tick();
    }
  }

  Shared& shared_;
  const int id_;
  const int lanes_;
  asio::io_context io_{1};
  asio::steady_timer ticker_{io_};
  openai::StreamDecoder decoder_;  // shared by this lane's connections: decoding is synchronous
  std::vector<std::unique_ptr<Conn>> conns_;
  std::vector<Conn*> idle_;          // open loop pool
  std::vector<Conn*> worker_conns_;  // closed loop: one per worker
  const Phase* phase_ = nullptr;
  asio::steady_timer* dispatch_timer_ = nullptr;
  AsyncSlots* slots_ = nullptr;
  bool finished_ = false;
  bool closing_ = false;
  bool top_up_posted_ = false;
  int opening_ = 0;            // connections being opened for the idle pool
  int64_t pool_retry_ns_ = 0;  // after a failed connect, the pool is topped up from then on
  std::deque<metrics::RequestRecord> warmup_, measured_;
  std::vector<double> loop_lag_ms_, schedule_lag_ms_;
};

bool is_loopback_v4(const asio::ip::tcp::resolver::results_type& addrs) {
  for (const auto& e : addrs) {
    const auto a = e.endpoint().address();
    if (!a.is_v4() || a.to_v4().to_bytes()[0] != 127) return false;
  }
  return !addrs.empty();
}

int expected_connections(const LoadShape& s, size_t measured) {
  if (s.mode == LoadMode::kClosedLoop || s.concurrency > 0) return std::max(1, s.concurrency);
  return static_cast<int>(std::min<size_t>(measured, 10'000));
}

double p99(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return metrics::percentile_sorted(v, 99);
}

double max_or_zero(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

using LaneList = std::vector<std::unique_ptr<Lane>>;

// Chooses the number of event-loop threads for `conns` connections, and on loopback the source
// addresses (shared.source_addresses); both are noted in the result's health.
int choose_threads(const RunnerConfig& config, int conns, Shared& shared, RunnerResult& result) {
  const int hw = std::max(1u, std::thread::hardware_concurrency());
  int threads = config.threads > 0 ? config.threads : std::clamp((conns + 1999) / 2000, 1, hw);
  threads = std::min(threads, std::max(1, conns));
  // Loopback: spread sources so many connections never exhaust one address's ephemeral ports.
  if (is_loopback_v4(shared.addresses)) {
    shared.source_addresses =
        config.source_addresses > 0 ? config.source_addresses : (conns > 1000 ? 8 : 1);
  }
  result.health.threads = threads;
  result.health.source_addresses = shared.source_addresses;
  result.health.open_file_limit = raise_open_file_limit();
  return threads;
}

// Runs `phase` on every lane at once: lane 0 on the calling thread, the others on threads of
// their own.
void run_phase_on(LaneList& lanes, Shared& shared, const Phase& phase) {
  shared.next_index = 0;
  std::vector<std::thread> workers;
  for (size_t i = 1; i < lanes.size(); ++i) {
    workers.emplace_back([&, i] { lanes[i]->run_phase(phase); });
  }
  lanes[0]->run_phase(phase);
  for (auto& t : workers) t.join();
}

// Warmup: closed loop at the run's concurrency (open loop without a cap: up to 64).
Phase warmup_phase(const RunnerConfig& config, const std::vector<PreparedRequest>& warmup) {
  Phase w;
  w.requests = &warmup;
  w.shape.concurrency = config.shape.concurrency > 0
                            ? config.shape.concurrency
                            : static_cast<int>(std::min<size_t>(warmup.size(), 64));
  return w;
}

// The measured phase, starting now: its origin, its end (time-bounded) and its arrival schedule
// (open loop).
Phase measured_phase(const RunnerConfig& config, const std::vector<PreparedRequest>& measured) {
  Phase m;
  m.requests = &measured;
  m.shape = config.shape;
  m.measured = true;
  m.origin_ns = mono_ns();
  if (config.shape.duration_s > 0) {
    m.end_ns = m.origin_ns + static_cast<int64_t>(config.shape.duration_s * 1e9);
  }
  if (config.shape.mode == LoadMode::kOpenLoop && !config.shape.schedule_ns.empty()) {
    m.offsets = config.shape.schedule_ns;
    m.exact_schedule = true;
    if (m.offsets.size() > measured.size()) m.offsets.resize(measured.size());
  } else if (config.shape.mode == LoadMode::kOpenLoop && !measured.empty()) {
    if (config.shape.duration_s > 0) {
      // As many arrivals as fit in the duration (the list is cycled).
      const auto n = static_cast<size_t>(
          std::ceil(config.shape.duration_s * config.shape.arrivals.rate * 1.5) + 16);
      m.offsets = arrival_offsets_ns(config.shape.arrivals, n);
      const int64_t limit = m.end_ns - m.origin_ns;
      while (!m.offsets.empty() && m.offsets.back() >= limit) m.offsets.pop_back();
    } else {
      m.offsets = arrival_offsets_ns(config.shape.arrivals, measured.size());
    }
  }
  return m;
}

// The request count the progress display shows as the total: 0 for a time-bounded run.
size_t progress_total(const RunnerConfig& config, const Phase& m) {
  if (config.shape.mode == LoadMode::kOpenLoop && !m.requests->empty()) return m.offsets.size();
  return config.shape.duration_s > 0 ? 0 : m.requests->size();
}

// Fills the client's health after the measured phase: CPU, memory, connections, the lags of
// every lane's event loop and dispatcher, its reads and content events.
void collect_health(ClientHealth& h, const Shared& shared, LaneList& lanes, double cpu0,
                    double wall_seconds) {
  h.cpu_seconds = process_cpu_seconds() - cpu0;
  h.wall_seconds = wall_seconds;
  h.cpu_utilization = h.wall_seconds > 0 ? h.cpu_seconds / (h.wall_seconds * h.threads) : 0;
  h.peak_in_flight = shared.peak_in_flight.load();
  h.peak_rss_kib = peak_rss_kib();
  h.connections_opened = shared.connections.load();
  h.pool_reopened = shared.pool_reopened.load();
  std::vector<double> loop_lag, sched_lag;
  for (auto& lane : lanes) {
    loop_lag.insert(loop_lag.end(), lane->loop_lag_ms().begin(), lane->loop_lag_ms().end());
    sched_lag.insert(sched_lag.end(), lane->schedule_lag_ms().begin(),
                     lane->schedule_lag_ms().end());
  }
  h.event_loop_lag_p99_ms = p99(loop_lag);
  h.event_loop_lag_max_ms = max_or_zero(loop_lag);
  h.schedule_lag_p99_ms = p99(sched_lag);
  h.schedule_lag_max_ms = max_or_zero(sched_lag);
  uint64_t reads = 0, stamped = 0;
  for (auto& lane : lanes) {
    auto [r, st] = lane->read_counts();
    reads += r;
    stamped += st;
  }
  h.kernel_timestamp_fraction = reads > 0 ? static_cast<double>(stamped) / reads : 0.0;
  h.reads = reads;
  for (auto& lane : lanes) {
    for (const auto& r : lane->records(true)) h.content_events += r.content_ns.size();
  }
  h.cpu_us_per_content_event =
      h.content_events > 0 ? h.cpu_seconds * 1e6 / static_cast<double>(h.content_events) : 0.0;
}

// Warns where the client's health could have distorted the results (`conns`: the connections
// the run needed).
void add_health_warnings(ClientHealth& h, int conns) {
  if (h.event_loop_lag_p99_ms > 1.0) {
    if (h.kernel_timestamp_fraction >= 0.99) {
      h.warnings.push_back(fmt::format(
          "client event-loop lag p99 {:.2f} ms: receive times are kernel timestamps and "
          "unaffected, but send times may be late by up to that much",
          h.event_loop_lag_p99_ms));
    } else {
      h.warnings.push_back(fmt::format(
          "client event-loop lag p99 {:.2f} ms: timestamps may be late by up to that much",
          h.event_loop_lag_p99_ms));
    }
  }
  if (h.schedule_lag_p99_ms > 1.0) {
    h.warnings.push_back(fmt::format(
        "client sent requests late (schedule lag p99 {:.2f} ms): the offered load was lower "
        "than requested; use the schedule-based latencies",
        h.schedule_lag_p99_ms));
  }
  if (h.cpu_utilization > 0.9) {
    h.warnings.push_back(fmt::format(
        "client CPU {:.0f}% of its {} thread(s): the client may have been the bottleneck; "
        "add --threads",
        h.cpu_utilization * 100, h.threads));
  }
  if (h.open_file_limit > 0 && h.open_file_limit < conns + 64) {
    h.warnings.push_back(fmt::format("open-file limit {} is below the {} connections needed",
                                     h.open_file_limit, conns));
  }
}

// Merges the lanes' records of one phase by index into `out`; drops requests cut by the
// interrupt (they measure nothing) and returns how many.
int64_t merge_records(LaneList& lanes, bool measured, std::vector<metrics::RequestRecord>& out) {
  int64_t dropped = 0;
  for (auto& lane : lanes) {
    for (auto& r : lane->records(measured)) {
      if (r.failure == metrics::FailureCause::kCancelled) {
        ++dropped;
        continue;
      }
      out.push_back(std::move(r));
    }
    lane->records(measured).clear();
  }
  std::sort(out.begin(), out.end(),
            [](const metrics::RequestRecord& a, const metrics::RequestRecord& b) {
              return a.index < b.index;
            });
  return dropped;
}

}  // namespace

Expected<RunnerResult> run_load(const RunnerConfig& config,
                                const std::vector<PreparedRequest>& warmup,
                                const std::vector<PreparedRequest>& measured) {
  if (auto s = validate(config); !s) return s.error();
  auto addresses = http::resolve(config.endpoint);
  if (!addresses) return addresses.error();

  RunnerResult result;
  Shared shared;
  shared.config = &config;
  shared.addresses = std::move(*addresses);
  const int conns = expected_connections(config.shape, measured.size());
  const int threads = choose_threads(config, conns, shared, result);
  LaneList lanes;
  for (int i = 0; i < threads; ++i) lanes.push_back(std::make_unique<Lane>(shared, i, threads));

  if (!warmup.empty()) run_phase_on(lanes, shared, warmup_phase(config, warmup));
  if (config.preconnect > 0 && !shared.interrupted) {
    Phase connect;
    connect.requests = &measured;
    connect.preconnect = config.preconnect;
    run_phase_on(lanes, shared, connect);
  }

  result.health.rss_before_kib = current_rss_kib();
  const double cpu0 = process_cpu_seconds();
  result.start_unix = unix_seconds();
  const Phase m = measured_phase(config, measured);
  result.origin_ns = m.origin_ns;
  if (config.on_progress) {
    lanes[0]->on_tick = [&, total = progress_total(config, m)] {
      config.on_progress(static_cast<size_t>(shared.completed.load()), total,
                         ns_to_s(mono_ns() - m.origin_ns));
    };
  }
  if (!measured.empty() && !shared.interrupted) run_phase_on(lanes, shared, m);
  lanes[0]->on_tick = nullptr;

  result.end_unix = unix_seconds();
  result.interrupted = shared.interrupted.load();
  result.deadline_hit = shared.deadline_hit.load();
  collect_health(result.health, shared, lanes, cpu0, result.end_unix - result.start_unix);
  add_health_warnings(result.health, conns);
  merge_records(lanes, false, result.warmup);
  result.cancelled = merge_records(lanes, true, result.measured);
  return result;
}

}  // namespace ib::load
