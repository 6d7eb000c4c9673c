// Helpers for end-to-end tests: run the real inferbench binary as child processes on loopback,
// bounded in time, and read what they wrote.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <map>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/files.h"
#include "core/process.h"
#include "core/temp_dir.h"
#include "http/client.h"

namespace ib::e2e {

namespace fs = std::filesystem;

/// A fresh temporary folder, removed at destruction.
class TempDir : public ib::TempDir {
 public:
  TempDir() : ib::TempDir("inferbench-e2e") {}
};

struct CommandResult {
  ExitInfo exit;
  std::string output;  // stdout and stderr together
  bool timed_out = false;
};

/// Runs `inferbench ARGS...` to completion (killed after `timeout`). A non-empty `prefix` is a
/// command that runs inferbench for us: `PREFIX... INFERBENCH_BIN ARGS...` (a shell that sets a
/// limit and execs, say).
inline CommandResult run_inferbench(const std::vector<std::string>& args, const fs::path& log,
                                    std::chrono::seconds timeout = std::chrono::seconds(120),
                                    std::map<std::string, std::string> env = {},
                                    std::vector<std::string> prefix = {}) {
  SpawnOptions so;
  so.env_set = std::move(env);
  so.argv = std::move(prefix);
  so.argv.push_back(INFERBENCH_BIN);
  so.argv.insert(so.argv.end(), args.begin(), args.end());
  so.log_path = log;
  CommandResult r;
  auto child = ChildProcess::spawn(so);
  if (!child) {
    r.output = child.error().message;
    r.exit.code = -1;
    return r;
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!child->poll() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  r.timed_out = !child->poll().has_value();
  r.exit = child->stop(std::chrono::milliseconds(2000));
  auto text = read_file(log);
  if (text) r.output = *text;
  return r;
}

/// Runs several `inferbench ARGS...` command lines, up to `parallel` at a time (each killed after
/// `timeout`; its output in logs[i]); the results in the order of `commands`. For tables of short
/// commands, whose cost is mostly each process's start (a few hundred milliseconds under ASan).
inline std::vector<CommandResult> run_inferbench_all(
    const std::vector<std::vector<std::string>>& commands, const std::vector<fs::path>& logs,
    std::chrono::seconds timeout = std::chrono::seconds(60), size_t parallel = 4) {
  struct Running {
    size_t index;
    ChildProcess child;
    std::chrono::steady_clock::time_point deadline;
  };
  std::vector<CommandResult> results(commands.size());
  std::vector<Running> running;
  size_t next = 0;
  auto finish = [&](Running& r, bool timed_out) {
    CommandResult& out = results[r.index];
    out.timed_out = timed_out;
    out.exit = r.child.stop(std::chrono::milliseconds(2000));
    auto text = read_file(logs[r.index]);
    if (text) out.output = *text;
  };
  while (next < commands.size() || !running.empty()) {
    while (next < commands.size() && running.size() < parallel) {
      SpawnOptions so;
      so.argv.push_back(INFERBENCH_BIN);
      so.argv.insert(so.argv.end(), commands[next].begin(), commands[next].end());
      so.log_path = logs[next];
      auto child = ChildProcess::spawn(so);
      if (!child) {
        results[next].output = child.error().message;
        results[next].exit.code = -1;
      } else {
        running.push_back({next, std::move(*child), std::chrono::steady_clock::now() + timeout});
      }
      ++next;
    }
    for (size_t i = 0; i < running.size();) {
      const bool done = running[i].child.poll().has_value();
      const bool late = std::chrono::steady_clock::now() >= running[i].deadline;
      if (done || late) {
        finish(running[i], !done);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return results;
}

/// A serve-sim child on a free loopback port, stopped at destruction.
/// Polls `cond` every 20 ms until it holds (true) or `limit` passed (false): tests wait for
/// events, never for a guessed time.
inline bool wait_for(const std::function<bool()>& cond,
                     std::chrono::seconds limit = std::chrono::seconds(60)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

class SimServer {
 public:
  /// Starts serve-sim with `args` added; fails the current test if it is not healthy in time.
  explicit SimServer(const fs::path& dir, std::vector<std::string> args = {}) {
    port_file_ = dir / "sim.port";
    log_ = dir / "sim.log";
    SpawnOptions so;
    so.argv = {INFERBENCH_BIN, "serve-sim", "--port", "0", "--port-file", port_file_.string()};
    so.argv.insert(so.argv.end(), args.begin(), args.end());
    so.log_path = log_;
    auto child = ChildProcess::spawn(so);
    if (!child) {
      ADD_FAILURE() << child.error().message;
      return;
    }
    child_.emplace(std::move(*child));
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      if (child_->poll()) break;
      auto text = read_file(port_file_);
      if (text && !text->empty() && text->back() == '\n') {
        port_ = std::atoi(text->c_str());
        auto r = http::http_get(endpoint(), "/health", std::chrono::seconds(2));
        if (r && r->status == 200) return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "serve-sim did not become healthy; log:\n" << file_tail(log_);
  }

  http::Endpoint endpoint() const {
    return http::Endpoint{"127.0.0.1", static_cast<uint16_t>(port_), ""};
  }
  std::string url() const { return endpoint().url(); }
  bool running() { return child_ && !child_->poll(); }
  std::string log() const { return file_tail(log_, 1 << 20); }
  const fs::path& port_file() const { return port_file_; }
  /// Requests the engine finished (stop or length, not abort), from its /metrics; -1 when the
  /// server does not answer. Lets a test wait for progress instead of sleeping a guessed time.
  int finished_requests() const {
    auto r = http::http_get(endpoint(), "/metrics", std::chrono::seconds(2));
    if (!r || r->status != 200) return -1;
    double total = 0;
    std::string_view body = r->body;
    const std::string_view name = "vllm:request_success_total{";
    for (size_t pos = 0; pos < body.size();) {
      size_t end = body.find('\n', pos);
      if (end == std::string_view::npos) end = body.size();
      std::string_view line = body.substr(pos, end - pos);
      pos = end + 1;
      if (line.substr(0, name.size()) != name || line.find("\"abort\"") != std::string_view::npos)
        continue;
      total += std::atof(std::string(line.substr(line.rfind(' ') + 1)).c_str());
    }
    return static_cast<int>(total);
  }
  /// Waits until the engine has finished at least `n` requests (true) or `limit` passed (false).
  bool wait_finished(int n, std::chrono::seconds limit = std::chrono::seconds(60)) const {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (finished_requests() >= n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  /// SIGTERM, then SIGKILL after `grace`; how serve-sim ended.
  ExitInfo stop(std::chrono::milliseconds grace = std::chrono::milliseconds(10000)) {
    return child_ ? child_->stop(grace) : ExitInfo{};
  }

 private:
  fs::path port_file_, log_;
  int port_ = 0;
  std::optional<ChildProcess> child_;
};

inline boost::json::object read_json(const fs::path& p) {
  auto text = read_file(p);
  if (!text) {
    ADD_FAILURE() << text.error().message;
    return {};
  }
  boost::system::error_code ec;
  auto v = boost::json::parse(*text, ec);
  if (ec || !v.is_object()) {
    ADD_FAILURE() << p << " is not a JSON object";
    return {};
  }
  return v.as_object();
}

inline double num(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr) {
    ADD_FAILURE() << "missing key " << key;
    return 0;
  }
  if (v->is_double()) return v->as_double();
  if (v->is_int64()) return static_cast<double>(v->as_int64());
  if (v->is_uint64()) return static_cast<double>(v->as_uint64());
  ADD_FAILURE() << "key " << key << " is not a number";
  return 0;
}

/// A loopback port with nothing listening (bound, then released).
/// The identity lines of a single-node simulator recipe key (everything before serve/scenarios).
inline std::string sim_key_header(const std::string& key, const std::string& model) {
  return key + ":\n  image: inferbench/serve-sim\n  model: " + model +
         "\n  model-prefix: sim\n  precision: bf16\n  framework: serve-sim\n  runner: local\n"
         "  multinode: false\n";
}

inline int unused_port() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(
      io, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  return a.local_endpoint().port();
}

/// A stand-in nvidia-smi in dir/bin, as the real one prints `--query-gpu=... --format=csv,nounits
/// --loop-ms=N`: a header, then every 100 ms a line per GPU (`gpus` of them) at `watts` (or a
/// token such as [N/A]). Returns the bin folder (put it first on PATH; a Slurm step inherits it).
inline fs::path fake_nvidia_smi(const fs::path& dir, const std::string& watts, int gpus = 1) {
  const fs::path bin = dir / "bin";
  fs::create_directories(bin);
  std::string script =
      "#!/bin/sh\n"
      "echo 'timestamp, index, power.draw [W], utilization.gpu [%], memory.used [MiB], "
      "clocks.sm [MHz]'\n"
      "while true; do\n"
      "  t=$(date +'%Y/%m/%d %H:%M:%S.%3N')\n";
  for (int g = 0; g < gpus; ++g) {
    script += "  echo \"$t, " + std::to_string(g) + ", " + watts + ", 87, 70000, 1980\"\n";
  }
  script += "  sleep 0.1\ndone\n";
  (void)write_file_atomic(bin / "nvidia-smi", script);
  fs::permissions(bin / "nvidia-smi", fs::perms::owner_all, fs::perm_options::replace);
  return bin;
}

/// PATH with `bin` first, for run_inferbench's environment.
inline std::map<std::string, std::string> path_with(const fs::path& bin) {
  const char* path = std::getenv("PATH");
  return {{"PATH", bin.string() + ":" + (path ? path : "/usr/bin:/bin")}};
}

}  // namespace ib::e2e
