// Running a short command to completion and capturing its output (git, sbatch, squeue, ...).
// fork/exec with an argv, never through a shell.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/expected.h"
#include "core/process.h"

namespace ib {

struct CommandOptions {
  std::filesystem::path cwd;                   // empty: the current directory
  std::map<std::string, std::string> env_set;  // added to the inherited environment
  std::string stdin_data;                      // written to the command's stdin, then closed
  std::chrono::milliseconds timeout{60'000};   // SIGKILL to the process group when exceeded
  size_t max_output = 256u << 20;              // per stream; beyond it the command is killed
};

struct CommandResult {
  ExitInfo exit;
  std::string out;
  std::string err;
  bool ok() const { return !exit.signaled && exit.code == 0; }
};

/// Runs argv[0] (PATH searched) to completion. Error only when it could not be run at all
/// (not found, not executable, timed out, output too large); a non-zero exit is a result.
Expected<CommandResult> run_command(const std::vector<std::string>& argv,
                                    const CommandOptions& options = {});

/// "git show HEAD:x" style rendering of an argv for messages (arguments with spaces quoted).
std::string describe_argv(const std::vector<std::string>& argv);

}  // namespace ib
