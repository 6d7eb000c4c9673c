// What the Slurm end-to-end tests share: whether a cluster is there (scripts/slurm-up.sh), the
// jobs still queued under a name, the processes left with a name in their command line.
#pragma once

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include "core/command.h"
#include "e2e_util.h"

namespace ib::e2e {

inline std::optional<std::string> why_no_slurm() {
  CommandOptions co;
  co.timeout = std::chrono::seconds(20);
  auto v = run_command({"sbatch", "--version"}, co);
  if (!v) return "sbatch is not on PATH (" + v.error().message + ")";
  auto s = run_command({"sinfo", "-h", "-o", "%T"}, co);
  if (!s) return "sinfo could not run: " + s.error().message;
  if (!s->ok()) return "sinfo failed (" + s->exit.describe() + "): " + s->err;
  // A node that runs another test's job (allocated, mixed, completing) is up: the job waits for
  // it. Only a cluster without any usable node is missing.
  bool usable = false;
  for (const char* state : {"idle", "mixed", "allocated", "completing"}) {
    usable = usable || s->out.find(state) != std::string::npos;
  }
  if (!usable) return "no usable Slurm node (sinfo says: " + s->out + ")";
  return std::nullopt;
}

#define REQUIRE_SLURM_OR_SKIP()                                                              \
  do {                                                                                       \
    if (auto why = why_no_slurm()) {                                                         \
      const char* require = std::getenv("IB_REQUIRE_SLURM");                                 \
      if (require != nullptr && std::string(require) == "1") {                               \
        FAIL() << "IB_REQUIRE_SLURM=1 but " << *why << " (run scripts/slurm-up.sh as root)"; \
      }                                                                                      \
      GTEST_SKIP() << "no Slurm cluster: " << *why << " (scripts/slurm-up.sh starts one)";   \
    }                                                                                        \
  } while (false)

/// Ids of jobs still in the queue (pending, running, completing) with this name.
inline std::string queued_jobs(const std::string& job_name) {
  auto r = run_command({"squeue", "-h", "-n", job_name, "-o", "%i %T"});
  if (!r || !r->ok()) return "squeue failed";
  return r->out;
}

/// Processes whose command line contains `needle` (the server and srun carry the model name).
inline int processes_with(const std::string& needle) {
  int n = 0;
  std::error_code ec;
  for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const auto& entry = *it;
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    auto cmdline = read_file(entry.path() / "cmdline");  // an error once the process has ended
    if (cmdline && cmdline->find(needle) != std::string::npos) ++n;
  }
  return n;
}

}  // namespace ib::e2e
