#include "sweep/sweep.h"

#include <unistd.h>

#include <cstdio>
#include <thread>

#include <fmt/format.h>

#include "core/clock.h"
#include "core/files.h"
#include "core/interrupt.h"
#include "core/process.h"

namespace ib {

namespace fs = std::filesystem;

bool SweepOutcome::ok() const {
  if (interrupted || !server_error.empty() || points.empty()) return false;
  for (const auto& p : points) {
    if (!p.ok) return false;
  }
  return true;
}

std::string sweep_table_header() {
  return fmt::format("{:>5} {:>10} {:>12} {:>12} {:>12} {:>14} {:>7}\n", "conc", "req/s",
                     "out tok/s", "p50 TTFT ms", "p50 TPOT ms", "p50 tok/s/user", "failed");
}

std::string sweep_table_row(const SweepPointResult& r) {
  const BenchMetrics& m = r.metrics;
  std::string row = fmt::format(
      "{:>5} {:>10.2f} {:>12.1f} {:>12.2f} {:>12.2f} {:>14.1f} {:>7}", r.point.concurrency,
      m.request_throughput, m.output_throughput, m.ttft_ms.median, m.tpot_ms.median,
      m.tpot_ms.median > 0 ? 1000.0 / m.tpot_ms.median : 0.0, m.failed);
  if (!r.ok) row += fmt::format("  FAILED: {}", r.error);
  return row + "\n";
}

namespace {

std::string timestamp_name() {
  time_t t = time(nullptr);
  tm tm_utc{};
  gmtime_r(&t, &tm_utc);
  char buf[32];
  strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm_utc);
  return buf;
}

Expected<fs::path> make_run_dir(const fs::path& runs_dir) {
  std::error_code ec;
  fs::create_directories(runs_dir, ec);
  if (ec) return Error{fmt::format("{}: cannot create: {}", runs_dir.string(), ec.message())};
  const std::string base = timestamp_name();
  for (int i = 0; i < 1000; ++i) {
    fs::path p = runs_dir / (i == 0 ? base : fmt::format("{}-{}", base, i));
    if (fs::create_directory(p, ec)) return p;
    if (ec) return Error{fmt::format("{}: cannot create: {}", p.string(), ec.message())};
  }
  return Error{fmt::format("{}: too many runs with the same timestamp", runs_dir.string())};
}

// Waits for the port file, then for GET /health to answer 200. Error says why (child exited
// with its status, timeout, interrupted).
Expected<Endpoint> wait_healthy(ChildProcess& server, const fs::path& port_file,
                                std::chrono::seconds timeout) {
  const int64_t deadline = mono_ns() + std::chrono::nanoseconds(timeout).count();
  std::optional<Endpoint> endpoint;
  std::string last_error = "no answer yet";
  while (mono_ns() < deadline) {
    if (interrupt_requested()) return Error{"interrupted while waiting for the server"};
    if (auto exit = server.poll()) {
      return Error{fmt::format("server exited during startup ({})", exit->describe())};
    }
    if (!endpoint) {
      auto text = read_file(port_file);
      if (text && !text->empty() && text->back() == '\n') {
        int port = std::atoi(text->c_str());
        if (port > 0 && port < 65536) {
          endpoint = Endpoint{"127.0.0.1", static_cast<uint16_t>(port), ""};
        }
      }
    }
    if (endpoint) {
      auto r = http_get(*endpoint, "/health", std::chrono::seconds(2));
      if (r && r->status == 200) return *endpoint;
      last_error = r ? fmt::format("HTTP {}", r->status) : r.error().message;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Error{fmt::format("server not healthy after {} s ({})", timeout.count(), last_error)};
}

}  // namespace

Expected<SweepOutcome> run_sweep(const SweepSpec& spec, const SweepOptions& options,
                                 std::FILE* table_out) {
  auto run_dir = make_run_dir(options.runs_dir);
  if (!run_dir) return run_dir.error();
  SweepOutcome outcome;
  outcome.run_dir = *run_dir;
  const fs::path port_file = *run_dir / "server.port";
  const fs::path log_file = *run_dir / "server.log";

  SpawnOptions so;
  so.argv = {options.inferbench_exe.string(), "serve-sim", "--host", "127.0.0.1", "--port", "0",
             "--port-file", port_file.string(), "--model", spec.model};
  so.argv.insert(so.argv.end(), spec.server_args.begin(), spec.server_args.end());
  so.log_path = log_file;
  auto server = ChildProcess::spawn(so);
  if (!server) return server.error();

  auto endpoint = wait_healthy(*server, port_file, options.startup_timeout);
  if (!endpoint) {
    outcome.interrupted = interrupt_requested();
    outcome.server_error = endpoint.error().message;
    std::string tail = file_tail(log_file, 2048);
    if (!tail.empty()) outcome.server_error += "\n--- server.log (tail) ---\n" + tail;
  } else {
    outcome.server_url = endpoint->url();
    std::fputs(sweep_table_header().c_str(), table_out);
    std::fflush(table_out);
    for (const SweepPoint& point : spec.points) {
      if (interrupt_requested()) {
        outcome.interrupted = true;
        break;
      }
      SweepPointResult pr;
      pr.point = point;
      if (auto exit = server->poll()) {
        outcome.server_error = fmt::format("server exited ({})", exit->describe());
        break;
      }
      BenchSpec bs;
      bs.endpoint_url = endpoint->url();
      bs.model = spec.model;
      bs.api = spec.api;
      bs.workload.isl = spec.isl;
      bs.workload.osl = spec.osl;
      bs.workload.range_ratio = spec.range_ratio;
      bs.workload.seed = spec.seed;
      bs.workload.num_prompts = point.num_prompts;
      bs.shape.concurrency = point.concurrency;
      bs.warmups = point.warmups;
      bs.show_progress = options.show_progress;
      if (options.show_progress && isatty(STDERR_FILENO)) {
        fmt::print(stderr, "point conc={} ({} requests)...\n", point.concurrency,
                   point.num_prompts);
      }
      auto report = run_bench(bs);
      if (!report) {
        pr.error = report.error().message;
      } else {
        pr.metrics = report->metrics;
        pr.result_path = *run_dir / fmt::format("conc_{}.json", point.concurrency);
        report->json["sweep_name"] = spec.name;
        if (auto s = write_file_atomic(pr.result_path,
                                       boost::json::serialize(report->json) + "\n");
            !s) {
          pr.error = s.error().message;
        } else if (report->partial) {
          pr.error = "interrupted (partial result kept)";
          outcome.interrupted = true;
        } else if (pr.metrics.num_requests == 0 ||
                   pr.metrics.failure_rate() > kMaxFailureRate) {
          pr.error = fmt::format("{} of {} requests failed", pr.metrics.failed,
                                 pr.metrics.num_requests);
          if (auto exit = server->poll()) {
            pr.error += fmt::format("; server exited ({})", exit->describe());
          }
        } else {
          pr.ok = true;
        }
      }
      std::fputs(sweep_table_row(pr).c_str(), table_out);
      std::fflush(table_out);
      outcome.points.push_back(std::move(pr));
      if (outcome.interrupted) break;
    }
  }
  ExitInfo exit = server->stop();
  (void)exit;

  // The run's summary: every point with its status and headline figures.
  boost::json::object summary;
  summary["sweep_name"] = spec.name;
  summary["status"] = outcome.ok() ? "ok" : (outcome.interrupted ? "interrupted" : "failed");
  summary["server_error"] = outcome.server_error;
  summary["server_url"] = outcome.server_url;
  summary["server_log"] = log_file.filename().string();
  boost::json::array rows;
  for (const auto& p : outcome.points) {
    boost::json::object row;
    row["concurrency"] = p.point.concurrency;
    row["ok"] = p.ok;
    row["error"] = p.error;
    row["result"] = p.result_path.filename().string();
    row["request_throughput"] = p.metrics.request_throughput;
    row["output_throughput"] = p.metrics.output_throughput;
    row["median_ttft_ms"] = p.metrics.ttft_ms.median;
    row["median_tpot_ms"] = p.metrics.tpot_ms.median;
    row["median_intvty"] = p.metrics.tpot_ms.median > 0 ? 1000.0 / p.metrics.tpot_ms.median : 0.0;
    row["failed"] = p.metrics.failed;
    rows.push_back(std::move(row));
  }
  summary["points"] = std::move(rows);
  if (auto s = write_file_atomic(*run_dir / "summary.json", boost::json::serialize(summary) + "\n");
      !s) {
    return s.error();
  }
  return outcome;
}

}  // namespace ib
