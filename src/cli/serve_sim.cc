// `inferbench serve-sim`: runs the embedded simulated OpenAI-compatible engine (docs/serve-sim.md)
// until SIGINT or SIGTERM.
#include <fmt/format.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <system_error>

#include "cli/commands.h"
#include "core/files.h"
#include "sim/sim_server.h"

namespace ib::cli {

namespace {

struct ServeSimOptions {
  sim::SimArgs args;
  std::string port_file;
};

int run(const ServeSimOptions& o) {
  if (auto valid = sim::validate(o.args); !valid) {
    fmt::print(stderr, "inferbench serve-sim: {}\n", valid.error().message);
    return kExitUsage;
  }
  // Declared first, destroyed last: the server's pending work refers to it.
  boost::asio::io_context io;
  sim::SimServer server(io, o.args);
  auto port = server.listen();
  if (!port) {
    fmt::print(stderr, "inferbench serve-sim: {}\n", port.error().message);
    return kExitFailure;
  }
  if (!o.port_file.empty()) {
    if (auto written = write_file_atomic(o.port_file, fmt::format("{}\n", *port)); !written) {
      fmt::print(stderr, "inferbench serve-sim: cannot write the port file: {}\n",
                 written.error().message);
      return kExitFailure;
    }
  }
  const std::string& host = o.args.host;
  fmt::print(stderr, "serve-sim listening on http://{}:{}\n",
             host.find(':') != std::string::npos ? "[" + host + "]" : host, *port);

  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int signal_number) {
    if (ec) return;
    fmt::print(stderr, "serve-sim: received {}, shutting down\n",
               signal_number == SIGINT ? "SIGINT" : "SIGTERM");
    server.stop();
  });
  // Returns once stop() has closed every connection and the cancelled requests have unwound.
  io.run();

  if (!o.port_file.empty()) {
    std::error_code ignored;
    std::filesystem::remove(o.port_file, ignored);  // a stale port file would mislead a parent
  }
  return kExitOk;
}

// A number check with a short message ("must be > 0, got -1"); CLI11's PositiveNumber prints the
// whole double range instead.
CLI::Validator number_at_least(double min, bool inclusive) {
  std::string rule = fmt::format("{} {}", inclusive ? ">=" : ">", min);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value)) return "not a number: " + text;
        bool ok = std::isfinite(value) && (inclusive ? value >= min : value > min);
        return ok ? std::string() : fmt::format("must be {}, got {}", rule, text);
      },
      min == 0 ? (inclusive ? "NONNEGATIVE" : "POSITIVE") : rule);
}

}  // namespace

RunFn register_serve_sim(CLI::App& root) {
  auto o = std::make_shared<ServeSimOptions>();
  sim::SimArgs& a = o->args;
  CLI::App* app = root.add_subcommand(
      "serve-sim", "Run the embedded simulated OpenAI-compatible inference server");
  app->add_option("--host", a.host, "Address to listen on")->capture_default_str();
  app->add_option("--port", a.port, "TCP port; 0 picks a free one (see --port-file)")
      ->capture_default_str();
  app->add_option("--port-file", o->port_file,
                  "Once listening, write the bound port and a newline here (atomically)");
  app->add_option("--model", a.model, "Served model name")->capture_default_str();
  app->add_option("--max-model-len", a.max_model_len,
                  "Context length: prompt + output tokens beyond it get 400")
      ->capture_default_str()
      ->check(CLI::Range(2, std::numeric_limits<int>::max()));
  app->add_option("--prefill-tok-s", a.timing.prefill_tok_s, "Prefill speed, prompt tokens/s")
      ->capture_default_str()
      ->check(number_at_least(0, false));
  app->add_option("--prefill-overhead-ms", a.timing.prefill_overhead_ms,
                  "Fixed time added to every prefill")
      ->capture_default_str()
      ->check(number_at_least(0, true));
  app->add_option("--decode-base-ms", a.timing.decode_base_ms, "Decode step time of a lone request")
      ->capture_default_str()
      ->check(number_at_least(0, true));
  app->add_option("--decode-per-running-ms", a.timing.decode_per_running_ms,
                  "Added to each decode step per running request")
      ->capture_default_str()
      ->check(number_at_least(0, true));
  app->add_option("--max-running", a.max_running,
                  "Requests generating at once; later ones wait in FIFO order")
      ->capture_default_str()
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  app->add_option("--seed", a.seed, "Seed of output lengths and texts")->capture_default_str();
  app->add_option("--keep-alive-timeout-s", a.keep_alive_timeout_s,
                  "Close keep-alive connections idle this long (0 = never)")
      ->capture_default_str()
      ->check(number_at_least(0, true));
  return [o]() { return run(*o); };
}

}  // namespace ib::cli
