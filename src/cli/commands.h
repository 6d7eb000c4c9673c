// The subcommand table (the main program is a thin dispatcher). Each subcommand lives in
// its own file and registers itself on the root app, returning the function that runs it.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "cli/options.h"
#include "core/expected.h"

namespace ib::cli {

/// Runs a parsed subcommand; returns the process exit code (0 success,
/// 1 benchmark or validation failure, 2 usage or input error, 130 interrupted).
using RunFn = std::function<int()>;

RunFn register_bench(CLI::App& root);
RunFn register_serve_sim(CLI::App& root);
RunFn register_sweep(CLI::App& root);
RunFn register_plan(CLI::App& root);
RunFn register_runs(CLI::App& root);
RunFn register_show(CLI::App& root);
RunFn register_changed(CLI::App& root);
RunFn register_verify(CLI::App& root);
RunFn register_changelog(CLI::App& root);
RunFn register_gate(CLI::App& root);
RunFn register_history(CLI::App& root);
RunFn register_push(CLI::App& root);
RunFn register_pull(CLI::App& root);
RunFn register_trace(CLI::App& root);
RunFn register_compare(CLI::App& root);
RunFn register_report(CLI::App& root);
RunFn register_eval(CLI::App& root);
RunFn register_tokenize(CLI::App& root);
RunFn register_tune(CLI::App& root);
RunFn register_sample_power(CLI::App& root);

/// Kept for callers not yet on cli/options.h: a positive / non-negative finite number without
/// an upper bound. New options use integer_in or real_in (cli/options.h), which bound both sides.
inline CLI::Validator positive_number() {
  return positive_real(std::numeric_limits<double>::infinity());
}
inline CLI::Validator non_negative_number() {
  return real_in(0, std::numeric_limits<double>::infinity());
}

/// Where recipes live when a command is not told: recipes/ and examples/recipes/.
std::vector<std::string> default_recipe_paths();

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInterrupted = 130;

/// The exit code of a command that stopped on `kind` (core/expected.h): usage and input 2, I/O and
/// run failures 1, an interrupt 128 + the signal (core/interrupt.h). The one place the mapping is.
int exit_code(ErrorKind kind);
inline int exit_code(const Error& e) { return exit_code(e.kind); }
/// Prints "inferbench COMMAND: message" on stderr and returns the exit code of the error's kind:
/// the one way a command stops on an Error. A message that may hold a server's or a command's
/// text is redacted by the caller (core/redact.h).
int fail(std::string_view command, const Error& e);

}  // namespace ib::cli
