// `inferbench sweep`: the main job. With no argument it runs the bundled example sweep on the
// embedded simulator (serve-sim as a child process).
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/files.h"
#include "core/interrupt.h"
#include "sweep/sweep.h"

namespace ib::cli {

namespace {

struct SweepCliOptions {
  std::string runs_dir = "runs";
  std::vector<int> concurrencies;
  int isl = 0;
  int osl = 0;
  std::string api = "completions";
  double startup_timeout_s = 30;
  std::vector<std::string> server_args;
};

int run(const SweepCliOptions& o) {
  SweepSpec spec = default_sweep_spec();
  if (!o.concurrencies.empty()) {
    spec.points.clear();
    for (int c : o.concurrencies) {
      if (c < 1) {
        fmt::print(stderr, "inferbench sweep: --concurrency values must be at least 1 (got {})\n", c);
        return kExitUsage;
      }
      spec.points.push_back({c, std::max(8, 4 * c), c});
    }
  }
  if (o.isl > 0) spec.isl = o.isl;
  if (o.osl > 0) spec.osl = o.osl;
  auto api = parse_api(o.api);
  if (!api) {
    fmt::print(stderr, "inferbench sweep: --api must be 'completions' or 'chat' (got '{}')\n", o.api);
    return kExitUsage;
  }
  spec.api = *api;
  spec.server_args = o.server_args;

  SweepOptions so;
  so.runs_dir = o.runs_dir;
  so.inferbench_exe = self_executable();
  so.startup_timeout = std::chrono::seconds(static_cast<int64_t>(o.startup_timeout_s));
  install_interrupt_handlers();

  fmt::print("sweep: {} (isl {}, osl {}, api {})\n", spec.name, spec.isl, spec.osl, o.api);
  std::fflush(stdout);
  auto outcome = run_sweep(spec, so, stdout);
  if (!outcome) {
    fmt::print(stderr, "inferbench sweep: {}\n", outcome.error().message);
    return kExitUsage;
  }
  fmt::print("results: {}\n", outcome->run_dir.string());
  if (!outcome->server_error.empty()) {
    fmt::print(stderr, "inferbench sweep: {}\n", outcome->server_error);
  }
  if (outcome->interrupted) {
    fmt::print(stderr, "inferbench sweep: interrupted; finished points are kept\n");
    return kExitInterrupted;
  }
  return outcome->ok() ? kExitOk : kExitFailure;
}

}  // namespace

RunFn register_sweep(CLI::App& root) {
  auto o = std::make_shared<SweepCliOptions>();
  CLI::App* app = root.add_subcommand(
      "sweep", "Run a concurrency sweep (default: the bundled example on the embedded simulator)");
  app->add_option("--runs-dir", o->runs_dir, "Where run folders are created")->capture_default_str();
  app->add_option("--concurrency", o->concurrencies, "Concurrency points (default 1 4 16 64)")
      ->delimiter(',');
  app->add_option("--isl", o->isl, "Input length (default 512)");
  app->add_option("--osl", o->osl, "Output length (default 64)");
  app->add_option("--api", o->api, "completions | chat")->capture_default_str();
  app->add_option("--startup-timeout", o->startup_timeout_s, "Seconds to wait for the server")
      ->capture_default_str();
  app->add_option("--server-arg", o->server_args, "Argument for serve-sim (repeatable; replaces the bundled preset --hardware=H200 --model-preset=llama-3.1-8b --tp=1)")
      ->allow_extra_args(false);  // given: they replace the bundled preset arguments
  return [o]() { return run(*o); };
}

}  // namespace ib::cli
