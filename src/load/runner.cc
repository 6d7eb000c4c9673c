#include "load/runner.h"

#include <sys/resource.h>

#include <algorithm>
#include <memory>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/verb.hpp>

#include "core/clock.h"
#include "core/interrupt.h"
#include "load/stream_request.h"

namespace ib {

namespace asio = boost::asio;

namespace {

double process_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto tv = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return tv(ru.ru_utime) + tv(ru.ru_stime);
}

// Shared state of one phase (warmup or measured). Single-threaded: no locks.
struct Phase {
  const std::vector<PreparedRequest>* requests = nullptr;
  std::vector<RequestRecord>* records = nullptr;
  size_t next = 0;
  size_t done = 0;
  bool measured = false;
};

class ClosedLoop {
 public:
  ClosedLoop(const RunnerConfig& config, asio::ip::tcp::resolver::results_type addresses)
      : config_(config), addresses_(std::move(addresses)) {}

  RunnerResult run(const std::vector<PreparedRequest>& warmup,
                   const std::vector<PreparedRequest>& measured) {
    RunnerResult result;
    result.warmup.resize(warmup.size());
    result.measured.resize(measured.size());
    const double cpu0 = process_cpu_seconds();
    result.origin_ns = mono_ns();
    result.start_unix = unix_seconds();

    const int n = std::max(1, config_.concurrency);
    for (int i = 0; i < n; ++i) {
      workers_.push_back(std::make_unique<Worker>(io_.get_executor(), config_, addresses_));
    }
    asio::co_spawn(
        io_,
        [&]() -> asio::awaitable<void> {
          Phase w{&warmup, &result.warmup, 0, 0, false};
          co_await run_phase(w);
          Phase m{&measured, &result.measured, 0, 0, true};
          co_await run_phase(m);
          finished_ = true;
          watchdog_.cancel();
        },
        asio::detached);
    asio::co_spawn(io_, watch_interrupt(), asio::detached);
    io_.run();

    result.end_unix = unix_seconds();
    result.client_cpu_s = process_cpu_seconds() - cpu0;
    result.peak_in_flight = peak_in_flight_;
    result.interrupted = interrupted_;
    // Drop requests that never ran or were cut by the interrupt: they measure nothing.
    auto drop = [&](std::vector<RequestRecord>& v) {
      auto it = std::remove_if(v.begin(), v.end(), [](const RequestRecord& r) {
        return r.sched_ns == 0 || r.failure == FailureCause::kCancelled;
      });
      int64_t removed = std::distance(it, v.end());
      v.erase(it, v.end());
      return removed;
    };
    drop(result.warmup);
    result.cancelled = drop(result.measured);
    return result;
  }

 private:
  struct Worker {
    Worker(asio::any_io_executor ex, const RunnerConfig& c,
           asio::ip::tcp::resolver::results_type addrs)
        : conn(std::move(ex), c.endpoint, std::move(addrs), c.timeouts) {}
    HttpConnection conn;
    StreamingResponse response;
  };

  asio::awaitable<void> run_phase(Phase& phase) {
    // One coroutine per worker; the phase ends when all have drained the shared queue.
    size_t active = workers_.size();
    asio::steady_timer all_done(io_, asio::steady_timer::time_point::max());
    for (auto& w : workers_) {
      asio::co_spawn(
          io_,
          [&, worker = w.get()]() -> asio::awaitable<void> {
            co_await work(*worker, phase);
            if (--active == 0) all_done.cancel();
          },
          asio::detached);
    }
    // co_spawn dispatches: a worker with nothing to do has already finished here, before any
    // wait could be cancelled, so wait only while some are still active.
    if (active > 0) {
      boost::system::error_code ec;
      co_await all_done.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
  }

  asio::awaitable<void> work(Worker& w, Phase& phase) {
    const std::string_view path = api_path(config_.api);
    while (!interrupted_ && phase.next < phase.requests->size()) {
      const size_t i = phase.next++;
      const PreparedRequest& req = (*phase.requests)[i];
      RequestRecord& rec = (*phase.records)[i];
      rec.index = static_cast<int64_t>(i);
      rec.input_len = req.input_len;
      rec.output_len = req.output_len;
      rec.content_ns.reserve(static_cast<size_t>(req.output_len) + 2);
      rec.sched_ns = mono_ns();  // closed loop: intended send time = the moment a slot is free
      ++in_flight_;
      peak_in_flight_ = std::max(peak_in_flight_, in_flight_);
      for (;;) {
        const bool reused = w.conn.reused();
        w.response.reset(&rec);
        HttpOutcome outcome =
            co_await w.conn.request(boost::beast::http::verb::post, path, req.body, w.response);
        if (rec.send_ns == 0) rec.send_ns = outcome.send_ns;
        // A keep-alive connection the server closed while idle fails before any response byte:
        // safe to send again on a fresh connection (the server never saw a complete request).
        if (outcome.ec && !outcome.response_started && !outcome.connect_failed && reused &&
            rec.retries < config_.max_retries && !interrupted_) {
          ++rec.retries;
          rec.send_ns = 0;
          continue;
        }
        rec.done_ns = mono_ns();
        if (interrupted_ && outcome.ec) {
          rec.failure = FailureCause::kCancelled;
          rec.error = "run interrupted";
        } else {
          w.response.finish(outcome);
        }
        break;
      }
      --in_flight_;
      ++phase.done;
      if (phase.measured && config_.on_progress) {
        config_.on_progress(phase.done, phase.requests->size());
      }
    }
  }

  asio::awaitable<void> watch_interrupt() {
    while (!finished_) {
      watchdog_.expires_after(std::chrono::milliseconds(20));
      boost::system::error_code ec;
      co_await watchdog_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (!finished_ && interrupt_requested() && !interrupted_) {
        interrupted_ = true;
        for (auto& w : workers_) w->conn.close();  // in-flight requests end now
      }
    }
  }

  const RunnerConfig& config_;
  asio::ip::tcp::resolver::results_type addresses_;
  asio::io_context io_{1};
  asio::steady_timer watchdog_{io_};
  std::vector<std::unique_ptr<Worker>> workers_;
  int in_flight_ = 0;
  int peak_in_flight_ = 0;
  bool interrupted_ = false;
  bool finished_ = false;
};

}  // namespace

Expected<RunnerResult> run_closed_loop(const RunnerConfig& config,
                                       const std::vector<PreparedRequest>& warmup,
                                       const std::vector<PreparedRequest>& measured) {
  auto addresses = resolve(config.endpoint);
  if (!addresses) return addresses.error();
  ClosedLoop loop(config, std::move(*addresses));
  return loop.run(warmup, measured);
}

}  // namespace ib
