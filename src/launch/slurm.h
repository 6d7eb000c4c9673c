// The `slurm` launcher: one sbatch job per server configuration. The job
// runs a generated batch script whose every argument and environment value is quoted, so recipe
// strings never reach a shell as code. See docs/slurm.md.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"
#include "core/strings.h"
#include "launch/launcher.h"

namespace ib::launch {

struct SlurmOptions {
  std::string partition;                         // empty: the cluster's default partition
  std::string account;                           // empty: the user's default account
  std::vector<std::string> extra_sbatch_args;    // one sbatch argument each, e.g. "--qos=high"
  std::chrono::seconds allocation_timeout{600};  // submit → RUNNING; then spec.startup_timeout
  std::filesystem::path work_dir;                // where batch scripts go; empty: beside the log
  std::string time_limit = "02:00:00";           // sbatch --time
  /// GPU power beside the server (docs/telemetry.md): "auto" starts nvidia-smi, else amd-smi,
  /// when the node has one; "nvidia-smi" / "amd-smi" only that tool; "off" none. The samples go
  /// into the log's folder (telemetry::kPowerFile*), read by the client after each point.
  std::string gpu_power = "auto";
  double power_interval_s = 0.5;
};

/// One /bin/sh word (core/strings.h).
using ::ib::shell_quote;

/// The batch script for a server (pure): #SBATCH lines (job name, --output=spec.log_path,
/// nodes=1, ntasks=1, --gpus when spec.gpus > 0, --time, partition, account, extra arguments),
/// `export` of spec.env, the GPU power sampler in the background (o.gpu_power; its output and the
/// node's `date +%z` beside the log), then `exec srun ... -- argv` with {host} replaced by 0.0.0.0 (listen on
/// every interface: the server is reached from the submitting host) and {port} by `port`.
/// Error when a value cannot be written safely: a NUL byte in argv or env, an env name that is
/// not a shell identifier, a control character in an #SBATCH value, a backslash in the log path
/// (Slurm reads it as "no filename patterns"), an empty argv.
/// Secrets (core/redact.h: a secret-named or secret-valued variable, an argument that holds a
/// credential) are never written into the script, which lies on a shared filesystem: they go
/// into `secret_env` instead (the variable itself, or IB_SECRET_ARG_<i> for argument i, which
/// the script expands in double quotes), for sbatch's own environment, which it passes on to the
/// job (sbatch's default --export=ALL); nullptr: only the script is wanted.
Expected<std::string> slurm_batch_script(const ServerSpec& spec, const SlurmOptions& o, int port,
                                         std::map<std::string, std::string>* secret_env = nullptr);

/// A launcher that submits with `sbatch --parsable`, polls `scontrol show job` until the job runs,
/// reaches the server at its batch host's address and stops it with scancel. The log path and
/// work_dir must be on a filesystem the compute nodes share.
std::unique_ptr<Launcher> make_slurm_launcher(SlurmOptions o);

}  // namespace ib::launch
