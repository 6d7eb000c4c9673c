// inferbench: continuous benchmarking of LLM inference serving. See README.md and docs/.
#include <fmt/format.h>

#include <csignal>
#include <exception>
#include <map>

#include "cli/commands.h"
#include "core/redact.h"

extern char** environ;

int main(int argc, char** argv) {
  // Writes to a closed socket must surface as errors, never kill the process.
  std::signal(SIGPIPE, SIG_IGN);
  // Credentials in our own environment (OPENAI_API_KEY, HF_TOKEN, ...) are hidden wherever they
  // would turn up in what we print or store (core/redact.h); children still inherit them.
  {
    std::map<std::string, std::string> env;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      const std::string_view kv(*e);
      if (const size_t eq = kv.find('='); eq != std::string_view::npos)
        env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
    }
    ib::add_secrets_from_env(env);
  }

  CLI::App app{"inferbench: continuous benchmarking of LLM inference serving"};
  app.set_version_flag("--version", std::string("inferbench ") + INFERBENCH_VERSION);
  app.require_subcommand(0, 1);

  std::map<CLI::App*, ib::cli::RunFn> table;
  auto add = [&](ib::cli::RunFn (*reg)(CLI::App&)) {
    auto run = reg(app);
    table.emplace(app.get_subcommands({}).back(), std::move(run));
  };
  add(&ib::cli::register_sweep);
  add(&ib::cli::register_bench);
  add(&ib::cli::register_serve_sim);
  add(&ib::cli::register_plan);
  add(&ib::cli::register_runs);
  add(&ib::cli::register_show);
  add(&ib::cli::register_changed);
  add(&ib::cli::register_verify);
  add(&ib::cli::register_changelog);
  add(&ib::cli::register_gate);
  add(&ib::cli::register_history);
  add(&ib::cli::register_push);
  add(&ib::cli::register_pull);
  add(&ib::cli::register_trace);
  add(&ib::cli::register_compare);
  add(&ib::cli::register_report);
  add(&ib::cli::register_eval);
  add(&ib::cli::register_tokenize);
  add(&ib::cli::register_tune);
  add(&ib::cli::register_sample_power);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : ib::cli::kExitUsage;
  }
  for (auto& [sub, run] : table) {
    if (sub->parsed()) {
      try {
        return run();
      } catch (const std::exception& e) {
        fmt::print(stderr, "inferbench {}: internal error: {}\n", sub->get_name(), e.what());
        return ib::cli::kExitFailure;
      }
    }
  }
  // No subcommand: show what there is.
  fmt::print("{}", app.help());
  return ib::cli::kExitUsage;
}
